/**
 * A small least-recently-used map for public data only, never secrets: imported public keys, which
 * coordinator holds a file job (src/http/job-forward.ts), the plans' rate-limit buckets
 * (src/core/usage/token-bucket.ts). And the map in age order every bounded cache of the node evicts
 * from ({@link createAgeOrderedMap}): a container that copies and zeroes nothing, so it holds only
 * what may stay in memory as it is (a share only in its at-rest box, src/store/level-store.ts).
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
  const entries = createAgeOrderedMap<string, { value: V; used: boolean }>();
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
 * Evict from `entries` while `full()`: an entry marked `used` gets a second chance (made the
 * youngest, unmarked), the oldest unmarked one is dropped with `drop` (which removes it from
 * `entries`, and may keep accounts of its own).
 */
export function evictWithSecondChance<K, E extends { used: boolean }>(entries: AgeOrderedMap<K, E>, full: () => boolean, drop: (key: K) => void): void {
  while (entries.size > 0 && full()) {
    const key = entries.oldest()!;
    const oldest = entries.get(key)!;
    if (oldest.used) {
      oldest.used = false;
      entries.renew(key);
    } else drop(key);
  }
}

/**
 * A map that knows the age of its keys: {@link AgeOrderedMap.oldest} in constant time (amortised).
 *
 * What every bounded cache here needs, and what a Map used as a queue does badly: V8 leaves a hole in
 * a Map's table for every deleted entry until the table is rebuilt — when it fills, that is after
 * about as many deletions as the map holds — and iteration walks the holes. Taking the oldest key
 * with `keys().next()` after deleting those before it walked thousands of them: 7.3 µs an eviction
 * at 20,000 entries, 0.25 µs at 1,000, against 0.08 µs for a key known in advance
 * (test/unit/crypto/lru.test.ts times it).
 */
export interface AgeOrderedMap<K, V> {
  get(key: K): V | undefined;
  has(key: K): boolean;
  /** Set `key`: a new key is the youngest; a key held keeps its age (as a Map keeps its order). */
  set(key: K, value: V): void;
  /** Make a held key the youngest. */
  renew(key: K): void;
  delete(key: K): boolean;
  /** The oldest key held, undefined when empty. */
  oldest(): K | undefined;
  readonly size: number;
}

/**
 * Set `key` in `map`, a map of at most `capacity` keys: a new key first drops the oldest ones it
 * would take the map past `capacity`. Returns whether any was dropped.
 */
export function setWithin<K, V>(map: AgeOrderedMap<K, V>, key: K, value: V, capacity: number): boolean {
  let dropped = false;
  if (!map.has(key)) {
    while (map.size > 0 && map.size >= capacity) {
      map.delete(map.oldest()!);
      dropped = true;
    }
  }
  map.set(key, value);
  return dropped;
}

/** A place in an {@link AgeOrderedMap}'s queue whose key was deleted or renewed to a later place. */
const DEAD = Symbol('dead place');

/** An empty {@link AgeOrderedMap}. */
export function createAgeOrderedMap<K, V>(): AgeOrderedMap<K, V> {
  // Keys in the order they were set or renewed; each entry knows its place (`at`, counted from the
  // first place ever), so deleting or renewing it marks that place dead at once. A dead place holds
  // nothing: a key deleted from the map is not kept alive by the queue (the state cache's keys are
  // its entries, each holding a record of a few KB: CHANGELOG, Fixed).
  const entries = new Map<K, { value: V; at: number }>();
  let places: Array<K | typeof DEAD> = [];
  /** The place number of `places[0]`. */
  let base = 0;
  /** Index of the first place that may be live; every place before it is dead. */
  let head = 0;
  /** Dead places from `head` on. */
  let dead = 0;
  const kill = (at: number) => {
    places[at - base] = DEAD;
    dead++;
  };
  const enqueue = (key: K): number => {
    // Past as many dead places as live ones (and a few), the queue is rebuilt with the live ones.
    if (dead > entries.size + 64) {
      const live: K[] = [];
      for (let i = head; i < places.length; i++) {
        const k = places[i]!;
        if (k === DEAD) continue;
        entries.get(k)!.at = live.length;
        live.push(k);
      }
      places = live;
      base = 0;
      head = 0;
      dead = 0;
    }
    places.push(key);
    return base + places.length - 1;
  };
  return {
    get: (key) => entries.get(key)?.value,
    has: (key) => entries.has(key),
    set(key, value) {
      const held = entries.get(key);
      if (held) held.value = value;
      else entries.set(key, { value, at: enqueue(key) });
    },
    renew(key) {
      const held = entries.get(key);
      if (!held) return;
      kill(held.at);
      held.at = enqueue(key);
    },
    delete(key) {
      const held = entries.get(key);
      if (!held) return false;
      kill(held.at);
      return entries.delete(key);
    },
    oldest() {
      while (head < places.length && places[head] === DEAD) {
        head++;
        dead--;
      }
      if (head > 1024 && head * 2 > places.length) {
        places = places.slice(head);
        base += head;
        head = 0;
      }
      return head < places.length ? (places[head] as K) : undefined;
    },
    get size() {
      return entries.size;
    },
  };
}
