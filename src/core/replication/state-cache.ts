/**
 * A read-through LRU of current states. The engine is the only writer of states, so updating the
 * cache after every commit keeps it coherent; a read that raced a commit is not cached (generation
 * check), so a stale value can never be inserted. Absence is cached too.
 */
import type { RecordStore } from './ports.ts';
import type { ReplicatedRecord } from './record.ts';

/** Options of {@link createStateCache}. */
export interface StateCacheOptions {
  /** Current states kept in memory; the least recently used goes first. */
  maxEntries: number;
}

/** Dependencies of {@link createStateCache}. */
export interface StateCacheDeps {
  /** Where a miss is read from. */
  store: Pick<RecordStore, 'getState'>;
}

/** Current states of (kind, key), served from memory when they were read or written lately. */
export interface StateCache {
  /** The current state of (kind, key), from memory or the store. */
  get(kind: string, key: string): Promise<ReplicatedRecord | undefined>;
  /** The new winners of a committed batch: cached, and any read in flight is not cached. */
  update(changed: Iterable<ReplicatedRecord>): void;
}

/** Create the state cache. */
export function createStateCache(options: StateCacheOptions, deps: StateCacheDeps): StateCache {
  const { maxEntries } = options;
  const { store } = deps;
  const entries = new Map<string, ReplicatedRecord | null>();
  let generation = 0;
  const put = (k: string, v: ReplicatedRecord | null) => {
    entries.delete(k);
    entries.set(k, v);
    if (entries.size > maxEntries) entries.delete(entries.keys().next().value!);
  };
  return {
    async get(kind, key) {
      const k = `${kind}!${key}`;
      const hit = entries.get(k);
      if (hit !== undefined) {
        entries.delete(k);
        entries.set(k, hit);
        return hit ?? undefined;
      }
      const before = generation;
      const v = await store.getState(kind, key);
      if (generation === before) put(k, v ?? null);
      return v;
    },
    update(changed) {
      generation++;
      for (const r of changed) put(`${r.kind}!${r.key}`, r);
    },
  };
}
