/**
 * A lock per key, held exclusively or shared (slot 0's proposals, src/core/replication/sequencer.ts:
 * the keys a proposal writes are held exclusively, the keys it only read are shared). A task waits
 * for every earlier task that holds one of its keys in a way that conflicts with its own: exclusive
 * with anything, shared with exclusive. Tasks that only share a key run together; a task that comes
 * after an exclusive one on a key waits for it, so tasks of one key keep their arrival order where
 * they conflict.
 *
 * Keys come and go with the tasks: an object, not a long-lived Map that churns with every task
 * (CONTRIBUTING.md, "A long-lived Map or Set"), reset whenever no task is held.
 */

/** The holders of one key: the last exclusive task (until it settles) and the shared ones since. */
interface KeyHolders {
  exclusive: Promise<unknown> | undefined;
  shared: Array<Promise<unknown>>;
}

/** A lock per key, exclusive or shared. */
export interface KeyedLock {
  /**
   * Run `task` once every earlier task it conflicts with settled: one holding a key of `exclusive`,
   * or holding a key of `shared` exclusively. A key in both is held exclusively. A failed task
   * releases its keys as a finished one does.
   */
  run<T>(keys: { exclusive: readonly string[]; shared?: readonly string[] }, task: () => Promise<T>): Promise<T>;
}

/** Create a keyed lock. */
export function createKeyedLock(): KeyedLock {
  let holders = Object.create(null) as Record<string, KeyHolders>;
  let active = 0;
  return {
    async run<T>(keys: { exclusive: readonly string[]; shared?: readonly string[] }, task: () => Promise<T>): Promise<T> {
      const exclusive = [...new Set(keys.exclusive)];
      const shared = [...new Set(keys.shared ?? [])].filter((k) => !exclusive.includes(k));
      const before: Array<Promise<unknown>> = [];
      for (const k of exclusive) {
        const h = holders[k];
        if (h?.exclusive) before.push(h.exclusive);
        if (h) before.push(...h.shared);
      }
      for (const k of shared) {
        const h = holders[k];
        if (h?.exclusive) before.push(h.exclusive);
      }
      const run = Promise.allSettled(before).then(task);
      const settled = run.then(
        () => undefined,
        () => undefined,
      );
      // Later tasks wait for this one's settling: those it waited for are settled by then.
      for (const k of exclusive) holders[k] = { exclusive: settled, shared: [] };
      for (const k of shared) (holders[k] ??= { exclusive: undefined, shared: [] }).shared.push(settled);
      active++;
      try {
        return await run;
      } finally {
        for (const k of exclusive) {
          const h = holders[k];
          if (h?.exclusive === settled) {
            h.exclusive = undefined;
            if (h.shared.length === 0) delete holders[k];
          }
        }
        for (const k of shared) {
          const h = holders[k];
          if (!h) continue;
          const at = h.shared.indexOf(settled);
          if (at >= 0) h.shared.splice(at, 1);
          if (h.shared.length === 0 && h.exclusive === undefined) delete holders[k];
        }
        if (--active === 0) holders = Object.create(null) as Record<string, KeyHolders>;
      }
    },
  };
}
