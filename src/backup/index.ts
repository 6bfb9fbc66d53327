/**
 * Backups of a node's store (docs/operations.md, "Back up and restore a node"): the archive format,
 * snapshots, the CLI's `backup` and `restore`, and what a restored node does at its first start.
 */
import type { ClusterDescriptor, ClusterNodeEntry } from '../core/replication/ports.ts';
import type { Logger } from '../log/index.ts';
import type { NodeStore } from '../store/index.ts';
import { prepareRestoreCatchUp, type RestoreCatchUp, type RestoreCatchUpDeps } from './catch-up.ts';
import { snapshotArchive, storageKeyCheckOf, type BackupIdentity } from './snapshot.ts';

export * from './archive.ts';
export * from './snapshot.ts';
export * from './catch-up.ts';
export * from './keys.ts';
export * from './backup.ts';
export * from './restore.ts';

/** Dependencies of {@link createNodeBackup}. */
export interface NodeBackupDeps {
  store: Pick<NodeStore, 'snapshot' | 'getMeta' | 'putMeta'>;
  engine: RestoreCatchUpDeps['engine'];
  descriptor: ClusterDescriptor;
  self: ClusterNodeEntry;
  /** Only a one-way check value of it is kept (and written into archives). */
  storageKey: Uint8Array;
  /** Other members the node's own-log catch-up waits for (src/core/replication/own-log.ts): said at a restored start. */
  membersNeeded: number;
  clock: () => number;
  logger: Logger;
}

/** A running node's backup side. */
export interface NodeBackup {
  /** Snapshots for the operator port's `GET /admin/backup`. */
  source: { snapshot(): { nodeId: string; createdAt: number; chunks: AsyncIterable<Uint8Array> } };
  /** The first start after a restore (./catch-up.ts): mark it caught up before own writes are released. */
  restore: RestoreCatchUp;
}

/** The node's backup side, created after the engine opened and before the cluster starts. */
export async function createNodeBackup(deps: NodeBackupDeps): Promise<NodeBackup> {
  const identity: BackupIdentity = {
    clusterId: deps.descriptor.clusterId,
    nodeId: deps.self.id,
    nodeAddress: deps.self.nodeAddress,
    slot: deps.self.slot,
    storageKeyCheck: storageKeyCheckOf(deps.storageKey),
  };
  const restore = await prepareRestoreCatchUp(deps, deps.membersNeeded);
  return {
    source: {
      snapshot() {
        const createdAt = deps.clock();
        return { nodeId: identity.nodeId, createdAt, chunks: snapshotArchive(deps.store, identity, { source: 'node', now: createdAt }) };
      },
    },
    restore,
  };
}
