import { describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { QuorumError } from '../../../../src/errors/index.ts';
import { createKindRegistry, type RecordKindDefinition } from '../../../../src/core/replication/kinds.ts';
import { PeerError, type ClusterDescriptor, type PeerTransport, type WriteIntent } from '../../../../src/core/replication/ports.ts';
import { createQuorumWriter, failureReason, RecordRefusedError } from '../../../../src/core/replication/quorum-write.ts';
import { createHlcClock, type ReplicatedRecord } from '../../../../src/core/replication/record.ts';
import { heldBack, refusal } from '../../../../src/core/replication/refusals.ts';
import { createEvidenceContexts, signersOf } from '../../../../src/core/replication/validate.ts';
import { createLogger } from '../../../../src/log/index.ts';
import { createMetrics } from '../../../../src/metrics/index.ts';
import { flagKind, makeCluster, noteKind } from './fixtures.ts';

/** An apply deadline far beyond the quorum grace period (and beyond what any machine takes to pass the grace). */
const APPLY_DEADLINE_MS = 20_000;

/**
 * A quorum writer as node 0 of a 5-member cluster (threshold 3), with a stub transport and a stub
 * queue that numbers own writes 1, 2, 3… without storing anything.
 */
function writer(opts: { transport: PeerTransport; reachable?: (slot: number) => boolean; descriptor?: ClusterDescriptor; applyTimeoutMs?: number; quorumGraceMs?: number }) {
  const cluster = makeCluster(5);
  const descriptor = opts.descriptor ?? cluster.descriptor;
  const reachable = opts.reachable ?? (() => true);
  const enqueued: WriteIntent[][] = [];
  const published: ReplicatedRecord[] = [];
  let seq = 0;
  const metrics = createMetrics({ processMetrics: false });
  const transport: PeerTransport = { sendApply: opts.transport.sendApply, publish: async (r) => void published.push(r) };
  const w = createQuorumWriter(
    { applyTimeoutMs: opts.applyTimeoutMs ?? 500, quorumGraceMs: opts.quorumGraceMs ?? 50 },
    {
      membership: {
        descriptor,
        self: descriptor.nodes[0]!,
        isReachable: reachable,
        reachableCount: () => descriptor.nodes.filter((n) => n.slot !== null && reachable(n.slot)).length,
      },
      kinds: createKindRegistry([noteKind, flagKind, pairKind] as RecordKindDefinition[]),
      signers: signersOf(descriptor),
      transport: () => transport,
      hlc: createHlcClock(() => 5000),
      clock: () => 5000,
      contextOf: createEvidenceContexts(async () => undefined, async () => undefined),
      queue: {
        enqueueOwn: async (intents) => {
          enqueued.push(intents);
          return intents.map((i) => ({ ...i, origin: descriptor.nodes[0]!.nodeAddress, seq: ++seq, hlc: [5000, 0], sig: '0x00' }));
        },
      },
      metrics,
      logger: createLogger({ level: 'silent' }),
    },
  );
  return { w, descriptor, enqueued, published, metrics };
}

const note = (v: number): WriteIntent => ({ kind: 'note', key: `k${v}`, body: { v } });

/**
 * A kind whose record is valid only right after the note it names, in the same batch (as a change
 * travels right after the consumed permit that authorises it): without it, a transient refusal.
 */
const pairKind: RecordKindDefinition<{ after: string }> = {
  name: 'pair',
  writers: ['member'],
  body: z.strictObject({ after: z.string() }),
  async validate(body, context) {
    if (body.after === 'never') return refusal('check_failed');
    const before = await context.preceding();
    if (!before) return heldBack('evidence_missing');
    return before.kind === 'note' && before.key === body.after ? undefined : refusal('permit_not_adjacent');
  },
};
const addresses = (d: ClusterDescriptor, slots: number[]) => slots.map((s) => d.nodes[s]!.nodeAddress);

describe('quorum write', () => {
  it('succeeds at threshold acks and reports the failed members by slot, with why', async () => {
    const { w, descriptor, enqueued } = writer({
      transport: {
        sendApply: async (slot) => {
          if (slot === 3) throw new PeerError('rejected', 'bad body');
          if (slot === 4) throw new Error('socket hang up');
        },
        publish: async () => undefined,
      },
    });
    const report = await w.replicate(note(1));
    expect(report.record.seq).toBe(1);
    expect(enqueued).toEqual([[note(1)]]);
    expect(report.acked.sort()).toEqual(addresses(descriptor, [0, 1, 2]).sort());
    expect(report.failed.sort((a, b) => a.slot - b.slot)).toEqual([
      { nodeAddress: descriptor.nodes[3]!.nodeAddress, slot: 3, error: 'rejected: bad body' },
      { nodeAddress: descriptor.nodes[4]!.nodeAddress, slot: 4, error: 'error: socket hang up' },
    ]);
  });

  it('fails with a QuorumError naming acks and failures when fewer than threshold ack', async () => {
    const { w, descriptor } = writer({
      transport: {
        sendApply: async (slot) => {
          if (slot >= 2) throw new PeerError('timeout');
        },
        publish: async () => undefined,
      },
    });
    const err = await w.replicateAll([note(1), note(2)]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(QuorumError);
    expect((err as QuorumError).acked.sort()).toEqual(addresses(descriptor, [0, 1]).sort());
    expect((err as QuorumError).failed.map((f) => [f.slot, f.error]).sort()).toEqual([
      [2, 'timeout'],
      [3, 'timeout'],
      [4, 'timeout'],
    ]);
  });

  it('with requireQuorum false, reports below threshold instead of throwing', async () => {
    const { w } = writer({ transport: { sendApply: async () => Promise.reject(new PeerError('unreachable')), publish: async () => undefined } });
    const report = await w.replicate(note(1), { requireQuorum: false });
    expect(report.acked).toHaveLength(1);
    expect(report.failed.every((f) => f.error === 'unreachable')).toBe(true);
  });

  it('fails at once, numbering nothing, when fewer than threshold members are reachable', async () => {
    let sent = 0;
    const { w, enqueued } = writer({ reachable: (slot) => slot < 2, transport: { sendApply: async () => void sent++, publish: async () => undefined } });
    const err = await w.replicate(note(1)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(QuorumError);
    expect((err as QuorumError).failed.map((f) => [f.slot, f.error])).toEqual([
      [2, 'unreachable'],
      [3, 'unreachable'],
      [4, 'unreachable'],
    ]);
    expect(enqueued).toEqual([]);
    expect(sent).toBe(0);
  });

  it('after quorum, waits only the grace period for the rest; a member still silent is reported', async () => {
    const { w } = writer({
      quorumGraceMs: 20,
      // Far beyond the grace: a write that waited for it instead is told apart without judging speed.
      applyTimeoutMs: APPLY_DEADLINE_MS,
      transport: {
        sendApply: (slot, _records, { signal }) => (slot === 4 ? new Promise((_, reject) => signal.addEventListener('abort', () => reject(new Error('aborted')))) : Promise.resolve()),
        publish: async () => undefined,
      },
    });
    const startedAt = performance.now();
    const report = await w.replicate(note(1));
    expect(performance.now() - startedAt).toBeLessThan(APPLY_DEADLINE_MS / 2);
    expect(report.acked).toHaveLength(4);
    expect(report.failed).toEqual([expect.objectContaining({ slot: 4, error: 'no ack within the quorum grace period' })]);
  });

  it('refuses a record its peers would refuse before it is numbered: 403 with the refusal\'s code', async () => {
    const { w, enqueued } = writer({ transport: { sendApply: async () => undefined, publish: async () => undefined } });
    // The record's refusal code, and the member-refusal reason a proposing coordinator is told.
    const refused = (code: string) => ({ name: 'RecordRefusedError', code: 'FORBIDDEN', status: 403, reason: 'record_refused', refusal: { code } });
    await expect(w.replicate({ kind: 'note', key: '', body: { v: 1 } })).rejects.toMatchObject(refused('bad_key'));
    await expect(w.replicateAll([note(1), { kind: 'note', key: 'b', body: { v: 'x' } }])).rejects.toMatchObject(refused('bad_body'));
    await expect(w.replicate({ kind: 'pair', key: 'p', body: { after: 'never' } })).rejects.toMatchObject(refused('check_failed'));
    // A kind this node does not know is a programming error, not a refusal.
    await expect(w.replicate({ kind: 'nope', key: 'k', body: null })).rejects.not.toBeInstanceOf(RecordRefusedError);
    await expect(w.replicate({ kind: 'nope', key: 'k', body: null })).rejects.toThrow(/unknown record kind/);
    expect(enqueued).toEqual([]);
  });

  it('checks each own record after the records before it in the batch; a refusal that may pass later is 503 NOT_READY', async () => {
    const { w, enqueued } = writer({ transport: { sendApply: async () => undefined, publish: async () => undefined } });
    const pair = (after: string): WriteIntent => ({ kind: 'pair', key: 'p', body: { after } });
    // Alone, the evidence it needs is missing: nothing is written, and the client may retry.
    await expect(w.replicate(pair('k1'))).rejects.toMatchObject({ name: 'RecordRefusedError', code: 'NOT_READY', status: 503, refusal: { code: 'evidence_missing', transient: true } });
    // After another record than the one it names.
    await expect(w.replicateAll([note(2), pair('k1')])).rejects.toMatchObject({ code: 'FORBIDDEN', refusal: { code: 'permit_not_adjacent' } });
    // The record before it is not the one it names: the order of the batch counts.
    await expect(w.replicateAll([note(1), note(2), pair('k1')])).rejects.toMatchObject({ code: 'FORBIDDEN', refusal: { code: 'permit_not_adjacent' } });
    expect(enqueued).toEqual([]);
    const report = await w.replicateAll([note(1), pair('k1')]);
    expect(report.records.map((r) => [r.kind, r.seq])).toEqual([
      ['note', 1],
      ['pair', 2],
    ]);
  });

  it('gossips only when a reachable member missed the direct send (a late ack only once its apply failed), or the cluster has gateways', async () => {
    const allAck = writer({ transport: { sendApply: async () => undefined, publish: async () => undefined } });
    await allAck.w.replicate(note(1));
    expect(allAck.published).toEqual([]);

    const oneDown = writer({ reachable: (slot) => slot !== 4, transport: { sendApply: async () => undefined, publish: async () => undefined } });
    await oneDown.w.replicate(note(1));
    expect(oneDown.published).toEqual([]);

    const oneFailed = writer({ transport: { sendApply: async (slot) => (slot === 4 ? Promise.reject(new PeerError('timeout')) : undefined), publish: async () => undefined } });
    const report = await oneFailed.w.replicate(note(1));
    expect(oneFailed.published).toEqual([report.record]);

    // A member whose ack is only late (past the quorum grace, its apply still under way): no gossip
    // while the apply may land, and none once it did; gossip once it failed.
    let finishLate!: () => void;
    let failLate!: (err: Error) => void;
    const slowAck = writer({
      quorumGraceMs: 5,
      transport: { sendApply: (slot) => (slot === 4 ? new Promise<void>((resolve) => (finishLate = resolve)) : Promise.resolve()), publish: async () => undefined },
    });
    const slow = await slowAck.w.replicate(note(1));
    expect(slow.failed).toEqual([expect.objectContaining({ slot: 4, error: 'no ack within the quorum grace period' })]);
    finishLate();
    await new Promise((resolve) => setImmediate(resolve));
    expect(slowAck.published).toEqual([]);
    const slowFail = writer({
      quorumGraceMs: 5,
      transport: { sendApply: (slot) => (slot === 4 ? new Promise<void>((_, reject) => (failLate = reject)) : Promise.resolve()), publish: async () => undefined },
    });
    const failedLate = await slowFail.w.replicate(note(1));
    expect(slowFail.published).toEqual([]);
    failLate(new PeerError('timeout'));
    await vi.waitFor(() => expect(slowFail.published).toEqual([failedLate.record]));
    // Still silent at the apply deadline: aborted there, and gossiped.
    const silent = writer({
      quorumGraceMs: 5,
      applyTimeoutMs: 50,
      transport: { sendApply: (slot, _r, { signal }) => (slot === 4 ? new Promise<void>((_, reject) => signal.addEventListener('abort', () => reject(new Error('aborted')))) : Promise.resolve()), publish: async () => undefined },
    });
    const silentReport = await silent.w.replicate(note(1));
    expect(silent.published).toEqual([]);
    await vi.waitFor(() => expect(silent.published).toEqual([silentReport.record]));

    const base = makeCluster(6).descriptor;
    const withGateway: ClusterDescriptor = { ...base, size: 5, threshold: 3, nodes: base.nodes.map((n, i) => (i === 5 ? { ...n, slot: null, httpUrl: 'http://127.0.0.1:1' } : n)) };
    const gateway = writer({ descriptor: withGateway, transport: { sendApply: async () => undefined, publish: async () => undefined } });
    await gateway.w.replicate(note(1));
    expect(gateway.published).toHaveLength(1);
  });

  it('resends to the given slots only and never throws for missing acks', async () => {
    const sentTo: number[] = [];
    const { w, descriptor } = writer({ transport: { sendApply: async (slot) => (sentTo.push(slot), slot === 2 ? Promise.reject(new PeerError('unreachable')) : undefined), publish: async () => undefined } });
    const record = { kind: 'note', key: 'k', origin: descriptor.nodes[0]!.nodeAddress, seq: 1, hlc: [1, 0] as const, body: { v: 1 }, sig: '0x00' };
    const report = await w.resend(record, [2, 3]);
    expect(sentTo.sort()).toEqual([2, 3]);
    expect(report.acked).toEqual([descriptor.nodes[3]!.nodeAddress]);
    expect(report.failed).toEqual([{ nodeAddress: descriptor.nodes[2]!.nodeAddress, slot: 2, error: 'unreachable' }]);
  });

  it('failureReason: the transport\'s kind, its detail, or a generic error', () => {
    const live = new AbortController().signal;
    expect(failureReason(new PeerError('unreachable'), live)).toBe('unreachable');
    expect(failureReason(new PeerError('timeout', 'no answer'), live)).toBe('timeout');
    expect(failureReason(new PeerError('refused', 'NOT_READY'), live)).toBe('refused: NOT_READY');
    expect(failureReason(new Error('x'.repeat(300)), live)).toBe(`error: ${'x'.repeat(200)}`);
    expect(failureReason('boom', live)).toBe('error: boom');
    expect(failureReason(new Error('whatever'), AbortSignal.abort())).toBe('timeout');
  });
});
