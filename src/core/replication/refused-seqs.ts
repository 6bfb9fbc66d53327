/**
 * The records this node refused for good, by (origin, seq) (docs/security.md, "Stale members"): the
 * catch-up gate does not wait for them, so a record every honest member refuses — a rogue's, or a
 * replica's that was never valid — leaves a gap that blocks nobody. In memory and bounded: after a
 * restart, sync offers such a record again and its refusal is noted again.
 */

/** Options of {@link createRefusedSeqs}. */
export interface RefusedSeqsOptions {
  /** Most (origin, seq) pairs remembered; the oldest go first. */
  maxEntries: number;
}

/** Permanently refused records, by (origin, seq). */
export interface RefusedSeqs {
  note(origin: string, seq: number): void;
  has(origin: string, seq: number): boolean;
}

/** Create the set. */
export function createRefusedSeqs(options: RefusedSeqsOptions): RefusedSeqs {
  // Object keys and an array for the order: nothing here churns per request (CONTRIBUTING.md).
  let known: Record<string, true> = Object.create(null) as Record<string, true>;
  const order: string[] = [];
  return {
    note(origin, seq) {
      const id = `${origin}!${seq}`;
      if (known[id]) return;
      known[id] = true;
      order.push(id);
      if (order.length > options.maxEntries) {
        const drop = order.splice(0, order.length - options.maxEntries);
        for (const d of drop) delete known[d];
        if (order.length === 0) known = Object.create(null) as Record<string, true>;
      }
    },
    has: (origin, seq) => known[`${origin}!${seq}`] === true,
  };
}
