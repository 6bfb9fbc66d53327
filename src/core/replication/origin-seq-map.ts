/**
 * Maps keyed by a record's place, (origin, seq), without building an `<origin>!<seq>` string for
 * every lookup: an origin's entries sit in a map of their own, keyed by the seq as a number. Every
 * member looks each incoming record up several times (recently stored, being stored); a string key
 * per lookup was a concatenation, a flattening and a hash of ~50 characters each time, in maps of
 * tens of thousands of entries.
 */

/** A map from (origin, seq) to `V`. */
export interface OriginSeqMap<V> {
  get(origin: string, seq: number): V | undefined;
  has(origin: string, seq: number): boolean;
  set(origin: string, seq: number, value: V): void;
  delete(origin: string, seq: number): void;
  /** The origins ever set (one left without entries is still listed). */
  origins(): IterableIterator<string>;
  /** Entries held. */
  readonly size: number;
}

/** An empty {@link OriginSeqMap}. An origin left without entries keeps its (empty) inner map: origins are the cluster's few nodes. */
export function createOriginSeqMap<V>(): OriginSeqMap<V> {
  const byOrigin = new Map<string, Map<number, V>>();
  let size = 0;
  return {
    get: (origin, seq) => byOrigin.get(origin)?.get(seq),
    has: (origin, seq) => byOrigin.get(origin)?.has(seq) === true,
    set(origin, seq, value) {
      let ofOrigin = byOrigin.get(origin);
      if (!ofOrigin) byOrigin.set(origin, (ofOrigin = new Map()));
      const before = ofOrigin.size;
      ofOrigin.set(seq, value);
      size += ofOrigin.size - before;
    },
    delete(origin, seq) {
      const ofOrigin = byOrigin.get(origin);
      if (ofOrigin?.delete(seq)) size--;
    },
    origins: () => byOrigin.keys(),
    get size() {
      return size;
    },
  };
}

/** An {@link OriginSeqMap} that only forgets by age ({@link createRecentOriginSeqMap}). */
export type RecentOriginSeqMap<V> = Omit<OriginSeqMap<V>, 'delete' | 'origins'>;

/**
 * A map holding the newest `capacity` places set: a new place beyond it drops the oldest (setting a
 * place already held changes its value and keeps its age, as a Map's order does). Nothing else
 * removes a place, so each place held is in exactly one slot of the ring.
 */
export function createRecentOriginSeqMap<V>(capacity: number): RecentOriginSeqMap<V> {
  const map = createOriginSeqMap<V>();
  // The places in the order they were first set, in a ring of `capacity` slots.
  const origins: string[] = new Array<string>(capacity);
  const seqs: number[] = new Array<number>(capacity).fill(0);
  let next = 0;
  return {
    get: map.get,
    has: map.has,
    set(origin, seq, value) {
      if (!map.has(origin, seq)) {
        const slot = next;
        next = (next + 1) % capacity;
        const old = origins[slot];
        if (old !== undefined) map.delete(old, seqs[slot]!);
        origins[slot] = origin;
        seqs[slot] = seq;
      }
      map.set(origin, seq, value);
    },
    get size() {
      return map.size;
    },
  };
}
