/** The per-second rate limit's token buckets (src/core/usage/token-bucket.ts). */
import { describe, expect, it } from 'vitest';
import { createTokenBuckets } from '../../../../src/core/usage/token-bucket.ts';

function buckets(maxBuckets?: number) {
  let t = 0;
  const b = createTokenBuckets(maxBuckets === undefined ? {} : { maxBuckets }, { now: () => t });
  return { b, advance: (ms: number) => (t += ms) };
}

describe('token buckets', () => {
  it('hold `rate` tokens, then refuse with the time until the next token', () => {
    const { b, advance } = buckets();
    for (let i = 0; i < 5; i++) expect(b.take('alice', 5)).toEqual({ ok: true });
    expect(b.take('alice', 5)).toEqual({ ok: false, retryAfterMs: 200 });
    advance(100);
    expect(b.take('alice', 5)).toEqual({ ok: false, retryAfterMs: 100 });
    advance(100);
    expect(b.take('alice', 5)).toEqual({ ok: true });
    expect(b.take('alice', 5).ok).toBe(false);
  });

  it('a refused take costs nothing', () => {
    const { b, advance } = buckets();
    expect(b.take('a', 1).ok).toBe(true);
    for (let i = 0; i < 10; i++) expect(b.take('a', 1).ok).toBe(false);
    advance(1000);
    expect(b.take('a', 1).ok).toBe(true);
  });

  it('sustain exactly `rate` per second over time', () => {
    const { b, advance } = buckets();
    let granted = 0;
    // 10 s in 1 ms steps, asking every step.
    for (let ms = 0; ms < 10_000; ms++) {
      if (b.take('a', 20).ok) granted++;
      advance(1);
    }
    // The initial burst of 20, then 20 per second.
    expect(granted).toBeGreaterThanOrEqual(20 + 199);
    expect(granted).toBeLessThanOrEqual(20 + 200);
  });

  it('below one per second: holds one token, refills at the rate', () => {
    const { b, advance } = buckets();
    expect(b.take('a', 0.1).ok).toBe(true);
    expect(b.take('a', 0.1)).toEqual({ ok: false, retryAfterMs: 10_000 });
    advance(9_999);
    expect(b.take('a', 0.1).ok).toBe(false);
    advance(1);
    expect(b.take('a', 0.1).ok).toBe(true);
  });

  it('keys are independent', () => {
    const { b } = buckets();
    expect(b.take('alice/encryption', 1).ok).toBe(true);
    expect(b.take('alice/encryption', 1).ok).toBe(false);
    expect(b.take('alice/decryption', 1).ok).toBe(true);
    expect(b.take('bob/encryption', 1).ok).toBe(true);
  });

  it('a rate change keeps the tokens, capped at the new size', () => {
    const { b, advance } = buckets();
    for (let i = 0; i < 10; i++) expect(b.take('a', 10).ok).toBe(true);
    advance(1000);
    // Full at 10; the plan now allows 2 per second: at most 2 are left.
    expect(b.take('a', 2).ok).toBe(true);
    expect(b.take('a', 2).ok).toBe(true);
    expect(b.take('a', 2).ok).toBe(false);
  });

  it('memory is bounded: the least recently used bucket is forgotten (and comes back full)', () => {
    const { b } = buckets(2);
    expect(b.take('a', 1).ok).toBe(true);
    expect(b.take('b', 1).ok).toBe(true);
    expect(b.take('c', 1).ok).toBe(true);
    expect(b.size()).toBe(2);
    expect(b.take('c', 1).ok).toBe(false);
    expect(b.take('a', 1).ok).toBe(true);
  });

  it('refuses a non-positive rate', () => {
    const { b } = buckets();
    expect(() => b.take('a', 0)).toThrow(RangeError);
  });
});
