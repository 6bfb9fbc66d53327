/**
 * The first start of a node restored from a backup (docs/operations.md, "Back up and restore a node").
 *
 * A backup is a point in time; the node may have written records of its own after it (origin = this
 * node, seq = S+1, S+2, …) that its peers hold. Its own seq is derived from its log at open, so a
 * restored node would hand out S+1 again for a different record: an equivocation every member flags.
 * So `quorumkeep restore` leaves a marker in the store, and at start the node:
 *
 * 1. holds its own writes (the replication engine's `holdOwnWrites`) before the cluster starts —
 *    records arriving by sync can trigger writes (a member acknowledging a key);
 * 2. completes a sync round with enough members that every record of its own a quorum acknowledged
 *    is among them: an acknowledged record is held by at least `threshold − 1` other members, so any
 *    `size − threshold + 1` of the other members include one of them (and it also asks every other
 *    node reachable meanwhile); the engine's own seq follows its records as they come back;
 * 3. clears the marker and releases the writes.
 *
 * A record of its own that no peer ever stored (it failed everywhere after the backup) is lost with
 * the old disk, and its seq may be reused: nobody holds the old one, so nothing conflicts.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '../log/index.ts';
import type { ClusterDescriptor, ClusterNodeEntry, MembershipView, VersionVector } from '../core/replication/ports.ts';
import { membersOf } from '../core/replication/ports.ts';

/** Meta key of the marker `quorumkeep restore` writes. */
export const RESTORE_META_KEY = 'restore';

/** Between two attempts to reach enough members, ms (peers connect within the reconnect interval). */
const RETRY_INTERVAL_MS = 250;
/** How often a catch-up that waits for members says so, ms. */
const PROGRESS_LOG_INTERVAL_MS = 10_000;

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
  engine: { holdOwnWrites(until: Promise<void>): void; versionVector(): VersionVector };
  descriptor: ClusterDescriptor;
  self: ClusterNodeEntry;
  clock: () => number;
  logger: Logger;
}

/** What the cluster must offer the catch-up once it runs. */
export interface CatchUpCluster {
  readonly membership: Pick<MembershipView, 'isReachable'>;
  syncWith(nodeId: string): Promise<unknown>;
}

/** The start-time side of a restore. */
export interface RestoreCatchUp {
  /** True when this start follows a restore that has not caught up yet. */
  readonly pending: boolean;
  /**
   * Run once the cluster has started: resolves when the node's own origin has caught up (own writes
   * released), at once when nothing is pending. Never rejects: when `stopped()` turns true first, or
   * the catch-up fails, own writes fail from then on (the marker stays, so the next start tries again).
   */
  run(cluster: CatchUpCluster, stopped: () => boolean): Promise<void>;
}

function isMarker(v: unknown): v is RestoreMarker {
  return !!v && typeof v === 'object' && ((v as RestoreMarker).state === 'catching-up' || (v as RestoreMarker).state === 'caught-up');
}

/**
 * Read the restore marker and, when a catch-up is pending, hold own writes now. Call after the engine
 * opened and before the cluster starts.
 */
export async function prepareRestoreCatchUp(deps: RestoreCatchUpDeps): Promise<RestoreCatchUp> {
  const stored = await deps.store.getMeta(RESTORE_META_KEY);
  if (!isMarker(stored) || stored.state !== 'catching-up') return { pending: false, run: async () => undefined };
  const marker: RestoreMarker = stored;
  const log = deps.logger.child({ module: 'restore' });
  const { descriptor, self } = deps;
  let release!: () => void;
  let fail!: (err: Error) => void;
  deps.engine.holdOwnWrites(
    new Promise<void>((resolve, reject) => {
      release = resolve;
      fail = reject;
    }),
  );
  const others = membersOf(descriptor).filter((m) => m.id !== self.id);
  const gateways = descriptor.nodes.filter((n) => n.slot === null && n.id !== self.id);
  const needed = Math.min(others.length, descriptor.size - descriptor.threshold + 1);
  log.warn({ ownSeqAtBackup: marker.ownSeqAtBackup, backupCreatedAt: new Date(marker.backupCreatedAt).toISOString(), membersNeeded: needed }, 'restored from a backup: own writes held until this node has caught its own records up from its peers');

  async function run(cluster: CatchUpCluster, stopped: () => boolean): Promise<void> {
    const done = new Set<string>();
    let lastProgressLog = deps.clock();
    try {
      for (;;) {
        if (stopped()) throw new Error('node stopped before its restore catch-up finished');
        const targets = others.filter((m) => !done.has(m.id) && cluster.membership.isReachable(m.slot));
        const rounds = await Promise.allSettled(targets.map((m) => cluster.syncWith(m.id)));
        rounds.forEach((r, i) => {
          if (r.status === 'fulfilled') done.add(targets[i]!.id);
        });
        const waitingOn = others.filter((m) => !done.has(m.id) && cluster.membership.isReachable(m.slot));
        if (done.size >= needed && waitingOn.length === 0) break;
        if (deps.clock() - lastProgressLog >= PROGRESS_LOG_INTERVAL_MS) {
          lastProgressLog = deps.clock();
          log.warn({ caughtUpWith: [...done], membersNeeded: needed }, 'restore catch-up is waiting for members to connect');
        }
        await sleep(RETRY_INTERVAL_MS);
      }
      // Gateways hold records too (by gossip); a round with those reachable, best effort.
      await Promise.allSettled(gateways.map((g) => cluster.syncWith(g.id)));
      const ownSeq = deps.engine.versionVector()[self.nodeAddress] ?? 0;
      await deps.store.putMeta(RESTORE_META_KEY, { ...marker, state: 'caught-up', caughtUpAt: deps.clock(), ownSeqAfterCatchUp: ownSeq } satisfies RestoreMarker);
      log.info({ caughtUpWith: [...done], ownSeqAtBackup: marker.ownSeqAtBackup, ownSeq }, 'restore catch-up complete: own writes released');
    } catch (err) {
      log.error({ err: (err as Error).message }, 'restore catch-up did not complete: own writes refused until the next start');
      fail(new Error(`restore catch-up did not complete: ${(err as Error).message}`));
      return;
    }
    release();
  }

  return { pending: true, run };
}
