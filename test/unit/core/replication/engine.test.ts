import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import fc from 'fast-check';
import { openStore } from '../../../../src/store/index.ts';
import { createReplicationEngine, type ReplicationEngine } from '../../../../src/core/replication/engine.ts';
import { createKindRegistry, type RecordKindDefinition } from '../../../../src/core/replication/kinds.ts';
import { recordDigest, signRecord, type ReplicatedRecord } from '../../../../src/core/replication/record.ts';
import { signRecordDigests } from '../../../../src/core/replication/record-sig.ts';
import { heldBack } from '../../../../src/core/replication/refusals.ts';
import type { PeerTransport } from '../../../../src/core/replication/ports.ts';
import { generatePrivateKey, addressOfPrivateKey } from '../../../../src/crypto/index.ts';
import { createLogger } from '../../../../src/log/index.ts';
import { createMetrics } from '../../../../src/metrics/index.ts';
import { QuorumError } from '../../../../src/errors/index.ts';
import { cleanupStack, tempDir } from '../../../utils/temp.ts';
import { flagKind, makeCluster, noteKind, rec } from './fixtures.ts';

const stack = cleanupStack();
afterEach(() => stack.run());

/** An engine over a real store, node `selfIndex` of the cluster, with stub membership and transport. */
function engineOn(
  store: Pick<Awaited<ReturnType<typeof openStore>>, 'records'>,
  cluster: ReturnType<typeof makeCluster>,
  selfIndex: number,
  opts: { reachable?: number; transport?: PeerTransport; kinds?: RecordKindDefinition<never>[]; prefetchSigners?: (strings: ReadonlyArray<{ data: string; signature: string }>) => Promise<void> } = {},
) {
  return createReplicationEngine(
    { applyTimeoutMs: 500 },
    {
      store: store.records,
      kinds: createKindRegistry((opts.kinds ?? [noteKind, flagKind]) as RecordKindDefinition[]),
      membership: {
        descriptor: cluster.descriptor,
        self: cluster.descriptor.nodes[selfIndex]!,
        isReachable: (slot) => slot < (opts.reachable ?? 5),
        reachableCount: () => opts.reachable ?? 5,
      },
      transport: () => opts.transport ?? { sendApply: async () => undefined, publish: async () => undefined },
      signingKey: cluster.keys[selfIndex]!,
      clock: Date.now,
      logger: createLogger({ level: 'silent' }),
      metrics: createMetrics({ processMetrics: false }),
      ...(opts.prefetchSigners ? { prefetchSigners: opts.prefetchSigners } : {}),
    },
  );
}

async function openTempStore() {
  const store = await openStore({ location: await tempDir(stack) });
  stack.push(() => store.close());
  return store;
}

async function makeEngine(opts: { selfIndex?: number; reachable?: number; transport?: PeerTransport } = {}) {
  const cluster = makeCluster(5);
  const store = await openTempStore();
  const engine = engineOn(store, cluster, opts.selfIndex ?? 0, opts);
  await engine.open();
  return { engine, keys: cluster.keys, descriptor: cluster.descriptor, store, cluster };
}

async function stateOf(engine: ReplicationEngine, kind: string, key: string) {
  return (await engine.get(kind, key))?.body;
}

describe('replication engine: validation', () => {
  it('rejects a record signed by a key that is not in the cluster file, and never stores it', async () => {
    const { engine, descriptor } = await makeEngine();
    const outsider = generatePrivateKey();
    const forged = signRecord(descriptor.clusterId, { kind: 'note', key: 'k', origin: addressOfPrivateKey(outsider), seq: 1, hlc: [1, 0], body: { v: 1 } }, outsider);
    const res = await engine.ingest([forged], 'apply');
    expect(res.rejected).toEqual([expect.objectContaining({ code: 'unknown_origin' })]);
    expect(await engine.get('note', 'k')).toBeUndefined();
    expect(engine.versionVector()).toEqual({});
  });

  it('rejects a record claiming a listed origin but signed by another key', async () => {
    const { engine, descriptor } = await makeEngine();
    const forged = signRecord(descriptor.clusterId, { kind: 'note', key: 'k', origin: descriptor.nodes[2]!.nodeAddress, seq: 1, hlc: [1, 0], body: { v: 1 } }, generatePrivateKey());
    const res = await engine.ingest([forged], 'gossip');
    expect(res.rejected[0]?.code).toBe('bad_signature');
    expect(await engine.get('note', 'k')).toBeUndefined();
  });

  it('records signed a batch at a time stand or fall alone: a refused one leaves its batch neighbours applied, and a stranger on their path is refused', async () => {
    const { engine, descriptor, keys } = await makeEngine();
    const origin = descriptor.nodes[1]!.nodeAddress;
    const unsigned = [{ v: 1 }, { v: 'not a number' }, { v: 3 }].map((body, i) => ({ kind: 'note', key: `b${i}`, origin, seq: i + 1, hlc: [1000 + i, 0] as const, body }));
    const sigs = signRecordDigests(descriptor.clusterId, unsigned.map((u) => recordDigest(descriptor.clusterId, u)), keys[1]!, true);
    const batch = unsigned.map((u, i) => ({ ...u, sig: sigs[i]! }));
    // Another origin's record carrying the batch's first path.
    const stranger = { ...rec(descriptor, keys[2]!, 2, 1, { v: 9 }, { k: 'x' }), sig: sigs[0]! };
    const res = await engine.ingest([...batch, stranger], 'apply');
    expect(res.applied).toBe(2);
    expect(res.rejected.map((r) => r.code)).toEqual(['bad_body', 'bad_signature']);
    expect(await stateOf(engine, 'note', 'b0')).toEqual({ v: 1 });
    expect(await stateOf(engine, 'note', 'b2')).toEqual({ v: 3 });
    expect(await engine.get('note', 'x')).toBeUndefined();
  });

  it('rejects a tampered body, an unknown kind, a schema violation and a record of another cluster', async () => {
    const { engine, descriptor, keys } = await makeEngine();
    const good = rec(descriptor, keys[1]!, 1, 1, { v: 1 });
    const tampered = { ...good, body: { v: 2 } };
    const unknownKind = rec(descriptor, keys[1]!, 1, 1, { v: 1 }, { kind: 'nope' });
    const badBody = rec(descriptor, keys[1]!, 1, 1, { v: 'x' });
    const otherCluster = signRecord('qk-other', { kind: 'note', key: 'k', origin: descriptor.nodes[1]!.nodeAddress, seq: 1, hlc: [1, 0], body: { v: 1 } }, keys[1]!);
    const res = await engine.ingest([tampered, unknownKind, badBody, otherCluster, null, 'x', { seq: 1 }], 'sync');
    expect(res.rejected.map((r) => r.code)).toEqual(['bad_signature', 'unknown_kind', 'bad_body', 'bad_signature', 'not_an_object', 'not_an_object', 'malformed']);
    expect(res.applied).toBe(0);
    expect(engine.versionVector()).toEqual({});
  });
});

describe('replication engine: signers of the strings records carry, recovered ahead of their checks', () => {
  it('asks for the strings of every record that passed the structural checks, once, and checks bodies only after', async () => {
    const cluster = makeCluster(5);
    const events: string[] = [];
    const signedKind: RecordKindDefinition<{ data: string; signature: string }> = {
      name: 'signed',
      writers: ['member'],
      body: z.strictObject({ data: z.string(), signature: z.string() }),
      signedStrings: (b) => {
        const { data, signature } = (b ?? {}) as { data?: unknown; signature?: unknown };
        return typeof data === 'string' && typeof signature === 'string' ? [{ data, signature }] : [];
      },
      validate: (b) => {
        events.push(`check ${b.data}`);
        return undefined;
      },
    };
    const asked: string[][] = [];
    const engine = engineOn(await openTempStore(), cluster, 0, {
      kinds: [signedKind, noteKind] as RecordKindDefinition<never>[],
      prefetchSigners: async (strings) => {
        asked.push(strings.map((x) => x.data));
        await new Promise((resolve) => setImmediate(resolve));
        events.push('prefetched');
      },
    });
    await engine.open();
    const outsider = generatePrivateKey();
    const res = await engine.ingest(
      [
        rec(cluster.descriptor, cluster.keys[1]!, 1, 1, { data: 'a', signature: '0xa' }, { kind: 'signed' }),
        rec(cluster.descriptor, cluster.keys[2]!, 2, 1, { data: 'b', signature: 42 }, { kind: 'signed' }),
        rec(cluster.descriptor, cluster.keys[3]!, 3, 1, { v: 1 }),
        signRecord(cluster.descriptor.clusterId, { kind: 'signed', key: 'k', origin: addressOfPrivateKey(outsider), seq: 1, hlc: [1, 0], body: { data: 'outsider', signature: '0x' } }, outsider),
      ],
      'apply',
    );
    // The outsider's record is refused before its signature: its string is not recovered; the
    // malformed body gives none; the note kind carries none.
    expect(asked).toEqual([['a']]);
    expect(events).toEqual(['prefetched', 'check a']);
    expect(res.applied).toBe(2);
    expect(res.rejected.map((r) => r.code).sort()).toEqual(['bad_body', 'unknown_origin']);
  });
});

describe('replication engine: idempotent, order-independent apply', () => {
  it('duplicated and reordered deliveries converge to the same state and version vector', async () => {
    const { keys, descriptor } = makeCluster(5);
    // 3 origins each write 6 records over 4 keys, with clashing HLCs and one absorbing state.
    const records: ReplicatedRecord[] = [];
    for (let o = 0; o < 3; o++) {
      for (let s = 1; s <= 6; s++) {
        const k = `key-${(o + s) % 4}`;
        records.push(rec(descriptor, keys[o]!, o, s, { state: o === 1 && s === 3 ? 'closed' : 'open' }, { kind: 'flag', k, hlc: [1000 + (s % 3), o % 2] }));
      }
    }
    const applyAll = async (order: ReplicatedRecord[], chunk: number) => {
      const store = await openTempStore();
      const engine = engineOn(store, { keys, descriptor }, 4);
      await engine.open();
      for (let i = 0; i < order.length; i += chunk) await engine.ingest(order.slice(i, i + chunk), 'gossip');
      const state: Record<string, unknown> = {};
      for await (const r of engine.list('flag')) state[r.key] = { body: r.body, origin: r.origin, seq: r.seq };
      return { state, vv: engine.versionVector(), count: await store.records.countLog() };
    };
    const reference = await applyAll(records, 1);
    expect(reference.count).toBe(18);
    expect(Object.values(reference.vv)).toEqual([6, 6, 6]);
    // The absorbing 'closed' stays whatever arrives later with a higher clock.
    const closedKey = `key-${(1 + 3) % 4}`;
    expect(reference.state[closedKey]).toMatchObject({ body: { state: 'closed' } });

    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.integer({ min: 0, max: records.length - 1 }), { maxLength: 12 }),
        fc.integer({ min: 1, max: 7 }),
        fc.infiniteStream(fc.double({ min: 0, max: 1, noNaN: true })),
        async (dupIdx, chunk, rand) => {
          const delivered = [...records, ...dupIdx.map((i) => records[i]!)];
          // Fisher–Yates with fast-check's randomness, so failures shrink and replay.
          const it = rand[Symbol.iterator]();
          for (let i = delivered.length - 1; i > 0; i--) {
            const j = Math.floor(it.next().value * (i + 1));
            [delivered[i], delivered[j]] = [delivered[j]!, delivered[i]!];
          }
          const got = await applyAll(delivered, chunk);
          expect(got).toEqual(reference);
        },
      ),
      { numRuns: 25 },
    );
  });

  it('a record with a gap is stored but the version vector waits for the gap to fill', async () => {
    const { engine, descriptor, keys } = await makeEngine();
    const origin = descriptor.nodes[3]!.nodeAddress;
    await engine.ingest([rec(descriptor, keys[3]!, 3, 2, { v: 2 }), rec(descriptor, keys[3]!, 3, 3, { v: 3 })], 'gossip');
    expect(engine.versionVector()[origin]).toBeUndefined();
    expect(await stateOf(engine, 'note', 'k')).toEqual({ v: 3 });
    await engine.ingest([rec(descriptor, keys[3]!, 3, 1, { v: 1 })], 'sync');
    expect(engine.versionVector()[origin]).toBe(3);
    // The older write (lower hlc) never replaces the newer one.
    expect(await stateOf(engine, 'note', 'k')).toEqual({ v: 3 });
  });
});

/**
 * A kind whose record names the one it follows by its place in its origin's log, as a version names
 * the version it replaces (src/core/replication/versions.ts): a member without that one cannot decide.
 */
const chainKind: RecordKindDefinition<{ n: number; prev: { origin: string; seq: number } | null }> = {
  name: 'chain',
  writers: ['member'],
  body: z.strictObject({ n: z.number().int().positive(), prev: z.strictObject({ origin: z.string(), seq: z.number().int().positive() }).nullable() }),
  rank: (b) => b.n,
  async validate(b, context) {
    if (b.prev && !(await context.recordAt(b.prev.origin, b.prev.seq))) return heldBack('prev_missing', b.prev);
    return undefined;
  },
};

describe('replication engine: records that name another (docs/security.md, "Order never matters")', () => {
  async function chainEngine() {
    const cluster = makeCluster(5);
    const engine = engineOn(await openTempStore(), cluster, 0, { kinds: [chainKind, noteKind] as RecordKindDefinition<never>[] });
    await engine.open();
    const origin = cluster.descriptor.nodes[1]!.nodeAddress;
    const first = rec(cluster.descriptor, cluster.keys[1]!, 1, 1, { n: 1, prev: null }, { kind: 'chain' });
    const second = rec(cluster.descriptor, cluster.keys[1]!, 1, 2, { n: 2, prev: { origin, seq: 1 } }, { kind: 'chain' });
    return { engine, cluster, origin, first, second };
  }

  it('a record whose named record has not arrived is held back, not refused for good, and stored once that one is', async () => {
    const { engine, origin, first, second } = await chainEngine();
    const early = await engine.ingest([second], 'gossip');
    expect(early).toMatchObject({ applied: 0, rejected: [{ code: 'prev_missing', transient: true, origin, seq: 2 }] });
    expect(await engine.get('chain', 'k')).toBeUndefined();
    // Still waited for: this node is behind the origin until it has it.
    expect(engine.lagBehind({ [origin]: 2 })).toEqual({ [origin]: 2 });
    await engine.ingest([first], 'sync');
    await expect.poll(async () => (await engine.get('chain', 'k'))?.body).toEqual({ n: 2, prev: { origin, seq: 1 } });
    await expect.poll(() => engine.versionVector()[origin]).toBe(2);
    expect(engine.lagBehind({ [origin]: 2 })).toEqual({});
  });

  it('in one batch, a record is checked again once the record it names passed, whatever their order', async () => {
    const { engine, origin, first, second } = await chainEngine();
    const res = await engine.ingest([second, first], 'sync');
    expect(res).toMatchObject({ applied: 2, rejected: [] });
    expect((await engine.get('chain', 'k'))?.body).toMatchObject({ n: 2 });
    expect(engine.versionVector()[origin]).toBe(2);
  });

  it('lagBehind: behind an origin on the seqs this node lacks, but not on those it refused for good', async () => {
    const { engine, cluster, origin } = await chainEngine();
    const other = cluster.descriptor.nodes[2]!.nodeAddress;
    expect(engine.lagBehind({ [origin]: 1, [other]: 0 })).toEqual({ [origin]: 1 });
    // Seq 1 of the origin is refused by every honest member: nobody waits for it.
    const invalid = rec(cluster.descriptor, cluster.keys[1]!, 1, 1, { v: 'x' });
    expect((await engine.ingest([invalid], 'gossip')).rejected).toEqual([expect.objectContaining({ code: 'bad_body' })]);
    expect(engine.lagBehind({ [origin]: 1 })).toEqual({});
    // Seq 2 it lacks: behind again.
    expect(engine.lagBehind({ [origin]: 2 })).toEqual({ [origin]: 2 });
  });
});

describe('replication engine: the same records from several peers at once (catch-up)', () => {
  /** An engine whose commits wait for `gate()` and fail while `failing` is set. */
  async function gatedEngine() {
    const cluster = makeCluster(5);
    const store = await openTempStore();
    let open: () => void = () => undefined;
    let gate = new Promise<void>((r) => (open = r));
    const control = { failing: false, entered: 0, commits: 0, release: () => open(), rearm: () => (gate = new Promise<void>((r) => (open = r))) };
    const records = {
      ...store.records,
      commit: async (change: Parameters<typeof store.records.commit>[0]) => {
        control.entered++;
        await gate;
        control.commits++;
        if (control.failing) throw new Error('disk full');
        return store.records.commit(change);
      },
    };
    const engine = engineOn({ records }, cluster, 4);
    await engine.open();
    const batch = Array.from({ length: 50 }, (_, i) => rec(cluster.descriptor, cluster.keys[1]!, 1, i + 1, { v: i }, { k: `k${i}` }));
    return { engine, store, control, batch, origin: cluster.descriptor.nodes[1]!.nodeAddress };
  }

  it('stores them once; a copy that arrives while the first is being stored is a duplicate only once that one is durable', async () => {
    const { engine, store, control, batch, origin } = await gatedEngine();
    const first = engine.ingest(batch, 'sync');
    let secondDone = false;
    const second = engine.ingest(batch.map((r) => ({ ...r })), 'sync').then((res) => ((secondDone = true), res));
    await new Promise((r) => setImmediate(r));
    expect(secondDone).toBe(false);
    control.release();
    expect(await first).toMatchObject({ applied: 50, duplicates: 0 });
    expect(await second).toMatchObject({ applied: 0, duplicates: 50, rejected: [] });
    // Once stored, a third copy is answered from memory.
    expect(await engine.ingest(batch, 'gossip')).toMatchObject({ applied: 0, duplicates: 50 });
    expect(control.commits).toBe(1);
    expect(engine.versionVector()[origin]).toBe(50);
    expect(await store.records.countLog()).toBe(50);
  });

  it('when the first copy fails to be stored, the waiting copy is checked and stored itself', async () => {
    const { engine, store, control, batch, origin } = await gatedEngine();
    control.failing = true;
    const first = engine.ingest(batch, 'sync');
    // The second copy arrives once the first is being stored (in the same turn, both would go in one batch).
    while (control.entered === 0) await new Promise((r) => setImmediate(r));
    const second = engine.ingest(batch.map((r) => ({ ...r })), 'sync');
    control.release();
    await expect(first).rejects.toThrow('disk full');
    control.failing = false;
    expect(await second).toMatchObject({ applied: 50, duplicates: 0, rejected: [] });
    expect(engine.versionVector()[origin]).toBe(50);
    expect(await store.records.countLog()).toBe(50);
  });

  it('stop (the Startable contract) waits for queued applies to be durable, and a second stop waits alike', async () => {
    const { engine, store, control, batch } = await gatedEngine();
    let applied = false;
    const ingesting = engine.ingest(batch, 'sync').then(() => (applied = true));
    await new Promise((r) => setImmediate(r));
    const stopped = engine.stop();
    const again = engine.stop();
    control.release();
    await Promise.all([stopped, again]);
    expect(applied).toBe(true);
    expect(await store.records.countLog()).toBe(50);
    await ingesting;
    await engine.stop();
  });

  it('a record under a stored (origin, seq) with another signature is not taken for a duplicate', async () => {
    const { engine, control, batch } = await gatedEngine();
    control.release();
    await engine.ingest(batch, 'sync');
    const forged = { ...batch[0]!, sig: batch[1]!.sig };
    const res = await engine.ingest([forged], 'gossip');
    expect(res.duplicates).toBe(0);
    expect(res.rejected).toEqual([expect.objectContaining({ code: 'bad_signature' })]);
  });
});

describe('replication engine: quorum writes', () => {
  it('succeeds at threshold acks and reports the failed members', async () => {
    const transport: PeerTransport = {
      sendApply: async (slot) => {
        if (slot >= 3) throw new Error('unreachable');
      },
      publish: async () => undefined,
    };
    const { engine, descriptor } = await makeEngine({ transport });
    const report = await engine.replicate({ kind: 'note', key: 'a', body: { v: 1 } });
    expect(report.acked).toHaveLength(3);
    expect(report.failed.map((f) => f.slot).sort()).toEqual([3, 4]);
    expect(report.record.origin).toBe(descriptor.nodes[0]!.nodeAddress);
    expect(report.record.seq).toBe(1);
    expect(await stateOf(engine, 'note', 'a')).toEqual({ v: 1 });
  });

  it('fails with a QuorumError and writes nothing when fewer than threshold members are reachable', async () => {
    const { engine } = await makeEngine({ reachable: 2 });
    await expect(engine.replicate({ kind: 'note', key: 'a', body: { v: 1 } })).rejects.toBeInstanceOf(QuorumError);
    expect(await engine.get('note', 'a')).toBeUndefined();
  });

  it('fails with a QuorumError when members reachable at the start do not ack in time', async () => {
    const transport: PeerTransport = {
      sendApply: (slot, _r, { signal }) =>
        slot >= 2 ? new Promise((_, reject) => signal.addEventListener('abort', () => reject(new Error('aborted')))) : Promise.resolve(),
      publish: async () => undefined,
    };
    const { engine } = await makeEngine({ transport });
    const err = await engine.replicate({ kind: 'note', key: 'a', body: { v: 1 } }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(QuorumError);
    expect((err as QuorumError).acked).toHaveLength(2);
    expect((err as QuorumError).failed.every((f) => f.error === 'timeout')).toBe(true);
  });

  it('refuses to write a record its peers would refuse, without using up a seq', async () => {
    const { engine, descriptor } = await makeEngine();
    await expect(engine.replicate({ kind: 'note', key: 'x'.repeat(600), body: { v: 1 } })).rejects.toThrow(/bad_key/);
    await expect(engine.replicate({ kind: 'note', key: 'k', body: { v: 'not a number' } as never })).rejects.toThrow(/bad_body/);
    const ok = await engine.replicate({ kind: 'note', key: 'k', body: { v: 1 } });
    expect(ok.record.seq).toBe(1);
    expect(engine.versionVector()[descriptor.nodes[0]!.nodeAddress]).toBe(1);
  });

  it('replicateAll sends records that belong together as one apply message, and a member commits them in one batch', async () => {
    const sent: Array<{ slot: number; records: ReplicatedRecord[] }> = [];
    const transport: PeerTransport = {
      sendApply: async (slot, records) => {
        sent.push({ slot, records });
        if (slot === 4) throw new Error('unreachable');
      },
      publish: async () => undefined,
    };
    const { engine, cluster } = await makeEngine({ transport });
    const report = await engine.replicateAll([
      { kind: 'flag', key: 'p', body: { state: 'closed' } },
      { kind: 'note', key: 'n', body: { v: 2 } },
    ]);
    expect(report.records.map((r) => r.seq)).toEqual([1, 2]);
    expect(report.acked).toHaveLength(4);
    expect(report.failed.map((f) => f.slot)).toEqual([4]);
    expect(sent.map((s) => s.records.length)).toEqual([2, 2, 2, 2]);

    // The member side: one ingest of the message is one commit, reported as one set of state changes.
    const member = await openTempStore();
    const commits: Array<{ kinds: string[]; before: Array<string | undefined> }> = [];
    const peer = createReplicationEngine(
      { applyTimeoutMs: 500 },
      {
        store: member.records,
        kinds: createKindRegistry([noteKind, flagKind]),
        membership: { descriptor: cluster.descriptor, self: cluster.descriptor.nodes[1]!, isReachable: () => true, reachableCount: () => 5 },
        transport: () => transport,
        signingKey: cluster.keys[1]!,
        clock: Date.now,
        logger: createLogger({ level: 'silent' }),
        metrics: createMetrics({ processMetrics: false }),
      },
    );
    peer.onApplied(({ changes }) => commits.push({ kinds: changes.map((c) => c.after.kind), before: changes.map((c) => c.before?.kind) }));
    // A listener that throws is logged; the ones after it still hear the batch.
    peer.onApplied(() => {
      throw new Error('listener bug');
    });
    let heard = 0;
    const unsubscribe = peer.onApplied(() => heard++);
    await peer.open();
    expect(await peer.ingest(sent[0]!.records, 'apply')).toMatchObject({ applied: 2, duplicates: 0 });
    expect(commits).toEqual([{ kinds: ['flag', 'note'], before: [undefined, undefined] }]);
    expect(heard).toBe(1);
    unsubscribe();
    // Delivered again (a redelivery): duplicates, no state change reported.
    expect(await peer.ingest(sent[0]!.records, 'apply')).toMatchObject({ applied: 0, duplicates: 2 });
    expect(commits).toHaveLength(1);
  });

  it('replicateAll refuses the whole batch when one record is invalid, without using up a seq', async () => {
    const { engine } = await makeEngine();
    await expect(engine.replicateAll([{ kind: 'note', key: 'a', body: { v: 1 } }, { kind: 'note', key: 'b', body: { v: 'x' } as never }])).rejects.toThrow(/bad_body/);
    expect(await engine.get('note', 'a')).toBeUndefined();
    expect((await engine.replicate({ kind: 'note', key: 'a', body: { v: 1 } })).record.seq).toBe(1);
  });

  it('numbers its own records contiguously across restarts', async () => {
    const { engine, store, descriptor, cluster } = await makeEngine();
    for (let i = 0; i < 3; i++) await engine.replicate({ kind: 'note', key: `k${i}`, body: { v: i } });
    // A second engine over the same store is what a restarted node builds.
    const restarted = engineOn(store, cluster, 0);
    await restarted.open();
    expect((await restarted.replicate({ kind: 'note', key: 'x', body: { v: 9 } })).record.seq).toBe(4);
    expect(await store.records.countLog()).toBe(4);
    expect(restarted.versionVector()[descriptor.nodes[0]!.nodeAddress]).toBe(4);
  });
});

describe('replication engine: integrity (docs/security.md, "Replication integrity")', () => {
  it('keeps each origin\'s fingerprint on disk with its records: a restarted engine asks with the same ones without reading the log', async () => {
    const { engine, store, keys, descriptor, cluster } = await makeEngine();
    for (let i = 0; i < 3; i++) await engine.replicate({ kind: 'note', key: `own${i}`, body: { v: i } });
    expect((await engine.ingest([1, 2].map((s) => rec(descriptor, keys[1]!, 1, s, { v: s }, { k: `p${s}` })), 'apply')).applied).toBe(2);
    const before = await engine.syncRequest();
    expect(Object.keys(before.fp!)).toHaveLength(2);
    expect(await store.records.loadFingerprints()).toEqual(before.fp);
    const unread = () => {
      throw new Error('the log was read at open');
    };
    const restarted = engineOn({ records: { ...store.records, allLog: unread, scanLog: unread } }, cluster, 0);
    await restarted.open();
    expect(await restarted.syncRequest()).toEqual(before);
  });

  it('a gap costs its own records: the sync request names the missing seq, and a peer sends that and what lies beyond', async () => {
    const { engine, descriptor, keys } = await makeEngine();
    const records = Array.from({ length: 30 }, (_, i) => rec(descriptor, keys[2]!, 2, i + 1, { v: i }, { k: `k${i}` }));
    // Seq 5 never arrives.
    await engine.ingest(records.filter((r) => r.seq !== 5), 'gossip');
    const origin = descriptor.nodes[2]!.nodeAddress;
    expect(engine.versionVector()[origin]).toBe(4);
    const request = await engine.syncRequest();
    expect(request.max?.[origin]).toBe(30);
    expect(request.gaps?.[origin]).toEqual([5]);

    // A peer holding all 30 (plus two more) sends seq 5 and 31–32 only, not 6–30 again.
    const peer = await makeEngine();
    const more = [...records, rec(descriptor, keys[2]!, 2, 31, { v: 31 }, { k: 'k31' }), rec(descriptor, keys[2]!, 2, 32, { v: 32 }, { k: 'k32' })];
    const peerEngine = engineOn(peer.store, { keys, descriptor }, 0);
    await peerEngine.open();
    await peerEngine.ingest(more, 'sync');
    const sent: number[] = [];
    for await (const page of peerEngine.missingFor(request, { limit: 100 })) sent.push(...page.filter((r) => r.origin === origin).map((r) => r.seq));
    expect(sent).toEqual([5, 31, 32]);
    const naive: number[] = [];
    for await (const page of peerEngine.missingFor({ vv: request.vv }, { limit: 100 })) naive.push(...page.filter((r) => r.origin === origin).map((r) => r.seq));
    expect(naive).toHaveLength(28);
  });

  it('a failed commit gives its seq back: the next write takes it, so the origin never skips one', async () => {
    const cluster = makeCluster(5);
    const store = await openTempStore();
    let failNext = false;
    const records = { ...store.records, commit: async (change: Parameters<typeof store.records.commit>[0]) => {
      if (failNext) {
        failNext = false;
        throw new Error('disk full');
      }
      return store.records.commit(change);
    } };
    const engine = engineOn({ records }, cluster, 0);
    await engine.open();
    const first = await engine.replicate({ kind: 'note', key: 'a', body: { v: 1 } });
    expect(first.record.seq).toBe(1);
    failNext = true;
    await expect(engine.replicate({ kind: 'note', key: 'b', body: { v: 2 } })).rejects.toThrow(/disk full/);
    const third = await engine.replicate({ kind: 'note', key: 'c', body: { v: 3 } });
    expect(third.record.seq).toBe(2);
    expect(engine.versionVector()[cluster.descriptor.nodes[0]!.nodeAddress]).toBe(2);
  });

  it('a record stamped beyond the allowed skew is refused; one within it is stored', async () => {
    const { engine, descriptor, keys } = await makeEngine();
    const ahead = rec(descriptor, keys[1]!, 1, 1, { v: 1 }, { hlc: [Date.now() + 120_000, 0] });
    expect((await engine.ingest([ahead], 'gossip')).rejected[0]?.code).toBe('hlc_ahead');
    const near = rec(descriptor, keys[1]!, 1, 1, { v: 1 }, { hlc: [Date.now() + 5_000, 0] });
    expect((await engine.ingest([near], 'gossip')).applied).toBe(1);
  });

  it('an origin may write only the kinds the registry allows it', async () => {
    const cluster = makeCluster(5);
    const store = await openTempStore();
    const coordinatorOnly: RecordKindDefinition<{ v: number }> = { name: 'guarded', writers: ['coordinator'], body: z.strictObject({ v: z.number().int() }) };
    const descriptor = { ...cluster.descriptor, nodes: cluster.descriptor.nodes.map((n, i) => (i === 1 ? { ...n, httpUrl: 'http://127.0.0.1:1' } : n)) };
    const engine = engineOn(store, { keys: cluster.keys, descriptor }, 0, { kinds: [coordinatorOnly as RecordKindDefinition<never>] });
    await engine.open();
    const fromMember = rec(descriptor, cluster.keys[2]!, 2, 1, { v: 1 }, { kind: 'guarded' });
    const fromCoordinator = rec(descriptor, cluster.keys[1]!, 1, 1, { v: 2 }, { kind: 'guarded' });
    const res = await engine.ingest([fromMember, fromCoordinator], 'apply');
    expect(res.rejected).toEqual([expect.objectContaining({ code: 'writer_not_allowed' })]);
    expect(await stateOf(engine, 'guarded', 'k')).toEqual({ v: 2 });
    // Nor may this node write it itself: nothing is numbered.
    await expect(engine.replicate({ kind: 'guarded', key: 'x', body: { v: 3 } })).rejects.toThrow();
    expect(engine.versionVector()[descriptor.nodes[0]!.nodeAddress]).toBeUndefined();
    expect(await stateOf(engine, 'guarded', 'x')).toBeUndefined();
  });
});
