import { describe, expect, it } from 'vitest';
import { createLogIndex } from '../../../../src/core/replication/log-index.ts';
import type { SyncRequest } from '../../../../src/core/replication/ports.ts';
import type { ReplicatedRecord } from '../../../../src/core/replication/record.ts';
import { createSyncSource, MAX_SYNC_GAPS, missingSeqs } from '../../../../src/core/replication/sync-source.ts';
import { makeCluster, memoryStore, rec } from './fixtures.ts';

/** A replica holding node 1's seqs 1–3 and node 2's seqs 1, 2, 4, 6, its index loaded from the store. */
async function replica() {
  const { keys, descriptor } = makeCluster(3);
  const one = [1, 2, 3].map((s) => rec(descriptor, keys[1]!, 1, s, { v: s }, { k: `a${s}` }));
  const two = [1, 2, 4, 6].map((s) => rec(descriptor, keys[2]!, 2, s, { v: s }, { k: `b${s}` }));
  const mem = memoryStore({ log: [...one, ...two], vv: { [one[0]!.origin]: 3, [two[0]!.origin]: 2 } });
  const index = createLogIndex({ clusterId: descriptor.clusterId });
  await index.load(mem.store);
  return { descriptor, keys, one, two, index, source: createSyncSource({ store: mem.store, index }) };
}

async function collect(pages: AsyncIterable<ReplicatedRecord[]>): Promise<Array<Array<[string, number]>>> {
  const out: Array<Array<[string, number]>> = [];
  for await (const page of pages) out.push(page.map((r) => [r.origin, r.seq]));
  return out;
}

describe('sync source', () => {
  it('missingSeqs: the seqs missing between the contiguous one and the highest, or none past the bound', () => {
    expect(missingSeqs(2, 6, new Set([4, 6]))).toEqual([3, 5]);
    expect(missingSeqs(0, 3, new Set([1, 2, 3]))).toEqual([]);
    expect(missingSeqs(0, 10, new Set(), 3)).toBeUndefined();
    expect(missingSeqs(0, 3, new Set(), 3)).toEqual([1, 2, 3]);
    expect(missingSeqs(0, MAX_SYNC_GAPS + 1, new Set())).toBeUndefined();
  });

  it('asks with the version vector, a fingerprint per origin without gaps, and the gaps and highest seq of the others', async () => {
    const { one, two, index, source } = await replica();
    const request = await source.syncRequest();
    expect(request.vv).toEqual({ [one[0]!.origin]: 3, [two[0]!.origin]: 2 });
    expect(request.fp).toEqual({ [one[0]!.origin]: index.fingerprintHex(one[0]!.origin) });
    expect(request.fp![one[0]!.origin]).not.toBe('0');
    expect(request.max).toEqual({ [two[0]!.origin]: 6 });
    expect(request.gaps).toEqual({ [two[0]!.origin]: [3, 5] });
  });

  it('sends a peer the seqs it names missing and what lies beyond its highest, in pages', async () => {
    const { one, two, source } = await replica();
    const request: SyncRequest = { vv: { [one[0]!.origin]: 1, [two[0]!.origin]: 0 }, max: { [two[0]!.origin]: 2 }, gaps: { [two[0]!.origin]: [1] } };
    const pages = await collect(source.missingFor(request, { limit: 2 }));
    const [o1, o2] = [one[0]!.origin, two[0]!.origin];
    // Origins in store order; within one, the gaps first and then the records beyond the highest.
    expect(pages.filter((p) => p[0]![0] === o1)).toEqual([[[o1, 2], [o1, 3]]]);
    expect(pages.filter((p) => p[0]![0] === o2)).toEqual([[[o2, 1]], [[o2, 4], [o2, 6]]]);
    expect(pages).toHaveLength(3);
  });

  it('sends an origin\'s whole log when the version vectors agree but the fingerprints differ, and nothing when they agree', async () => {
    const { one, index, source } = await replica();
    const o1 = one[0]!.origin;
    const differs = await collect(source.missingFor({ vv: { [o1]: 3 }, fp: { [o1]: 'abc' } }, { limit: 10 }));
    expect(differs.filter((p) => p[0]![0] === o1)).toEqual([[[o1, 1], [o1, 2], [o1, 3]]]);
    const same = await collect(source.missingFor({ vv: { [o1]: 3 }, fp: { [o1]: index.fingerprintHex(o1) } }, { limit: 10 }));
    expect(same.filter((p) => p[0]![0] === o1)).toEqual([]);
  });

  it('answers a peer in step with nothing, without scanning the log (a round between members in step costs no store reads)', async () => {
    const { descriptor, keys, one, two } = await replica();
    const mem = memoryStore({ log: [...one, ...two], vv: { [one[0]!.origin]: 3, [two[0]!.origin]: 2 } });
    const index = createLogIndex({ clusterId: descriptor.clusterId });
    await index.load(mem.store);
    let scans = 0;
    let walks = 0;
    const counted = { ...mem.store, scanLog: (...a: Parameters<typeof mem.store.scanLog>) => (scans++, mem.store.scanLog(...a)), origins: () => (walks++, mem.store.origins()) };
    const source = createSyncSource({ store: counted, index });
    const inStep: SyncRequest = { vv: { [one[0]!.origin]: 3, [two[0]!.origin]: 2 }, max: { [two[0]!.origin]: 6 }, gaps: { [two[0]!.origin]: [3, 5] } };
    expect(await collect(source.missingFor(inStep, { limit: 10 }))).toEqual([]);
    expect({ scans, walks }).toEqual({ scans: 0, walks: 0 });
    // One record more on node 1: that origin alone is scanned, from the peer's seq on.
    const more = rec(descriptor, keys[1]!, 1, 4, { v: 4 }, { k: 'a4' });
    index.maxStored.set(more.origin, 4);
    mem.log.set(`${more.origin}!4`, more);
    expect(await collect(source.missingFor(inStep, { limit: 10 }))).toEqual([[[more.origin, 4]]]);
    expect(scans).toBe(1);
  });
});
