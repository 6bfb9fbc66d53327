/** A small least-recently-used map for imported public keys (public data only, never secrets). */

/** An LRU of values by string key. */
export interface LruCache<V> {
  /** The cached value of `key`, or `create()`'s, cached (unless the capacity is 0). */
  getOrCreate(key: string, create: () => V): V;
  /** Number of entries. */
  size(): number;
}

/** Create an LRU with at most `capacity` entries (0 disables caching). */
export function createLruCache<V>(capacity: number): LruCache<V> {
  if (!Number.isSafeInteger(capacity) || capacity < 0) throw new RangeError('keyCacheSize must be a non-negative integer');
  // A Map iterates in insertion order: re-inserting on a hit makes the first key the least recent.
  const entries = new Map<string, V>();
  return {
    getOrCreate(key, create) {
      const hit = entries.get(key);
      if (hit !== undefined) {
        entries.delete(key);
        entries.set(key, hit);
        return hit;
      }
      const value = create();
      if (capacity > 0) {
        if (entries.size >= capacity) entries.delete(entries.keys().next().value!);
        entries.set(key, value);
      }
      return value;
    },
    size: () => entries.size,
  };
}
