/**
 * A small least-recently-used map for public data only, never secrets: imported public keys, which
 * coordinator holds a file job (src/http/job-forward.ts), the plans' rate-limit buckets
 * (src/core/usage/token-bucket.ts).
 */

/** An LRU of values by string key. */
export interface LruCache<V> {
  /** The cached value of `key`, or `create()`'s, cached (unless the capacity is 0). */
  getOrCreate(key: string, create: () => V): V;
  /** The cached value of `key` (now used), or `undefined`. */
  get(key: string): V | undefined;
  /** Cache `value` under `key` (a use), evicting the least recently used beyond the capacity. */
  set(key: string, value: V): void;
  /** Forget `key`. */
  delete(key: string): void;
  /** Number of entries. */
  size(): number;
}

/**
 * Create an LRU with at most `capacity` entries (0 disables caching). Least recently used first,
 * near enough: a hit only marks its entry, and eviction gives a marked entry a second chance (moved
 * to the back, unmarked) before dropping the first unmarked one. Moving every hit to the back
 * (delete, then set) made the Map's table churn with every request, which keeps short-lived garbage
 * alive through the scavenges (src/http/in-flight.ts says how).
 */
export function createLruCache<V>(capacity: number): LruCache<V> {
  if (!Number.isSafeInteger(capacity) || capacity < 0) throw new RangeError('keyCacheSize must be a non-negative integer');
  // A Map iterates in insertion order: the first key is the oldest.
  const entries = new Map<string, { value: V; used: boolean }>();
  const get = (key: string): V | undefined => {
    const hit = entries.get(key);
    if (hit === undefined) return undefined;
    hit.used = true;
    return hit.value;
  };
  const set = (key: string, value: V): void => {
    if (capacity === 0) return;
    const held = entries.get(key);
    if (held) {
      held.value = value;
      held.used = true;
      return;
    }
    evictWithSecondChance(entries, () => entries.size >= capacity, (oldKey) => entries.delete(oldKey));
    entries.set(key, { value, used: false });
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

/**
 * Evict from `entries` (a Map in insertion order, oldest first) while `full()`: an entry marked
 * `used` gets a second chance (moved to the back, unmarked), the first unmarked one is dropped with
 * `drop` (which removes it from `entries`, and may keep accounts of its own).
 */
export function evictWithSecondChance<E extends { used: boolean }>(entries: Map<string, E>, full: () => boolean, drop: (key: string) => void): void {
  while (entries.size > 0 && full()) {
    const [key, oldest] = entries.entries().next().value!;
    if (oldest.used) {
      oldest.used = false;
      entries.delete(key);
      entries.set(key, oldest);
    } else drop(key);
  }
}
