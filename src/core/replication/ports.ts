/**
 * Ports the replication core declares and other folders implement: the record store (src/store),
 * the peer transport (src/cluster). Capabilities see only {@link Replicator}, {@link Creator} and
 * {@link MembershipView}; no libp2p or level type appears here (CONTRIBUTING.md, "Where things live").
 */
import { AppError, ERROR_CODES, isAppError, isRefusalReason, type ErrorCode, type MemberFailure } from '../../errors/index.ts';
import type { ReplicatedRecord } from './record.ts';
import type { Json } from './canonical-json.ts';

/** One node of the cluster file. Members have a slot; gateways (coordinators without shards) do not. */
export interface ClusterNodeEntry {
  /** Stable name, e.g. `node-0`; a node's config names itself with it. */
  id: string;
  /** Member slot 0…size-1, or null for a non-member gateway. */
  slot: number | null;
  /** libp2p peer id (base58btc). */
  peerId: string;
  /** secp256k1 address (0x…, lowercase): origin of its records, `nodeAddress` of quorum proofs. */
  nodeAddress: string;
  /** Compressed secp256k1 public key, hex: verifies its record signatures. */
  signingPublicKey: string;
  /** libp2p listen multiaddrs (e.g. `/ip4/127.0.0.1/tcp/4010`). */
  multiaddrs: string[];
  /** Public base URL of its HTTP API when it is a coordinator (for discovery), else omitted. */
  httpUrl?: string;
}

/**
 * An identity a node held until `quorumkeep member replace` gave it a new one (docs/operations.md,
 * "Replace a member's identity"): its records up to `lastSeq` stay valid, nothing newer is accepted,
 * and its libp2p peer id is no longer let in.
 */
export interface RetiredIdentity extends ClusterNodeEntry {
  /** The cluster-file epoch that retired it. */
  epoch: number;
  /** Highest seq of its records that stays valid: the log it wrote before it was lost. */
  lastSeq: number;
  /** When it was retired, Unix ms: what it signed before then (quorum proofs, requests) still counts. */
  retiredAt: number;
}

/** A member's signature over a cluster file's epoch digest (src/config/membership-epoch.ts). */
export interface EpochApproval {
  nodeAddress: string;
  /** 0x + r ‖ s ‖ v, hex. */
  signature: string;
}

/** The static cluster description (docs/configuration.md, "The cluster file"). */
export interface ClusterDescriptor {
  clusterId: string;
  size: number;
  threshold: number;
  nodes: ClusterNodeEntry[];
  /** Membership epoch: 0 (or absent) as `cluster init` wrote it, +1 per identity replacement. */
  epoch?: number;
  /** Identities replaced so far, oldest first. */
  retired?: RetiredIdentity[];
  /** `threshold` members of the previous epoch approving this one (present when `epoch` > 0). */
  approvals?: EpochApproval[];
}

/**
 * The node that signs as `nodeAddress` for something made at `atMs`: a current node, or an identity
 * retired after `atMs` (its earlier quorum proofs and requests stay valid; docs/security.md).
 */
export function signerAt(c: ClusterDescriptor, nodeAddress: string, atMs: number): ClusterNodeEntry | undefined {
  return c.nodes.find((n) => n.nodeAddress === nodeAddress) ?? c.retired?.find((r) => r.nodeAddress === nodeAddress && atMs < r.retiredAt);
}

/** Members only (entries with a slot), ordered by slot. */
export function membersOf(c: ClusterDescriptor): Array<ClusterNodeEntry & { slot: number }> {
  return c.nodes.filter((n): n is ClusterNodeEntry & { slot: number } => n.slot !== null).sort((a, b) => a.slot - b.slot);
}

/** True for a coordinator: the cluster file gives it an HTTP URL (docs/security.md, roles). */
export function isCoordinatorEntry(n: ClusterNodeEntry): boolean {
  return typeof n.httpUrl === 'string' && n.httpUrl.length > 0;
}

/** Live view of membership: who this node is and which members it can reach now. */
export interface MembershipView {
  readonly descriptor: ClusterDescriptor;
  /** This node's entry. */
  readonly self: ClusterNodeEntry;
  /** True when the member at `slot` is reachable (self counts as reachable). */
  isReachable(slot: number): boolean;
  /** Number of members reachable, self included when self is a member. */
  reachableCount(): number;
  /**
   * Since when (Unix ms) the member at `slot` has been reachable without a break — a member that
   * restarted is reachable since its new connection; undefined when unreachable. Optional: views
   * that cannot tell (tests' stubs) leave it out.
   */
  reachableSince?(slot: number): number | undefined;
}

/** Result of a quorum write. */
export interface WriteReport {
  record: ReplicatedRecord;
  /** Node addresses of members that durably stored the record (self included when a member). */
  acked: string[];
  /** Members that did not acknowledge before the deadline, and why. */
  failed: MemberFailure[];
}

/** Result of a batch write ({@link Replicator.replicateAll}): every member acked all or none of it. */
export interface BatchWriteReport {
  records: ReplicatedRecord[];
  acked: string[];
  failed: MemberFailure[];
}

/** What a capability asks to write. */
export interface WriteIntent {
  kind: string;
  key: string;
  body: Json;
}

/** The replication port: the one path for every state change (CONTRIBUTING.md rule 4). */
export interface Replicator {
  /**
   * Sign, persist locally, send to every member with a deadline, then gossip.
   * Resolves at ≥ threshold acks; rejects with a QuorumError (503) otherwise.
   */
  replicate(intent: WriteIntent, options?: ReplicateOptions): Promise<WriteReport>;
  /**
   * Like {@link replicate} for several records that belong together: they get consecutive sequence
   * numbers, are committed in one local batch and travel in one `apply` message, which every member
   * commits atomically (one LevelDB batch) before it acks.
   */
  replicateAll(intents: WriteIntent[], options?: ReplicateOptions): Promise<BatchWriteReport>;
  /**
   * Send an existing record again to the given member slots only (e.g. retrying members that failed
   * a registration); reports which acked. Never throws for missing acks.
   */
  resend(record: ReplicatedRecord, slots: number[]): Promise<WriteReport>;
  /** {@link resend} for records that travel together (one `apply` message per member). */
  resendAll(records: ReplicatedRecord[], slots: number[]): Promise<BatchWriteReport>;
}

/** Options of {@link Replicator.replicate}. */
export interface ReplicateOptions {
  signal?: AbortSignal;
  /**
   * When false, the write is attempted whatever the membership and the report returned even below
   * threshold (callers that report partial propagation, like key registration). @default true
   */
  requireQuorum?: boolean;
}

/** Read access to the local replica's current state. */
export interface StateReader {
  /** Current winning record of (kind, key) on this node, if any. */
  get(kind: string, key: string): Promise<ReplicatedRecord | undefined>;
  /** Every current record of a kind, in key order (`reverse`: last key first). */
  list(kind: string, options?: { prefix?: string; limit?: number; reverse?: boolean }): AsyncIterable<ReplicatedRecord>;
}

/**
 * The keys of the local replica's current states, without their records: a pass over every secret
 * that needs only which exist reads the small state entries, not each winner from the log (about
 * 4 KiB a secret, spread over every table of a store grown by writes).
 */
export interface StateKeys {
  /**
   * Every current key of a kind, a page at a time, in key order. A key whose only version an
   * equivocation displaced (its log place taken by the other record, equivocation.ts) may still be
   * listed: `get` answers whether it has a winner.
   */
  keyPages(kind: string): AsyncIterable<readonly string[]>;
}

/** Slot 0's `create` service: cluster-wide unique ids from a durable counter. */
export interface Creator {
  /** Next value of a named counter (1, 2, 3…). Rejects with SLOT0_UNAVAILABLE (503) when slot 0 is unreachable. */
  allocate(counter: string, options?: { signal?: AbortSignal }): Promise<number>;
}

/** Per-origin highest contiguous sequence number applied. */
export type VersionVector = Record<string, number>;

/** A version vector a peer sent, with every malformed entry dropped (a dropped entry only costs resends). */
export function parseVersionVector(raw: unknown): VersionVector {
  const out: VersionVector = {};
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) return out;
  for (const [origin, seq] of Object.entries(raw as Record<string, unknown>)) {
    if (/^0x[0-9a-f]{40}$/.test(origin) && Number.isSafeInteger(seq) && (seq as number) >= 0) out[origin] = seq as number;
  }
  return out;
}

/**
 * What a node asks a peer for in a catch-up round (docs/architecture.md, Sync): its version vector,
 * and per origin with records stored above it, the highest seq stored and the seqs missing below it
 * (so a gap costs the records in it, not everything after it); per origin without gaps, a
 * fingerprint of its records (so two replicas holding different records under one (origin, seq) —
 * an equivocating origin — find out even with equal version vectors).
 */
export interface SyncRequest {
  vv: VersionVector;
  /** Highest seq stored, for origins stored beyond their contiguous seq. */
  max?: Record<string, number>;
  /** The seqs missing between vv and max, for those origins (bounded). */
  gaps?: Record<string, number[]>;
  /** XOR of the content ids of every record stored, for origins with no gap. */
  fp?: Record<string, string>;
}

/** One durable change of the replica (see {@link RecordStore.commit}). */
export interface RecordChange {
  log: ReplicatedRecord[];
  states: ReplicatedRecord[];
  vv: VersionVector;
  /** New fingerprints (hex) of the origins `log` adds to or replaces records of. */
  fp?: Record<string, string>;
}

/** Storage the replication engine needs (implemented by src/store). */
export interface RecordStore {
  /** Version vector as persisted. */
  loadVersionVector(): Promise<VersionVector>;
  /** Highest seq stored for an origin (contiguous or not), 0 when none. */
  highestSeq(origin: string): Promise<number>;
  /** True when the log holds (origin, seq). */
  hasRecord(origin: string, seq: number): Promise<boolean>;
  /** Current state of (kind, key). */
  getState(kind: string, key: string): Promise<ReplicatedRecord | undefined>;
  /** Current states of several (kind, key) pairs, in order; one round trip. */
  getStates(pairs: Array<{ kind: string; key: string }>): Promise<Array<ReplicatedRecord | undefined>>;
  /** Iterate current states of a kind, in key order (`reverse`: last key first). */
  listState(kind: string, options?: { prefix?: string; limit?: number; reverse?: boolean }): AsyncIterable<ReplicatedRecord>;
  /** The keys of a kind's state entries, a page at a time, in key order (`reverse`: last first), without reading their records (see {@link StateKeys.keyPages}). */
  listStateKeys(kind: string, options?: { limit?: number; reverse?: boolean }): AsyncIterable<readonly string[]>;
  /** Log records of an origin with seq ≥ fromSeq, ascending, at most `limit`. */
  scanLog(origin: string, fromSeq: number, limit: number): Promise<ReplicatedRecord[]>;
  /** One log record, or undefined. */
  getLog(origin: string, seq: number): Promise<ReplicatedRecord | undefined>;
  /** Every log record, in (origin, seq) order. */
  allLog(): AsyncIterable<ReplicatedRecord>;
  /** Origins present in the log. */
  origins(): Promise<string[]>;
  /**
   * Each origin's fingerprint as last committed (hex, see {@link SyncRequest}), so opening the engine
   * does not read the whole log. An origin the log holds but this lacks (a store written before
   * fingerprints were kept) has its fingerprint computed from its records once, at open.
   */
  loadFingerprints(): Promise<Record<string, string>>;
  /**
   * One atomic, durable batch: append `log` records, put `states` as the new winners, set the
   * version vector entries in `vv` and the fingerprints in `fp` (hex) of the origins whose records
   * changed — in the same batch as the records, so they can never disagree on disk.
   */
  commit(change: RecordChange): Promise<void>;
}

/** Sending records to members (implemented by src/cluster). */
export interface PeerTransport {
  /** Deliver records to a member over `apply`; resolves when it acked, rejects otherwise. */
  sendApply(slot: number, records: ReplicatedRecord[], options: { signal: AbortSignal }): Promise<void>;
  /** Best-effort gossip of a record to every subscriber. */
  publish(record: ReplicatedRecord): Promise<void>;
  /**
   * True once every other node of the cluster has said (answering a liveness ping) that it checks
   * batch record signatures (./record-sig.ts): until then own records are signed one by one, so a
   * node of an older build, mid rolling upgrade, never receives a record it cannot check.
   */
  batchSignatures?(): boolean;
}

/** Member services a coordinator calls on each member (docs/architecture.md, "Network"): grants and shards. */
export type MemberService = 'grant' | 'shard';

/**
 * A member's handler for one {@link MemberService}: gets the request and the calling node's cluster
 * entry (whose signing key shards are sealed to). A thrown AppError is a refusal the caller sees
 * with its code; anything else is reported as a failure.
 */
export type MemberHandler = (body: unknown, from: ClusterNodeEntry) => Promise<unknown>;

/** Calls to one member's services; self is called in-process. */
export interface MemberRpc {
  /**
   * Rejects with an AppError carrying the member's refusal code when it refused, and with a plain
   * Error when it could not be reached or timed out.
   */
  call(slot: number, service: MemberService, body: unknown, options: { signal: AbortSignal }): Promise<unknown>;
}

/**
 * How a call to a peer failed, as the transport (src/cluster) reports it: `unreachable` (no working
 * connection), `timeout` (no answer by the deadline), `rejected` (a member refused records it was
 * sent, with the reasons), `refused` (a member's service refused the call without a known code).
 * The message is `<kind>` or `<kind>: <detail>`, as reported in `failedNodes` errors.
 */
export type PeerFailureKind = 'unreachable' | 'timeout' | 'rejected' | 'refused';

/** The transport's error (see {@link PeerFailureKind}); callers classify by `kind`, never by message text. */
export class PeerError extends Error {
  readonly kind: PeerFailureKind;
  constructor(kind: PeerFailureKind, detail?: string) {
    super(detail === undefined ? kind : `${kind}: ${detail}`);
    this.name = 'PeerError';
    this.kind = kind;
  }
}

/** A member's refusal on the wire. */
export interface MemberRefusal {
  ok: false;
  error: string;
  code?: string;
  /** One of the closed set `REFUSAL_REASONS` (src/errors), when the refusal names one. */
  reason?: string;
}

/** The wire form of a member's refusal: its message, its code, and its reason when it has one ({@link refusalError} decodes it). */
export function memberRefusal(err: AppError): MemberRefusal {
  return err.reason ? { ok: false, error: err.message, code: err.code, reason: err.reason } : { ok: false, error: err.message, code: err.code };
}

/**
 * The wire form of any failure of a member's service: a refusal as {@link memberRefusal}; anything
 * else without its internals, told to `unexpected` (for the log) instead.
 */
export function memberFailure(err: unknown, unexpected: (err: unknown) => void): MemberRefusal {
  if (isAppError(err)) return memberRefusal(err);
  unexpected(err);
  return { ok: false, error: 'member service failed' };
}

/**
 * The one decode of a member's or slot 0's refusal (`{ ok: false, error, code, reason? }` on the
 * wire): an {@link AppError} when it names a code of the closed set — the caller answers with it —
 * carrying the reason when it is one of `REFUSAL_REASONS`; else a `refused` {@link PeerError}.
 */
export function refusalError(answer: { error?: unknown; code?: unknown; reason?: unknown } | undefined): Error {
  const message = typeof answer?.error === 'string' ? answer.error.slice(0, 300) : 'refused';
  const code = typeof answer?.code === 'string' && answer.code in ERROR_CODES ? (answer.code as ErrorCode) : undefined;
  if (!code) return new PeerError('refused', message);
  return new AppError(code, message, undefined, isRefusalReason(answer?.reason) ? { reason: answer.reason } : undefined);
}
