/**
 * Versioned protocol ids and the gossip topic (docs/architecture.md, "Network").
 */

/** Protocol ids; a breaking wire change gets a new version, never an edited one. */
export const PROTOCOLS = {
  apply: '/quorumkeep/apply/1.0.0',
  sync: '/quorumkeep/sync/1.0.0',
  create: '/quorumkeep/create/1.0.0',
  ping: '/quorumkeep/ping/1.0.0',
  /** A member signs a session grant after checking the principal's Ed25519 proof itself. */
  grant: '/quorumkeep/grant/1.0.0',
  /** A member stores its key share, or releases it (sealed to the caller) after its own checks. */
  shard: '/quorumkeep/shard/1.0.0',
} as const;

/**
 * What this build can do beyond its protocols' first versions, told in every `ping` answer: a node
 * uses a feature towards the cluster only once every other node has said it has it (a rolling
 * upgrade never sends a node something it cannot read).
 */
export const NODE_FEATURES = {
  /** Checks records signed a batch at a time (src/core/replication/record-sig.ts). */
  recordBatchSig: 'record-batch-sig/1',
  /** Takes a coordinator's share stores in batches: the `shard` call `storeMany` (src/core/secrets/shard-messages.ts). */
  shareStoreMany: 'share-store-many/1',
} as const;

/** Whether a `ping` answer names `feature`. */
export function hasFeature(answer: unknown, feature: string): boolean {
  const features = (answer as { features?: unknown } | null)?.features;
  return Array.isArray(features) && features.includes(feature);
}

/** The gossip topic of a cluster. */
export function recordsTopic(clusterId: string): string {
  return `/quorumkeep/${clusterId}/records/1`;
}

/** Largest single protocol message, bytes (a sync page of records). */
export const MAX_MESSAGE_BYTES = 32 * 1024 * 1024;
