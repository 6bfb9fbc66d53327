/**
 * Prometheus metrics (the only importer of prom-client). One registry per node, never the global
 * default, so several nodes can run in one process (tests, `npm start`). Label values come from fixed
 * sets (route patterns, method, status class, outcome), never ids (CONTRIBUTING.md rule 9).
 */
import { Registry, Histogram, Counter, Gauge, collectDefaultMetrics } from 'prom-client';

/** The metrics a node exports at `/metrics`. */
export interface NodeMetrics {
  /** The registry to render. */
  registry: Registry;
  /** HTTP request latency by route pattern, method and status code. */
  httpDuration: Histogram<'route' | 'method' | 'status'>;
  /** Quorum-write latency by kind and outcome (`ok` | `quorum_failed`). */
  replicationDuration: Histogram<'kind' | 'outcome'>;
  /** Members that failed to ack a write, by reason class (`timeout` | `unreachable` | `rejected`). */
  replicationFailures: Counter<'reason'>;
  /** Records applied locally, by source (`local` | `apply` | `gossip` | `sync`). */
  recordsApplied: Counter<'source'>;
  /** Signer recoveries and payload seals of requests, by where they ran (src/crypto/request-pool.ts). */
  requestCryptoOps: Counter<'op' | 'where'>;
  /** Record signatures verified, by where they ran (src/crypto/verify-pool.ts). */
  recordSignatureChecks: Counter<'where'>;
  /** Records rejected by the validator, by reason class. */
  recordsRejected: Counter<'reason'>;
  /** Members currently reachable (self included when a member). */
  connectedMembers: Gauge;
  /** Connections refused because the peer is not in the cluster file (a stranger, or a retired identity). */
  peersRefused: Counter;
  /** Permits this node applied (pending → consumed in its replica), by action: once per permit per node. */
  permitsApplied: Counter<'action'>;
  /** `grant`/`shard` requests refused because this member could not catch up with the requester in time. */
  catchUpRefusals: Counter;
  /** Origins seen sending two different records with one (origin, seq). */
  equivocations: Counter<'origin'>;
  /** argon2 jobs refused because the queue was full (answered 503 OVERLOADED). */
  hashJobsShed: Counter;
  /** Requests refused by the abuse limits (429), by which limit: `address` or `account`. */
  rateLimited: Counter<'limit'>;
  /** File jobs of this coordinator now pending or processing, by type and state (finished ones: the duration histogram's count). */
  fileJobs: Gauge<'type' | 'state'>;
  /** File bytes: `upload` read from request bodies, `result` written into job results. */
  fileBytes: Counter<'direction'>;
  /** Duration of file jobs from start to their final state, by type and outcome (`completed` | `failed`). */
  fileJobDuration: Histogram<'type' | 'outcome'>;
  /** Uploads whose file part began, by `order`: `fields_first` (signed fields before the file, verified at once) or `file_first`. */
  fileUploads: Counter<'order'>;
  /** Bytes now held by uploads whose sender is not verified yet (the unverified budget in use, docs/http.md, Files and jobs). */
  fileUnverifiedBytes: Gauge;
  /** Uploads the unverified budget refused, by `limit`: `upload` (413), `address` (429) or `total` (503). */
  fileUnverifiedRefusals: Counter<'limit'>;
  /**
   * File-job requests this coordinator did not hold and sent to another coordinator (src/http/job-forward.ts),
   * by route (`status` | `download` | `delete` | `decrypt_existing` | `list`) and outcome (`forwarded`,
   * `not_found`: no coordinator holds the job, `unreachable`: answered 503, `aborted`: the answer did
   * not complete — the holder broke off or the client left; for `list`: `merged` or `partial`).
   */
  jobForwards: Counter<'route' | 'outcome'>;
  /** Encrypt and decrypt requests refused by a plan limit (429 LIMIT_EXCEEDED), by `limit_type` (the six of docs/http.md, Usage). */
  usageRefusals: Counter<'limit_type'>;
  /** Latency of one usage flush round (every dirty counter replicated), by outcome (`ok` | `below_quorum` | `failed`). */
  usageFlushDuration: Histogram<'outcome'>;
  /** Admissions that waited for a flush because their counter held its cap of unacknowledged usage. */
  usageFlushWaits: Counter;
  /**
   * JSON-RPC call latency per chain (the chain id: a fixed set from config) and method (a fixed list
   * of the methods src/evm sends, else `other`), answered or failed.
   */
  chainRpcDuration: Histogram<'chain' | 'method'>;
  /** JSON-RPC calls that got no usable answer (timeout, network, HTTP or provider failure; not reverts), by chain and method. */
  chainRpcErrors: Counter<'chain' | 'method'>;
  /** The latest head block number read from each chain. */
  chainHead: Gauge<'chain'>;
  /** Head minus the event follower's cursor (the last block it delivered), per chain: `confirmations` when caught up. */
  chainCursorLag: Gauge<'chain'>;
  /** Keys dealt for Web3 secrets created on chain (the syncer), per chain. */
  web3SecretsDealt: Counter<'chain'>;
  /** Failed `markSecretSynced` attempts of the syncer (retried with the range), per chain. */
  web3SyncFailures: Counter<'chain'>;
  /** Share release requests this member answered, by outcome: `released`, or the refusal's reason. */
  shareReleases: Counter<'outcome'>;
  /** Constant 1, labelled with this build's `version` (package.json) and `commit` (git, or `unknown`). */
  buildInfo: Gauge<'version' | 'commit'>;
  /** Member slots in the cluster file (its `size`), set at start. */
  clusterSize: Gauge;
  /** Members a quorum needs (the cluster file's `threshold`), set at start: compare `quorumkeep_cluster_reachable_members` with it. */
  clusterThreshold: Gauge;
  /** 1 when this node's `/readyz` says ready, else 0. */
  nodeReady: Gauge;
  /** 1 while this node holds its own writes (it has not yet learnt its own log from a quorum), else 0. */
  ownWritesHeld: Gauge;
  /** 1 when every other node has said it checks batch record signatures: this node signs its records a batch at a time. */
  recordBatchSignatures: Gauge;
  /** 1 when slot 0 (the sequencer: every create and change goes through it) is reachable from this node, else 0. */
  slot0Reachable: Gauge;
  /** Per member slot: 1 when reachable from this node, else 0. */
  memberReachable: Gauge<'slot'>;
  /** Per member slot: shares the member holds, as it last reported (docs/operations.md, "Data safety"). */
  memberSharesHeld: Gauge<'slot'>;
  /** Per member slot: shares the replicated records say the member should hold (acknowledged losses not counted). */
  memberSharesExpected: Gauge<'slot'>;
  /** Per member slot: 1 while its status is `recovering`, else 0. */
  memberRecovering: Gauge<'slot'>;
  /** Per member slot: seconds since it started recovering, 0 when it is not. */
  memberRecoveringSeconds: Gauge<'slot'>;
  /** Secrets held by exactly `threshold` members: one more loss and they are gone. */
  secretsAtRisk: Gauge;
  /** Secrets held by fewer than `threshold` members whose loss no operator acknowledged. */
  secretsLost: Gauge;
  /** Secrets whose loss an operator acknowledged (`quorumkeep member acknowledge-loss`). */
  secretsLostAcknowledged: Gauge;
  /** Render in Prometheus text format. */
  render(): Promise<string>;
  /** Content-Type of {@link render}'s output. */
  contentType: string;
}

/** Options for {@link createMetrics}. */
export interface MetricsOptions {
  /** Also collect process metrics (CPU, heap, event loop lag). Off when several nodes share a process. @default true */
  processMetrics?: boolean;
  /** Constant labels on every series, e.g. `{ node: "node-0" }`. @default {} */
  labels?: Record<string, string>;
}

/** Create a node's metrics registry. */
export function createMetrics(options: MetricsOptions = {}): NodeMetrics {
  const registry = new Registry();
  if (options.labels) registry.setDefaultLabels(options.labels);
  if (options.processMetrics ?? true) collectDefaultMetrics({ register: registry, prefix: 'quorumkeep_' });
  const httpDuration = new Histogram({
    name: 'quorumkeep_http_request_duration_seconds',
    help: 'HTTP request latency by route pattern',
    labelNames: ['route', 'method', 'status'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry],
  });
  const replicationDuration = new Histogram({
    name: 'quorumkeep_replication_write_duration_seconds',
    help: 'Quorum write latency (local persist, apply to members, threshold acks)',
    labelNames: ['kind', 'outcome'] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry],
  });
  const replicationFailures = new Counter({
    name: 'quorumkeep_replication_member_failures_total',
    help: 'Members that did not acknowledge a replicated write',
    labelNames: ['reason'] as const,
    registers: [registry],
  });
  const recordsApplied = new Counter({
    name: 'quorumkeep_records_applied_total',
    help: 'Records newly stored on this node, by how they arrived',
    labelNames: ['source'] as const,
    registers: [registry],
  });
  const requestCryptoOps = new Counter({
    name: 'quorumkeep_request_crypto_ops_total',
    help: 'Signer recoveries and payload seals of requests, by where they ran: the crypto thread, or inline (a lone one at light load)',
    labelNames: ['op', 'where'] as const,
    registers: [registry],
  });
  const recordSignatureChecks = new Counter({
    name: 'quorumkeep_record_signature_checks_total',
    help: 'Record signatures verified, by where: the verify thread (a catch-up page; an apply while the event loop is busy), or inline (an apply at light load)',
    labelNames: ['where'] as const,
    registers: [registry],
  });
  const recordsRejected = new Counter({
    name: 'quorumkeep_records_rejected_total',
    help: 'Incoming records refused by the validator',
    labelNames: ['reason'] as const,
    registers: [registry],
  });
  const connectedMembers = new Gauge({
    name: 'quorumkeep_cluster_reachable_members',
    help: 'Members currently reachable from this node (self included when a member)',
    registers: [registry],
  });
  const peersRefused = new Counter({
    name: 'quorumkeep_peer_connections_refused_total',
    help: 'libp2p connections refused because the peer is not in the cluster file (a stranger, or an identity retired by member replace)',
    registers: [registry],
  });
  const catchUpRefusals = new Counter({
    name: 'quorumkeep_catchup_refusals_total',
    help: 'grant and shard requests refused because this member was behind the requester and could not catch up in time',
    registers: [registry],
  });
  // The label is a cluster-file node address: a fixed, small set.
  const equivocations = new Counter({
    name: 'quorumkeep_equivocations_total',
    help: 'Conflicting records seen for one (origin, seq), by origin',
    labelNames: ['origin'] as const,
    registers: [registry],
  });
  const permitsApplied = new Counter({
    name: 'quorumkeep_permits_applied_total',
    help: 'Permits applied in this node\'s replica (each permit at most once per node), by action',
    labelNames: ['action'] as const,
    registers: [registry],
  });
  const hashJobsShed = new Counter({
    name: 'quorumkeep_argon2_jobs_shed_total',
    help: 'argon2 hash jobs refused at once because too many were already waiting (503 OVERLOADED)',
    registers: [registry],
  });
  const rateLimited = new Counter({
    name: 'quorumkeep_http_rate_limited_total',
    help: 'Requests refused with 429 by the per-address or per-account limit of the account routes',
    labelNames: ['limit'] as const,
    registers: [registry],
  });
  const fileJobs = new Gauge({
    name: 'quorumkeep_file_jobs',
    help: 'File jobs of this coordinator now pending or processing, by type and state',
    labelNames: ['type', 'state'] as const,
    registers: [registry],
  });
  const fileBytes = new Counter({
    name: 'quorumkeep_file_bytes_total',
    help: 'File bytes by direction: upload (read from request bodies), result (written into job results)',
    labelNames: ['direction'] as const,
    registers: [registry],
  });
  const fileJobDuration = new Histogram({
    name: 'quorumkeep_file_job_duration_seconds',
    help: 'File job duration, from the upload accepted to completed or failed, by type and outcome',
    labelNames: ['type', 'outcome'] as const,
    buckets: [0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
    registers: [registry],
  });
  const fileUploads = new Counter({
    name: 'quorumkeep_file_uploads_total',
    help: 'File uploads whose file part began, by order: fields_first (signed fields before the file, verified at once) or file_first',
    labelNames: ['order'] as const,
    registers: [registry],
  });
  const fileUnverifiedBytes = new Gauge({
    name: 'quorumkeep_file_unverified_bytes',
    help: 'Bytes now held by file uploads whose sender is not verified yet (the unverified budget in use)',
    registers: [registry],
  });
  const fileUnverifiedRefusals = new Counter({
    name: 'quorumkeep_file_unverified_refusals_total',
    help: 'File uploads the unverified budget refused, by limit: upload (413), address (429), total (503)',
    labelNames: ['limit'] as const,
    registers: [registry],
  });
  const jobForwards = new Counter({
    name: 'quorumkeep_job_forwards_total',
    help: 'File-job requests for jobs another coordinator holds, sent on to it, by route and outcome',
    labelNames: ['route', 'outcome'] as const,
    registers: [registry],
  });
  const usageRefusals = new Counter({
    name: 'quorumkeep_usage_limit_refusals_total',
    help: 'Encrypt and decrypt requests refused by a plan limit (429), by limit type',
    labelNames: ['limit_type'] as const,
    registers: [registry],
  });
  const usageFlushDuration = new Histogram({
    name: 'quorumkeep_usage_flush_duration_seconds',
    help: 'Usage counter flush latency: one round replicating every dirty counter of this coordinator, by outcome',
    labelNames: ['outcome'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry],
  });
  const usageFlushWaits = new Counter({
    name: 'quorumkeep_usage_flush_waits_total',
    help: 'Admissions that waited for a usage flush because their counter held its cap of unacknowledged usage',
    registers: [registry],
  });
  const chainRpcDuration = new Histogram({
    name: 'quorumkeep_chain_rpc_duration_seconds',
    help: 'EVM JSON-RPC call latency by chain id and method',
    labelNames: ['chain', 'method'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  const chainRpcErrors = new Counter({
    name: 'quorumkeep_chain_rpc_errors_total',
    help: 'EVM JSON-RPC calls without a usable answer (timeout, network, HTTP or provider failure; reverts excluded), by chain id and method',
    labelNames: ['chain', 'method'] as const,
    registers: [registry],
  });
  const web3SecretsDealt = new Counter({
    name: 'quorumkeep_web3_secrets_dealt_total',
    help: 'Keys dealt by this node (the chain syncer) for Web3 secrets created on chain, by chain id',
    labelNames: ['chain'] as const,
    registers: [registry],
  });
  const shareReleases = new Counter({
    name: 'quorumkeep_share_releases_total',
    help: "Share release requests this member answered (a coordinator's decrypt), by outcome: released, or the refusal's reason",
    labelNames: ['outcome'] as const,
    registers: [registry],
  });
  const web3SyncFailures = new Counter({
    name: 'quorumkeep_web3_sync_failures_total',
    help: 'Failed markSecretSynced attempts by this node (retried with the event range), by chain id',
    labelNames: ['chain'] as const,
    registers: [registry],
  });
  const chainHead = new Gauge({
    name: 'quorumkeep_chain_head',
    help: 'Latest head block number read from the chain',
    labelNames: ['chain'] as const,
    registers: [registry],
  });
  const chainCursorLag = new Gauge({
    name: 'quorumkeep_chain_cursor_lag_blocks',
    help: 'Head block minus the last block the event follower delivered (confirmations when caught up)',
    labelNames: ['chain'] as const,
    registers: [registry],
  });
  const gauge = <L extends string>(name: string, help: string, labelNames: readonly L[] = []) => new Gauge<L>({ name, help, labelNames, registers: [registry] });
  const buildInfo = gauge('quorumkeep_build_info', 'Constant 1; the labels name the build (version from package.json, git commit)', ['version', 'commit'] as const);
  const clusterSize = gauge('quorumkeep_cluster_size', 'Member slots in the cluster file (size)');
  const clusterThreshold = gauge('quorumkeep_cluster_threshold', 'Members a quorum needs (the cluster file threshold)');
  const nodeReady = gauge('quorumkeep_node_ready', '1 when this node is ready (GET /readyz answers 200), else 0');
  const ownWritesHeld = gauge('quorumkeep_own_writes_held', '1 while this node writes nothing under its own origin (it has not learnt its own log from a quorum yet)');
  const recordBatchSignatures = gauge('quorumkeep_record_batch_signatures', '1 when every other node has said it checks batch record signatures (this node signs its records a batch at a time), else 0');
  const slot0Reachable = gauge('quorumkeep_slot0_reachable', '1 when slot 0 (the sequencer) is reachable from this node, else 0');
  const memberReachable = gauge('quorumkeep_member_reachable', 'Per member slot: 1 when reachable from this node, else 0', ['slot'] as const);
  const memberSharesHeld = gauge('quorumkeep_member_shares_held', 'Per member slot: secret shares the member holds, as it last reported', ['slot'] as const);
  const memberSharesExpected = gauge('quorumkeep_member_shares_expected', 'Per member slot: secret shares the replicated records say it holds (acknowledged losses not counted)', ['slot'] as const);
  const memberRecovering = gauge('quorumkeep_member_recovering', 'Per member slot: 1 while it is recovering its shares, else 0', ['slot'] as const);
  const memberRecoveringSeconds = gauge('quorumkeep_member_recovering_seconds', 'Per member slot: seconds since it started recovering, 0 when it is not', ['slot'] as const);
  const secretsAtRisk = gauge('quorumkeep_secrets_at_risk', 'Secrets held by exactly threshold members: one more loss and they are gone');
  const secretsLost = gauge('quorumkeep_secrets_lost', 'Secrets held by fewer than threshold members whose loss was not acknowledged');
  const secretsLostAcknowledged = gauge('quorumkeep_secrets_lost_acknowledged', 'Secrets whose loss an operator acknowledged');
  return {
    registry,
    buildInfo,
    clusterSize,
    clusterThreshold,
    nodeReady,
    ownWritesHeld,
    recordBatchSignatures,
    slot0Reachable,
    memberReachable,
    memberSharesHeld,
    memberSharesExpected,
    memberRecovering,
    memberRecoveringSeconds,
    secretsAtRisk,
    secretsLost,
    secretsLostAcknowledged,
    chainRpcDuration,
    chainRpcErrors,
    chainHead,
    chainCursorLag,
    web3SecretsDealt,
    web3SyncFailures,
    shareReleases,
    usageRefusals,
    usageFlushDuration,
    usageFlushWaits,
    jobForwards,
    fileJobs,
    fileBytes,
    fileJobDuration,
    fileUploads,
    fileUnverifiedBytes,
    fileUnverifiedRefusals,
    hashJobsShed,
    rateLimited,
    permitsApplied,
    catchUpRefusals,
    equivocations,
    httpDuration,
    replicationDuration,
    replicationFailures,
    recordsApplied,
    requestCryptoOps,
    recordSignatureChecks,
    recordsRejected,
    connectedMembers,
    peersRefused,
    render: () => registry.metrics(),
    contentType: registry.contentType,
  };
}
