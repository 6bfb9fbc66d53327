/**
 * The counters in memory (src/core/usage/counters.ts), with a stub replica: the load from the replica
 * (own record as acknowledged, the others' merged), the merge of applied records, what is seen, dirty
 * and forgettable, and how a reservation settles.
 */
import { describe, expect, it } from 'vitest';
import { createUsageCounters, IDLE_COUNTER_MS, isDirty, isForgettable, isUnconfirmed, reservationOn, seenUsage } from '../../../../src/core/usage/counters.ts';
import { cycleOf } from '../../../../src/core/usage/cycles.ts';
import { usageKey, ZERO_COUNTS, type UsageCounts } from '../../../../src/core/usage/records.ts';
import type { StateReader } from '../../../../src/core/replication/ports.ts';
import type { ReplicatedRecord } from '../../../../src/core/replication/record.ts';
import { ADDR, ALICE, counterFixture, counts, MAY } from './fixtures.ts';

const [SELF, OTHER, THIRD] = ADDR;
const cycle = cycleOf('monthly', MAY);
const keyOf = (coordinator: string) => usageKey(ALICE, 'monthly', MAY, 'encryption', coordinator);
const record = (origin: string, key: string, body: UsageCounts, kind = 'usage'): ReplicatedRecord => ({ kind, key, origin, seq: 1, hlc: [MAY, 0], body, sig: '' });

/** A replica of `usage` records by key; `reads` lists what was asked. */
function replica(records: Record<string, UsageCounts>, fail = false) {
  const reads: string[] = [];
  const state: StateReader = {
    async get(kind, key) {
      reads.push(`${kind}!${key}`);
      if (fail) throw new Error('store closed');
      const body = records[key];
      return body && record(key.slice(key.lastIndexOf('/') + 1), key, body, kind);
    },
    list: async function* () {},
  };
  return { state, reads };
}

const counter = counterFixture;

describe('a counter from the replica', () => {
  it('resumes from this coordinator’s own record as acknowledged, and holds the other coordinators’', async () => {
    const { state, reads } = replica({ [keyOf(SELF)]: counts(30, 3, 5, 1), [keyOf(OTHER)]: counts(10, 1) });
    const counters = createUsageCounters({ selfAddress: SELF, otherCoordinators: [OTHER, THIRD] }, { state, now: () => 7 });
    const c = counters.counterFor(ALICE, cycle, 'encryption');
    expect(c).toMatchObject({ key: keyOf(SELF), loaded: false, usedAt: 7 });
    await c.ready;
    expect(reads.sort()).toEqual([keyOf(SELF), keyOf(OTHER), keyOf(THIRD)].map((k) => `usage!${k}`).sort());
    expect(c).toMatchObject({ loaded: true, totals: counts(30, 3, 5, 1), confirmed: counts(30, 3, 5, 1) });
    expect(c.totals).not.toBe(c.confirmed);
    expect([...c.others]).toEqual([[OTHER, counts(10, 1)]]);
    expect(seenUsage(c)).toEqual({ bytes: 35, requests: 3 });
    // Held: the same counter, not loaded again.
    expect(counters.counterFor(ALICE, cycle, 'encryption')).toBe(c);
    expect(counters.held()).toEqual([c]);
    expect(reads).toHaveLength(3);
  });

  it('a record applied while the load is under way is merged with what the load finds, whatever the order', async () => {
    const { state } = replica({ [keyOf(OTHER)]: counts(10, 1) });
    const counters = createUsageCounters({ selfAddress: SELF, otherCoordinators: [OTHER] }, { state, now: () => 0 });
    const c = counters.counterFor(ALICE, cycle, 'encryption');
    counters.absorb([record(OTHER, keyOf(OTHER), counts(20, 2))]);
    await c.ready;
    expect(c.others.get(OTHER)).toEqual(counts(20, 2));
  });

  it('a load that fails rejects `ready` and forgets the counter, so the next use loads again', async () => {
    const { state } = replica({}, true);
    const counters = createUsageCounters({ selfAddress: SELF, otherCoordinators: [OTHER] }, { state, now: () => 0 });
    const c = counters.counterFor(ALICE, cycle, 'encryption');
    await expect(c.ready).rejects.toThrow('store closed');
    expect(counters.held()).toEqual([]);
    const again = counters.counterFor(ALICE, cycle, 'encryption');
    expect(again).not.toBe(c);
    await expect(again.ready).rejects.toThrow('store closed');
  });
});

describe('applied records', () => {
  it('merge another coordinator’s counts as a G-counter (the maximum), and nothing else', async () => {
    const { state } = replica({});
    const counters = createUsageCounters({ selfAddress: SELF, otherCoordinators: [OTHER] }, { state, now: () => 0 });
    const c = counters.counterFor(ALICE, cycle, 'encryption');
    await c.ready;
    counters.absorb([
      record(OTHER, keyOf(OTHER), counts(20, 2)),
      // An older one, delivered late: changes nothing.
      record(OTHER, keyOf(OTHER), counts(10, 1, 3, 0)),
      // Our own, another kind, a malformed key, a counter not held: ignored.
      record(SELF, keyOf(SELF), counts(999, 9)),
      record(OTHER, keyOf(OTHER), counts(999, 9), 'plan'),
      record(OTHER, 'not-a-usage-key', counts(999, 9)),
      record(OTHER, usageKey(ALICE, 'monthly', MAY, 'decryption', OTHER), counts(999, 9)),
    ]);
    expect([...c.others]).toEqual([[OTHER, counts(20, 2, 3, 0)]]);
    expect(c.totals).toEqual(ZERO_COUNTS);
    expect(counters.held()).toHaveLength(1);
  });
});

describe('one counter', () => {
  it('is unconfirmed while its totals differ from what a quorum acknowledged', () => {
    expect(isUnconfirmed(counter())).toBe(false);
    expect(isUnconfirmed(counter({ totals: counts(0, 0, 0, 1), confirmed: counts(0, 0) }))).toBe(true);
  });

  it('is dirty when unconfirmed and no flush in flight is writing exactly its totals', () => {
    expect(isDirty(counter({ totals: counts(5, 1) }))).toBe(true);
    expect(isDirty(counter({ totals: counts(5, 1), sending: counts(5, 1) }))).toBe(false);
    expect(isDirty(counter({ totals: counts(6, 2), sending: counts(5, 1) }))).toBe(true);
    expect(isDirty(counter())).toBe(false);
  });

  it('is forgotten only when loaded, acknowledged, unheld, and its cycle ended or it sat idle', () => {
    const inCycle = MAY + 1000;
    expect(isForgettable(counter(), cycle.end, 0)).toBe(true);
    expect(isForgettable(counter({ usedAt: 0 }), inCycle, IDLE_COUNTER_MS + 1)).toBe(true);
    expect(isForgettable(counter({ usedAt: 0 }), inCycle, IDLE_COUNTER_MS)).toBe(false);
    expect(isForgettable(counter({ loaded: false }), cycle.end, 0)).toBe(false);
    expect(isForgettable(counter({ holds: 1 }), cycle.end, 0)).toBe(false);
    expect(isForgettable(counter({ totals: counts(1, 1) }), cycle.end, 0)).toBe(false);
  });

  it('forgetIdle drops exactly the forgettable counters', async () => {
    const { state } = replica({});
    const counters = createUsageCounters({ selfAddress: SELF, otherCoordinators: [] }, { state, now: () => 0 });
    const idle = counters.counterFor(ALICE, cycle, 'encryption');
    const busy = counters.counterFor(ALICE, cycle, 'decryption');
    await Promise.all([idle.ready, busy.ready]);
    busy.holds = 1;
    counters.forgetIdle(MAY + 1000, IDLE_COUNTER_MS + 1);
    expect(counters.held()).toEqual([busy]);
  });
});

describe('a reservation', () => {
  it('commit keeps the usage, with fewer bytes refunded or more added; either settle gives the hold back once', () => {
    const c = counter({ totals: counts(100, 1), holds: 1 });
    const r = reservationOn(c, 100);
    expect(r).toMatchObject({ principalId: ALICE, direction: 'encryption', bytes: 100 });
    r.commit(60);
    r.commit(10);
    r.release();
    expect(c).toMatchObject({ totals: counts(100, 1, 40, 0), holds: 0 });
    const more = counter({ totals: counts(100, 1), holds: 1 });
    reservationOn(more, 100).commit(130);
    expect(more.totals).toEqual(counts(130, 1));
  });

  it('release takes back its bytes and its request', () => {
    const c = counter({ totals: counts(100, 2), holds: 2 });
    reservationOn(c, 70).release();
    expect(c).toMatchObject({ totals: counts(100, 2, 70, 1), holds: 1 });
    expect(seenUsage(c)).toEqual({ bytes: 30, requests: 1 });
  });

  it('commit refuses a bad amount without settling', () => {
    const c = counter({ totals: counts(10, 1), holds: 1 });
    const r = reservationOn(c, 10);
    expect(() => r.commit(-1)).toThrow(RangeError);
    expect(() => r.commit(1.5)).toThrow(RangeError);
    expect(c.holds).toBe(1);
    r.commit();
    expect(c).toMatchObject({ totals: counts(10, 1), holds: 0 });
  });
});
