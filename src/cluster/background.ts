/**
 * The cluster's background work (dials, sync rounds, served links): tracked so that `stop()` waits
 * for it to settle (CONTRIBUTING.md rule 2).
 */

/** Adds a promise to the background set and returns it. */
export type Track = <T>(p: Promise<T>) => Promise<T>;

/** The background set of one cluster. */
export interface Background {
  track: Track;
  /** Resolves once everything tracked so far has settled. */
  settle(): Promise<void>;
}

/** Create an empty background set. */
export function createBackground(): Background {
  const running = new Set<Promise<unknown>>();
  return {
    track: (p) => {
      running.add(p);
      p.finally(() => running.delete(p)).catch(() => undefined);
      return p;
    },
    async settle() {
      await Promise.allSettled([...running]);
    },
  };
}
