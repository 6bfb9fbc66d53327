/**
 * The node's LevelDB (the only importer of `level`). One instance, a fixed list of sublevels — never
 * reuse a name — and one repository per entity (CONTRIBUTING.md rule 5). Writes that acknowledge anything are
 * `sync: true` batches: durable and atomic.
 */
import { mkdir } from 'node:fs/promises';
import { Level } from 'level';
import { createAgeOrderedMap, setWithin, type AgeOrderedMap } from '../crypto/index.ts';
import type { RecordStore, VersionVector } from '../core/replication/ports.ts';
import type { ReplicatedRecord } from '../core/replication/record.ts';
import type { PendingShares, PendingShareStore, ShareStore, UsedStringExpiry, UsedStringStore } from '../core/secrets/ports.ts';
import type { JobRecord, JobRepo } from '../core/files/types.ts';
import type { RegistryChange } from '../core/slot0-registry.ts';

/** The sublevels, by role. Adding one is fine; renaming or reusing one is not. */
export const SUBLEVELS = {
  /** Replication log: `<origin>!<seq as 12 hex digits>` → record. */
  log: 'log',
  /**
   * Current state: `<kind>!<key>` → the log key (`<origin>!<seq as 12 hex digits>`) of the winning
   * record, so every record is stored once, in `log` (schema version 2; version 1 held a copy of the
   * record, rewritten into a log key when such a store is opened).
   */
  state: 'state',
  /** Version vector: origin → highest contiguous seq applied. */
  vv: 'vv',
  /** Slot-0 counters: name → last value allocated. */
  counters: 'counters',
  /** Node metadata (schema version, cluster id). */
  meta: 'meta',
  /** Slot-0 uniqueness claims: name (e.g. `email:<hex>`) → owner id. */
  claims: 'claims',
  /** A member's own key shares, encrypted at rest: secretId (12 digits), or `w<chainId>:<id>` for Web3 → base64 box. Not replicated. */
  shares: 'shares',
  /** A coordinator's undelivered shares, sealed to their members: secretId (12 digits) → entry. */
  pendingShares: 'pendingShares',
  /**
   * Signed strings a member has released its share for (share releases): key → `{ expiry, holder }`,
   * the expiry `t!<Unix ms, 20 digits>` (Web2) or `b!<chainId>!<block, 20 digits>` (Web3) and the
   * address of the coordinator it released to. Written before holders: the expiry alone (a string,
   * naming no holder); before the expiry index: a bare number, Unix ms (read as `t!`).
   */
  usedStrings: 'usedStrings',
  /** File jobs this coordinator ran (metadata; results are files): job id → job record. Not replicated. */
  jobs: 'jobs',
  /** Per origin, the XOR of the content ids of its stored records (hex): written with every log commit. */
  fp: 'fp',
  /** The `usedStrings` entries in expiry order: `<expiry>!<key>` → empty, written in one batch with the entry. */
  usedStringsByExpiry: 'usedStringsByExpiry',
} as const;

/** The largest Web2 secret id a share store key sorts by (12 digits). */
const MAX_ORDERED_SHARE_ID = 999_999_999_999;

/** Encrypted share boxes kept in memory (about 120 bytes each). */
const SHARE_CACHE_ENTRIES = 10_000;

/** Used signed strings kept in memory (~100 bytes each); a decrypt uses one per member. */
const USED_STRINGS_IN_MEMORY = 200_000;

/** Used-string changes per batch when many are made at once (a prune, the load of old entries). */
const USED_STRINGS_BATCH_ENTRIES = 1000;

/**
 * Schema version of the on-disk layout. 2: `state` holds log keys. A store of version 1 is upgraded
 * when opened ({@link upgradeStateToLogKeys}); a build that reads only version 1 refuses a store of
 * version 2 instead of misreading it.
 */
export const STORE_SCHEMA_VERSION = 2;

/** The oldest store schema this build opens (and upgrades): archives of it restore too. */
export const OLDEST_STORE_SCHEMA_VERSION = 1;

/** State entries rewritten per batch by the upgrade from version 1. */
const UPGRADE_BATCH_ENTRIES = 1000;

type Db = Level<string, unknown>;

function logKey(origin: string, seq: number): string {
  return `${origin}!${seq.toString(16).padStart(12, '0')}`;
}

function stateKey(kind: string, key: string): string {
  return `${kind}!${key}`;
}

/** State entries read per page by `listState` (their records then in one `getMany`). */
const LIST_STATE_PAGE = 256;

/** Lowest string greater than every string that starts with `prefix`. */
function prefixEnd(prefix: string): string {
  return prefix + '\uffff';
}

/** A non-negative integer as 20 digits: keys in numeric order. */
function orderedNumber(n: number): string {
  return String(n).padStart(20, '0');
}

/**
 * A used string's expiry as stored, which sorts in expiry order: Web2 entries by time under `t!`,
 * Web3 entries by block under their chain's `b!<chainId>!` (a chain id ends at its `!`, so one
 * chain's prefix never covers another's).
 */
function usedExpiryKey(expiry: UsedStringExpiry): string {
  return 'at' in expiry ? `t!${orderedNumber(expiry.at)}` : `b!${expiry.chainId}!${orderedNumber(expiry.block)}`;
}

/** A used string as stored: its expiry (as {@link usedExpiryKey} writes it) and the coordinator it was released to. */
interface UsedMark {
  expiry: string;
  holder: string;
}

/** The holder of a mark that names none (written before holders): no coordinator's address. */
const NO_HOLDER = '';

/** The holder a stored used string names; {@link NO_HOLDER} for an older build's entry. */
function holderOf(stored: UsedMark | string | number): string {
  return typeof stored === 'object' && stored !== null && typeof stored.holder === 'string' ? stored.holder : NO_HOLDER;
}

/**
 * Slot 0's named counters (its id allocation): read here, allocated and raised only through slot 0's
 * registry (src/core/slot0-registry.ts), which keeps their values in memory and writes them with
 * {@link ClaimRepo.commit}.
 */
export interface CounterRepo {
  /** Last value allocated, 0 when none. */
  current(name: string): Promise<number>;
}

/** Durable name → value claims (slot 0's uniqueness registry); callers serialise claims per name. */
export interface ClaimRepo {
  get(name: string): Promise<string | undefined>;
  put(name: string, value: string): Promise<void>;
  /** Counters' values and claims in one durable batch: a group commit of slot 0's registry. */
  commit(change: RegistryChange): Promise<void>;
}

/** The opened store. */
export interface NodeStore {
  /** Replication records (implements the core's RecordStore port). */
  records: RecordStore & { countLog(): Promise<number> };
  counters: CounterRepo;
  /** Slot 0's durable uniqueness claims. */
  claims: ClaimRepo;
  /** This member's shares (encrypted at rest by the caller). */
  shares: ShareStore;
  /** Shares this coordinator still has to deliver. */
  pendingShares: PendingShareStore;
  /** Signed strings this node has acted on once. */
  usedStrings: UsedStringStore;
  /** File jobs run by this coordinator. */
  jobs: JobRepo;
  /** Read a metadata value. */
  getMeta(key: string): Promise<unknown>;
  /** Write a metadata value durably. */
  putMeta(key: string, value: unknown): Promise<void>;
  /**
   * Every raw entry of the store (all sublevels, keys as stored: `!<sublevel>!<key>`), from one
   * LevelDB iterator created by this call: it reads from the implicit snapshot LevelDB takes when an
   * iterator is created, so the entries are one consistent point in time however long the reading
   * takes and whatever is written meanwhile (backups, src/backup).
   */
  snapshot(): AsyncGenerator<StoreEntry>;
  close(): Promise<void>;
}

/** One raw key/value of the store, as LevelDB holds it. */
export interface StoreEntry {
  key: Uint8Array;
  value: Uint8Array;
}

/** Options for {@link openStore}. */
export interface StoreOptions {
  /** LevelDB directory. */
  location: string;
  /** fsync every acknowledging write. @default true */
  sync?: boolean;
  /** Used signed strings kept in memory; beyond it a miss reads the disk. @default 200000 */
  usedStringsInMemory?: number;
  /** LevelDB's open files, table files mapped included. @default {@link STORE_MAX_OPEN_FILES} */
  maxOpenFiles?: number;
  /** LevelDB's table file size, bytes, at least 1 MiB (tests make it small to get many tables). @default 2 MiB, LevelDB's */
  maxFileSize?: number;
}

/**
 * LevelDB's open files: 64 table files kept open (it keeps 10 for itself), the least it allows.
 *
 * LevelDB memory-maps every table file it keeps open, up to 1,000, and each page it reads stays in
 * the node's RSS while the file is open. With its default (1,000 open), a member holding many
 * secrets kept most of its tables mapped after many distinct reads — the largest part of its RSS;
 * with 64 open, a small fraction of that, at the same read rate within the noise (`npm run bench --
 * scale-store`: the member's RSS against its target in docs/benchmarks.md). A table evicted from
 * the cache is closed and unmapped; reopening one reads its index (a few KiB) again.
 */
export const STORE_MAX_OPEN_FILES = 74;

/**
 * LevelDB's data block, before compression (its default: 4 KiB). Snappy compresses a block alone, and
 * a secret's record is about 4 KiB of JSON: at 4 KiB a block held one record once a batch signature's
 * path grew it past the block, and nothing of its keys and repeated strings was shared with the next.
 * At 16 KiB a block holds several records (docs/benchmarks.md, "a secret on disk").
 */
export const STORE_BLOCK_BYTES = 16 * 1024;

/** Keys read at once by the passes over a whole kind (the share inventory's, src/core/secrets/inventory.ts). */
const KEY_PAGE = 1000;

/**
 * An iterator's items {@link KEY_PAGE} at a time: one promise a page, where `for await` over the
 * iterator itself takes one an item — half the CPU of a pass over 100,000 keys.
 */
async function* pagesOf<K>(iterator: { nextv(size: number): Promise<K[]>; close(): Promise<void> }): AsyncGenerator<K[]> {
  try {
    for (;;) {
      const page = await iterator.nextv(KEY_PAGE);
      if (page.length === 0) return;
      yield page;
    }
  } finally {
    await iterator.close();
  }
}

/** Open (creating if needed) the node's LevelDB. */
export async function openStore(options: StoreOptions): Promise<NodeStore> {
  await mkdir(options.location, { recursive: true, mode: 0o700 });
  const db: Db = new Level<string, unknown>(options.location, {
    valueEncoding: 'json',
    maxOpenFiles: options.maxOpenFiles ?? STORE_MAX_OPEN_FILES,
    blockSize: STORE_BLOCK_BYTES,
    ...(options.maxFileSize !== undefined ? { maxFileSize: options.maxFileSize } : {}),
  });
  await db.open();
  const sync = options.sync ?? true;
  const log = db.sublevel<string, ReplicatedRecord>(SUBLEVELS.log, { valueEncoding: 'json' });
  // A log key; a whole record only in a version-1 store not yet upgraded (read as such meanwhile).
  const state = db.sublevel<string, string | ReplicatedRecord>(SUBLEVELS.state, { valueEncoding: 'json' });
  const vv = db.sublevel<string, number>(SUBLEVELS.vv, { valueEncoding: 'json' });
  const fp = db.sublevel<string, string>(SUBLEVELS.fp, { valueEncoding: 'json' });
  const counters = db.sublevel<string, number>(SUBLEVELS.counters, { valueEncoding: 'json' });
  const meta = db.sublevel<string, unknown>(SUBLEVELS.meta, { valueEncoding: 'json' });
  const claims = db.sublevel<string, string>(SUBLEVELS.claims, { valueEncoding: 'json' });
  const shares = db.sublevel<string, string>(SUBLEVELS.shares, { valueEncoding: 'json' });
  const pendingShares = db.sublevel<string, PendingShares>(SUBLEVELS.pendingShares, { valueEncoding: 'json' });
  // A string: an entry written before holders (its expiry); a number: before the expiry index (its forget time, Unix ms).
  const usedStrings = db.sublevel<string, UsedMark | string | number>(SUBLEVELS.usedStrings, { valueEncoding: 'json' });
  const usedByExpiry = db.sublevel<string, string>(SUBLEVELS.usedStringsByExpiry, { valueEncoding: 'json' });
  const jobs = db.sublevel<string, JobRecord>(SUBLEVELS.jobs, { valueEncoding: 'json' });
  const idKey = (secretId: number) => String(secretId).padStart(12, '0');
  // Web2 secrets by their 12-digit id; Web3 secrets as `w<chainId>:<id>` (a separate namespace).
  const labelKey = (label: number | string) => (typeof label === 'number' ? idKey(label) : `w${label}`);
  const pendingKey = (secretId: number, chainId: number | undefined) => (chainId === undefined ? idKey(secretId) : `w${chainId}:${secretId}`);
  const shareCache = createAgeOrderedMap<number | string, Uint8Array>();
  /**
   * The highest Web2 secret id a share is stored for: a share past it is absent without a read. A new
   * secret's id is past every other, and a member looked its share up (absent) as it stored it — a
   * LevelDB read, which takes LevelDB's mutex on the event loop. Shares are only ever added, here.
   */
  let highestShare = 0;
  // Only 12-digit ids sort as numbers (a Web2 secret id has 12 digits: its record's key); a label of
  // more digits is always read.
  for await (const k of shares.keys({ lt: 'w', reverse: true })) {
    if (!/^\d{12}$/.test(k)) continue;
    highestShare = Number(k);
    break;
  }
  const ordered = (label: number | string): label is number => typeof label === 'number' && label <= MAX_ORDERED_SHARE_ID;
  const pastHighestShare = (label: number | string) => ordered(label) && label > highestShare;
  const cacheShare = (label: number | string, box: Uint8Array) => {
    setWithin(shareCache, label, box, SHARE_CACHE_ENTRIES);
  };

  /**
   * Durable single puts, group-committed: the puts made in one event-loop turn go to LevelDB together
   * at its end, and those made while a batch is being written go together in the next, one fsync for
   * all of them (each member stores a share per create this way, many at once under load; a
   * `storeMany` stores its shares in one). Each resolves once its batch is durable and rejects if its
   * batch fails. Puts keep their order: a batch holds them in the order they were made.
   */
  let nextPuts: { batch: Batch; done: Promise<void>; resolve: () => void; reject: (err: unknown) => void } | undefined;
  /** A batch of puts is scheduled or being written. */
  let putsWriting = false;
  /** Resolves when no durable put is queued or being written (close waits for it). */
  let putsIdle: Promise<void> = Promise.resolve();
  let putsIdleResolve: (() => void) | undefined;
  /** Write the puts queued so far, then (at the end of a turn) the ones queued meanwhile; idle when none are. */
  function writeQueuedPuts(): void {
    const queued = nextPuts;
    nextPuts = undefined;
    if (!queued) {
      putsWriting = false;
      putsIdleResolve?.();
      putsIdleResolve = undefined;
      return;
    }
    void queued.batch
      .write({ sync })
      .then(queued.resolve, queued.reject)
      .finally(() => setImmediate(writeQueuedPuts));
  }
  /** A single durable put (sublevel put options do not carry `sync`; a batch write does). */
  async function durablePut<V>(sub: typeof meta | typeof counters | typeof claims | typeof shares | typeof pendingShares | typeof usedStrings | typeof jobs, key: string, value: V): Promise<void> {
    if (!nextPuts) {
      let resolve!: () => void;
      let reject!: (err: unknown) => void;
      const done = new Promise<void>((res, rej) => ((resolve = res), (reject = rej)));
      nextPuts = { batch: db.batch(), done, resolve, reject };
      if (!putsWriting) {
        putsWriting = true;
        if (!putsIdleResolve) putsIdle = new Promise((res) => (putsIdleResolve = res));
        setImmediate(writeQueuedPuts);
      }
    }
    nextPuts.batch.put(key, value, { sublevel: sub as typeof meta });
    return nextPuts.done;
  }

  /**
   * Schema 1 → 2: every `state` entry that holds a whole record is rewritten as that record's log key,
   * in bounded batches. Rerunnable: a crash midway leaves entries of both forms, which read alike, and
   * the schema version is raised only after the last batch.
   */
  async function upgradeStateToLogKeys(): Promise<void> {
    let batch = db.batch();
    for await (const [k, v] of state.iterator()) {
      if (typeof v === 'string') continue;
      batch.put(k, logKey(v.origin, v.seq), { sublevel: state });
      if (batch.length >= UPGRADE_BATCH_ENTRIES) {
        await batch.write({ sync: true });
        batch = db.batch();
      }
    }
    await batch.write({ sync: true });
  }

  const schema = await meta.get('schemaVersion');
  if (schema === undefined) await durablePut(meta, 'schemaVersion', STORE_SCHEMA_VERSION);
  else if (typeof schema !== 'number' || schema < OLDEST_STORE_SCHEMA_VERSION || schema > STORE_SCHEMA_VERSION) {
    await db.close();
    throw new Error(`store at ${options.location} has schema version ${String(schema)}, this build reads ${OLDEST_STORE_SCHEMA_VERSION} to ${STORE_SCHEMA_VERSION}`);
  } else if (schema < 2) {
    await upgradeStateToLogKeys();
    await durablePut(meta, 'schemaVersion', STORE_SCHEMA_VERSION);
  }

  /**
   * The records `state` entries name, in order: each log key read in one `getMany`; an entry naming
   * a record of another kind or key (its log place taken by the other record of an equivocation,
   * src/core/replication/equivocation.ts) is no winner.
   */
  async function statesOf(keys: readonly string[], stored: ReadonlyArray<string | ReplicatedRecord | undefined>): Promise<Array<ReplicatedRecord | undefined>> {
    const wanted = stored.filter((v): v is string => typeof v === 'string');
    const found = wanted.length === 0 ? [] : await log.getMany(wanted);
    let next = 0;
    return stored.map((v, i) => {
      const record = typeof v === 'string' ? found[next++] : v;
      return record !== undefined && stateKey(record.kind, record.key) === keys[i] ? record : undefined;
    });
  }

  const records: NodeStore['records'] = {
    async loadVersionVector() {
      const out: VersionVector = {};
      for await (const [k, v] of vv.iterator()) out[k] = v;
      return out;
    },
    async loadFingerprints() {
      const out: Record<string, string> = {};
      for await (const [k, v] of fp.iterator()) out[k] = v;
      return out;
    },
    async highestSeq(origin) {
      for await (const k of log.keys({ gte: `${origin}!`, lt: prefixEnd(`${origin}!`), reverse: true, limit: 1 })) {
        return parseInt(k.slice(origin.length + 1), 16);
      }
      return 0;
    },
    async hasRecord(origin, seq) {
      return (await log.get(logKey(origin, seq))) !== undefined;
    },
    async getState(kind, key) {
      const k = stateKey(kind, key);
      return (await statesOf([k], [await state.get(k)]))[0];
    },
    async getStates(pairs) {
      if (pairs.length === 0) return [];
      const keys = pairs.map((p) => stateKey(p.kind, p.key));
      return statesOf(keys, await state.getMany(keys));
    },
    async *listState(kind, opts = {}) {
      const prefix = `${kind}!${opts.prefix ?? ''}`;
      const entries = state.iterator({ gte: prefix, lt: prefixEnd(prefix), limit: opts.limit ?? -1, reverse: opts.reverse === true });
      try {
        // A page of log keys, then their records in one read.
        for (;;) {
          const page = await entries.nextv(LIST_STATE_PAGE);
          if (page.length === 0) return;
          const records = await statesOf(
            page.map(([k]) => k),
            page.map(([, v]) => v),
          );
          for (const r of records) if (r !== undefined) yield r;
        }
      } finally {
        await entries.close();
      }
    },
    async *listStateKeys(kind, opts = {}) {
      const prefix = `${kind}!`;
      for await (const page of pagesOf(state.keys({ gte: prefix, lt: prefixEnd(prefix), limit: opts.limit ?? -1, reverse: opts.reverse === true }))) yield page.map((k) => k.slice(prefix.length));
    },
    getLog: (origin, seq) => log.get(logKey(origin, seq)),
    allLog: () => log.values(),
    async scanLog(origin, fromSeq, limit) {
      return log.values({ gte: logKey(origin, fromSeq), lt: prefixEnd(`${origin}!`), limit }).all();
    },
    async origins() {
      const out: string[] = [];
      // Skip from one origin to the next instead of walking every record.
      let gte = '';
      for (;;) {
        const keys = await log.keys({ gte, limit: 1 }).all();
        const k = keys[0];
        if (k === undefined) return out;
        const origin = k.slice(0, k.indexOf('!'));
        out.push(origin);
        gte = prefixEnd(`${origin}!`);
      }
    },
    async commit(change) {
      const batch = db.batch();
      for (const r of change.log) batch.put(logKey(r.origin, r.seq), r, { sublevel: log });
      // Every winner is a log record, of this batch or an earlier one: the state names its place.
      for (const r of change.states) batch.put(stateKey(r.kind, r.key), logKey(r.origin, r.seq), { sublevel: state });
      for (const [origin, seq] of Object.entries(change.vv)) batch.put(origin, seq, { sublevel: vv });
      for (const [origin, hex] of Object.entries(change.fp ?? {})) batch.put(origin, hex, { sublevel: fp });
      await batch.write({ sync });
    },
    async countLog() {
      let n = 0;
      for await (const _k of log.keys()) n++;
      return n;
    },
  };

  let useChain: Promise<unknown> = Promise.resolve();
  /** Every used-string mark write in flight: a repeat for the same holder waits for them. */
  let usedWrites: Promise<unknown> = Promise.resolve();
  /**
   * The used strings' keys in memory with their holders, loaded on first use (or prune): a use is
   * checked without a LevelDB read. `complete` while it holds every key on disk; beyond
   * {@link USED_STRINGS_IN_MEMORY} the oldest are dropped from memory and a miss reads the disk. The
   * load also files entries written before the expiry index into it, as Web2 entries of their time
   * (an old entry holds only that): each one's rewrite and index key in one batch.
   */
  interface UsedIndex {
    holders: AgeOrderedMap<string, string>;
    complete: boolean;
  }
  // One string per holder, whatever the entries read: the holders are the cluster's few coordinators.
  const holderNames = new Map<string, string>();
  const interned = (holder: string) => {
    const known = holderNames.get(holder);
    if (known !== undefined) return known;
    holderNames.set(holder, holder);
    return holder;
  };
  let usedLoad: Promise<UsedIndex> | undefined;
  const usedIndex = () =>
    (usedLoad ??= (async () => {
      const index: UsedIndex = { holders: createAgeOrderedMap(), complete: true };
      const legacy = batches();
      for await (const [k, v] of usedStrings.iterator()) {
        remember(index, k, interned(holderOf(v)));
        if (typeof v === 'number') await legacy.add(k, (batch) => markUsed(batch, k, usedExpiryKey({ at: v }), NO_HOLDER));
      }
      await legacy.end();
      return index;
    })());
  const remember = (index: UsedIndex, key: string, holder: string) => {
    if (setWithin(index.holders, key, holder, options.usedStringsInMemory ?? USED_STRINGS_IN_MEMORY)) index.complete = false;
  };
  type Batch = ReturnType<typeof db.batch>;
  /** An entry and its expiry index key, put in `batch`. */
  const markUsed = (batch: Batch, key: string, expiry: string, holder: string) => {
    batch.put(key, { expiry, holder } satisfies UsedMark, { sublevel: usedStrings as unknown as typeof meta });
    batch.put(`${expiry}!${key}`, '', { sublevel: usedByExpiry as unknown as typeof meta });
  };
  /** The marks made in this turn of the event loop: one batch, written once the turn's work is done. */
  let markBatch: { batch: Batch; written: Promise<void> } | undefined;
  /**
   * Put a mark into this turn's batch and resolve once that batch is written: under load a member
   * marks many strings a turn (one per decrypt), and one LevelDB write for all of them costs a
   * fraction of one each. At light load a mark waits only for the end of its turn.
   */
  const writeMark = (key: string, expiry: string, holder: string): Promise<void> => {
    if (!markBatch) {
      const batch = db.batch();
      const written = new Promise<void>((resolve) => setImmediate(resolve)).then(() => {
        if (markBatch?.batch === batch) markBatch = undefined;
        return batch.write();
      });
      markBatch = { batch, written };
      usedWrites = Promise.all([usedWrites, written.catch(() => undefined)]).then(() => undefined);
    }
    markUsed(markBatch.batch, key, expiry, holder);
    return markBatch.written;
  };
  /**
   * Mark `key` used by `holder`, or find whom it is marked for (UsedStringStore.use). Check and mark
   * are one synchronous step against the memory index, so two concurrent uses of one string see each
   * other. Written without an fsync: the mark survives a process crash (LevelDB's log is in the OS's
   * hands), and costing every decrypt a disk flush per member is not worth the window a power loss
   * would reopen (docs/security.md, "Share release").
   */
  const useString = async (key: string, holder: string, expiry: UsedStringExpiry): Promise<boolean> => {
    const index = await usedIndex();
    const held = index.holders.get(key);
    if (held !== undefined) {
      if (held !== holder) return false;
      // The holder's own repeat: its first use's mark may still be on its way to disk, and a share
      // leaves only once its mark is written. Gone meanwhile (its write failed, or it left memory):
      // look again.
      await usedWrites;
      return index.holders.get(key) === holder || useString(key, holder, expiry);
    }
    if (!index.complete) {
      // Past the memory bound: what the index no longer holds may be on disk.
      const run = useChain.then(() => usedStrings.get(key));
      useChain = run.catch(() => undefined);
      const stored = await run;
      // Marked in memory meanwhile: as above.
      if (index.holders.has(key)) return useString(key, holder, expiry);
      if (stored !== undefined) return holderOf(stored) === holder;
    }
    const name = interned(holder);
    remember(index, key, name);
    try {
      await writeMark(key, usedExpiryKey(expiry), name);
    } catch (err) {
      if (index.holders.get(key) === name) index.holders.delete(key);
      throw err;
    }
    return true;
  };
  /**
   * Changes to many used strings, written {@link USED_STRINGS_BATCH_ENTRIES} keys at a time (durably):
   * bounded memory however many. `written` gets each batch's keys once it is on disk.
   */
  const batches = (written: (keys: readonly string[]) => void = () => undefined) => {
    let batch = db.batch();
    let keys: string[] = [];
    const write = async () => {
      if (keys.length === 0) return batch.close();
      await batch.write({ sync });
      written(keys);
    };
    return {
      async add(key: string, change: (batch: Batch) => void) {
        change(batch);
        keys.push(key);
        if (keys.length < USED_STRINGS_BATCH_ENTRIES) return;
        await write();
        batch = db.batch();
        keys = [];
      },
      end: write,
    };
  };

  const counterRepo: CounterRepo = { current: async (name) => (await counters.get(name)) ?? 0 };
  const claimRepo: ClaimRepo = {
    get: (name) => claims.get(name),
    put: (name, value) => durablePut(claims, name, value),
    async commit(change) {
      const batch = db.batch();
      for (const [name, value] of change.counters) batch.put(name, value, { sublevel: counters as unknown as typeof meta });
      for (const [name, value] of change.claims) batch.put(name, value, { sublevel: claims as unknown as typeof meta });
      await batch.write({ sync });
    },
  };

  return {
    records,
    counters: counterRepo,
    claims: claimRepo,
    shares: {
      // The boxes are encrypted at rest, so keeping recent ones in memory holds nothing in clear and
      // saves a LevelDB read on every decrypt. Shares are written once and never change.
      async get(label) {
        const hit = shareCache.get(label);
        if (hit) return hit;
        if (pastHighestShare(label)) return undefined;
        const v = await shares.get(labelKey(label));
        if (v === undefined) return undefined;
        const box = new Uint8Array(Buffer.from(v, 'base64'));
        cacheShare(label, box);
        return box;
      },
      async has(label) {
        if (shareCache.has(label)) return true;
        return !pastHighestShare(label) && (await shares.get(labelKey(label))) !== undefined;
      },
      async heldLabels() {
        const keys = new Set<string>();
        for await (const page of pagesOf(shares.keys())) for (const k of page) keys.add(k);
        return { has: (label: number | string) => keys.has(labelKey(label)) };
      },
      async put(label, box, options) {
        if (options?.durable === false) await shares.put(labelKey(label), Buffer.from(box).toString('base64'));
        else await durablePut(shares, labelKey(label), Buffer.from(box).toString('base64'));
        cacheShare(label, box);
        if (ordered(label) && label > highestShare) highestShare = label;
      },
      async flush() {
        // A synced write flushes LevelDB's log, and with it every write before it.
        await durablePut(meta, 'sharesFlushedAt', Date.now());
      },
    },
    pendingShares: {
      get: (secretId, chainId) => pendingShares.get(pendingKey(secretId, chainId)),
      put: (entry) => durablePut(pendingShares, pendingKey(entry.secretId, entry.chainId), entry),
      async delete(secretId, chainId) {
        const batch = db.batch();
        batch.del(pendingKey(secretId, chainId), { sublevel: pendingShares as unknown as typeof meta });
        await batch.write({ sync });
      },
      list: () => pendingShares.values(),
    },
    usedStrings: {
      use: useString,
      async chains() {
        const out: number[] = [];
        // Skip from one chain to the next instead of walking its entries.
        let gte = 'b!';
        for (;;) {
          const [k] = await usedByExpiry.keys({ gte, lt: prefixEnd('b!'), limit: 1 }).all();
          if (k === undefined) return out.sort((x, y) => x - y);
          const chainId = k.slice(2, k.indexOf('!', 2));
          out.push(Number(chainId));
          gte = prefixEnd(`b!${chainId}!`);
        }
      },
      async prune({ now, blocksBelow }) {
        // Entries written before the expiry index join it first.
        const index = await usedIndex();
        // Only the expired end of each range is read: Web2 entries up to `now`, each chain's below its block.
        const range = (prefix: string, below: number) => ({ gte: prefix, lt: prefix + orderedNumber(below), keyAt: prefix.length + orderedNumber(0).length + 1 });
        const ranges = [range('t!', Math.floor(now) + 1)];
        for (const [chainId, below] of blocksBelow) if (below > 0) ranges.push(range(`b!${chainId}!`, below));
        let n = 0;
        // Out of memory once off the disk: a use in between finds the mark still there.
        const forgotten = batches((keys) => {
          for (const key of keys) index.holders.delete(key);
          n += keys.length;
        });
        for (const { gte, lt, keyAt } of ranges) {
          for await (const k of usedByExpiry.keys({ gte, lt })) {
            const key = k.slice(keyAt);
            await forgotten.add(key, (batch) => {
              batch.del(k, { sublevel: usedByExpiry as unknown as typeof meta });
              batch.del(key, { sublevel: usedStrings as unknown as typeof meta });
            });
          }
        }
        await forgotten.end();
        return n;
      },
    },
    jobs: {
      get: (id) => jobs.get(id),
      put: (job) => durablePut(jobs, job.id, job),
      list: () => jobs.values(),
      delete: (id) => jobs.del(id),
    },
    getMeta: (k) => meta.get(k),
    putMeta: (k, v) => durablePut(meta, k, v),
    snapshot() {
      // Created now, not at the first read: the snapshot is the moment of this call.
      const iterator = db.iterator<Uint8Array, Uint8Array>({ keyEncoding: 'view', valueEncoding: 'view' });
      return (async function* () {
        try {
          for await (const [key, value] of iterator) yield { key, value };
        } finally {
          await iterator.close();
        }
      })();
    },
    async close() {
      await putsIdle;
      if (db.status === 'open' || db.status === 'opening') await db.close();
    },
  };
}
