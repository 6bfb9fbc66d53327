import { describe, expect, it } from 'vitest';
import { createAppliedListeners, type AppliedEvent, type IngestResult, type RecordSource } from '../../../../src/core/replication/applied-events.ts';
import { createBatchApplier } from '../../../../src/core/replication/apply-batch.ts';
import type { PendingApply } from '../../../../src/core/replication/group-commit.ts';
import { createKindRegistry, type RecordKindDefinition } from '../../../../src/core/replication/kinds.ts';
import { createLogIndex } from '../../../../src/core/replication/log-index.ts';
import type { WriteIntent } from '../../../../src/core/replication/ports.ts';
import { createHlcClock, verifyRecordSignature, type ReplicatedRecord } from '../../../../src/core/replication/record.ts';
import { createStateCache } from '../../../../src/core/replication/state-cache.ts';
import { signersOf } from '../../../../src/core/replication/validate.ts';
import { createLogger } from '../../../../src/log/index.ts';
import { createMetrics } from '../../../../src/metrics/index.ts';
import { flagKind, makeCluster, memoryStore, noteKind, rec } from './fixtures.ts';

/**
 * A batch applier as node 0 of a 3-node cluster over an in-memory store (holding what `seed` gives
 * it); `failNext` makes the next store commit throw.
 */
async function applierOn(seed: (cluster: ReturnType<typeof makeCluster>) => Parameters<typeof memoryStore>[0] = () => ({}), batchSignatures?: () => boolean) {
  const cluster = makeCluster(3);
  const { keys, descriptor } = cluster;
  const mem = memoryStore(seed(cluster));
  const control = { failNext: false };
  /** The (kind, key) pairs each `getStates` read asked the store for. */
  const reads: string[][] = [];
  const store = {
    ...mem.store,
    async getStates(pairs: Array<{ kind: string; key: string }>) {
      reads.push(pairs.map((p) => `${p.kind}!${p.key}`));
      return mem.store.getStates(pairs);
    },
    async commit(change: Parameters<typeof mem.store.commit>[0]) {
      if (control.failNext) {
        control.failNext = false;
        throw new Error('disk full');
      }
      return mem.store.commit(change);
    },
  };
  const index = createLogIndex({ clusterId: descriptor.clusterId });
  await index.load(mem.store);
  const conflicts: Array<[ReplicatedRecord, ReplicatedRecord]> = [];
  const events: AppliedEvent[] = [];
  const listeners = createAppliedListeners(createLogger({ level: 'silent' }));
  const applier = createBatchApplier(
    { clusterId: descriptor.clusterId, selfAddress: descriptor.nodes[0]!.nodeAddress },
    {
      store,
      kinds: createKindRegistry([noteKind, flagKind] as RecordKindDefinition[]),
      index,
      stateCache: createStateCache({ maxEntries: 10 }, { store }),
      hlc: createHlcClock(() => 10_000),
      signingKey: keys[0]!,
      equivocations: { resolve: async (stored, incoming) => void conflicts.push([stored, incoming]) },
      listeners,
      metrics: createMetrics({ processMetrics: false }),
      ...(batchSignatures ? { batchSignatures } : {}),
    },
  );
  applier.open();
  return { keys, descriptor, mem, control, index, applier, conflicts, events, listeners, reads };
}

/** A queued apply and what it settles with. */
function pending(records: ReplicatedRecord[], source: RecordSource = 'apply', own?: WriteIntent[]) {
  let result: IngestResult | undefined;
  const p: PendingApply = { records, own, source, resolve: (r) => (result = r), reject: () => undefined };
  return { p, result: () => result };
}

describe('applying one batch', () => {
  it('commits every apply of the batch in one store commit, and advances the version vector once a gap fills', async () => {
    const { keys, descriptor, mem, index, applier } = await applierOn();
    const r = (s: number) => rec(descriptor, keys[1]!, 1, s, { v: s }, { k: `k${s}` });
    const first = pending([r(1), r(3)]);
    const second = pending([r(1)], 'gossip');
    await applier.apply([first.p, second.p]);
    expect(first.result()).toEqual({ applied: 2, duplicates: 0, rejected: [] });
    // The same record twice in one batch: stored once.
    expect(second.result()).toEqual({ applied: 0, duplicates: 1, rejected: [] });
    expect(mem.commits).toHaveLength(1);
    expect(index.vv).toEqual({ [r(1).origin]: 1 });
    expect(index.maxStored.get(r(1).origin)).toBe(3);

    await applier.apply([pending([r(2)]).p]);
    expect(mem.commits[1]!.vv).toEqual({ [r(1).origin]: 3 });
    expect(index.vv).toEqual({ [r(1).origin]: 3 });
    // Each commit carries the origin's fingerprint as it stands with the batch stored.
    const fresh = createLogIndex({ clusterId: descriptor.clusterId });
    for (const s of [1, 3]) fresh.addFingerprint(r(s));
    expect(mem.commits[0]!.fp).toEqual({ [r(1).origin]: fresh.fingerprintHex(r(1).origin) });
    fresh.addFingerprint(r(2));
    expect(mem.commits[1]!.fp).toEqual({ [r(1).origin]: index.fingerprintHex(r(1).origin) });
    expect(index.fingerprintHex(r(1).origin)).toBe(fresh.fingerprintHex(r(1).origin));
  });

  it('signs and numbers own writes in the batch that commits them; a failed commit gives their seqs back', async () => {
    const { descriptor, control, index, applier } = await applierOn();
    const self = descriptor.nodes[0]!;
    const one = pending([], 'local', [{ kind: 'note', key: 'a', body: { v: 1 } }]);
    await applier.apply([one.p]);
    expect(one.p.records.map((r) => r.seq)).toEqual([1]);
    expect(verifyRecordSignature(descriptor.clusterId, one.p.records[0]!, signersOf(descriptor).get(self.nodeAddress)!.publicKey)).toBe(true);

    control.failNext = true;
    const failed = pending([], 'local', [{ kind: 'note', key: 'b', body: { v: 2 } }, { kind: 'note', key: 'c', body: { v: 3 } }]);
    await expect(applier.apply([failed.p])).rejects.toThrow('disk full');
    expect(failed.p.records).toEqual([]);

    const next = pending([], 'local', [{ kind: 'note', key: 'd', body: { v: 4 } }]);
    await applier.apply([next.p]);
    expect(next.p.records.map((r) => r.seq)).toEqual([2]);
    expect(index.vv[self.nodeAddress]).toBe(2);
  });

  it('writes an own record with its body in canonical key order, so that it is sent, stored and checked in that order', async () => {
    const { descriptor, mem, applier } = await applierOn();
    const inOrder = { a: 1, v: 2 };
    const write = pending([], 'local', [
      { kind: 'note', key: 'x', body: { v: 1, a: { z: 1, b: [{ d: 1, c: 2 }] } } },
      { kind: 'note', key: 'y', body: inOrder },
    ]);
    await applier.apply([write.p]);
    const [x, y] = write.p.records;
    expect(JSON.stringify(x!.body)).toBe('{"a":{"b":[{"c":2,"d":1}],"z":1},"v":1}');
    // A body already in order is taken as it is.
    expect(y!.body).toBe(inOrder);
    const publicKey = signersOf(descriptor).get(descriptor.nodes[0]!.nodeAddress)!.publicKey;
    expect(verifyRecordSignature(descriptor.clusterId, x!, publicKey)).toBe(true);
    expect(JSON.stringify(mem.commits[0]!.log[0]!.body)).toBe('{"a":{"b":[{"c":2,"d":1}],"z":1},"v":1}');
  });

  it('signs the own writes of one batch together once every node checks the batch form, one by one before', async () => {
    const cluster = { batchForm: false };
    const { descriptor, applier } = await applierOn(undefined, () => cluster.batchForm);
    const publicKey = signersOf(descriptor).get(descriptor.nodes[0]!.nodeAddress)!.publicKey;
    const writes = (from: number, n: number) => Array.from({ length: n }, (_, i) => ({ kind: 'note', key: `w${from + i}`, body: { v: from + i } }));
    // Two callers' writes in one batch, while a node cannot check the batch form yet.
    const before = [pending([], 'local', writes(0, 4)), pending([], 'local', writes(4, 6))];
    await applier.apply(before.map((b) => b.p));
    const early = before.flatMap((b) => b.p.records);
    expect(early.map((r) => r.seq)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(early.every((r) => r.sig.length === 132 && verifyRecordSignature(descriptor.clusterId, r, publicKey))).toBe(true);

    cluster.batchForm = true;
    const after = [pending([], 'local', writes(10, 4)), pending([], 'local', writes(14, 6))];
    await applier.apply(after.map((b) => b.p));
    const late = after.flatMap((b) => b.p.records);
    expect(late.map((r) => r.seq)).toEqual([11, 12, 13, 14, 15, 16, 17, 18, 19, 20]);
    expect(late.every((r) => verifyRecordSignature(descriptor.clusterId, r, publicKey))).toBe(true);
    // Ten records: one signature over the first eight (across both callers), one over the last two.
    const heads = late.map((r) => r.sig.slice(0, 132));
    expect(new Set(heads.slice(0, 8)).size).toBe(1);
    expect(new Set(heads.slice(8)).size).toBe(1);
    expect(heads[0]).not.toBe(heads[8]);
    expect(late.map((r) => (r.sig.length - 2) / 2)).toEqual([...Array(8).fill(66 + 3 * 32), 66 + 32, 66 + 32]);
    // A lone own write keeps the single form.
    const lone = pending([], 'local', writes(20, 1));
    await applier.apply([lone.p]);
    expect(lone.p.records[0]!.sig).toHaveLength(132);
  });

  it('takes the current winners the state cache holds from memory, reading the store only for the rest', async () => {
    const { keys, descriptor, mem, applier, reads } = await applierOn();
    const r = (s: number, k: string, hlc = 1000 + s) => rec(descriptor, keys[1]!, 1, s, { v: s }, { k, hlc: [hlc, 0] });
    await applier.apply([pending([r(1, 'a'), r(2, 'b')]).p]);
    expect(reads).toEqual([['note!a', 'note!b']]);
    // 'a' and 'b' were just written (so cached); 'c' was never seen.
    await applier.apply([pending([r(3, 'a'), r(4, 'b', 10), r(5, 'c')]).p]);
    expect(reads).toEqual([['note!a', 'note!b'], ['note!c']]);
    // The winners are decided as from the store: a newer 'a' wins, an older 'b' does not.
    expect((await mem.store.getState('note', 'a'))?.seq).toBe(3);
    expect((await mem.store.getState('note', 'b'))?.seq).toBe(2);
    expect((await mem.store.getState('note', 'c'))?.seq).toBe(5);
  });

  it('continues its own numbering after the highest own seq stored', async () => {
    // Restarted over a log whose own seqs go up to 7 (with a gap): the next own write is 8.
    const restarted = await applierOn(({ keys, descriptor }) => ({ log: [5, 7].map((s) => rec(descriptor, keys[0]!, 0, s, { v: s }, { k: `s${s}` })) }));
    const own = pending([], 'local', [{ kind: 'note', key: 'x', body: { v: 1 } }]);
    await restarted.applier.apply([own.p]);
    expect(own.p.records[0]!.seq).toBe(8);
  });

  it('numbers own writes after its own records that come back, stored or only seen signed (held back, refused)', async () => {
    const { keys, descriptor, applier } = await applierOn();
    // Its own seq 3 comes back by sync and is stored: the next own write is 4.
    await applier.apply([pending([rec(descriptor, keys[0]!, 0, 3, { v: 3 }, { k: 'back' })], 'sync').p]);
    const own = pending([], 'local', [{ kind: 'note', key: 'x', body: { v: 1 } }]);
    await applier.apply([own.p]);
    expect(own.p.records[0]!.seq).toBe(4);
    // Its own seq 9 was seen signed but not stored (its evidence is not here yet): 9 is taken.
    applier.noteSigned({ origin: descriptor.nodes[0]!.nodeAddress, seq: 9 });
    // Another origin's seqs say nothing of this node's.
    applier.noteSigned({ origin: descriptor.nodes[1]!.nodeAddress, seq: 50 });
    const next = pending([], 'local', [{ kind: 'note', key: 'y', body: { v: 2 } }]);
    await applier.apply([next.p]);
    expect(next.p.records[0]!.seq).toBe(10);
  });

  it('hands a different record under a stored (origin, seq) to the equivocation check, as a duplicate', async () => {
    const { keys, descriptor, applier, conflicts } = await applierOn();
    const a = rec(descriptor, keys[1]!, 1, 1, { v: 1 });
    const b = rec(descriptor, keys[1]!, 1, 1, { v: 2 });
    await applier.apply([pending([a]).p]);
    const twin = pending([b]);
    await applier.apply([twin.p]);
    expect(twin.result()).toEqual({ applied: 0, duplicates: 1, rejected: [] });
    expect(conflicts).toEqual([[a, b]]);
    // The very same record again is a plain duplicate.
    await applier.apply([pending([a]).p]);
    expect(conflicts).toHaveLength(1);
  });

  it('tells listeners the new records and each changed winner with the one before it, only when someone listens', async () => {
    const { keys, descriptor, applier, listeners, events } = await applierOn();
    const open = rec(descriptor, keys[1]!, 1, 1, { state: 'open' }, { kind: 'flag', k: 'p' });
    await applier.apply([pending([open]).p]);
    expect(events).toEqual([]);
    listeners.onApplied((e) => events.push(e));
    const closed = rec(descriptor, keys[2]!, 2, 1, { state: 'closed' }, { kind: 'flag', k: 'p', hlc: [1, 0] });
    const reopened = rec(descriptor, keys[1]!, 1, 2, { state: 'open' }, { kind: 'flag', k: 'p', hlc: [99_999, 0] });
    await applier.apply([pending([closed, reopened], 'sync').p]);
    // The closed state outranks a later open one: one change, from the first open to closed.
    expect(events).toEqual([{ records: [closed, reopened], source: 'sync', changes: [{ before: open, after: closed }] }]);
  });
});
