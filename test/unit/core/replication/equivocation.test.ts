import { describe, expect, it } from 'vitest';
import { createEquivocations, replacesEquivocated, winnersWithReplacement } from '../../../../src/core/replication/equivocation.ts';
import { createKindRegistry, type RecordKindDefinition } from '../../../../src/core/replication/kinds.ts';
import { createLogIndex } from '../../../../src/core/replication/log-index.ts';
import type { ReplicatedRecord } from '../../../../src/core/replication/record.ts';
import { createStateCache } from '../../../../src/core/replication/state-cache.ts';
import { createLogger } from '../../../../src/log/index.ts';
import { createMetrics } from '../../../../src/metrics/index.ts';
import { flagKind, makeCluster, memoryStore, noteKind, rec } from './fixtures.ts';

const kinds = createKindRegistry([noteKind, flagKind] as RecordKindDefinition[]);

/** Two different records node 1 signed under seq 2 (key `k` and key `j`), lower content id first; and node 2's record of `k`. */
function twins() {
  const { keys, descriptor } = makeCluster(3);
  const index = createLogIndex({ clusterId: descriptor.clusterId });
  const a = rec(descriptor, keys[1]!, 1, 2, { v: 1 }, { hlc: [3000, 0] });
  const b = rec(descriptor, keys[1]!, 1, 2, { v: 2 }, { k: 'j', hlc: [3000, 0] });
  const [lower, higher] = index.contentId(a) < index.contentId(b) ? [a, b] : [b, a];
  const other = rec(descriptor, keys[2]!, 2, 1, { v: 9 }, { hlc: [2000, 0] });
  const otherOfJ = rec(descriptor, keys[2]!, 2, 2, { v: 8 }, { k: 'j', hlc: [2000, 0] });
  return { descriptor, index, lower, higher, other, otherOfJ };
}

function resolverOver(t: ReturnType<typeof twins>, stored: ReplicatedRecord) {
  const mem = memoryStore({ log: [stored, t.other, t.otherOfJ], states: [stored.key === 'k' ? stored : t.other, stored.key === 'j' ? stored : t.otherOfJ] });
  const metrics = createMetrics({ processMetrics: false });
  const stateCache = createStateCache({ maxEntries: 10 }, { store: mem.store });
  const equivocations = createEquivocations({ store: mem.store, kinds, index: t.index, stateCache, clock: () => 7777, metrics, logger: createLogger({ level: 'silent' }) });
  return { mem, metrics, stateCache, equivocations };
}

describe('equivocation', () => {
  it('keeps the lower content id: the stored record is replaced and both keys are recomputed from the log', async () => {
    const t = twins();
    const { mem, stateCache, equivocations } = resolverOver(t, t.higher);
    for (const r of [t.higher, t.other, t.otherOfJ]) t.index.addFingerprint(r);
    await equivocations.resolve(t.higher, t.lower);

    expect(mem.log.get(`${t.lower.origin}!2`)).toEqual(t.lower);
    expect(mem.commits).toHaveLength(1);
    expect(mem.commits[0]!.vv).toEqual({});
    // The key the replaced record held falls back to node 2's record; the key of the kept one is its own.
    const byKey = Object.fromEntries(mem.commits[0]!.states.map((r) => [r.key, r]));
    expect(byKey[t.lower.key]).toEqual(t.lower);
    expect(byKey[t.higher.key]).toEqual(t.higher.key === 'k' ? t.other : t.otherOfJ);
    expect(await stateCache.get('note', t.lower.key)).toEqual(t.lower);
    // The origin's fingerprint is what it would be had the kept record been stored from the start.
    const expected = createLogIndex({ clusterId: t.descriptor.clusterId });
    for (const r of [t.lower, t.other, t.otherOfJ]) expected.addFingerprint(r);
    expect(t.index.fingerprintHex(t.lower.origin)).toBe(expected.fingerprintHex(t.lower.origin));
    // …and is committed with the replacement, so the next open agrees.
    expect(mem.commits[0]!.fp).toEqual({ [t.lower.origin]: expected.fingerprintHex(t.lower.origin) });
    expect(equivocations.list()).toEqual([{ origin: t.lower.origin, seq: 2, at: 7777 }]);
  });

  it('forgets the cached winner of a key the replaced record held alone (the store has none for it now)', async () => {
    const t = twins();
    const mem = memoryStore({ log: [t.higher], states: [t.higher] });
    const stateCache = createStateCache({ maxEntries: 10 }, { store: mem.store });
    const equivocations = createEquivocations({ store: mem.store, kinds, index: t.index, stateCache, clock: () => 7777, metrics: createMetrics({ processMetrics: false }), logger: createLogger({ level: 'silent' }) });
    expect(await stateCache.get('note', t.higher.key)).toEqual(t.higher);
    t.index.addFingerprint(t.higher);
    await equivocations.resolve(t.higher, t.lower);
    expect(stateCache.peek('note', t.higher.key)).toBeUndefined();
    expect(stateCache.peek('note', t.lower.key)).toEqual(t.lower);
  });

  it('keeps the stored record when it has the lower content id, and still flags the origin', async () => {
    const t = twins();
    const { mem, metrics, equivocations } = resolverOver(t, t.lower);
    await equivocations.resolve(t.lower, t.higher);
    await equivocations.resolve(t.lower, t.higher);
    expect(mem.commits).toEqual([]);
    expect(mem.log.get(`${t.lower.origin}!2`)).toEqual(t.lower);
    // Flagged once per (origin, seq), however often the twin arrives.
    expect(equivocations.list()).toEqual([{ origin: t.lower.origin, seq: 2, at: 7777 }]);
    const counted = (await metrics.equivocations.get()).values;
    expect(counted).toEqual([expect.objectContaining({ labels: { origin: t.lower.origin }, value: 1 })]);
  });

  it('replacesEquivocated: only a strictly lower content id replaces', () => {
    expect(replacesEquivocated(10n, 9n)).toBe(true);
    expect(replacesEquivocated(9n, 10n)).toBe(false);
    expect(replacesEquivocated(9n, 9n)).toBe(false);
  });

  it('winnersWithReplacement: the merge rule over the log with the replacement in place', async () => {
    const t = twins();
    async function* log() {
      yield t.other;
      yield t.higher;
      yield t.otherOfJ;
    }
    const winners = await winnersWithReplacement(log(), t.higher, t.lower, kinds);
    expect(winners.find((r) => r.key === t.lower.key)).toEqual(t.lower);
    expect(winners.find((r) => r.key === t.higher.key)).toEqual(t.higher.key === 'k' ? t.other : t.otherOfJ);
    expect(winners).toHaveLength(2);
  });
});
