/**
 * The first start after a restore (src/backup/catch-up.ts): the marker says a restore is pending, and
 * once the node knows its own log (src/core/replication/own-log.ts holds and releases the writes) it is
 * marked caught up with the own seq then; a start without a pending marker marks nothing.
 */
import { describe, expect, it } from 'vitest';
import { prepareRestoreCatchUp, RESTORE_META_KEY, type RestoreMarker } from '../../../src/backup/index.ts';
import { captureLogger } from '../../utils/log.ts';

const self = { id: 'node-4', slot: 4, peerId: 'p4', nodeAddress: `0x${'4'.repeat(40)}`, signingPublicKey: '', multiaddrs: [] };

function setup(marker: RestoreMarker | undefined) {
  const meta = new Map<string, unknown>(marker ? [[RESTORE_META_KEY, marker]] : []);
  const deps = {
    store: { getMeta: async (k: string) => meta.get(k), putMeta: async (k: string, v: unknown) => void meta.set(k, v) },
    engine: { versionVector: () => ({ [self.nodeAddress]: 12 }) },
    self,
    clock: () => 1000,
    logger: captureLogger().logger,
  };
  return { deps, meta };
}

const marker: RestoreMarker = { state: 'catching-up', restoredAt: 1, backupCreatedAt: 0, ownSeqAtBackup: 7 };

describe('restore catch-up at start', () => {
  it('without a pending marker nothing is pending, and nothing is marked', async () => {
    for (const m of [undefined, { ...marker, state: 'caught-up' as const }]) {
      const { deps, meta } = setup(m);
      const restore = await prepareRestoreCatchUp(deps, 3);
      expect(restore.pending).toBe(false);
      await restore.markCaughtUp();
      expect(meta.get(RESTORE_META_KEY)).toEqual(m);
    }
  });

  it('a pending restore is marked caught up, with the own seq then, when the own log is known', async () => {
    const { deps, meta } = setup(marker);
    const restore = await prepareRestoreCatchUp(deps, 3);
    expect(restore.pending).toBe(true);
    // Until then the marker stays: a start stopped before it says so again next time.
    expect(meta.get(RESTORE_META_KEY)).toEqual(marker);
    await restore.markCaughtUp();
    expect(meta.get(RESTORE_META_KEY)).toEqual({ ...marker, state: 'caught-up', caughtUpAt: 1000, ownSeqAfterCatchUp: 12 });
  });
});
