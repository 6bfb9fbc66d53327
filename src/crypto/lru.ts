/**
 * A small least-recently-used map for public data only, never secrets: imported public keys, and
 * which coordinator holds a file job (src/http/job-forward.ts).
 */

/** An LRU of values by string key. */
export interface LruCache<V> {
  /** The cached value of `key`, or `create()`'s, cached (unless the capacity is 0). */
  getOrCreate(key: string, create: () => V): V;
  /** The cached value of `key` (now the most recent), or `undefined`. */
  get(key: string): V | undefined;
  /** Cache `value` under `key` as the most recent entry, evicting the least recent beyond the capacity. */
  set(key: string, value: V): void;
  /** Forget `key`. */
  delete(key: string): void;
  /** Number of entries. */
  size(): number;
}

/** Create an LRU with at most `capacity` entries (0 disables caching). */
export function createLruCache<V>(capacity: number): LruCache<V> {
  if (!Number.isSafeInteger(capacity) || capacity < 0) throw new RangeError('keyCacheSize must be a non-negative integer');
  // A Map iterates in insertion order: re-inserting on a hit makes the first key the least recent.
  const entries = new Map<string, V>();
  const get = (key: string): V | undefined => {
    const hit = entries.get(key);
    if (hit !== undefined) {
      entries.delete(key);
      entries.set(key, hit);
    }
    return hit;
  };
  const set = (key: string, value: V): void => {
    if (capacity === 0) return;
    entries.delete(key);
    if (entries.size >= capacity) entries.delete(entries.keys().next().value!);
    entries.set(key, value);
  };
  return {
    getOrCreate(key, create) {
      const hit = get(key);
      if (hit !== undefined) return hit;
      const value = create();
      set(key, value);
      return value;
    },
    get,
    set,
    delete: (key) => void entries.delete(key),
    size: () => entries.size,
  };
}
