/**
 * The replication engine: the one path for every state change (CONTRIBUTING.md rule 4) and the one validator
 * every incoming record passes (rule 6).
 *
 * - `replicate` signs a record, persists it locally, sends it to every member over `apply` with a
 *   deadline and succeeds at ≥ threshold acks (docs/architecture.md, "Quorum writes").
 * - `ingest` validates records from any source (apply, gossip, sync) and applies them idempotently.
 *   Applies are group-committed: everything queued while a batch is being written goes into the
 *   next single `sync` batch, so durability costs one fsync per batch, not per record.
 */
import type { Logger } from '../../log/index.ts';
import type { NodeMetrics } from '../../metrics/index.ts';
import { AppError, QuorumError, type MemberFailure } from '../../errors/index.ts';
import { fromHex, isHex, signDigest, toHex, uncompressedPublicKey, verifyDigest, type VerifyItem } from '../../crypto/index.ts';
import type { KindRegistry, RecordContext, RecordKindDefinition } from './kinds.ts';
import { supersedes } from './kinds.ts';
import { recordDigest, createHlcClock, type HlcClock, type ReplicatedRecord } from './record.ts';
import type { BatchWriteReport, ClusterNodeEntry, MembershipView, PeerTransport, RecordStore, ReplicateOptions, Replicator, StateReader, SyncRequest, VersionVector, WriteIntent, WriteReport } from './ports.ts';
import { isCoordinatorEntry, membersOf, PeerError } from './ports.ts';
import type { Json } from './canonical-json.ts';

/** Where an incoming record came from (a metrics label). */
export type RecordSource = 'local' | 'apply' | 'gossip' | 'sync';

/** A (kind, key) whose winning record changed in one committed batch. */
export interface StateChange {
  before: ReplicatedRecord | undefined;
  after: ReplicatedRecord;
}

/** Outcome of ingesting a batch. */
export interface IngestResult {
  /** Newly stored. */
  applied: number;
  /** Already present (idempotent no-op). */
  duplicates: number;
  /** Refused by the validator, with reasons. */
  rejected: Array<{ origin: string; seq: number; reason: string }>;
}

/**
 * One committed batch: the newly stored records (never duplicates) and the state changes they made
 * (one per (kind, key) whose winner changed: the winner before the batch and after it).
 */
export interface AppliedEvent {
  records: readonly ReplicatedRecord[];
  source: RecordSource;
  changes: readonly StateChange[];
}

/** Where services hear about committed batches (the engine implements it). */
export interface AppliedEvents {
  /**
   * Call `listener` after every batch that stored new records, once they are durable. Listeners run
   * in subscription order; one that throws is logged and does not stop the others. Returns the
   * unsubscribe function.
   */
  onApplied(listener: (event: AppliedEvent) => void): () => void;
}

/** Options of {@link createReplicationEngine}. */
export interface ReplicationEngineOptions {
  /** Deadline for each member's `apply` ack, ms. @default 2000 */
  applyTimeoutMs: number;
  /**
   * After quorum is reached, how long to keep waiting for the remaining members' acks so the write
   * report is complete in the normal case without letting one slow member set the latency, ms.
   * @default 100
   */
  quorumGraceMs?: number;
  /** Most records committed in one LevelDB batch. @default 2000 */
  maxBatchRecords?: number;
  /**
   * Current states kept in memory (LRU): every signed request reads its session, principal and secret,
   * so hot keys are served without a LevelDB read and a JSON parse. @default 20000
   */
  stateCacheEntries?: number;
  /**
   * How far ahead of this node's clock a record's HLC may be, ms. A record stamped further ahead is
   * refused (sync offers it again once the clock has caught up), so no origin can write a value that
   * wins every later write by its clock alone. @default 60000
   */
  maxClockSkewMs?: number;
}

/** Dependencies of {@link createReplicationEngine}. */
export interface ReplicationEngineDeps {
  store: RecordStore;
  kinds: KindRegistry;
  membership: MembershipView;
  /** Late-bound: the cluster module is created after the engine. */
  transport: () => PeerTransport;
  /** This node's secp256k1 private key (signs its records). */
  signingKey: Uint8Array;
  clock: () => number;
  logger: Logger;
  metrics: NodeMetrics;
  /**
   * Verifies record signatures in batches (src/crypto/verify-pool.ts: large ones on a worker thread).
   * @default inline, on the event loop
   */
  verifier?: { verify(items: readonly VerifyItem[]): Promise<boolean[]> };
}

/** Records checked as far as they can be without the replica ({@link ReplicationEngine.prepareIngest}). */
export interface PreparedIngest {
  readonly source: RecordSource;
  /** Refused so far, by position in the batch. */
  readonly refusals: Array<{ at: number; reason: string; origin: string; seq: number }>;
  /** Passed structure and signature, by position in the batch. */
  readonly checked: ReadonlyArray<{ at: number; record: ReplicatedRecord; kind: RecordKindDefinition; node: { entry: ClusterNodeEntry; publicKey: Uint8Array; coordinator: boolean } }>;
  /** Duplicates of records stored lately. */
  readonly known: number;
  /** Copies of records being stored now: duplicates once those are durable. */
  readonly awaiting: ReadonlyArray<{ item: unknown; stored: Promise<boolean> }>;
}

/** The engine's surface for the node and the cluster module. */
export interface ReplicationEngine extends Replicator, StateReader, AppliedEvents {
  /** Load the version vector and own sequence from the store. */
  open(): Promise<void>;
  /** Validate and apply records from a peer or locally: {@link prepareIngest} then {@link ingestPrepared}. */
  ingest(records: unknown[], source: RecordSource): Promise<IngestResult>;
  /**
   * The first half of `ingest`: duplicates recognised, structure and signatures checked (reads no
   * state). A sync requester prepares the next page while the one before is being stored.
   */
  prepareIngest(records: unknown[], source: RecordSource): Promise<PreparedIngest>;
  /** The second half of `ingest`: evidence checks against the replica, then the durable store. Call in page order. */
  ingestPrepared(prepared: PreparedIngest): Promise<IngestResult>;
  /** This node's version vector (a copy). */
  versionVector(): VersionVector;
  /** What to ask a peer for in a catch-up round. */
  syncRequest(): Promise<SyncRequest>;
  /** Records a peer that sent `request` is missing, in pages of at most `limit`. */
  missingFor(request: SyncRequest, options: { limit: number }): AsyncGenerator<ReplicatedRecord[]>;
  /**
   * Origins seen sending two different records under one (origin, seq), with when. Members keep the
   * version with the lower content id, so every replica ends up with the same one.
   */
  equivocators(): Array<{ origin: string; seq: number; at: number }>;
  /** One record of the log by origin and seq (e.g. the change stored right after a consumption). */
  logRecord(origin: string, seq: number): Promise<ReplicatedRecord | undefined>;
  /** Wait for queued applies to finish (shutdown). */
  drain(): Promise<void>;
  /**
   * Hold this node's own writes until `until` resolves: they wait, unnumbered; if it rejects, they and
   * every later one fail with its reason. A node restored from a backup holds them while it catches
   * its own origin up from its peers, so it never reissues a seq it used after the backup
   * (src/backup/catch-up.ts).
   */
  holdOwnWrites(until: Promise<void>): void;
}

const MAX_KEY_LENGTH = 512;
/** Most missing seqs of one origin named in a sync request; beyond it, the peer resends from vv. */
const MAX_SYNC_GAPS = 1000;
/** Recently stored records whose signature is remembered (cheap duplicate checks). */
const RECENT_SIGS = 20_000;

interface Pending {
  records: ReplicatedRecord[];
  /**
   * This node's own writes, signed when their batch commits: a seq is taken only by a record that is
   * then durably stored, so a failed commit never leaves a gap in this origin's sequence.
   */
  own?: WriteIntent[];
  source: RecordSource;
  resolve: (r: IngestResult) => void;
  reject: (e: unknown) => void;
}

/**
 * A read-through LRU of current states. The engine is the only writer of states, so updating the
 * cache after every commit keeps it coherent; a read that raced a commit is not cached (generation
 * check), so a stale value can never be inserted. Absence is cached too.
 */
function createStateCache(store: RecordStore, maxEntries: number) {
  const entries = new Map<string, ReplicatedRecord | null>();
  let generation = 0;
  const put = (k: string, v: ReplicatedRecord | null) => {
    entries.delete(k);
    entries.set(k, v);
    if (entries.size > maxEntries) entries.delete(entries.keys().next().value!);
  };
  return {
    async get(kind: string, key: string): Promise<ReplicatedRecord | undefined> {
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
    update(changed: Iterable<ReplicatedRecord>) {
      generation++;
      for (const r of changed) put(`${r.kind}!${r.key}`, r);
    },
  };
}

/** Create the replication engine. */
export function createReplicationEngine(options: ReplicationEngineOptions, deps: ReplicationEngineDeps): ReplicationEngine {
  const { store, kinds, membership } = deps;
  const verifier = deps.verifier ?? { verify: async (items: readonly VerifyItem[]) => items.map((it) => verifyDigest(it.sig, it.digest, it.publicKey)) };
  const stateCache = createStateCache(store, options.stateCacheEntries ?? 20_000);
  const log = deps.logger.child({ module: 'replication' });
  const descriptor = membership.descriptor;
  const self = membership.self;
  const selfIsMember = self.slot !== null;
  const clusterId = descriptor.clusterId;
  const threshold = descriptor.threshold;
  const graceMs = options.quorumGraceMs ?? 100;
  const maxBatch = options.maxBatchRecords ?? 2000;
  const maxSkewMs = options.maxClockSkewMs ?? 60_000;
  // Current nodes, and retired identities (src/core/membership/epoch.ts) up to the last seq of their
  // log: a node catching up still gets what they wrote, and a lost or stolen key writes nothing new.
  const nodesByAddress = new Map<string, { entry: ClusterNodeEntry; publicKey: Uint8Array; coordinator: boolean; lastSeq?: number }>();
  for (const n of descriptor.retired ?? []) nodesByAddress.set(n.nodeAddress, { entry: n, publicKey: uncompressedPublicKey(fromHex(n.signingPublicKey)), coordinator: isCoordinatorEntry(n), lastSeq: n.lastSeq });
  for (const n of descriptor.nodes) nodesByAddress.set(n.nodeAddress, { entry: n, publicKey: uncompressedPublicKey(fromHex(n.signingPublicKey)), coordinator: isCoordinatorEntry(n) });
  const otherMembers = membersOf(descriptor).filter((m) => m.id !== self.id);
  const hlc: HlcClock = createHlcClock(deps.clock, [0, 0], maxSkewMs);

  let vv: VersionVector = {};
  /** Highest seq stored per origin, contiguous or not. */
  const maxStored = new Map<string, number>();
  /** Per origin, XOR of the content ids of every record stored (see {@link SyncRequest}). */
  const fingerprints = new Map<string, bigint>();
  // A record's content id is the digest its signature covers: computed once, when it is verified or
  // signed, and remembered for the fingerprints and equivocation checks.
  const contentIds = new WeakMap<ReplicatedRecord, bigint>();
  const idOf = (digest: Uint8Array) => BigInt('0x' + toHex(digest));
  const contentId = (r: ReplicatedRecord) => {
    let id = contentIds.get(r);
    if (id === undefined) contentIds.set(r, (id = idOf(recordDigest(clusterId, r))));
    return id;
  };
  const addFingerprint = (r: ReplicatedRecord, id = contentId(r)) => fingerprints.set(r.origin, (fingerprints.get(r.origin) ?? 0n) ^ id);
  const equivocations = new Map<string, { origin: string; seq: number; at: number }>();
  /**
   * Signatures of recently stored records by `<origin>!<seq>`: the duplicate that gossip and resends
   * bring right after the direct apply is matched here, without reading the log.
   */
  const recentSigs = new Map<string, string>();
  /** Records verified and queued by {@link ingest}, not durable yet, by `<origin>!<seq>`. */
  const inFlight = new Map<string, { sig: string; stored: Promise<boolean> }>();
  const rememberSig = (r: ReplicatedRecord) => {
    recentSigs.set(`${r.origin}!${r.seq}`, r.sig);
    if (recentSigs.size > RECENT_SIGS) recentSigs.delete(recentSigs.keys().next().value!);
  };
  let ownSeq = 0;
  const appliedListeners = new Set<(event: AppliedEvent) => void>();
  /** Set while own writes are held ({@link ReplicationEngine.holdOwnWrites}). */
  let ownWritesHeld: Promise<void> | undefined;
  const queue: Pending[] = [];
  let working: Promise<void> | undefined;

  /** The key rules every node applies to a kind; a refusal reason or undefined. */
  function keyProblem(kind: RecordKindDefinition, key: string): string | undefined {
    return key.length === 0 || key.length > MAX_KEY_LENGTH || (kind.key && !kind.key(key)) ? 'bad key' : undefined;
  }

  /** Who may write a kind (docs/security.md, "Who may write what"). */
  function mayWrite(kind: RecordKindDefinition, node: { entry: ClusterNodeEntry; coordinator: boolean }): boolean {
    return kind.writers.some((w) => (w === 'coordinator' ? node.coordinator : w === 'slot0' ? node.entry.slot === 0 : node.entry.slot !== null));
  }

  /** The body rules every node applies to a kind (schema, then the kind's own evidence check). */
  async function bodyProblem(kind: RecordKindDefinition, body: Json, context: RecordContext): Promise<string | undefined> {
    if (!kind.body.safeParse(body).success) return 'bad body';
    return kind.validate?.(body, context);
  }

  /** The replica as the kinds' evidence checks see it. */
  const current = async (kind: string, key: string) => {
    const r = await stateCache.get(kind, key);
    return r ? { body: r.body, origin: r.origin } : undefined;
  };

  /**
   * The context a kind's evidence check sees. `incoming` is the record being checked (own writes not
   * signed yet carry the newest HLC, which wins every tie but a higher rank).
   */
  function contextOf(kind: RecordKindDefinition, incoming: ReplicatedRecord, node: { entry: ClusterNodeEntry; coordinator: boolean }, siblings: RecordContext['siblings']): RecordContext {
    return {
      key: incoming.key,
      origin: node.entry.nodeAddress,
      originSlot: node.entry.slot,
      originIsCoordinator: node.coordinator,
      atMs: incoming.hlc[0],
      current,
      siblings,
      async standing() {
        const now = await stateCache.get(incoming.kind, incoming.key);
        return { current: now?.body, wins: supersedes(kind, now, incoming) };
      },
    };
  }

  type Checked = { record: ReplicatedRecord; kind: RecordKindDefinition; node: { entry: ClusterNodeEntry; publicKey: Uint8Array; coordinator: boolean } };
  type Refusal = { at: number; reason: string; origin: string; seq: number };
  /** A record that passed every structural check; its signature is verified next, in one batch. */
  type Unverified = Checked & { digest: Uint8Array; sig: Uint8Array };

  /** Structural checks, and the digest the signature must cover; returns a reason when the record must be refused. */
  function validate(raw: unknown): Unverified | { reason: string; origin: string; seq: number } {
    const r = raw as Partial<ReplicatedRecord> | null;
    const origin = typeof r?.origin === 'string' ? r.origin : '?';
    const seq = typeof r?.seq === 'number' ? r.seq : -1;
    const refuse = (reason: string) => ({ reason, origin, seq });
    if (!r || typeof r !== 'object') return refuse('not an object');
    if (typeof r.kind !== 'string' || typeof r.key !== 'string' || typeof r.sig !== 'string') return refuse('malformed');
    if (!Number.isSafeInteger(seq) || seq < 1) return refuse('bad seq');
    const h = r.hlc;
    if (!Array.isArray(h) || h.length !== 2 || !Number.isSafeInteger(h[0]) || !Number.isSafeInteger(h[1]) || h[0] < 0 || h[1] < 0) return refuse('bad hlc');
    const node = nodesByAddress.get(origin);
    if (!node) return refuse('unknown origin');
    if (node.lastSeq !== undefined && seq > node.lastSeq) return refuse('retired origin');
    const kind = kinds.get(r.kind);
    if (!kind) return refuse('unknown kind');
    if (!mayWrite(kind, node)) return refuse('origin may not write this kind');
    if (h[0] > deps.clock() + maxSkewMs) return refuse('hlc ahead of clock');
    const badKey = keyProblem(kind, r.key);
    if (badKey) return refuse(badKey);
    const record: ReplicatedRecord = { kind: r.kind, key: r.key, origin, seq, hlc: [h[0], h[1]], body: r.body ?? null, sig: r.sig };
    if (!isHex(record.sig)) return refuse('bad signature');
    return { record, kind, node, digest: recordDigest(clusterId, record), sig: fromHex(record.sig) };
  }

  async function processBatch(batch: Pending[]): Promise<void> {
    const seqBefore = ownSeq;
    try {
      await commitBatch(batch);
    } catch (err) {
      // Nothing of this batch is stored: its own records give their seqs back.
      ownSeq = seqBefore;
      for (const p of batch) if (p.own) p.records = [];
      throw err;
    }
  }

  async function commitBatch(batch: Pending[]): Promise<void> {
    for (const p of batch) {
      if (!p.own) continue;
      p.records = p.own.map((intent) => {
        const unsigned = { kind: intent.kind, key: intent.key, origin: self.nodeAddress, seq: ++ownSeq, hlc: hlc.now(), body: intent.body };
        const digest = recordDigest(clusterId, unsigned);
        const record: ReplicatedRecord = { ...unsigned, sig: '0x' + toHex(signDigest(digest, deps.signingKey)) };
        contentIds.set(record, idOf(digest));
        return record;
      });
    }
    const logged = new Map<string, ReplicatedRecord>();
    const results = batch.map<IngestResult>(() => ({ applied: 0, duplicates: 0, rejected: [] }));
    const touched = new Set<string>();
    // Existence is known in memory for everything except seqs at or below the highest stored one
    // that arrived out of order, which are rare: only those cost a LevelDB read.
    const has = async (origin: string, seq: number) =>
      seq <= (vv[origin] ?? 0) ||
      logged.has(`${origin}!${seq}`) ||
      (seq <= (maxStored.get(origin) ?? 0) && (await store.hasRecord(origin, seq)));

    const fresh: ReplicatedRecord[] = [];
    const conflicts: Array<{ stored: ReplicatedRecord; incoming: ReplicatedRecord }> = [];
    for (let i = 0; i < batch.length; i++) {
      const res = results[i]!;
      for (const r of batch[i]!.records) {
        if (await has(r.origin, r.seq)) {
          res.duplicates++;
          // A duplicate must be the same record: another one under the same (origin, seq) is an
          // equivocation (our own seqs are ours alone, and nobody else can sign for us).
          if (r.origin !== self.nodeAddress && recentSigs.get(`${r.origin}!${r.seq}`) !== r.sig) {
            const stored = logged.get(`${r.origin}!${r.seq}`) ?? (await store.getLog(r.origin, r.seq));
            if (stored && stored.sig !== r.sig && contentId(stored) !== contentId(r)) conflicts.push({ stored, incoming: r });
          }
          continue;
        }
        logged.set(`${r.origin}!${r.seq}`, r);
        touched.add(r.origin);
        fresh.push(r);
        res.applied++;
        hlc.observe(r.hlc);
      }
    }
    if (fresh.length === 0) {
      for (const c of conflicts) await resolveEquivocation(c.stored, c.incoming);
      batch.forEach((p, i) => p.resolve(results[i]!));
      return;
    }

    // Current winners of every key touched, in one read.
    const keys = [...new Map(fresh.map((r) => [`${r.kind}!${r.key}`, { kind: r.kind, key: r.key }])).entries()];
    const currents = await store.getStates(keys.map(([, v]) => v));
    const winners = new Map<string, ReplicatedRecord | undefined>(keys.map(([k], i) => [k, currents[i]]));
    const changed = new Map<string, ReplicatedRecord>();
    for (const r of fresh) {
      const sk = `${r.kind}!${r.key}`;
      if (supersedes(kinds.get(r.kind)!, winners.get(sk), r)) {
        winners.set(sk, r);
        changed.set(sk, r);
      }
    }
    const vvChange: VersionVector = {};
    for (const origin of touched) {
      let s = vv[origin] ?? 0;
      while (await has(origin, s + 1)) s++;
      if (s !== (vv[origin] ?? 0)) vvChange[origin] = s;
    }
    await store.commit({ log: fresh, states: [...changed.values()], vv: vvChange });
    for (const r of fresh) {
      addFingerprint(r);
      rememberSig(r);
    }
    stateCache.update(changed.values());
    for (const c of conflicts) await resolveEquivocation(c.stored, c.incoming);
    vv = { ...vv, ...vvChange };
    for (const r of fresh) if (r.seq > (maxStored.get(r.origin) ?? 0)) maxStored.set(r.origin, r.seq);
    // Our own records can come back from peers (a node restored from a backup): a seq any of them
    // holds is used, whatever this node's log said at open.
    for (const r of fresh) if (r.origin === self.nodeAddress && r.seq > ownSeq) ownSeq = r.seq;
    for (let i = 0; i < batch.length; i++) {
      const res = results[i]!;
      if (res.applied) deps.metrics.recordsApplied.inc({ source: batch[i]!.source }, res.applied);
      batch[i]!.resolve(res);
    }
    if (appliedListeners.size > 0) {
      const before = new Map(keys.map(([k], i) => [k, currents[i]]));
      const event: AppliedEvent = { records: fresh, source: batch[0]!.source, changes: [...changed].map(([k, after]) => ({ before: before.get(k), after })) };
      for (const listener of appliedListeners) {
        try {
          listener(event);
        } catch (err) {
          log.error({ err }, 'onApplied listener failed');
        }
      }
    }
  }

  /**
   * Two valid records under one (origin, seq): flag the origin, and keep the one with the lower
   * content id — a rule every member applies alike, so all replicas end up holding the same record
   * whatever order they saw the two in. The states of both keys are recomputed from the log.
   */
  async function resolveEquivocation(stored: ReplicatedRecord, incoming: ReplicatedRecord): Promise<void> {
    const key = `${incoming.origin}!${incoming.seq}`;
    if (!equivocations.has(key)) {
      equivocations.set(key, { origin: incoming.origin, seq: incoming.seq, at: deps.clock() });
      deps.metrics.equivocations.inc({ origin: incoming.origin });
      log.error({ origin: incoming.origin, seq: incoming.seq }, 'origin equivocates: two different records with one seq');
    }
    const storedId = contentId(stored);
    const incomingId = contentId(incoming);
    if (incomingId >= storedId) return;
    const winners = new Map<string, ReplicatedRecord | undefined>([
      [`${stored.kind}!${stored.key}`, undefined],
      [`${incoming.kind}!${incoming.key}`, undefined],
    ]);
    for await (const r of store.allLog()) {
      const candidate = r.origin === incoming.origin && r.seq === incoming.seq ? incoming : r;
      const k = `${candidate.kind}!${candidate.key}`;
      if (!winners.has(k)) continue;
      const kind = kinds.get(candidate.kind);
      if (kind && supersedes(kind, winners.get(k), candidate)) winners.set(k, candidate);
    }
    const states = [...winners.values()].filter((r): r is ReplicatedRecord => r !== undefined);
    await store.commit({ log: [incoming], states, vv: {} });
    fingerprints.set(incoming.origin, (fingerprints.get(incoming.origin) ?? 0n) ^ storedId ^ incomingId);
    stateCache.update(states);
    log.warn({ origin: incoming.origin, seq: incoming.seq }, 'equivocation resolved: kept the record with the lower content id');
  }

  function kick(): void {
    if (working) return;
    working = (async () => {
      while (queue.length > 0) {
        const batch: Pending[] = [];
        let n = 0;
        while (queue.length > 0 && (batch.length === 0 || n + queue[0]!.records.length <= maxBatch)) {
          const p = queue.shift()!;
          n += p.records.length;
          batch.push(p);
        }
        try {
          await processBatch(batch);
        } catch (err) {
          log.error({ err }, 'apply batch failed');
          for (const p of batch) p.reject(err);
        }
      }
    })().finally(() => {
      working = undefined;
      if (queue.length > 0) kick();
    });
  }

  function enqueue(records: ReplicatedRecord[], source: RecordSource): Promise<IngestResult> {
    return new Promise((resolve, reject) => {
      queue.push({ records, source, resolve, reject });
      kick();
    });
  }

  /** Queue this node's own writes; they are signed, numbered and committed in the next batch. */
  async function enqueueOwn(intents: WriteIntent[]): Promise<ReplicatedRecord[]> {
    if (ownWritesHeld) await ownWritesHeld;
    return new Promise((resolve, reject) => {
      const p: Pending = { records: [], own: intents, source: 'local', resolve: () => resolve(p.records), reject };
      queue.push(p);
      kick();
    });
  }

  /** A refusal: kept for the result, counted, logged. */
  function refuseInto(refusals: Refusal[], source: RecordSource, at: number, v: { reason: string; origin: string; seq: number }): void {
    refusals.push({ at, ...v });
    // The label is the reason's fixed part (before any `:` detail), so its values stay a small set.
    deps.metrics.recordsRejected.inc({ reason: v.reason.split(':')[0]!.trim().replace(/\s+/g, '_') });
    log.warn({ origin: v.origin, seq: v.seq, reason: v.reason, source }, 'record rejected');
  }

  /**
   * The first half of {@link ingest}: duplicates recognised, structure checked, signatures verified
   * (off the event loop for a large batch). It reads no state, so the next sync page can be prepared
   * while the one before is checked and stored.
   */
  async function prepareIngest(raw: unknown[], source: RecordSource): Promise<PreparedIngest> {
    const refusals: Refusal[] = [];
    const refuse = (at: number, v: { reason: string; origin: string; seq: number }) => refuseInto(refusals, source, at, v);
    const checked: Array<Checked & { at: number }> = [];
    const unverified: Array<Unverified & { at: number }> = [];
    // A record stored here lately, byte for byte the same signature under the same (origin, seq), is a
    // duplicate (catch-up from several peers at once brings each record several times): it is neither
    // verified nor checked again. Anything else under a stored (origin, seq) goes the whole way, so an
    // equivocation is still seen.
    // One that is being stored right now (verified, queued, not durable yet) is awaited: a duplicate
    // once that store is durable, checked the whole way if it failed.
    let known = 0;
    const awaiting: Array<{ item: unknown; stored: Promise<boolean> }> = [];
    raw.forEach((item, at) => {
      const r = item as Partial<ReplicatedRecord> | null;
      if (r !== null && typeof r === 'object' && typeof r.sig === 'string') {
        const id = `${r.origin}!${r.seq}`;
        if (recentSigs.get(id) === r.sig) {
          known++;
          return;
        }
        const pending = inFlight.get(id);
        if (pending?.sig === r.sig) {
          awaiting.push({ item, stored: pending.stored });
          return;
        }
      }
      const v = validate(item);
      if ('record' in v) unverified.push({ ...v, at });
      else refuse(at, v);
    });
    // Signatures in one batch: a sync page's are verified off the event loop (deps.verifier).
    const signed = await verifier.verify(unverified.map((u) => ({ sig: u.sig, digest: u.digest, publicKey: u.node.publicKey })));
    unverified.forEach((u, i) => {
      if (!signed[i]) return refuse(u.at, { reason: 'bad signature', origin: u.record.origin, seq: u.record.seq });
      contentIds.set(u.record, idOf(u.digest));
      checked.push(u);
    });
    return { source, refusals, checked, known, awaiting };
  }

  async function ingest(raw: unknown[], source: RecordSource): Promise<IngestResult> {
    return ingestPrepared(await prepareIngest(raw, source));
  }

  /** The second half of {@link ingest}: evidence checks against the replica, then the store. */
  async function ingestPrepared(prepared: PreparedIngest): Promise<IngestResult> {
    const { source, refusals, checked, awaiting } = prepared;
    let known = prepared.known;
    const refuse = (at: number, v: { reason: string; origin: string; seq: number }) => refuseInto(refusals, source, at, v);
    const valid: ReplicatedRecord[] = [];
    // Evidence checks read the replica and the records of the same origin travelling before this one
    // that passed their own checks (a consumed permit before the change it authorises): a refused
    // record is never evidence for another.
    const byOrigin = new Map<string, Array<{ kind: string; key: string; body: Json }>>();
    for (const c of checked) {
      const r = c.record;
      const siblings = byOrigin.get(r.origin) ?? [];
      byOrigin.set(r.origin, siblings);
      let problem: string | undefined;
      try {
        problem = await bodyProblem(c.kind, r.body, contextOf(c.kind, r, c.node, [...siblings]));
      } catch (err) {
        problem = `evidence check failed: ${(err as Error).message}`.slice(0, 200);
      }
      if (problem) refuse(c.at, { reason: problem, origin: r.origin, seq: r.seq });
      else {
        valid.push(r);
        siblings.push({ kind: r.kind, key: r.key, body: r.body });
      }
    }
    const rejected = refusals.sort((a, b) => a.at - b.at).map(({ reason, origin, seq }) => ({ reason, origin, seq }));
    let res: IngestResult = { applied: 0, duplicates: 0, rejected: [] };
    if (valid.length > 0) {
      let settle!: (stored: boolean) => void;
      const stored = new Promise<boolean>((resolve) => (settle = resolve));
      const mine = valid.filter((r) => !inFlight.has(`${r.origin}!${r.seq}`));
      for (const r of mine) inFlight.set(`${r.origin}!${r.seq}`, { sig: r.sig, stored });
      try {
        res = await enqueue(valid, source);
        settle(true);
      } catch (err) {
        settle(false);
        throw err;
      } finally {
        for (const r of mine) inFlight.delete(`${r.origin}!${r.seq}`);
      }
    }
    const retry: unknown[] = [];
    for (const a of awaiting) {
      if (await a.stored) known++;
      else retry.push(a.item);
    }
    const again = retry.length > 0 ? await ingest(retry, source) : { applied: 0, duplicates: 0, rejected: [] };
    return { applied: res.applied + again.applied, duplicates: res.duplicates + known + again.duplicates, rejected: [...rejected, ...again.rejected] };
  }

  async function replicate(intent: WriteIntent, opts: ReplicateOptions = {}): Promise<WriteReport> {
    const { records, acked, failed } = await replicateAll([intent], opts);
    return { record: records[0]!, acked, failed };
  }

  async function replicateAll(intents: WriteIntent[], opts: ReplicateOptions = {}): Promise<BatchWriteReport> {
    const startedAt = performance.now();
    const requireQuorum = opts.requireQuorum ?? true;
    if (intents.length === 0) throw new Error('nothing to replicate');
    const label = intents.map((i) => i.kind).join('+');
    const reachable = membership.reachableCount();
    if (requireQuorum && reachable < threshold) {
      deps.metrics.replicationDuration.observe({ kind: label, outcome: 'quorum_failed' }, (performance.now() - startedAt) / 1000);
      const failed = otherMembers.filter((m) => !membership.isReachable(m.slot)).map((m) => ({ nodeAddress: m.nodeAddress, slot: m.slot, error: 'unreachable' }));
      throw new QuorumError(`Cluster membership failure: ${reachable} of ${descriptor.size} members reachable, ${threshold} needed`, [], failed);
    }
    // Our own records pass the rules peers apply: a record they would refuse must never get a seq
    // here, or it would leave a gap in every peer's version vector for this origin.
    const selfNode = nodesByAddress.get(self.nodeAddress)!;
    for (const intent of intents) {
      const kind = kinds.get(intent.kind);
      if (!kind) throw new Error(`unknown record kind ${intent.kind}`);
      if (!mayWrite(kind, selfNode)) throw new Error(`this node may not write ${intent.kind} records`);
      const pseudo: ReplicatedRecord = { kind: intent.kind, key: intent.key, origin: self.nodeAddress, seq: Number.MAX_SAFE_INTEGER, hlc: [Math.max(deps.clock(), hlc.peek()[0]), Number.MAX_SAFE_INTEGER], body: intent.body, sig: '' };
      const problem = keyProblem(kind, intent.key) ?? (await bodyProblem(kind, intent.body, contextOf(kind, pseudo, selfNode, intents)));
      if (problem) throw new AppError('BAD_REQUEST', `invalid ${intent.kind} record: ${problem}`);
    }

    // One local batch and one `apply` message per member: each member commits them together.
    const records = await enqueueOwn(intents);
    const { acked, failed } = await sendToMembers(records, otherMembers, selfIsMember, opts.signal);

    // Gossip reaches the members that missed the direct send and every gateway; when every member
    // acked directly, or the only ones that did not are known to be down (gossip cannot reach them
    // either; catch-up will), and there are no gateways, it would only repeat what everyone stored.
    if (failed.some((f) => f.error !== 'unreachable') || descriptor.nodes.length > descriptor.size) {
      for (const record of records) deps.transport().publish(record).catch((err: unknown) => log.debug({ err }, 'gossip publish failed'));
    }
    const ok = acked.length >= threshold;
    deps.metrics.replicationDuration.observe({ kind: label, outcome: ok ? 'ok' : 'quorum_failed' }, (performance.now() - startedAt) / 1000);
    if (!ok) {
      log.warn({ kind: label, acked: acked.length, failed: failed.length }, 'quorum write failed');
      if (requireQuorum) throw new QuorumError(`Cluster membership failure: ${acked.length} of ${descriptor.size} members acknowledged, ${threshold} needed`, acked, failed);
    }
    return { records, acked, failed };
  }

  /** Apply `records` (one message) on `targets` with the deadline; collect who acked and who failed, and why. */
  async function sendToMembers(records: ReplicatedRecord[], targets: Array<ClusterNodeEntry & { slot: number }>, includeSelf: boolean, signal?: AbortSignal): Promise<{ acked: string[]; failed: MemberFailure[] }> {
    const acked: string[] = includeSelf ? [self.nodeAddress] : [];
    const failed: MemberFailure[] = [];
    const transport = deps.transport();
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(new Error('timeout')), options.applyTimeoutMs);
    const onAbort = () => controller.abort(signal?.reason);
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      await new Promise<void>((resolve) => {
        let settled = 0;
        let graceTimer: NodeJS.Timeout | undefined;
        const done = () => {
          if (graceTimer) clearTimeout(graceTimer);
          resolve();
        };
        if (targets.length === 0) return done();
        for (const m of targets) {
          const send = membership.isReachable(m.slot)
            ? transport.sendApply(m.slot, records, { signal: controller.signal })
            : Promise.reject(new PeerError('unreachable'));
          send.then(
            () => acked.push(m.nodeAddress),
            (err: unknown) => failed.push({ nodeAddress: m.nodeAddress, slot: m.slot, error: failureReason(err, controller.signal) }),
          ).finally(() => {
            settled++;
            if (settled === targets.length) done();
            else if (acked.length >= threshold && !graceTimer) graceTimer = setTimeout(done, graceMs);
          });
        }
      });
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    }
    // Members whose ack had not arrived when we stopped waiting.
    const answered = new Set([...acked, ...failed.map((f) => f.nodeAddress)]);
    for (const m of targets) if (!answered.has(m.nodeAddress)) failed.push({ nodeAddress: m.nodeAddress, slot: m.slot, error: 'no ack within the quorum grace period' });
    for (const f of failed) deps.metrics.replicationFailures.inc({ reason: f.error.split(':')[0]!.replace(/\s+/g, '_') });
    return { acked, failed };
  }

  return {
    async open() {
      vv = await store.loadVersionVector();
      for (const origin of await store.origins()) maxStored.set(origin, await store.highestSeq(origin));
      for await (const r of store.allLog()) addFingerprint(r);
      ownSeq = Math.max(vv[self.nodeAddress] ?? 0, maxStored.get(self.nodeAddress) ?? 0);
    },
    ingest,
    prepareIngest,
    ingestPrepared,
    replicate,
    replicateAll,
    async resend(record, slots) {
      const targets = otherMembers.filter((m) => slots.includes(m.slot));
      const { acked, failed } = await sendToMembers([record], targets, false);
      return { record, acked, failed };
    },
    async resendAll(records, slots) {
      const targets = otherMembers.filter((m) => slots.includes(m.slot));
      const { acked, failed } = await sendToMembers(records, targets, false);
      return { records, acked, failed };
    },
    versionVector: () => ({ ...vv }),
    equivocators: () => [...equivocations.values()],
    async syncRequest() {
      const request: SyncRequest = { vv: { ...vv }, max: {}, gaps: {}, fp: {} };
      for (const [origin, max] of maxStored) {
        const contiguous = vv[origin] ?? 0;
        if (max <= contiguous) {
          request.fp![origin] = (fingerprints.get(origin) ?? 0n).toString(16);
          continue;
        }
        if (max - contiguous > MAX_SYNC_GAPS * 4) continue;
        const have = new Set((await store.scanLog(origin, contiguous + 1, max - contiguous)).map((r) => r.seq));
        const gaps: number[] = [];
        for (let s = contiguous + 1; s <= max && gaps.length <= MAX_SYNC_GAPS; s++) if (!have.has(s)) gaps.push(s);
        if (gaps.length > MAX_SYNC_GAPS) continue;
        request.max![origin] = max;
        request.gaps![origin] = gaps;
      }
      return request;
    },
    get: (kind, key) => stateCache.get(kind, key),
    list: (kind, o) => store.listState(kind, o),
    logRecord: (origin, seq) => store.getLog(origin, seq),
    async *missingFor(request, { limit }) {
      const peer = request.vv;
      for (const origin of await store.origins()) {
        const theirs = peer[origin] ?? 0;
        const mine = vv[origin] ?? 0;
        const fp = request.fp?.[origin];
        // Same records by count, different by content: send them all so the peer can compare.
        const differ = fp !== undefined && theirs === mine && mine === (maxStored.get(origin) ?? 0) && fp !== (fingerprints.get(origin) ?? 0n).toString(16);
        const gaps = request.gaps?.[origin];
        const max = request.max?.[origin];
        if (!differ && gaps && max !== undefined) {
          // The peer holds everything up to `max` but these: send them, then what lies beyond.
          for (let i = 0; i < gaps.length; i += limit) {
            const page = (await Promise.all(gaps.slice(i, i + limit).map((s) => store.getLog(origin, s)))).filter((r): r is ReplicatedRecord => r !== undefined);
            if (page.length > 0) yield page;
          }
        }
        let from = differ ? 1 : (max ?? theirs) + 1;
        for (;;) {
          const page = await store.scanLog(origin, from, limit);
          if (page.length === 0) break;
          yield page;
          if (page.length < limit) break;
          from = page[page.length - 1]!.seq + 1;
        }
      }
    },
    onApplied(listener) {
      const entry = (event: AppliedEvent) => listener(event);
      appliedListeners.add(entry);
      return () => appliedListeners.delete(entry);
    },

    async drain() {
      while (working) await working;
    },
    holdOwnWrites(until) {
      // Released when `until` resolves; a rejected hold stays, so every later own write fails too.
      const held: Promise<void> = until.then(() => {
        if (ownWritesHeld === held) ownWritesHeld = undefined;
      });
      // Each waiter gets a rejection through its own await; none is left unhandled.
      held.catch(() => undefined);
      ownWritesHeld = held;
    },
  };
}

/** A member's failure as reported in `failedNodes`: the transport's {@link PeerError} kind (and detail), or `error: …`. */
function failureReason(err: unknown, signal: AbortSignal): string {
  if (signal.aborted) return 'timeout';
  if (err instanceof PeerError) return err.kind === 'unreachable' || err.kind === 'timeout' ? err.kind : err.message;
  return `error: ${(err instanceof Error ? err.message : String(err)).slice(0, 200)}`;
}
