/**
 * The per-second rate limit of plans (issue 13): one token bucket per (principal, direction) on each
 * coordinator. A bucket holds max(1, rate) tokens and refills at `rate` per second; a request takes
 * one. Buckets are not shared between coordinators, so across the cluster a principal can reach
 * `rate × coordinators` (docs/architecture.md, "Usage and plan limits").
 */
import { createLruCache } from '../../crypto/index.ts';

/** Outcome of {@link TokenBuckets.take}. */
export type TakeResult = { ok: true } | { ok: false; retryAfterMs: number };

/** Keyed token buckets with a bounded memory. */
export interface TokenBuckets {
  /**
   * Take one token from `key`'s bucket, which refills at `ratePerSecond` and holds
   * max(1, ratePerSecond). When empty, nothing is taken and `retryAfterMs` says when one token will
   * be there. The rate may change between calls (a new plan): the bucket keeps its tokens, capped.
   */
  take(key: string, ratePerSecond: number): TakeResult;
  /** Buckets held now. */
  size(): number;
}

/** Options of {@link createTokenBuckets}. */
export interface TokenBucketsOptions {
  /**
   * Buckets kept at most; the least recently used one is forgotten first (approximately: second
   * chance). A forgotten bucket comes back full, so keep this above the principals active within a
   * bucket's refill time. @default 10000
   */
  maxBuckets?: number;
}

/** Dependencies of {@link createTokenBuckets}. */
export interface TokenBucketsDeps {
  /** Monotonic milliseconds. */
  now: () => number;
}

interface Bucket {
  tokens: number;
  at: number;
}

/** Create a set of token buckets. */
export function createTokenBuckets(options: TokenBucketsOptions, deps: TokenBucketsDeps): TokenBuckets {
  const maxBuckets = options.maxBuckets ?? 10_000;
  // A take marks its bucket used rather than moving it to the back, so a take does not rebuild a
  // Map's table on every request (src/crypto/lru.ts, src/http/in-flight.ts).
  const buckets = createLruCache<Bucket>(maxBuckets);
  return {
    take(key, ratePerSecond) {
      if (!(ratePerSecond > 0)) throw new RangeError('ratePerSecond must be positive');
      const capacity = Math.max(1, ratePerSecond);
      const now = deps.now();
      let bucket = buckets.get(key);
      if (!bucket) {
        bucket = { tokens: capacity, at: now };
        buckets.set(key, bucket);
      }
      bucket.tokens = Math.min(capacity, bucket.tokens + (Math.max(0, now - bucket.at) * ratePerSecond) / 1000);
      bucket.at = now;
      if (bucket.tokens >= 1) {
        bucket.tokens -= 1;
        return { ok: true };
      }
      return { ok: false, retryAfterMs: Math.ceil(((1 - bucket.tokens) * 1000) / ratePerSecond) };
    },
    size: () => buckets.size(),
  };
}
