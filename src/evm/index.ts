/**
 * The EVM chains (docs/web3.md): the only importer of viem. A client per enabled chain for the head
 * block, the secrets controller's state and events, and the syncer's `markSecretSynced`.
 */
export {
  ChainTransactionError,
  createChainClient,
  DEFAULT_RECEIPT_TIMEOUT_MS,
  DEFAULT_RPC_ATTEMPTS,
  DEFAULT_RPC_BACKOFF_MAX_MS,
  DEFAULT_RPC_BACKOFF_MS,
  DEFAULT_RPC_TIMEOUT_MS,
  type ChainClient,
  type ChainClientDeps,
  type ChainClientOptions,
  type ChainEvent,
  type ChainEventPosition,
  type ChainStatus,
  type FollowEventsOptions,
  type MarkSyncedResult,
  type SecretState,
} from './chain-client.ts';
export { createChainClients, type ChainClients } from './chain-clients.ts';
export { DEFAULT_MAX_BLOCKS_PER_QUERY, type EventFollower } from './event-follower.ts';
export { secretsControllerAbi } from './secrets-controller-abi.ts';
export { secretsControllerArtifact, type SecretsControllerArtifact } from './secrets-controller-artifact.ts';
