/**
 * The first start after a restore (src/backup/catch-up.ts): own writes are held until a sync round
 * has completed with `size − threshold + 1` other members and with every other member reachable, and
 * fail — for good — when the node stops first; a start without the marker holds nothing.
 */
import { describe, expect, it } from 'vitest';
import { prepareRestoreCatchUp, RESTORE_META_KEY, type CatchUpCluster, type RestoreMarker } from '../../../src/backup/index.ts';
import type { ClusterDescriptor } from '../../../src/core/replication/ports.ts';
import { waitFor } from '../../../src/testing/index.ts';
import { captureLogger } from '../../utils/log.ts';

const descriptor: ClusterDescriptor = {
  clusterId: 'c',
  size: 5,
  threshold: 3,
  nodes: Array.from({ length: 5 }, (_, slot) => ({ id: `node-${slot}`, slot, peerId: `p${slot}`, nodeAddress: `0x${String(slot).repeat(40)}`, signingPublicKey: '', multiaddrs: [] })),
};
const self = descriptor.nodes[4]!;

function setup(marker: RestoreMarker | undefined) {
  const meta = new Map<string, unknown>(marker ? [[RESTORE_META_KEY, marker]] : []);
  let hold: Promise<void> | undefined;
  const deps = {
    store: { getMeta: async (k: string) => meta.get(k), putMeta: async (k: string, v: unknown) => void meta.set(k, v) },
    engine: { holdOwnWrites: (until: Promise<void>) => void (hold = until), versionVector: () => ({ [self.nodeAddress]: 12 }) },
    descriptor,
    self,
    clock: () => 1000,
    logger: captureLogger().logger,
  };
  return { deps, meta, hold: () => hold };
}

/** A cluster whose reachable members (by slot) a test sets; records every sync asked. */
function fakeCluster(reachable: Set<number>, failing = new Set<string>()): CatchUpCluster & { synced: string[]; attempts: string[] } {
  const synced: string[] = [];
  const attempts: string[] = [];
  return {
    synced,
    attempts,
    membership: { isReachable: (slot) => reachable.has(slot) },
    async syncWith(id) {
      attempts.push(id);
      if (failing.has(id)) throw new Error('sync failed');
      synced.push(id);
    },
  };
}

const marker: RestoreMarker = { state: 'catching-up', restoredAt: 1, backupCreatedAt: 0, ownSeqAtBackup: 7 };

describe('restore catch-up at start', () => {
  it('without a pending marker nothing is held', async () => {
    for (const m of [undefined, { ...marker, state: 'caught-up' as const }]) {
      const { deps, hold } = setup(m);
      const restore = await prepareRestoreCatchUp(deps);
      expect(restore.pending).toBe(false);
      expect(hold()).toBeUndefined();
    }
  });

  it('holds own writes until enough members, and every reachable one, have been synced with; then marks the store caught up', async () => {
    const { deps, meta, hold } = setup(marker);
    const restore = await prepareRestoreCatchUp(deps);
    expect(restore.pending).toBe(true);
    let released = false;
    void hold()!.then(() => (released = true));
    // Only members 0 and 1 reachable, and a sync with 1 fails: 3 of the 4 others are needed.
    const reachable = new Set([0, 1]);
    const failing = new Set(['node-1']);
    const cluster = fakeCluster(reachable, failing);
    const run = restore.run(cluster, () => false);
    // Asked node-1 again and again: the loop ran several rounds without releasing.
    await waitFor(() => cluster.attempts.filter((id) => id === 'node-1').length >= 3, { timeoutMs: 5000 });
    expect(released).toBe(false);
    expect(cluster.synced).toEqual(['node-0']);
    failing.clear();
    reachable.add(2);
    reachable.add(3);
    await run;
    await hold();
    expect(released).toBe(true);
    expect(new Set(cluster.synced)).toEqual(new Set(['node-0', 'node-1', 'node-2', 'node-3']));
    expect(meta.get(RESTORE_META_KEY)).toEqual({ ...marker, state: 'caught-up', caughtUpAt: 1000, ownSeqAfterCatchUp: 12 });
  });

  it('a stop before enough members answered fails the held writes and keeps the marker', async () => {
    const { deps, meta, hold } = setup(marker);
    const restore = await prepareRestoreCatchUp(deps);
    let stopped = false;
    const run = restore.run(fakeCluster(new Set([0])), () => stopped);
    stopped = true;
    await run;
    await expect(hold()).rejects.toThrow(/restore catch-up did not complete/);
    expect(meta.get(RESTORE_META_KEY)).toEqual(marker);
  });
});
