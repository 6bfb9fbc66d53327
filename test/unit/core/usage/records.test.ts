/**
 * The usage counter as a G-counter (src/core/usage/records.ts): the join, the engine's merge order of
 * `usage` records, and what every member checks before storing one (docs/security.md, "Who may write
 * what").
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { counterRank, mergeCounterStates, parseUsageKey, planKind, sameCounts, totalOf, usageKey, usageKind, type UsageCounts } from '../../../../src/core/usage/records.ts';
import { supersedes } from '../../../../src/core/replication/kinds.ts';
import type { ReplicatedRecord } from '../../../../src/core/replication/record.ts';
import { contextFor, unitCluster } from '../../../utils/evidence.ts';

const c = unitCluster();
const [coordA, coordB] = [c.descriptor.nodes[0]!.nodeAddress, c.descriptor.nodes[1]!.nodeAddress];
const PRINCIPAL = '0b5b3c1e-5d4a-4e6f-9a7b-1c2d3e4f5a6b';
const MAY = Date.parse('2026-05-01T00:00:00Z');
const NOW = MAY + 3 * 86_400_000;
const keyOf = (coordinator: string, direction: 'encryption' | 'decryption' = 'encryption', start = MAY, type: 'monthly' | 'daily' = 'monthly') => usageKey(PRINCIPAL, type, start, direction, coordinator);
const counts = (bytes: number, requests: number, refundedBytes = 0, refundedRequests = 0): UsageCounts => ({ bytes, requests, refundedBytes, refundedRequests });

/** A coordinator's successive flushes: every count only grows. */
const history = fc
  .array(fc.tuple(fc.nat(1000), fc.nat(5), fc.nat(100), fc.nat(2)), { minLength: 1, maxLength: 12 })
  .map((steps) => {
    const out: UsageCounts[] = [];
    let cur = counts(0, 0);
    for (const [b, r, rb, rr] of steps) {
      const next = counts(cur.bytes + b + 1, cur.requests + r + 1, cur.refundedBytes, cur.refundedRequests);
      next.refundedBytes = Math.min(next.bytes, cur.refundedBytes + rb);
      next.refundedRequests = Math.min(next.requests, cur.refundedRequests + rr);
      out.push(next);
      cur = next;
    }
    return out;
  });

describe('the G-counter join', () => {
  it('is commutative, associative and idempotent: any delivery order, with repeats, gives one total', () => {
    fc.assert(
      fc.property(history, history, fc.integer(), (a, b, seed) => {
        const deliveries = [...a.map((x) => [coordA, x] as const), ...b.map((x) => [coordB, x] as const)];
        // Shuffle deterministically by seed and repeat some deliveries.
        const rnd = (i: number) => Math.abs(Math.sin(seed + i) * 10_000) % 1;
        const shuffled = [...deliveries, ...deliveries.filter((_, i) => rnd(i) < 0.3)].sort((x, y) => rnd(x[1].bytes + x[1].requests) - rnd(y[1].bytes + y[1].requests));
        let state = new Map<string, UsageCounts>();
        for (const [coord, value] of shuffled) state = mergeCounterStates(state, new Map([[coord, value]]));
        const expected = new Map([
          [coordA, a[a.length - 1]!],
          [coordB, b[b.length - 1]!],
        ]);
        expect(state).toEqual(expected);
        expect(totalOf(state)).toEqual(totalOf(expected));
        // Join laws.
        const x = new Map([[coordA, a[0]!]]);
        const y = new Map([[coordA, a[a.length - 1]!], [coordB, b[0]!]]);
        expect(mergeCounterStates(x, y)).toEqual(mergeCounterStates(y, x));
        expect(mergeCounterStates(y, y)).toEqual(y);
      }),
    );
  });

  it('the total is the sum over coordinators of counted minus refunded', () => {
    const state = new Map([
      [coordA, counts(100, 3, 40, 1)],
      [coordB, counts(7, 1)],
    ]);
    expect(totalOf(state)).toEqual({ bytes: 67, requests: 3 });
  });

  it('two counts are the same only when all four are', () => {
    expect(sameCounts(counts(5, 2, 1, 1), counts(5, 2, 1, 1))).toBe(true);
    expect(sameCounts(counts(5, 2, 1, 1), counts(5, 2, 1, 0))).toBe(false);
    expect(sameCounts(counts(5, 2), counts(5, 3))).toBe(false);
    // Neither covers the other.
    expect(sameCounts(counts(6, 2), counts(5, 3))).toBe(false);
  });

  it('the engine keeps, per key, the record a coordinator wrote last: the highest rank is the join', () => {
    fc.assert(
      fc.property(history, fc.array(fc.nat(), { maxLength: 30 }), (flushes, order) => {
        const records: ReplicatedRecord[] = flushes.map((body, i) => ({ kind: 'usage', key: keyOf(coordA), origin: coordA, seq: i + 1, hlc: [NOW + i, 0], body, sig: '' }));
        const delivery = [...records, ...order.map((i) => records[i % records.length]!)].sort((p, q) => ((p.seq * 7919 + order.length) % 13) - ((q.seq * 7919 + order.length) % 13));
        let winner: ReplicatedRecord | undefined;
        for (const r of delivery) if (supersedes(usageKind as never, winner, r)) winner = r;
        expect(winner!.body).toEqual(flushes[flushes.length - 1]);
        // Even with a later clock, a lower count never replaces a higher one.
        const lower: ReplicatedRecord = { ...records[0]!, seq: 99, hlc: [NOW + 1_000, 0] };
        if (flushes.length > 1) expect(supersedes(usageKind as never, winner, lower)).toBe(false);
        expect(counterRank(winner!.body as UsageCounts)).toBeGreaterThanOrEqual(counterRank(flushes[0]!));
      }),
    );
  });
});

describe('usage records: what every member checks', () => {
  /** The refusal's code, or undefined when the record is accepted. */
  const check = async (body: UsageCounts, opts: { key?: string; origin?: number; held?: UsageCounts; wins?: boolean; atMs?: number } = {}) => {
    const key = opts.key ?? keyOf(coordA);
    const refused = await usageKind.validate!(
      body,
      contextFor(c, { key, origin: opts.origin ?? 0, atMs: opts.atMs ?? NOW, held: new Map(opts.held ? [[`usage!${key}`, opts.held]] : []), self: { kind: 'usage' } }),
    );
    return refused?.code;
  };

  it('a coordinator writes its own counter', async () => {
    expect(await check(counts(10, 1))).toBeUndefined();
    expect(await check(counts(20, 2), { held: counts(10, 1) })).toBeUndefined();
    expect(await check(counts(20, 2, 5, 1), { held: counts(20, 2) })).toBeUndefined();
    expect(await check(counts(10, 1), { key: keyOf(coordB), origin: 1 })).toBeUndefined();
  });

  it('never another coordinator’s', async () => {
    expect(await check(counts(10, 1), { key: keyOf(coordB), origin: 0 })).toBe('another_coordinator');
  });

  it('a count is judged alone, never against what the member holds: a lower one is taken and loses the merge, in any arrival order', async () => {
    // Whether a member holds a higher count depends on what arrived first (docs/security.md, "Order
    // never matters"); the merge (highest rank) keeps the higher count anyway.
    for (const wins of [true, false]) {
      expect(await check(counts(30, 1), { held: counts(10, 2), wins })).toBeUndefined();
      expect(await check(counts(30, 3, 0), { held: counts(10, 2, 4), wins })).toBeUndefined();
      expect(await check(counts(1, 1), { held: counts(10, 2), wins })).toBeUndefined();
    }
  });

  it('refunds never exceed the counts', async () => {
    expect(await check(counts(10, 1, 11, 0))).toBe('refund_exceeds_count');
    expect(await check(counts(10, 1, 0, 2))).toBe('refund_exceeds_count');
  });

  it('the cycle is UTC-aligned and has begun by the record’s clock', async () => {
    expect(await check(counts(1, 1), { key: keyOf(coordA, 'encryption', MAY + 1) })).toBe('cycle_unaligned');
    expect(await check(counts(1, 1), { key: keyOf(coordA, 'encryption', MAY + 86_400_000) })).toBe('cycle_unaligned');
    expect(await check(counts(1, 1), { key: keyOf(coordA, 'encryption', MAY + 86_400_000, 'daily') })).toBeUndefined();
    expect(await check(counts(1, 1), { key: keyOf(coordA, 'encryption', Date.parse('2026-06-01T00:00:00Z')) })).toBe('cycle_not_begun');
  });

  it('keys name principal, cycle, direction and coordinator exactly', () => {
    expect(parseUsageKey(keyOf(coordA, 'decryption'))).toEqual({ principalId: PRINCIPAL, cycleType: 'monthly', cycleStart: MAY, direction: 'decryption', coordinator: coordA });
    for (const bad of [
      `${PRINCIPAL}/monthly/${MAY}/encryption/${coordA.toUpperCase()}`,
      `${PRINCIPAL}/weekly/${MAY}/encryption/${coordA}`,
      `${PRINCIPAL}/monthly/0${MAY}/encryption/${coordA}`,
      `${PRINCIPAL}/monthly/${MAY}/signing/${coordA}`,
      `not-a-principal/monthly/${MAY}/encryption/${coordA}`,
      `${PRINCIPAL}/monthly/${MAY}/encryption/${coordA}/x`,
    ]) {
      expect(parseUsageKey(bad), bad).toBeUndefined();
      expect(usageKind.key!(bad), bad).toBe(false);
    }
  });

  it('only coordinators write usage and plan records', () => {
    expect(usageKind.writers).toEqual(['coordinator']);
    expect(planKind.writers).toEqual(['coordinator']);
    expect(planKind.key!(PRINCIPAL)).toBe(true);
    expect(planKind.key!('../etc')).toBe(false);
  });
});

describe('order never matters for a coordinator’s counters (issue 27 #7)', () => {
  it('any counters of one key — growing, lowering, mixed — are each accepted or refused alike in every order, and leave one state', async () => {
    const anyCounts = fc.tuple(fc.nat(1000), fc.nat(20), fc.nat(1000), fc.nat(20)).map(([b, r, rb, rr]) => counts(b, r, rb, rr));
    await fc.assert(
      fc.asyncProperty(fc.array(anyCounts, { minLength: 1, maxLength: 8 }), fc.integer(), async (list, seed) => {
        const key = keyOf(coordA);
        const records: ReplicatedRecord[] = list.map((body, i) => ({ kind: 'usage', key, origin: coordA, seq: i + 1, hlc: [NOW + i, 0], body, sig: '0x' }));
        /** The verdicts and the state after delivering `order`. */
        const deliver = async (order: ReplicatedRecord[]) => {
          let state: ReplicatedRecord | undefined;
          const verdicts = new Map<number, string | undefined>();
          for (const r of order) {
            const problem = await usageKind.validate!(r.body as UsageCounts, contextFor(c, { key, origin: 0, seq: r.seq, atMs: r.hlc[0] }));
            verdicts.set(r.seq, problem?.code);
            if (!problem && supersedes(usageKind as never, state, r)) state = r;
          }
          return { verdicts: [...verdicts.entries()].sort((x, y) => x[0] - y[0]), state: state?.seq };
        };
        const shuffled = [...records].sort((x, y) => ((x.seq * 2654435761) ^ seed) % 97 - ((y.seq * 2654435761) ^ seed) % 97);
        expect(await deliver(shuffled)).toEqual(await deliver(records));
      }),
      { numRuns: 200 },
    );
  });
});
