/**
 * Flushing the usage counters (src/core/usage/flush.ts), with stub deps: when a flush's acks
 * acknowledge it, a round's outcome, and the flusher itself — what it writes, what it confirms, how
 * many rounds overlap, what it logs and measures. Over the whole service: service.test.ts.
 */
import { describe, expect, it } from 'vitest';
import type { OwnCounter } from '../../../../src/core/usage/counters.ts';
import { ackProblem, createUsageFlusher, roundOutcome, type FlushOutcome } from '../../../../src/core/usage/flush.ts';
import { ZERO_COUNTS, type UsageCounts } from '../../../../src/core/usage/records.ts';
import type { ClusterNodeEntry, WriteIntent, WriteReport } from '../../../../src/core/replication/ports.ts';
import { captureLogger } from '../../../utils/log.ts';
import { ADDR, counterFixture, counts, MAY } from './fixtures.ts';

const entry = (i: number, slot: number | null = i): ClusterNodeEntry => ({ id: `node-${i}`, slot, peerId: `p${i}`, nodeAddress: ADDR[i]!, signingPublicKey: '02', multiaddrs: [], httpUrl: `http://127.0.0.1:${3010 + i}` });

const counter = (key: string, totals: UsageCounts) => counterFixture({ key, totals });

describe('when a flush is acknowledged', () => {
  const rule = { threshold: 2, size: 3, otherCoordinators: [entry(1), entry(2)] };

  it('needs the threshold of acks', () => {
    expect(ackProblem([ADDR[0]], rule)).toBe('1 of 3 members acknowledged, 2 needed');
    expect(ackProblem([ADDR[0], ADDR[1]], rule)).toBeUndefined();
  });

  it('and every other coordinator that is reachable among them', () => {
    const reachable = (slots: number[]) => ({ isReachable: (slot: number) => slots.includes(slot) });
    expect(ackProblem([ADDR[0], ADDR[1]], { ...rule, membership: reachable([0, 1, 2]) })).toBe('coordinator node-2 has not acknowledged');
    expect(ackProblem([ADDR[0], ADDR[1]], { ...rule, membership: reachable([0, 1]) })).toBeUndefined();
    expect(ackProblem(ADDR, { ...rule, membership: reachable([0, 1, 2]) })).toBeUndefined();
    // A coordinator without a slot (not a member) is never waited for.
    expect(ackProblem([ADDR[0], ADDR[1]], { ...rule, otherCoordinators: [entry(1), entry(2, null)], membership: reachable([0, 1, 2]) })).toBeUndefined();
  });
});

describe('a round’s outcome', () => {
  it('is the worst of its counters’', () => {
    expect(roundOutcome([])).toBe('ok');
    expect(roundOutcome(['ok', 'ok'])).toBe('ok');
    expect(roundOutcome(['ok', 'below_quorum'])).toBe('below_quorum');
    expect(roundOutcome(['below_quorum', 'failed', 'ok'])).toBe('failed');
  });
});

/** A flusher over `held` whose writes wait for `gate` (when set) and get `acks` acks, or throw `error`. */
function harness(held: OwnCounter[]) {
  const log = captureLogger();
  const h = {
    writes: [] as WriteIntent[],
    acks: 3,
    error: undefined as Error | undefined,
    gate: undefined as Promise<void> | undefined,
    observed: [] as FlushOutcome[],
    forgets: [] as Array<[number, number]>,
    log,
  };
  const flusher = createUsageFlusher(
    { threshold: 2, size: 3, otherCoordinators: [entry(1)] },
    {
      replicator: {
        async replicate(intent, options) {
          expect(options).toEqual({ requireQuorum: false });
          h.writes.push(intent);
          if (h.gate) await h.gate;
          if (h.error) throw h.error;
          return { record: undefined as never, acked: ADDR.slice(0, h.acks), failed: [] } satisfies WriteReport;
        },
      },
      counters: { held: () => held, forgetIdle: (wall, mono) => void h.forgets.push([wall, mono]) },
      clock: () => MAY + 5,
      now: () => 42,
      logger: log.logger,
      metrics: { flushDuration: { observe: ({ outcome }) => void h.observed.push(outcome) } },
    },
  );
  return { h, flusher };
}

describe('the flusher', () => {
  it('writes each dirty counter’s absolute counts under its key, confirms them, then forgets idle counters', async () => {
    const dirty = counter('k1', counts(30, 3));
    const clean = counter('k2', counts(0, 0));
    const { h, flusher } = harness([dirty, clean]);
    await flusher.flush();
    expect(h.writes).toEqual([{ kind: 'usage', key: 'k1', body: counts(30, 3) }]);
    expect(dirty).toMatchObject({ confirmed: counts(30, 3), flushProblem: undefined, sending: undefined });
    expect(h.observed).toEqual(['ok']);
    expect(h.forgets).toEqual([[MAY + 5, 42]]);
    // Nothing dirty: nothing written or measured, idle counters still forgotten.
    await flusher.flush();
    expect(h.writes).toHaveLength(1);
    expect(h.observed).toEqual(['ok']);
    expect(h.forgets).toHaveLength(2);
  });

  it('below the threshold the counts stay unconfirmed, with the reason; an outage is logged when it starts and ends', async () => {
    const c = counter('k1', counts(1, 1));
    const { h, flusher } = harness([c]);
    h.acks = 1;
    await flusher.flush();
    await flusher.flush();
    expect(c).toMatchObject({ confirmed: ZERO_COUNTS, flushProblem: '1 of 3 members acknowledged, 2 needed' });
    h.acks = 3;
    await flusher.flush();
    expect(c).toMatchObject({ confirmed: counts(1, 1), flushProblem: undefined });
    expect(h.observed).toEqual(['below_quorum', 'below_quorum', 'ok']);
    expect(h.log.lines().map((l) => [l.level, l.msg])).toEqual([
      [40, 'usage flush did not reach a quorum for every counter'],
      [30, 'usage flushes acknowledged again'],
    ]);
  });

  it('a failed write is the round’s outcome, logged as an error, and its message is the counter’s problem', async () => {
    const c = counter('k1', counts(1, 1));
    const { h, flusher } = harness([c]);
    h.error = new Error('store closed');
    await flusher.flush();
    expect(c.flushProblem).toBe('store closed');
    expect(h.observed).toEqual(['failed']);
    expect(h.log.lines().map((l) => l.msg)).toEqual(['usage flush failed', 'usage flush did not reach a quorum for every counter']);
  });

  it('two rounds overlap at most; a third call waits for one and carries what came since', async () => {
    const c = counter('k1', counts(1, 1));
    const { h, flusher } = harness([c]);
    let open!: () => void;
    h.gate = new Promise<void>((r) => (open = r));
    const first = flusher.flush();
    // A counter whose totals a round in flight is writing is not written again.
    const second = flusher.flush();
    c.totals = counts(2, 2);
    const third = flusher.flush();
    expect(flusher.flush()).toBe(third);
    expect(h.writes.map((w) => w.body)).toEqual([counts(1, 1)]);
    open();
    await Promise.all([first, second, third]);
    expect(h.writes.map((w) => w.body)).toEqual([counts(1, 1), counts(2, 2)]);
    expect(c.confirmed).toEqual(counts(2, 2));
  });
});
