/** Billing cycles aligned to UTC, and the current cycle kept per type (src/core/usage/cycles.ts). */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { createCurrentCycles, cycleOf, isCycleStart } from '../../../../src/core/usage/cycles.ts';

const utc = (iso: string) => Date.parse(iso);

describe('monthly cycles', () => {
  it('run from the 1st 00:00 UTC to the next 1st, whatever the month length', () => {
    expect(cycleOf('monthly', utc('2026-02-14T12:00:00Z'))).toEqual({ type: 'monthly', start: utc('2026-02-01T00:00:00Z'), end: utc('2026-03-01T00:00:00Z') });
    // Leap February, a 30-day and a 31-day month.
    expect(cycleOf('monthly', utc('2028-02-29T23:59:59.999Z')).end).toBe(utc('2028-03-01T00:00:00Z'));
    expect(cycleOf('monthly', utc('2026-04-30T10:00:00Z')).end - cycleOf('monthly', utc('2026-04-30T10:00:00Z')).start).toBe(30 * 86_400_000);
    expect(cycleOf('monthly', utc('2026-01-31T10:00:00Z')).end - cycleOf('monthly', utc('2026-01-31T10:00:00Z')).start).toBe(31 * 86_400_000);
  });

  it('roll over at exactly 00:00:00.000 UTC on the 1st, December into January', () => {
    const lastMs = utc('2026-12-31T23:59:59.999Z');
    expect(cycleOf('monthly', lastMs)).toEqual({ type: 'monthly', start: utc('2026-12-01T00:00:00Z'), end: utc('2027-01-01T00:00:00Z') });
    expect(cycleOf('monthly', lastMs + 1)).toEqual({ type: 'monthly', start: utc('2027-01-01T00:00:00Z'), end: utc('2027-02-01T00:00:00Z') });
  });

  it('are UTC, not local time: 23:30 UTC on the 31st is still that month in any zone', () => {
    expect(cycleOf('monthly', utc('2026-03-31T23:30:00-00:00')).start).toBe(utc('2026-03-01T00:00:00Z'));
    // 00:30 on the 1st at UTC+2 is the previous month in UTC.
    expect(cycleOf('monthly', utc('2026-04-01T00:30:00+02:00')).start).toBe(utc('2026-03-01T00:00:00Z'));
  });
});

describe('daily cycles', () => {
  it('run from 00:00 UTC to the next 00:00 UTC', () => {
    expect(cycleOf('daily', utc('2026-07-04T18:00:00Z'))).toEqual({ type: 'daily', start: utc('2026-07-04T00:00:00Z'), end: utc('2026-07-05T00:00:00Z') });
    const midnight = utc('2026-07-05T00:00:00Z');
    expect(cycleOf('daily', midnight - 1).end).toBe(midnight);
    expect(cycleOf('daily', midnight).start).toBe(midnight);
  });
});

describe('every instant', () => {
  it('lies in exactly one cycle, and consecutive cycles tile time', () => {
    fc.assert(
      fc.property(fc.constantFrom('monthly' as const, 'daily' as const), fc.integer({ min: 0, max: utc('2200-01-01T00:00:00Z') }), (type, at) => {
        const c = cycleOf(type, at);
        expect(c.start).toBeLessThanOrEqual(at);
        expect(at).toBeLessThan(c.end);
        expect(isCycleStart(type, c.start)).toBe(true);
        expect(cycleOf(type, c.end).start).toBe(c.end);
        expect(cycleOf(type, c.start - 1).end).toBe(c.start);
      }),
    );
  });

  it('isCycleStart holds only for aligned starts', () => {
    expect(isCycleStart('monthly', utc('2026-05-01T00:00:00Z'))).toBe(true);
    expect(isCycleStart('monthly', utc('2026-05-02T00:00:00Z'))).toBe(false);
    expect(isCycleStart('daily', utc('2026-05-02T00:00:00Z'))).toBe(true);
    expect(isCycleStart('daily', utc('2026-05-02T00:00:00.001Z'))).toBe(false);
    expect(isCycleStart('daily', 1.5)).toBe(false);
  });
});

describe('the current cycle', () => {
  it('is kept while the clock is in it, and replaced by the cycle of any instant outside it', () => {
    const cycles = createCurrentCycles();
    const may = cycles.at('monthly', utc('2026-05-10T00:00:00Z'));
    expect(may).toEqual(cycleOf('monthly', utc('2026-05-10T00:00:00Z')));
    expect(cycles.at('monthly', utc('2026-05-31T23:59:59.999Z'))).toBe(may);
    const june = cycles.at('monthly', utc('2026-06-01T00:00:00Z'));
    expect(june).toEqual({ type: 'monthly', start: utc('2026-06-01T00:00:00Z'), end: utc('2026-07-01T00:00:00Z') });
    // A clock set back: the earlier cycle again.
    expect(cycles.at('monthly', utc('2026-05-31T23:59:59.999Z'))).toEqual(may);
  });

  it('is kept per type', () => {
    const cycles = createCurrentCycles();
    const at = utc('2026-05-10T12:00:00Z');
    expect(cycles.at('daily', at)).toEqual(cycleOf('daily', at));
    expect(cycles.at('monthly', at)).toEqual(cycleOf('monthly', at));
    expect(cycles.at('daily', at + 1)).toBe(cycles.at('daily', at));
  });

  it('always equals the cycle of the instant, whatever the order of instants', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.constantFrom('monthly' as const, 'daily' as const), fc.integer({ min: 0, max: utc('2100-01-01T00:00:00Z') })), { maxLength: 30 }), (instants) => {
        const cycles = createCurrentCycles();
        for (const [type, at] of instants) expect(cycles.at(type, at)).toEqual(cycleOf(type, at));
      }),
    );
  });
});
