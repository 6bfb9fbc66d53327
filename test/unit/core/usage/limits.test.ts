/**
 * The plan limits' plain rules (src/core/usage/limits.ts): the cap of unacknowledged usage, when a
 * request is over it or starts a flush, the cycle-limit checks and their details, the 429 of a
 * refusal, and a direction of the report. The same rules inside admission: service.test.ts.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { BYTES_PER_GB, capOf, cycleLimitRefusal, directionUsageOf, limitExceeded, limitTypeOf, overCap, pendingOf, rateLimitDetail, reachesHalfCap } from '../../../../src/core/usage/limits.ts';
import { AppError } from '../../../../src/errors/index.ts';
import { counts } from './fixtures.ts';

const limits = (bytesPerCycle: number, requestsPerCycle: number, requestsPerSecond = 10) => ({ bytesPerCycle, requestsPerCycle, requestsPerSecond });
const leastCaps = { maxUnflushedRequests: 50, maxUnflushedBytes: 8 * 2 ** 20, maxOvershootFraction: 0.01 };

describe('the cap of a plan direction', () => {
  it('is the least cap until the fraction of the limit is larger, rounded down', () => {
    expect(capOf(limits(1e6, 1000), leastCaps)).toEqual({ requests: 50, bytes: 8 * 2 ** 20 });
    expect(capOf(limits(1e12, 1_000_000), leastCaps)).toEqual({ requests: 10_000, bytes: 1e10 });
    // ⌊0.01 × 5,099⌋ = 50: still the least cap; ⌊0.01 × 5,199⌋ = 51.
    expect(capOf(limits(1, 5_099), leastCaps).requests).toBe(50);
    expect(capOf(limits(1, 5_199), leastCaps).requests).toBe(51);
  });

  it('is the least cap alone with a fraction of 0', () => {
    expect(capOf(limits(1e15, 1e9), { ...leastCaps, maxOvershootFraction: 0 })).toEqual({ requests: 50, bytes: 8 * 2 ** 20 });
  });

  it('never falls below the least caps, nor above the larger of them and the fraction of the limit', () => {
    fc.assert(
      fc.property(fc.nat(1e9), fc.nat(1e6), fc.integer({ min: 1, max: 1000 }), fc.integer({ min: 1, max: 1e7 }), fc.double({ min: 0, max: 0.5, noNaN: true }), (bytes, requests, leastRequests, leastBytes, fraction) => {
        const cap = capOf(limits(bytes, requests), { maxUnflushedRequests: leastRequests, maxUnflushedBytes: leastBytes, maxOvershootFraction: fraction });
        expect(cap.requests).toBeGreaterThanOrEqual(leastRequests);
        expect(cap.bytes).toBeGreaterThanOrEqual(leastBytes);
        expect(cap.requests).toBeLessThanOrEqual(Math.max(leastRequests, fraction * requests));
        expect(cap.bytes).toBeLessThanOrEqual(Math.max(leastBytes, fraction * bytes));
      }),
    );
  });
});

describe('unacknowledged usage against the cap', () => {
  const cap = { requests: 4, bytes: 100 };

  it('pending is what the totals hold beyond what a quorum acknowledged (refunds aside)', () => {
    expect(pendingOf(counts(300, 7, 50, 1), counts(200, 5))).toEqual({ requests: 2, bytes: 100 });
    expect(pendingOf(counts(10, 1), counts(10, 1))).toEqual({ requests: 0, bytes: 0 });
  });

  it('one more request is over the cap at the cap of requests', () => {
    expect(overCap({ requests: 3, bytes: 0 }, 0, cap)).toBe(false);
    expect(overCap({ requests: 4, bytes: 0 }, 0, cap)).toBe(true);
  });

  it('bytes over the cap are refused only when some are pending: one large request alone passes', () => {
    expect(overCap({ requests: 0, bytes: 0 }, 10_000, cap)).toBe(false);
    expect(overCap({ requests: 1, bytes: 1 }, 99, cap)).toBe(false);
    expect(overCap({ requests: 1, bytes: 1 }, 100, cap)).toBe(true);
  });

  it('a flush starts when the request brings requests or bytes to half the cap', () => {
    expect(reachesHalfCap({ requests: 0, bytes: 0 }, 10, cap)).toBe(false);
    // The second request of a cap of 4.
    expect(reachesHalfCap({ requests: 1, bytes: 0 }, 0, cap)).toBe(true);
    expect(reachesHalfCap({ requests: 0, bytes: 0 }, 49, cap)).toBe(false);
    expect(reachesHalfCap({ requests: 0, bytes: 20 }, 30, cap)).toBe(true);
  });

  it('whatever is pending, a request that is not over the cap leaves at most the cap pending', () => {
    fc.assert(
      fc.property(fc.nat(10), fc.nat(200), fc.nat(200), fc.integer({ min: 1, max: 10 }), fc.integer({ min: 1, max: 200 }), (requests, pendingBytes, bytes, capRequests, capBytes) => {
        const c = { requests: capRequests, bytes: capBytes };
        if (overCap({ requests, bytes: pendingBytes }, bytes, c)) return;
        expect(requests + 1).toBeLessThanOrEqual(c.requests);
        if (pendingBytes > 0) expect(pendingBytes + bytes).toBeLessThanOrEqual(c.bytes);
        // …and one that fills the cap of requests starts a flush.
        if (requests + 1 === c.requests) expect(reachesHalfCap({ requests, bytes: pendingBytes }, bytes, c)).toBe(true);
      }),
    );
  });
});

describe('the cycle limits', () => {
  const plan = limits(100, 3);

  it('refuse the data limit first, naming what was used and what the request needs', () => {
    expect(cycleLimitRefusal('encryption', plan, 'monthly', { bytes: 90, requests: 3 }, 11)).toEqual({
      what: 'data',
      detail: 'Encryption data limit of 100 bytes per monthly cycle reached: 90 used, this request needs 11',
    });
  });

  it('then the request limit', () => {
    expect(cycleLimitRefusal('decryption', plan, 'daily', { bytes: 90, requests: 3 }, 10)).toEqual({ what: 'request', detail: 'Decryption request limit of 3 requests per daily cycle reached' });
  });

  it('let a request through that lands exactly on both limits', () => {
    expect(cycleLimitRefusal('encryption', plan, 'monthly', { bytes: 90, requests: 2 }, 10)).toBeUndefined();
  });

  it('name the rate limit too', () => {
    expect(rateLimitDetail('decryption', limits(1, 1, 0.5))).toBe('Decryption rate limit of 0.5 requests per second reached');
  });
});

describe('a refusal', () => {
  it('names its limit type', () => {
    expect(limitTypeOf('encryption', 'data')).toBe('encryption_data_limit');
    expect(limitTypeOf('decryption', 'rate')).toBe('decryption_rate_limit');
  });

  it('is a 429 whose retryAfterSeconds rounds up, and is at least 1', () => {
    const err = limitExceeded('encryption_request_limit', 'detail', 86_399_001);
    expect(err).toBeInstanceOf(AppError);
    expect(err).toMatchObject({ code: 'LIMIT_EXCEEDED', status: 429, message: 'Limit exceeded', extra: { detail: 'detail', limitType: 'encryption_request_limit', retryAfterSeconds: 86_400 } });
    expect(limitExceeded('encryption_rate_limit', 'd', 1).extra).toMatchObject({ retryAfterSeconds: 1 });
    expect(limitExceeded('encryption_rate_limit', 'd', 0).extra).toMatchObject({ retryAfterSeconds: 1 });
    expect(limitExceeded('encryption_rate_limit', 'd', -5000).extra).toMatchObject({ retryAfterSeconds: 1 });
  });
});

describe('a direction of the report', () => {
  it('gives bytes, requests and GiB that agree with each other', () => {
    expect(directionUsageOf({ bytes: 2 ** 30, requests: 7 }, limits(3 * 2 ** 30, 100, 5))).toEqual({
      limit: 3 * 2 ** 30,
      used: 2 ** 30,
      remaining: 2 * 2 ** 30,
      count: 7,
      requestLimit: 100,
      rateLimit: 5,
      limitGB: 3,
      usedGB: 1,
      remainingGB: 2,
    });
  });

  it('never has less than nothing remaining, even past the limit (the overshoot margin)', () => {
    const view = directionUsageOf({ bytes: 150, requests: 1 }, limits(100, 10));
    expect(view).toMatchObject({ used: 150, remaining: 0, remainingGB: 0 });
    expect(view.usedGB).toBe(150 / BYTES_PER_GB);
  });
});
