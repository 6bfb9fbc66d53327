/**
 * A read-through cache of current states, least recently used evicted first. The engine is the
 * only writer of states, so updating the cache after every commit keeps it coherent; a read that
 * raced a commit of its key is not cached, so a stale value can never be inserted (commits of other
 * keys meanwhile do not stop it: under load some commit is always under way). Absence is cached too.
 *
 * And a key past the highest key of its kind is absent without a read: the highest is read once when
 * the engine opens and raised by every commit. A new secret's id is past every other, and each
 * member looked its record up while storing the new share — a LevelDB read, which takes LevelDB's
 * mutex on the event loop, for a record that cannot be there yet.
 *
 * Bounded by entries and by an estimate of the memory they hold: a secret's state (its ML-KEM public
 * key, share digests and the owner's signed evidence) is a few KB, so a cap by count alone let a
 * member that served many distinct secrets keep a large share of its memory in them.
 */
import type { RecordStore } from './ports.ts';
import { createAgeOrderedMap, evictWithSecondChance } from '../../crypto/index.ts';
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
  /** Where a miss is read from, and each kind's highest key when the engine opens. */
  store: Pick<RecordStore, 'getState'> & Partial<Pick<RecordStore, 'listStateKeys'>>;
}

/** Current states of (kind, key), served from memory when they were read or written lately. */
export interface StateCache {
  /** Read the highest key of each of `kinds` (before any commit): keys past it are absent without a read. */
  open(kinds: Iterable<string>): Promise<void>;
  /** The current state of (kind, key), from memory or the store. */
  get(kind: string, key: string): Promise<ReplicatedRecord | undefined>;
  /**
   * The current state of (kind, key) when it is in memory — a record, or null for a state known
   * absent — without reading the store or marking the entry used; undefined when not cached.
   */
  peek(kind: string, key: string): ReplicatedRecord | null | undefined;
  /** The new winners of a committed batch: cached, and a read in flight of any of their keys is not cached. */
  update(changed: Iterable<ReplicatedRecord>): void;
  /** Forget (kind, key): the store changed it in a way {@link update} cannot say (it has no winner now); a read of it in flight is not cached. */
  forget(kind: string, key: string): void;
  /** Entries and estimated bytes held (metrics, tests). */
  size(): { entries: number; bytes: number };
}

/** Printable ASCII (a key with anything else is not compared with the highest). */
const ASCII = /^[ -~]*$/;

/** Keys changed lately, remembered so a read in flight can tell whether its own key changed meanwhile. */
const RECENT_CHANGES = 4096;

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
  // A hit only marks its entry `used`; eviction gives a used entry a second chance (made the
  // youngest, unmarked) and drops the oldest unused one — least recently used first, near enough. A
  // hit that moved its entry to the back instead (delete, then set) made the Map's table churn with
  // every read, which keeps short-lived garbage alive (src/http/in-flight.ts says how).
  // Entries by kind, then key: a lookup hashes the record's own key string (once: V8 keeps a string's
  // hash), where a `<kind>!<key>` string would be built, flattened and hashed for every lookup. Their
  // ages are kept by the entries themselves (object keys hash by identity).
  type Entry = { kind: string; key: string; value: ReplicatedRecord | null; bytes: number; used: boolean };
  const byKind = new Map<string, Map<string, Entry>>();
  const ages = createAgeOrderedMap<Entry, Entry>();
  const entryOf = (kind: string, key: string) => byKind.get(kind)?.get(key);
  let bytes = 0;
  // The last RECENT_CHANGES (kind, key) changed, in a ring; `changes` counts every change ever made.
  const recentKinds: string[] = [];
  const recentKeys: string[] = [];
  let changes = 0;
  const changed = (kind: string, key: string) => {
    recentKinds[changes % RECENT_CHANGES] = kind;
    recentKeys[changes % RECENT_CHANGES] = key;
    changes++;
  };
  /** Whether (kind, key) is known unchanged since `before` (false once the ring no longer covers it). */
  const unchangedSince = (kind: string, key: string, before: number) => {
    if (changes - before > RECENT_CHANGES) return false;
    for (let c = before; c < changes; c++) if (recentKeys[c % RECENT_CHANGES] === key && recentKinds[c % RECENT_CHANGES] === kind) return false;
    return true;
  };
  // Per kind, the highest key of a state (undefined: not known, so nothing is answered from it).
  const highest = Object.create(null) as Record<string, string | null | undefined>;
  // Only an ASCII key is compared: LevelDB orders keys by their UTF-8 bytes, JavaScript by UTF-16
  // code units, and the two agree at the first difference when one side is ASCII there.
  const pastHighest = (kind: string, key: string) => {
    const h = highest[kind];
    return h !== undefined && (h === null || key > h) && ASCII.test(key);
  };
  const dropEntry = (old: Entry) => {
    byKind.get(old.kind)!.delete(old.key);
    ages.delete(old);
    bytes -= old.bytes;
  };
  const drop = (kind: string, key: string) => {
    const old = entryOf(kind, key);
    if (old) dropEntry(old);
  };
  const put = (kind: string, key: string, value: ReplicatedRecord | null) => {
    drop(kind, key);
    // As `<kind>!<key>` and the value would take.
    const size = ENTRY_OVERHEAD + kind.length + 1 + key.length + (value ? approximateBytes(value) : 0);
    // A state larger than the whole budget is not cached at all.
    if (size > maxBytes || maxEntries < 1) return;
    // Room for `size` more bytes and one more entry.
    evictWithSecondChance(ages, () => ages.size >= maxEntries || bytes + size > maxBytes, dropEntry);
    const entry: Entry = { kind, key, value, bytes: size, used: false };
    let ofKind = byKind.get(kind);
    if (!ofKind) byKind.set(kind, (ofKind = new Map()));
    ofKind.set(key, entry);
    ages.set(entry, entry);
    bytes += size;
  };
  return {
    async open(kinds) {
      if (!store.listStateKeys) return;
      for (const kind of kinds) {
        let last: string | null = null;
        for await (const page of store.listStateKeys(kind, { reverse: true, limit: 1 })) last = page.at(-1) ?? last;
        highest[kind] = last;
      }
    },
    async get(kind, key) {
      const hit = entryOf(kind, key);
      if (hit !== undefined) {
        hit.used = true;
        return hit.value ?? undefined;
      }
      if (pastHighest(kind, key)) return undefined;
      const before = changes;
      const v = await store.getState(kind, key);
      if (unchangedSince(kind, key, before)) put(kind, key, v ?? null);
      return v;
    },
    peek(kind, key) {
      const hit = entryOf(kind, key);
      if (hit !== undefined) return hit.value;
      return pastHighest(kind, key) ? null : undefined;
    },
    update(records) {
      for (const r of records) {
        changed(r.kind, r.key);
        put(r.kind, r.key, r);
        // A higher key only raises it (a non-ASCII one may sort otherwise in LevelDB: then not known).
        const h = highest[r.kind];
        if (h !== undefined && (h === null || r.key > h)) highest[r.kind] = ASCII.test(r.key) ? r.key : undefined;
      }
    },
    forget(kind, key) {
      changed(kind, key);
      drop(kind, key);
    },
    size: () => ({ entries: ages.size, bytes }),
  };
}
