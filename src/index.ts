/**
 * quorumkeep as a library: create and run nodes from a validated config (the CLI does exactly this).
 * Local clusters for tests are in `quorumkeep/testing`.
 */
export { createNode, type QuorumNode, type NodeDeps } from './node/index.ts';
export { initCluster, type ClusterInitOptions, type ClusterInitSummary } from './node/cluster-init.ts';
export { loadConfig, loadNodeSetup, loadClusterFile, redactConfig, ConfigError, type NodeConfig, type NodeSetup } from './config/index.ts';
export { AppError, QuorumError, ERROR_CODES, type ErrorCode } from './errors/index.ts';
export type { ClusterDescriptor, ClusterNodeEntry, WriteReport } from './core/replication/ports.ts';
