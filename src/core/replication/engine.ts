/**
 * The replication engine: the one path for every state change (STYLE.md rule 4) and the one validator
 * every incoming record passes (rule 6).
 *
 * - `replicate` signs a record, persists it locally, sends it to every member over `apply` with a
 *   deadline and succeeds at ≥ threshold acks (ARCHITECTURE.md, Replicated state).
 * - `ingest` validates records from any source (apply, gossip, sync) and applies them idempotently.
 *   Applies are group-committed: everything queued while a batch is being written goes into the
 *   next single `sync` batch, so durability costs one fsync per batch, not per record.
 */
import type { Logger } from '../../log/index.ts';
import type { NodeMetrics } from '../../metrics/index.ts';
import { QuorumError, type MemberFailure } from '../../errors/index.ts';
import { fromHex } from '../../crypto/index.ts';
import type { KindRegistry, RecordContext, RecordKindDefinition } from './kinds.ts';
import { supersedes } from './kinds.ts';
import { signRecord, verifyRecordSignature, createHlcClock, type HlcClock, type ReplicatedRecord } from './record.ts';
import type { BatchWriteReport, ClusterNodeEntry, MembershipView, PeerTransport, RecordStore, ReplicateOptions, Replicator, StateReader, VersionVector, WriteIntent, WriteReport } from './ports.ts';
import { membersOf } from './ports.ts';
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
   * Called after newly stored records are durable (never for duplicates), with the state changes
   * they made (one per (kind, key) whose winner changed: the winner before the batch and after it);
   * errors are logged.
   */
  onApplied?: (records: ReplicatedRecord[], source: RecordSource, changes: StateChange[]) => void;
}

/** The engine's surface for the node and the cluster module. */
export interface ReplicationEngine extends Replicator, StateReader {
  /** Load the version vector and own sequence from the store. */
  open(): Promise<void>;
  /** Validate and apply records from a peer or locally. */
  ingest(records: unknown[], source: RecordSource): Promise<IngestResult>;
  /** This node's version vector (a copy). */
  versionVector(): VersionVector;
  /** Records a peer with version vector `peer` is missing, for one origin, from `fromSeq`. */
  missingFor(peer: VersionVector, options: { limit: number }): AsyncGenerator<ReplicatedRecord[]>;
  /** Wait for queued applies to finish (shutdown). */
  drain(): Promise<void>;
}

const MAX_KEY_LENGTH = 512;

interface Pending {
  records: ReplicatedRecord[];
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
  const stateCache = createStateCache(store, options.stateCacheEntries ?? 20_000);
  const log = deps.logger.child({ module: 'replication' });
  const descriptor = membership.descriptor;
  const self = membership.self;
  const selfIsMember = self.slot !== null;
  const clusterId = descriptor.clusterId;
  const threshold = descriptor.threshold;
  const graceMs = options.quorumGraceMs ?? 100;
  const maxBatch = options.maxBatchRecords ?? 2000;
  const nodesByAddress = new Map<string, { entry: ClusterNodeEntry; publicKey: Uint8Array }>();
  for (const n of descriptor.nodes) nodesByAddress.set(n.nodeAddress, { entry: n, publicKey: fromHex(n.signingPublicKey) });
  const otherMembers = membersOf(descriptor).filter((m) => m.id !== self.id);
  const hlc: HlcClock = createHlcClock(deps.clock);

  let vv: VersionVector = {};
  /** Highest seq stored per origin, contiguous or not. */
  const maxStored = new Map<string, number>();
  let ownSeq = 0;
  const queue: Pending[] = [];
  let working: Promise<void> | undefined;

  /** The key rules every node applies to a kind; a refusal reason or undefined. */
  function keyProblem(kind: RecordKindDefinition, key: string): string | undefined {
    return key.length === 0 || key.length > MAX_KEY_LENGTH || (kind.key && !kind.key(key)) ? 'bad key' : undefined;
  }

  /** The body rules every node applies to a kind (schema, then the kind's own check). */
  function bodyProblem(kind: RecordKindDefinition, body: Json, context: RecordContext): string | undefined {
    if (!kind.body.safeParse(body).success) return 'bad body';
    return kind.validate?.(body, context);
  }

  /** Structural and cryptographic checks; returns a reason when the record must be refused. */
  function validate(raw: unknown): { record: ReplicatedRecord } | { reason: string; origin: string; seq: number } {
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
    const kind = kinds.get(r.kind);
    if (!kind) return refuse('unknown kind');
    const badKey = keyProblem(kind, r.key);
    if (badKey) return refuse(badKey);
    const record: ReplicatedRecord = { kind: r.kind, key: r.key, origin, seq, hlc: [h[0], h[1]], body: r.body ?? null, sig: r.sig };
    if (!verifyRecordSignature(clusterId, record, node.publicKey)) return refuse('bad signature');
    const badBody = bodyProblem(kind, record.body, { key: record.key, origin, originSlot: node.entry.slot });
    return badBody ? refuse(badBody) : { record };
  }

  async function processBatch(batch: Pending[]): Promise<void> {
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
    for (let i = 0; i < batch.length; i++) {
      const res = results[i]!;
      for (const r of batch[i]!.records) {
        if (await has(r.origin, r.seq)) {
          res.duplicates++;
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
    stateCache.update(changed.values());
    vv = { ...vv, ...vvChange };
    for (const r of fresh) if (r.seq > (maxStored.get(r.origin) ?? 0)) maxStored.set(r.origin, r.seq);
    for (let i = 0; i < batch.length; i++) {
      const res = results[i]!;
      if (res.applied) deps.metrics.recordsApplied.inc({ source: batch[i]!.source }, res.applied);
      batch[i]!.resolve(res);
    }
    if (deps.onApplied) {
      try {
        const before = new Map(keys.map(([k], i) => [k, currents[i]]));
        const changes = [...changed].map(([k, after]) => ({ before: before.get(k), after }));
        deps.onApplied(fresh, batch[0]!.source, changes);
      } catch (err) {
        log.error({ err }, 'onApplied hook failed');
      }
    }
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

  async function ingest(raw: unknown[], source: RecordSource): Promise<IngestResult> {
    const valid: ReplicatedRecord[] = [];
    const rejected: IngestResult['rejected'] = [];
    for (const item of raw) {
      const v = validate(item);
      if ('record' in v) valid.push(v.record);
      else {
        rejected.push(v);
        deps.metrics.recordsRejected.inc({ reason: v.reason.replace(/\s+/g, '_') });
        log.warn({ origin: v.origin, seq: v.seq, reason: v.reason, source }, 'record rejected');
      }
    }
    const res = valid.length ? await enqueue(valid, source) : { applied: 0, duplicates: 0, rejected: [] };
    return { ...res, rejected };
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
    // Our own records pass the key and body rules peers apply: a record they would refuse must never
    // get a seq here, or it would leave a permanent gap in every peer's version vector for this origin.
    for (const intent of intents) {
      const kind = kinds.get(intent.kind);
      if (!kind) throw new Error(`unknown record kind ${intent.kind}`);
      const problem = keyProblem(kind, intent.key) ?? bodyProblem(kind, intent.body, { key: intent.key, origin: self.nodeAddress, originSlot: self.slot });
      if (problem) throw new Error(`invalid ${intent.kind} record: ${problem}`);
    }
    const records = intents.map((intent) =>
      signRecord(clusterId, { kind: intent.kind, key: intent.key, origin: self.nodeAddress, seq: ++ownSeq, hlc: hlc.now(), body: intent.body }, deps.signingKey),
    );

    // One local batch and one `apply` message per member: each member commits them together.
    await enqueue(records, 'local');
    const { acked, failed } = await sendToMembers(records, otherMembers, selfIsMember, opts.signal);

    // Gossip reaches the members that missed the direct send and every gateway; when every member
    // acked directly and there are no gateways it would only repeat what everyone already stored.
    if (failed.length > 0 || descriptor.nodes.length > descriptor.size) {
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
            : Promise.reject(new Error('unreachable'));
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
      ownSeq = Math.max(vv[self.nodeAddress] ?? 0, maxStored.get(self.nodeAddress) ?? 0);
    },
    ingest,
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
    get: (kind, key) => stateCache.get(kind, key),
    list: (kind, o) => store.listState(kind, o),
    async *missingFor(peer, { limit }) {
      for (const origin of await store.origins()) {
        let from = (peer[origin] ?? 0) + 1;
        for (;;) {
          const page = await store.scanLog(origin, from, limit);
          if (page.length === 0) break;
          yield page;
          if (page.length < limit) break;
          from = page[page.length - 1]!.seq + 1;
        }
      }
    },
    async drain() {
      while (working) await working;
    },
  };
}

function failureReason(err: unknown, signal: AbortSignal): string {
  if (signal.aborted) return 'timeout';
  const msg = err instanceof Error ? err.message : String(err);
  if (msg === 'unreachable') return 'unreachable';
  return msg.startsWith('rejected') ? msg : `error: ${msg.slice(0, 200)}`;
}
