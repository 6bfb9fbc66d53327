/**
 * A read-through cache of current states, least recently used evicted first. The engine is the
 * only writer of states, so updating the cache after every commit keeps it coherent; a read that raced a commit is not cached (generation
 * check), so a stale value can never be inserted. Absence is cached too.
 *
 * Bounded by entries and by an estimate of the memory they hold: a secret's state (its ML-KEM public
 * key, share digests and the owner's signed evidence) is a few KB, so a cap by count alone let a
 * member that served many distinct secrets keep a large share of its memory in them.
 */
import type { RecordStore } from './ports.ts';
import { evictWithSecondChance } from '../../crypto/index.ts';
import type { ReplicatedRecord } from './record.ts';

/** Options of {@link createStateCache}. */
export interface StateCacheOptions {
  /** Current states kept in memory; the least recently used goes first (approximately: second chance). */
  maxEntries: number;
  /** Most memory the cached states may hold, estimated by {@link approximateBytes}. @default unbounded */
  maxBytes?: number;
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
  /**
   * The current state of (kind, key) when it is in memory — a record, or null for a state known
   * absent — without reading the store or marking the entry used; undefined when not cached.
   */
  peek(kind: string, key: string): ReplicatedRecord | null | undefined;
  /** The new winners of a committed batch: cached, and any read in flight is not cached. */
  update(changed: Iterable<ReplicatedRecord>): void;
  /** Forget (kind, key): the store changed it in a way {@link update} cannot say (it has no winner now); any read in flight is not cached. */
  forget(kind: string, key: string): void;
  /** Entries and estimated bytes held (metrics, tests). */
  size(): { entries: number; bytes: number };
}

/** Bytes of an entry beyond its value: the map slot and its key. */
const ENTRY_OVERHEAD = 64;

/**
 * What a parsed JSON value roughly costs on the V8 heap: strings at a byte a character plus a
 * header, numbers, and a header plus a slot per element or property. An estimate for a memory
 * bound, not an exact measure.
 */
export function approximateBytes(value: unknown): number {
  if (typeof value === 'string') return 16 + value.length;
  if (value === null || typeof value !== 'object') return 8;
  let bytes = 24;
  if (Array.isArray(value)) {
    for (const v of value) bytes += 8 + approximateBytes(v);
    return bytes;
  }
  for (const k in value) bytes += 8 + k.length + approximateBytes((value as Record<string, unknown>)[k]);
  return bytes;
}

/** Create the state cache. */
export function createStateCache(options: StateCacheOptions, deps: StateCacheDeps): StateCache {
  const { maxEntries } = options;
  const maxBytes = options.maxBytes ?? Infinity;
  const { store } = deps;
  // Oldest first. A hit only marks its entry `used`; eviction gives a used entry a second chance
  // (moved to the back, unmarked) and drops the first unused one — least recently used first, near
  // enough. A hit that moved its entry to the back instead (delete, then set) made the Map's table
  // churn with every read, which keeps short-lived garbage alive (src/http/in-flight.ts says how).
  const entries = new Map<string, { value: ReplicatedRecord | null; bytes: number; used: boolean }>();
  let bytes = 0;
  let generation = 0;
  const drop = (k: string) => {
    const old = entries.get(k);
    if (!old) return;
    entries.delete(k);
    bytes -= old.bytes;
  };
  const put = (k: string, value: ReplicatedRecord | null) => {
    drop(k);
    const size = ENTRY_OVERHEAD + k.length + (value ? approximateBytes(value) : 0);
    // A state larger than the whole budget is not cached at all.
    if (size > maxBytes || maxEntries < 1) return;
    // Room for `size` more bytes and one more entry.
    evictWithSecondChance(entries, () => entries.size >= maxEntries || bytes + size > maxBytes, drop);
    entries.set(k, { value, bytes: size, used: false });
    bytes += size;
  };
  return {
    async get(kind, key) {
      const k = `${kind}!${key}`;
      const hit = entries.get(k);
      if (hit !== undefined) {
        hit.used = true;
        return hit.value ?? undefined;
      }
      const before = generation;
      const v = await store.getState(kind, key);
      if (generation === before) put(k, v ?? null);
      return v;
    },
    peek(kind, key) {
      return entries.get(`${kind}!${key}`)?.value;
    },
    update(changed) {
      generation++;
      for (const r of changed) put(`${r.kind}!${r.key}`, r);
    },
    forget(kind, key) {
      generation++;
      drop(`${kind}!${key}`);
    },
    size: () => ({ entries: entries.size, bytes }),
  };
}
