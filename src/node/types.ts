/**
 * The composed node's public surface (used by the CLI, the test harness and embedders).
 */
import type { Logger } from '../log/index.ts';
import type { NodeMetrics } from '../metrics/index.ts';
import type { NodeConfig } from '../config/schema.ts';
import type { ClusterDescriptor, Creator, MembershipView, Replicator, StateReader } from '../core/replication/ports.ts';
import type { HealthSource } from '../core/health/index.ts';
import type { Startable } from '../core/lifecycle.ts';
import type { VersionVector } from '../core/replication/ports.ts';
import type { BuildInfo } from '../build-info.ts';

/** A running (or startable) quorumkeep node. */
export interface QuorumNode extends Startable {
  readonly config: NodeConfig;
  /** This node's entry facts. */
  readonly nodeId: string;
  readonly slot: number | null;
  readonly peerId: string;
  readonly nodeAddress: string;
  /** Bound HTTP base URL (`http://host:port`) once started, when `http.enabled`. */
  readonly httpUrl: string | undefined;
  /** Bound operator-port base URL (health, readiness, metrics) once started, when `operator.enabled`. */
  readonly operatorUrl: string | undefined;
  readonly replicator: Replicator;
  readonly state: StateReader;
  readonly membership: MembershipView;
  readonly creator: Creator;
  readonly health: HealthSource;
  readonly metrics: NodeMetrics;
  readonly logger: Logger;
  /** This node's version vector (per-origin contiguous seq applied). */
  versionVector(): VersionVector;
  /** Count of records in this node's log (all origins). */
  countRecords(): Promise<number>;
  /**
   * SHA-256 over this replica's current state (every kind, in key order, by record content id): two
   * nodes with equal digests hold the same winners.
   */
  stateDigest(): Promise<string>;
  /** Round-trip time to another node over the cluster's `ping` protocol (loopback libp2p cost), ms. */
  pingPeer(nodeId: string): Promise<number>;
  /** Run one catch-up round with every reachable member now; resolves when done. */
  syncNow(): Promise<void>;
  /** Start in dependency order: store, cluster, replication, http. */
  start(): Promise<void>;
  /** Stop in reverse order, under the node's lifetime signal (CONTRIBUTING.md, "Lifecycle"); idempotent. */
  stop(): Promise<void>;
}

/** Live dependencies a node may be given (tests, the in-process harness); defaults otherwise. */
export interface NodeDeps {
  /** Root logger. @default pino to stdout at config.log.level, in config.log.format */
  logger?: Logger;
  /** Wall clock, Unix ms. @default Date.now */
  clock?: () => number;
  /** Metrics registry. @default a fresh one with process metrics */
  metrics?: NodeMetrics;
  /** The cluster file, already loaded (else read from config.clusterFile). */
  descriptor?: ClusterDescriptor;
  /** This build, for `/healthz` and `quorumkeep_build_info`. @default readBuildInfo() (git, else `unknown`; src/build-info.ts) */
  build?: BuildInfo;
  /** Fault injection for tests: peers whose connections this node refuses (partition). */
  blockedPeers?: ReadonlySet<string>;
  /**
   * Fault injection for tests: peers this node goes silent on — a partition that drops packets: the
   * connection stays open and carries nothing, new connections are refused.
   */
  silencedPeers?: ReadonlySet<string>;
}
