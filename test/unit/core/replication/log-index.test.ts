import { describe, expect, it } from 'vitest';
import { createLogIndex } from '../../../../src/core/replication/log-index.ts';
import type { RecordStore } from '../../../../src/core/replication/ports.ts';
import { makeCluster, memoryStore, rec } from './fixtures.ts';

/** Node 1's seqs 1–2500 (more than one page of the open-time scan) and node 2's seqs 1–3. */
function logs() {
  const { keys, descriptor } = makeCluster(3);
  const one = Array.from({ length: 2500 }, (_, i) => rec(descriptor, keys[1]!, 1, i + 1, { v: i }, { k: `a${i}` }));
  const two = [1, 2, 3].map((s) => rec(descriptor, keys[2]!, 2, s, { v: s }, { k: `b${s}` }));
  return { descriptor, one, two };
}

/** The fingerprints an index holds after every record of `records` was added one by one. */
function expectedFingerprints(clusterId: string, records: Parameters<ReturnType<typeof createLogIndex>['addFingerprint']>[0][], origins: string[]) {
  const index = createLogIndex({ clusterId });
  for (const r of records) index.addFingerprint(r);
  return Object.fromEntries(origins.map((o) => [o, index.fingerprintHex(o)]));
}

describe('log index', () => {
  it('at open, computes each fingerprint a store lacks from its log, page by page, and commits them once', async () => {
    const { descriptor, one, two } = logs();
    const mem = memoryStore({ log: [...one, ...two], vv: { [one[0]!.origin]: 2500, [two[0]!.origin]: 3 } });
    const index = createLogIndex({ clusterId: descriptor.clusterId });
    await index.load(mem.store);
    const expected = expectedFingerprints(descriptor.clusterId, [...one, ...two], [one[0]!.origin, two[0]!.origin]);
    expect({ [one[0]!.origin]: index.fingerprintHex(one[0]!.origin), [two[0]!.origin]: index.fingerprintHex(two[0]!.origin) }).toEqual(expected);
    expect(mem.commits).toEqual([{ log: [], states: [], vv: {}, fp: expected }]);
    expect(index.maxStored.get(one[0]!.origin)).toBe(2500);
  });

  it('at open, takes the committed fingerprints without reading the log', async () => {
    const { descriptor, one, two } = logs();
    const mem = memoryStore({ log: [...one, ...two] });
    await createLogIndex({ clusterId: descriptor.clusterId }).load(mem.store);
    const reads: string[] = [];
    const store: RecordStore = { ...mem.store, scanLog: async (origin, from, limit) => (reads.push(origin), mem.store.scanLog(origin, from, limit)) };
    const index = createLogIndex({ clusterId: descriptor.clusterId });
    await index.load(store);
    expect(reads).toEqual([]);
    expect(index.fingerprintHex(two[0]!.origin)).toBe(mem.fp.get(two[0]!.origin));
    expect(mem.commits).toHaveLength(1);
  });

  it('fingerprintsWith gives what adding the records leaves, and changes nothing', async () => {
    const { descriptor, one, two } = logs();
    const index = createLogIndex({ clusterId: descriptor.clusterId });
    for (const r of one.slice(0, 10)) index.addFingerprint(r);
    const before = index.fingerprintHex(one[0]!.origin);
    const next = index.fingerprintsWith([...one.slice(10, 12), two[0]!]);
    expect(index.fingerprintHex(one[0]!.origin)).toBe(before);
    expect(next).toEqual(expectedFingerprints(descriptor.clusterId, [...one.slice(0, 12), two[0]!], [one[0]!.origin, two[0]!.origin]));
  });
});
