/**
 * Cluster health as the discovery endpoints report it (docs/http.md, GET /healthz).
 */
import type { MembershipView } from '../replication/ports.ts';
import { membersOf } from '../replication/ports.ts';
import type { DataSafety } from '../secrets/data-safety.ts';

/**
 * The cluster's status, defined once (docs/http.md, GET /healthz; `quorumkeep status` exits 0, 1, 2):
 * `unavailable` — fewer than `threshold` members reachable: no secret can be created or decrypted;
 * `degraded` — everything works, but something an operator must see is wrong ({@link HealthProblem});
 * `ok` — nothing is.
 */
export type ClusterStatus = 'ok' | 'degraded' | 'unavailable';

/**
 * What makes a cluster not `ok`, as a closed set of codes: `quorum_unreachable` (unavailable); the
 * rest degraded — `slot0_unreachable` (every create and change fails), `member_unreachable`,
 * `member_not_ready` (a reachable member whose own `/readyz` says not ready),
 * `member_recovering` (a member rebuilding its shares), `shares_unknown` (a reachable member has not
 * reported its shares yet — just started, perhaps on an empty disk — or reported nothing lacking from
 * a replica it cannot know complete yet), `shares_missing` (a member lacks
 * shares the records say it holds, pending ones included), `secrets_at_risk` (held by only `threshold` members), `secrets_lost` (held by
 * fewer, loss not acknowledged), `equivocation` (a node signed two records under one seq).
 */
export const HEALTH_PROBLEMS = ['quorum_unreachable', 'slot0_unreachable', 'member_unreachable', 'member_not_ready', 'member_recovering', 'shares_unknown', 'shares_missing', 'secrets_at_risk', 'secrets_lost', 'equivocation'] as const;
export type HealthProblem = (typeof HEALTH_PROBLEMS)[number];

/** The status and its reasons from the facts of a {@link ClusterHealth}. */
export function statusOf(facts: Pick<ClusterHealth, 'size' | 'threshold' | 'reachable' | 'slot0Reachable' | 'equivocating'> & { dataSafety?: DataSafety | undefined }): { status: ClusterStatus; problems: HealthProblem[] } {
  const problems: HealthProblem[] = [];
  if (facts.reachable < facts.threshold) problems.push('quorum_unreachable');
  if (!facts.slot0Reachable) problems.push('slot0_unreachable');
  if (facts.reachable < facts.size) problems.push('member_unreachable');
  const safety = facts.dataSafety;
  if (safety?.members.some((m) => m.reachable && m.ready === false)) problems.push('member_not_ready');
  if (safety?.members.some((m) => m.status === 'recovering')) problems.push('member_recovering');
  const lacking = (m: DataSafety['members'][number]) => (m.shares?.missing ?? 0) + (m.shares?.pending ?? 0) > 0;
  if (safety?.members.some((m) => m.reachable && (m.shares === null || (!m.shares.complete && !lacking(m))))) problems.push('shares_unknown');
  if (safety?.members.some(lacking)) problems.push('shares_missing');
  if ((safety?.secretsAtRisk ?? 0) > 0) problems.push('secrets_at_risk');
  if ((safety?.secretsLost ?? 0) > 0) problems.push('secrets_lost');
  if (facts.equivocating.length > 0) problems.push('equivocation');
  const status: ClusterStatus = problems.includes('quorum_unreachable') ? 'unavailable' : problems.length > 0 ? 'degraded' : 'ok';
  return { status, problems };
}

/** One member's entry in `clusterMap`. */
export interface ClusterMapEntry {
  slot: number;
  nodeId: string;
  nodeAddress: string;
  peerId: string;
  reachable: boolean;
  /** True for the node answering. */
  self: boolean;
  /** Coordinator URL when that member serves HTTP. */
  httpUrl?: string;
}

/** Health facts of a cluster as seen from one node. */
export interface ClusterHealth {
  clusterId: string;
  size: number;
  threshold: number;
  /** Members reachable from this node, self included. */
  reachable: number;
  slot0Reachable: boolean;
  /** See {@link ClusterStatus}. */
  status: ClusterStatus;
  /** Why the status is not `ok` (empty when it is). */
  problems: HealthProblem[];
  /** Members' shares and the secrets at risk or lost ({@link DataSafety}). */
  dataSafety: DataSafety;
  /** Members keyed by slot (as a string). */
  clusterMap: Record<string, ClusterMapEntry>;
  /**
   * Nodes this node saw send two different records under one (origin, seq): a node gone rogue (or a
   * restored backup replaying its seqs). Empty when none.
   */
  equivocating: Array<{ nodeAddress: string; nodeId: string | undefined; seq: number; since: string }>;
}

/** Readiness: can this node serve quorum work now? */
export interface Readiness {
  ready: boolean;
  /**
   * `ownLogKnown`: this node has learnt its own log from its peers and writes (docs/architecture.md,
   * "Failure model"); false while it holds its own writes at start. `sharesHeld`: a member holds every
   * share the records say it holds (always true on a node without a slot).
   */
  checks: { started: boolean; quorumReachable: boolean; caughtUp: boolean; ownLogKnown: boolean; sharesHeld: boolean };
}

/** What the discovery endpoints read (implemented in src/node from membership and sync state). */
export interface HealthSource {
  /** This node's secp256k1 address (`enclaveWalletAddress`). */
  readonly nodeAddress: string;
  /** The build the node runs (`version`, `commit`): package.json's version and the git commit, or `unknown`. */
  readonly build: { readonly version: string; readonly commit: string };
  clusterHealth(): ClusterHealth;
  readiness(): Readiness;
}

/** Build a health snapshot from a membership view. */
export function clusterHealthOf(view: MembershipView, dataSafety: DataSafety, equivocators: ReadonlyArray<{ origin: string; seq: number; at: number }> = []): ClusterHealth {
  const d = view.descriptor;
  const clusterMap: Record<string, ClusterMapEntry> = {};
  for (const m of membersOf(d)) {
    clusterMap[String(m.slot)] = {
      slot: m.slot,
      nodeId: m.id,
      nodeAddress: m.nodeAddress,
      peerId: m.peerId,
      reachable: view.isReachable(m.slot),
      self: m.id === view.self.id,
      ...(m.httpUrl ? { httpUrl: m.httpUrl } : {}),
    };
  }
  const reachable = view.reachableCount();
  const equivocating = equivocators.map((e) => ({ nodeAddress: e.origin, nodeId: (d.nodes.find((n) => n.nodeAddress === e.origin) ?? d.retired?.find((r) => r.nodeAddress === e.origin))?.id, seq: e.seq, since: new Date(e.at).toISOString() }));
  const slot0Reachable = view.isReachable(0);
  const { status, problems } = statusOf({ size: d.size, threshold: d.threshold, reachable, slot0Reachable, equivocating, dataSafety });
  return { clusterId: d.clusterId, size: d.size, threshold: d.threshold, reachable, slot0Reachable, status, problems, dataSafety, clusterMap, equivocating };
}
