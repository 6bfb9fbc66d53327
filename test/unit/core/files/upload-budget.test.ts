/**
 * The unverified-upload budget (src/core/files/upload-budget.ts; docs/http.md, Files and jobs,
 * "Unverified uploads"): what one address and every address together may hold before their sender
 * is verified, a declared length reserved up front, each refusal's code, metric and log line, and
 * every byte given back on release.
 */
import { describe, expect, it } from 'vitest';
import { createUploadBudget, IDLE_ADDRESSES_KEPT, type UploadBudget } from '../../../../src/core/files/upload-budget.ts';
import { unverifiedAllowancesOf, maxDecryptUploadBytes } from '../../../../src/core/files/rules.ts';
import type { UnverifiedLimit } from '../../../../src/core/files/types.ts';
import { captureLogger } from '../../../utils/log.ts';

function setup(perAddressBytes = 100, totalBytes = 250) {
  const log = captureLogger();
  const gauge: number[] = [];
  const refusals: UnverifiedLimit[] = [];
  const budget = createUploadBudget(
    { perAddressBytes, totalBytes },
    { logger: log.logger, metrics: { unverifiedBytes: { set: (v) => gauge.push(v) }, unverifiedRefusals: { inc: (l) => refusals.push(l.limit) } } },
  );
  return { budget, log, gauge, refusals };
}

/** The code of what `run` throws (undefined when it does not). */
function codeOf(run: () => unknown): string | undefined {
  try {
    run();
    return undefined;
  } catch (err) {
    return (err as { code?: string }).code;
  }
}

function held(budget: UploadBudget, ...addresses: string[]): number[] {
  return [budget.heldBytes(), ...addresses.map((a) => budget.heldBytesOf(a))];
}

describe('unverified upload budget', () => {
  it('counts written bytes per address and in all, and gives every byte back on release (once)', () => {
    const { budget, gauge } = setup();
    const a = budget.hold('10.0.0.1');
    const b = budget.hold('10.0.0.2');
    a.take(30);
    a.take(20);
    b.take(40);
    expect(held(budget, '10.0.0.1', '10.0.0.2')).toEqual([90, 50, 40]);
    expect(a.heldBytes).toBe(50);
    a.release();
    a.release();
    expect(held(budget, '10.0.0.1', '10.0.0.2')).toEqual([40, 0, 40]);
    expect(a.heldBytes).toBe(0);
    // A released hold (a verified sender's) counts nothing more.
    a.take(1000);
    expect(budget.heldBytes()).toBe(40);
    b.release();
    expect(budget.heldBytes()).toBe(0);
    expect(gauge.at(-1)).toBe(0);
    expect(gauge).toContain(90);
  });

  it('refuses a file alone over the per-address allowance with 413, its address full with 429, all full with 503', () => {
    const { budget, refusals } = setup(100, 250);
    const big = budget.hold('10.0.0.1');
    big.take(100);
    expect(codeOf(() => big.take(1))).toBe('PAYLOAD_TOO_LARGE');
    // Nothing was taken by the refused write.
    expect(big.heldBytes).toBe(100);
    big.release();

    const first = budget.hold('10.0.0.1');
    first.take(60);
    const second = budget.hold('10.0.0.1');
    second.take(40);
    expect(codeOf(() => second.take(1))).toBe('RATE_LIMITED');
    // Another address still has its own allowance…
    const other = budget.hold('10.0.0.2');
    other.take(100);
    const third = budget.hold('10.0.0.3');
    third.take(50);
    // …until every address's together fill the budget in all.
    expect(budget.heldBytes()).toBe(250);
    expect(codeOf(() => budget.hold('10.0.0.4'))).toBe('OVERLOADED');
    expect(codeOf(() => third.take(1))).toBe('OVERLOADED');
    expect(refusals).toEqual(['upload', 'address', 'total', 'total']);
    // An address with nothing left is refused before its upload writes anything.
    expect(codeOf(() => budget.hold('10.0.0.2'))).toBe('RATE_LIMITED');
    first.release();
    expect(codeOf(() => budget.hold('10.0.0.4').take(10))).toBeUndefined();
  });

  it('refusals carry a Retry-After (429, 503) or the allowance (413), and log one line without secrets', () => {
    const { budget, log } = setup(100, 150);
    const one = budget.hold('10.0.0.1');
    one.take(100);
    const caught: unknown[] = [];
    for (const run of [() => one.take(1), () => budget.hold('10.0.0.1'), () => budget.hold('10.0.0.2', 60)]) {
      try {
        run();
      } catch (err) {
        caught.push(err);
      }
    }
    expect(caught.map((e) => [(e as { code: string }).code, (e as { extra: unknown }).extra])).toEqual([
      ['PAYLOAD_TOO_LARGE', { limitBytes: 100 }],
      ['RATE_LIMITED', { retryAfterSeconds: expect.any(Number) }],
      ['OVERLOADED', { retryAfterSeconds: expect.any(Number) }],
    ]);
    const lines = log.lines().filter((l) => l.msg === 'unverified upload refused');
    expect(lines.map((l) => l.limit)).toEqual(['upload', 'address', 'total']);
    expect(lines[2]).toMatchObject({ address: '10.0.0.2', totalBytes: 100, limitBytes: 150 });
  });

  it('reserves a declared length up front (up to the per-address allowance), so later uploads cannot cut a started one', () => {
    const { budget } = setup(100, 150);
    const started = budget.hold('10.0.0.1', 80);
    expect(held(budget, '10.0.0.1')).toEqual([80, 80]);
    // What was reserved is written without asking for more.
    started.take(50);
    started.take(30);
    expect(budget.heldBytes()).toBe(80);
    // A later upload finds only what is left: 70 of the 150.
    expect(budget.hold('10.0.0.2', 70).heldBytes).toBe(70);
    expect(budget.heldBytes()).toBe(150);
    expect(() => budget.hold('10.0.0.3', 1)).toThrow(expect.objectContaining({ code: 'OVERLOADED' }));
    // A declared length over the allowance reserves the allowance; the bytes past it are refused as they come.
    const { budget: fresh } = setup(100, 1000);
    const huge = fresh.hold('10.0.0.1', 10_000);
    expect(huge.heldBytes).toBe(100);
    huge.take(100);
    expect(codeOf(() => huge.take(1))).toBe('PAYLOAD_TOO_LARGE');
    // A reservation that does not fit is refused before anything is written.
    const { budget: shared } = setup(100, 1000);
    shared.hold('10.0.0.1', 70);
    expect(codeOf(() => shared.hold('10.0.0.1', 40))).toBe('RATE_LIMITED');
    expect(shared.heldBytesOf('10.0.0.1')).toBe(70);
  });

  it('forgets idle addresses in one go once many are known, never one that holds bytes', () => {
    const { budget } = setup(10, 10 * (IDLE_ADDRESSES_KEPT + 10));
    const active = budget.hold('10.9.9.9');
    active.take(5);
    for (let i = 0; i < IDLE_ADDRESSES_KEPT + 5; i++) budget.hold(`10.0.${i >> 8}.${i & 255}`, 3).release();
    expect(budget.heldBytesOf('10.9.9.9')).toBe(5);
    expect(budget.heldBytes()).toBe(5);
    active.take(5);
    expect(codeOf(() => active.take(1))).toBe('PAYLOAD_TOO_LARGE');
  });

  it('rejects allowances that are not positive integers', () => {
    const { logger } = captureLogger();
    expect(() => createUploadBudget({ perAddressBytes: 0, totalBytes: 10 }, { logger })).toThrow(RangeError);
    expect(() => createUploadBudget({ perAddressBytes: 10, totalBytes: 1.5 }, { logger })).toThrow(RangeError);
  });
});

describe('unverified allowances from the config', () => {
  it('0 per address is the largest upload, 0 in all four per-address allowances; set values are kept', () => {
    const base = { maxFileBytes: 8000, chunkBytes: 1000 };
    const largest = maxDecryptUploadBytes(8000, 1000);
    expect(unverifiedAllowancesOf({ ...base, maxUnverifiedBytesPerAddress: 0, maxUnverifiedBytes: 0 })).toEqual({ perAddressBytes: largest, totalBytes: 4 * largest });
    expect(unverifiedAllowancesOf({ ...base, maxUnverifiedBytesPerAddress: 500, maxUnverifiedBytes: 0 })).toEqual({ perAddressBytes: 500, totalBytes: 2000 });
    expect(unverifiedAllowancesOf({ ...base, maxUnverifiedBytesPerAddress: 500, maxUnverifiedBytes: 700 })).toEqual({ perAddressBytes: 500, totalBytes: 700 });
  });
});
