/**
 * Cluster health as the discovery endpoints report it (docs/http.md, GET /healthz).
 */
import type { MembershipView } from '../replication/ports.ts';
import { membersOf } from '../replication/ports.ts';

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
  /** `degraded` when reachable < threshold. */
  status: 'ok' | 'degraded';
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
   * "Failure model"); false while it holds its own writes at start.
   */
  checks: { started: boolean; quorumReachable: boolean; caughtUp: boolean; ownLogKnown: boolean };
}

/** What the discovery endpoints read (implemented in src/node from membership and sync state). */
export interface HealthSource {
  /** This node's secp256k1 address (`enclaveWalletAddress`). */
  readonly nodeAddress: string;
  clusterHealth(): ClusterHealth;
  readiness(): Readiness;
}

/** Build a health snapshot from a membership view. */
export function clusterHealthOf(view: MembershipView, equivocators: ReadonlyArray<{ origin: string; seq: number; at: number }> = []): ClusterHealth {
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
  return {
    clusterId: d.clusterId,
    size: d.size,
    threshold: d.threshold,
    reachable,
    slot0Reachable: view.isReachable(0),
    status: reachable >= d.threshold ? 'ok' : 'degraded',
    clusterMap,
    equivocating: equivocators.map((e) => ({ nodeAddress: e.origin, nodeId: (d.nodes.find((n) => n.nodeAddress === e.origin) ?? d.retired?.find((r) => r.nodeAddress === e.origin))?.id, seq: e.seq, since: new Date(e.at).toISOString() })),
  };
}
