/**
 * The replication engine: the one path for every state change (CONTRIBUTING.md rule 4) and the one validator
 * every incoming record passes (rule 6).
 *
 * - `replicate` signs a record, persists it locally, sends it to every member over `apply` with a
 *   deadline and succeeds at ≥ threshold acks (docs/architecture.md, "Quorum writes").
 * - `ingest` validates records from any source (apply, gossip, sync) and applies them idempotently.
 *   Applies are group-committed: everything queued while a batch is being written goes into the
 *   next single `sync` batch, so durability costs one fsync per batch, not per record.
 *
 * This module composes the parts, each in its own module of this folder:
 * - validate.ts: the record rules (structure, origin, writers, skew, key, body), pure functions;
 * - ingest.ts: duplicates, the rules, batched signature checks, evidence checks, then the queue;
 * - group-commit.ts: the queue of applies and own writes, committed a batch at a time;
 * - apply-batch.ts: one batch against the replica (sign own, dedupe, winners, one durable commit);
 * - equivocation.ts: two records under one (origin, seq), resolved alike on every member;
 * - quorum-write.ts: `replicate`, `replicateAll` and the resends;
 * - sync-source.ts: both sides of a catch-up round;
 * - log-index.ts and state-cache.ts: what the engine keeps in memory of its log and states;
 * - applied-events.ts: what an ingest reports and how services hear about committed batches.
 */
import type { Logger } from '../../log/index.ts';
import type { NodeMetrics } from '../../metrics/index.ts';
import { verifyDigest, type VerifyItem } from '../../crypto/index.ts';
import type { Startable } from '../lifecycle.ts';
import { createAppliedListeners, type AppliedEvents, type IngestResult, type RecordSource } from './applied-events.ts';
import { createBatchApplier } from './apply-batch.ts';
import { createEquivocations } from './equivocation.ts';
import { createCommitQueue } from './group-commit.ts';
import { createIngest, type IngestDeps, type PreparedIngest } from './ingest.ts';
import type { KindRegistry } from './kinds.ts';
import { createLogIndex } from './log-index.ts';
import type { MembershipView, PeerTransport, RecordStore, Replicator, StateKeys, StateReader, SyncRequest, VersionVector } from './ports.ts';
import { createQuorumWriter } from './quorum-write.ts';
import { createHlcClock, type ReplicatedRecord } from './record.ts';
import { createStateCache } from './state-cache.ts';
import { createSyncSource } from './sync-source.ts';
import { createEvidenceContexts, signersOf } from './validate.ts';
import { createRefusedSeqs } from './refused-seqs.ts';

export type { AppliedEvent, AppliedEvents, IngestResult, RecordSource, StateChange } from './applied-events.ts';
export type { PreparedIngest } from './ingest.ts';

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
  /** Most memory the cached states may hold (an estimate, see state-cache.ts), bytes. @default 32 MiB */
  stateCacheBytes?: number;
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
  /** See {@link IngestDeps.prefetchSigners}. @default none */
  prefetchSigners?: IngestDeps['prefetchSigners'];
}

/** The engine's surface for the node and the cluster module. */
export interface ReplicationEngine extends Replicator, StateReader, StateKeys, AppliedEvents, Startable {
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
  /**
   * The origins on which this node is behind `theirs` (another node's version vector), by their seq:
   * behind means missing a seq at or below theirs that this node has not refused for good (a record
   * every honest member refuses is no reason to wait; docs/security.md, "Stale members").
   */
  lagBehind(theirs: VersionVector): VersionVector;
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
  /**
   * Wait for queued applies to finish (shutdown; CONTRIBUTING.md rule 2). It refuses nothing: an
   * apply queued after it is still taken. Idempotent.
   */
  stop(): Promise<void>;
  /**
   * Hold this node's own writes until `until` resolves: they wait, unnumbered, up to `applyTimeoutMs`
   * each (then 503 NOT_READY, nothing numbered); if it rejects, they and every later one fail with its
   * reason. Every node holds them at start until it has learnt its own log from its peers, so it never
   * reissues a seq its peers hold, whatever its data dir held (src/core/replication/own-log.ts).
   */
  holdOwnWrites(until: Promise<void>): void;
  /** True while own writes are held ({@link holdOwnWrites}). */
  ownWritesHeld(): boolean;
  /** Wait for held own writes to be released, at most `waitMs`: true once released (at once when none are held), false when the time ran out. */
  ownWritesReleased(waitMs: number): Promise<boolean>;
}

/** Create the replication engine. */
export function createReplicationEngine(options: ReplicationEngineOptions, deps: ReplicationEngineDeps): ReplicationEngine {
  const { store, kinds, membership, clock, metrics } = deps;
  const log = deps.logger.child({ module: 'replication' });
  const clusterId = membership.descriptor.clusterId;
  const maxClockSkewMs = options.maxClockSkewMs ?? 60_000;
  const verifier = deps.verifier ?? { verify: async (items: readonly VerifyItem[]) => items.map((it) => verifyDigest(it.sig, it.digest, it.publicKey)) };
  const signers = signersOf(membership.descriptor);
  // Late-bound like the transport; before the cluster is bound, own records are signed one by one.
  const batchSignatures = (): boolean => {
    try {
      return deps.transport().batchSignatures?.() ?? false;
    } catch {
      return false;
    }
  };
  const hlc = createHlcClock(clock, [0, 0], maxClockSkewMs);
  const index = createLogIndex({ clusterId });
  const stateCache = createStateCache({ maxEntries: options.stateCacheEntries ?? 20_000, maxBytes: options.stateCacheBytes ?? 32 * 1024 * 1024 }, { store });
  const refused = createRefusedSeqs({ maxEntries: 10_000 });
  const contextOf = createEvidenceContexts(
    (kind, key) => stateCache.get(kind, key),
    (origin, seq) => store.getLog(origin, seq),
    (origin, seq) => refused.has(origin, seq),
  );
  const listeners = createAppliedListeners(log);
  const equivocations = createEquivocations({ store, kinds, index, stateCache, clock, metrics, logger: log });
  const applier = createBatchApplier({ clusterId, selfAddress: membership.self.nodeAddress }, { store, kinds, index, stateCache, hlc, signingKey: deps.signingKey, equivocations, listeners, metrics, batchSignatures });
  // A write while own writes are held waits for the release as long as a member's ack (then 503
  // NOT_READY, retryable): the HTTP API is up while a node learns its own log (docs/architecture.md,
  // "Failure model").
  const queue = createCommitQueue(
    { maxBatchRecords: options.maxBatchRecords ?? 2000, heldWriteWaitMs: options.applyTimeoutMs },
    { commit: applier.apply, logger: log, onHeldChange: (held) => metrics.ownWritesHeld.set(held ? 1 : 0) },
  );
  const ingest = createIngest({ rules: { clusterId, signers, kinds, maxClockSkewMs }, clock, verifier, index, contextOf, queue, metrics, logger: log, refused, onSigned: (r) => applier.noteSigned(r), ...(deps.prefetchSigners ? { prefetchSigners: deps.prefetchSigners } : {}) });
  const writer = createQuorumWriter(
    { applyTimeoutMs: options.applyTimeoutMs, quorumGraceMs: options.quorumGraceMs ?? 100 },
    { membership, kinds, signers, transport: deps.transport, hlc, clock, contextOf, queue, metrics, logger: log },
  );
  const sync = createSyncSource({ store, index });

  return {
    async open() {
      await index.load(store);
      await stateCache.open(deps.kinds.names());
      applier.open();
    },
    ingest: ingest.ingest,
    prepareIngest: ingest.prepareIngest,
    ingestPrepared: ingest.ingestPrepared,
    replicate: writer.replicate,
    replicateAll: writer.replicateAll,
    resend: writer.resend,
    resendAll: writer.resendAll,
    versionVector: () => ({ ...index.vv }),
    lagBehind(theirs) {
      const lag: VersionVector = {};
      for (const [origin, seq] of Object.entries(theirs)) {
        const mine = index.vv[origin] ?? 0;
        if (mine >= seq) continue;
        // Seqs this node refused for good are not waited for: a member never catches up on them.
        let s = mine + 1;
        while (s <= seq && refused.has(origin, s)) s++;
        if (s <= seq) lag[origin] = seq;
      }
      return lag;
    },
    equivocators: () => equivocations.list(),
    syncRequest: sync.syncRequest,
    missingFor: sync.missingFor,
    get: (kind, key) => stateCache.get(kind, key),
    list: (kind, o) => store.listState(kind, o),
    keyPages: (kind) => store.listStateKeys(kind),
    logRecord: (origin, seq) => store.getLog(origin, seq),
    onApplied: listeners.onApplied,
    stop: queue.stop,
    holdOwnWrites: queue.holdOwnWrites,
    ownWritesHeld: queue.ownWritesHeld,
    ownWritesReleased: queue.ownWritesReleased,
  };
}
