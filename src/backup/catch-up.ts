/**
 * The first start of a node restored from a backup (docs/operations.md, "Back up and restore a node").
 *
 * A backup is a point in time; the node may have written records of its own after it (origin = this
 * node, seq = S+1, S+2, …) that its peers hold. Every node, restored or not, holds its own writes at
 * start until it has learnt its own log from its peers (src/core/replication/own-log.ts), so it never
 * hands out S+1 again. What is a restore's own is the marker `quorumkeep restore` leaves in the store:
 * the node says at start that it was restored and what it is waiting for, and once its own log is
 * known (just before its writes are released) it marks the store caught up, with its own seq then.
 *
 * A record of its own that no peer ever stored (it failed everywhere after the backup) is lost with
 * the old disk, and its seq may be reused: nobody holds the old one, so nothing conflicts.
 */
import type { Logger } from '../log/index.ts';
import type { ClusterNodeEntry, VersionVector } from '../core/replication/ports.ts';

/** Meta key of the marker `quorumkeep restore` writes. */
export const RESTORE_META_KEY = 'restore';

/** The marker: written by restore, updated once the node has caught up. */
export interface RestoreMarker {
  /** `catching-up` until the first start has caught its own origin up. */
  state: 'catching-up' | 'caught-up';
  /** When the archive was restored, Unix ms. */
  restoredAt: number;
  /** When the archive's snapshot was taken, Unix ms. */
  backupCreatedAt: number;
  /** This node's own contiguous seq in the snapshot. */
  ownSeqAtBackup: number;
  /** Once caught up: when, and its own contiguous seq then. */
  caughtUpAt?: number;
  ownSeqAfterCatchUp?: number;
}

/** Dependencies of {@link prepareRestoreCatchUp}. */
export interface RestoreCatchUpDeps {
  store: { getMeta(key: string): Promise<unknown>; putMeta(key: string, value: unknown): Promise<void> };
  engine: { versionVector(): VersionVector };
  self: ClusterNodeEntry;
  clock: () => number;
  logger: Logger;
}

/** The start-time side of a restore. */
export interface RestoreCatchUp {
  /** True when this start follows a restore that has not caught up yet. */
  readonly pending: boolean;
  /**
   * Mark the store caught up (call once the own log is known, before own writes are released); does
   * nothing when no restore is pending. Until it ran, the marker stays, and the next start says so again.
   */
  markCaughtUp(): Promise<void>;
}

function isMarker(v: unknown): v is RestoreMarker {
  return !!v && typeof v === 'object' && ((v as RestoreMarker).state === 'catching-up' || (v as RestoreMarker).state === 'caught-up');
}

/** Read the restore marker; when a catch-up is pending, say so. Call after the engine opened. */
export async function prepareRestoreCatchUp(deps: RestoreCatchUpDeps, membersNeeded: number): Promise<RestoreCatchUp> {
  const stored = await deps.store.getMeta(RESTORE_META_KEY);
  if (!isMarker(stored) || stored.state !== 'catching-up') return { pending: false, markCaughtUp: async () => undefined };
  const marker: RestoreMarker = stored;
  const log = deps.logger.child({ module: 'restore' });
  log.warn(
    { ownSeqAtBackup: marker.ownSeqAtBackup, backupCreatedAt: new Date(marker.backupCreatedAt).toISOString(), membersNeeded },
    'restored from a backup: own writes held until this node has caught its own records up from its peers',
  );
  return {
    pending: true,
    async markCaughtUp() {
      const ownSeq = deps.engine.versionVector()[deps.self.nodeAddress] ?? 0;
      await deps.store.putMeta(RESTORE_META_KEY, { ...marker, state: 'caught-up', caughtUpAt: deps.clock(), ownSeqAfterCatchUp: ownSeq } satisfies RestoreMarker);
      log.info({ ownSeqAtBackup: marker.ownSeqAtBackup, ownSeq }, 'restore catch-up complete: own writes released');
    },
  };
}
