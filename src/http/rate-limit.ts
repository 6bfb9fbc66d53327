/**
 * Abuse limits of the unauthenticated account routes (`http.rateLimits`): a token bucket per client
 * address and one per account named in the body, kept in bounded memory. A request over either limit
 * is refused before its handler runs — before any argon2 work — with 429 RATE_LIMITED,
 * `retryAfterSeconds` and `Retry-After`.
 *
 * Routes opt in per route, like `requireBearer`: `router.post(path, rateLimit.email, handler)`. The
 * JSON body is parsed by then (the app's body parser runs before the router), so the per-account
 * key is read from `ctx.state.body` without waiting for the handler's validation; a field that is
 * missing, not a string or too long to be valid gets no per-account bucket (the handler answers
 * 400 anyway).
 */
import { isIPv6 } from 'node:net';
import { AppError } from '../errors/index.ts';
import { sha256Hex } from '../crypto/index.ts';
import type { NodeMetrics } from '../metrics/index.ts';
import type { HttpMiddleware } from './types.ts';

const MS_PER_MINUTE = 60_000;
/** Oldest buckets looked at per new key: idle (full) ones are dropped, so memory follows the active set. */
const SWEEP_PER_INSERT = 2;
/** Longest account value that gets a bucket: an email (320) or a principalId; longer ones are 400s anyway. */
const ACCOUNT_MAX_CHARS = 320;
/** Hex characters of SHA-256 kept per account key: 128 bits, short keys whatever the email's length. */
const ACCOUNT_KEY_HEX_CHARS = 32;

/** Options of {@link createTokenBuckets}. */
export interface TokenBucketOptions {
  /** Tokens added per minute: the sustained rate. `0`: no limit (every take succeeds). */
  perMinute: number;
  /** Capacity: how many takes succeed at once after the key was idle. */
  burst: number;
  /** Most keys tracked; the least recently used is forgotten first (as if its bucket were full). */
  maxKeys: number;
}

/** Dependencies of {@link createTokenBuckets}. */
export interface TokenBucketDeps {
  /** Milliseconds; only differences matter. A step back refills nothing, and refilling resumes from the new reading. */
  now: () => number;
}

/** Token buckets by key. */
export interface TokenBuckets {
  /** Take one token from `key`'s bucket: `0` when taken, else the ms until one will be there (nothing taken). */
  take(key: string): number;
  /** Keys tracked now (at most `maxKeys`). */
  size(): number;
}

interface Bucket {
  tokens: number;
  /** When `tokens` was last brought up to date. */
  at: number;
}

/**
 * Token buckets in a Map kept in least-recently-used order (a touched key is re-inserted last). At
 * `maxKeys` the least recent is dropped, so an attacker rotating keys costs bounded memory; dropping a
 * bucket only ever forgives its debt, it never refuses anyone.
 */
export function createTokenBuckets(options: TokenBucketOptions, deps: TokenBucketDeps): TokenBuckets {
  const { perMinute, burst, maxKeys } = options;
  if (!(perMinute >= 0) || !(burst >= 1) || !Number.isSafeInteger(maxKeys) || maxKeys < 1) {
    throw new RangeError('token buckets: perMinute must be ≥ 0, burst ≥ 1, maxKeys a positive integer');
  }
  const perMs = perMinute / MS_PER_MINUTE;
  const buckets = new Map<string, Bucket>();

  /** Bring a bucket up to `now`. */
  function refill(bucket: Bucket, now: number): void {
    if (now > bucket.at) bucket.tokens = Math.min(burst, bucket.tokens + (now - bucket.at) * perMs);
    // Also when the clock stepped back: refilling resumes from the new reading.
    bucket.at = now;
  }

  function makeRoom(now: number): void {
    // At capacity: forget the least recently used, whatever it holds.
    for (const key of buckets.keys()) {
      if (buckets.size < maxKeys) break;
      buckets.delete(key);
    }
    // Then drop a few idle (full again) buckets from the old end, so memory follows the active set.
    let looked = 0;
    for (const [key, bucket] of buckets) {
      if (looked++ >= SWEEP_PER_INSERT) break;
      refill(bucket, now);
      if (bucket.tokens < burst) break;
      buckets.delete(key);
    }
  }

  return {
    take(key) {
      if (perMinute === 0) return 0;
      const now = deps.now();
      let bucket = buckets.get(key);
      if (bucket) {
        buckets.delete(key);
        refill(bucket, now);
      } else {
        makeRoom(now);
        bucket = { tokens: burst, at: now };
      }
      buckets.set(key, bucket);
      if (bucket.tokens >= 1) {
        bucket.tokens -= 1;
        return 0;
      }
      return Math.ceil((1 - bucket.tokens) / perMs);
    },
    size: () => buckets.size,
  };
}

/** Options of {@link createAuthRateLimit} (`http.rateLimits`). */
export interface AuthRateLimitOptions {
  /** Sustained requests per minute from one client address; `0` turns the limit off. */
  perIpPerMinute: number;
  /** Requests one address may send at once after being idle. */
  perIpBurst: number;
  /** Sustained requests per minute naming one account; `0` turns the limit off. */
  perAccountPerMinute: number;
  /** Requests naming one account at once after it was idle. */
  perAccountBurst: number;
  /** Addresses, and accounts, tracked at most (each). */
  maxTrackedKeys: number;
}

/** Dependencies of {@link createAuthRateLimit}. */
export interface AuthRateLimitDeps {
  /** Milliseconds, monotonic preferred (only differences matter). */
  now: () => number;
  metrics: Pick<NodeMetrics, 'rateLimited'>;
}

/** Route middleware of the abuse limits, one per way a route names the account. */
export interface AuthRateLimit {
  /** The per-address limit, then the per-account limit keyed by the body's `email`. */
  readonly email: HttpMiddleware;
  /** The per-address limit, then the per-account limit keyed by the body's `principalId`. */
  readonly principalId: HttpMiddleware;
}

/** Create the abuse limits (one set of buckets per app, never shared between nodes). */
export function createAuthRateLimit(options: AuthRateLimitOptions, deps: AuthRateLimitDeps): AuthRateLimit {
  const byAddress = createTokenBuckets({ perMinute: options.perIpPerMinute, burst: options.perIpBurst, maxKeys: options.maxTrackedKeys }, deps);
  const byAccount = createTokenBuckets(
    { perMinute: options.perAccountPerMinute, burst: options.perAccountBurst, maxKeys: options.maxTrackedKeys },
    deps,
  );

  function refuse(limit: 'address' | 'account', waitMs: number): AppError {
    deps.metrics.rateLimited.inc({ limit });
    const retryAfterSeconds = Math.max(1, Math.ceil(waitMs / 1000));
    return new AppError('RATE_LIMITED', 'Too many requests', { retryAfterSeconds });
  }

  function limit(field: 'email' | 'principalId'): HttpMiddleware {
    return (ctx, next) => {
      // Address first: a request refused for its address takes nothing from the account's bucket.
      const addressWait = byAddress.take(addressKey(ctx.ip));
      if (addressWait > 0) throw refuse('address', addressWait);
      const account = accountKey(ctx.state.body, field);
      if (account !== undefined) {
        const accountWait = byAccount.take(account);
        if (accountWait > 0) throw refuse('account', accountWait);
      }
      return next();
    };
  }

  return { email: limit('email'), principalId: limit('principalId') };
}

/**
 * The bucket key of an account value in a body: the email as the accounts service normalises it
 * (trimmed, lowercase) or the principalId, hashed so every key is short. Never logged.
 */
function accountKey(body: unknown, field: 'email' | 'principalId'): string | undefined {
  if (typeof body !== 'object' || body === null || !Object.hasOwn(body, field)) return undefined;
  const value = (body as Record<string, unknown>)[field];
  if (typeof value !== 'string' || value.length > ACCOUNT_MAX_CHARS) return undefined;
  const normalised = field === 'email' ? value.trim().toLowerCase() : value.toLowerCase();
  if (normalised === '') return undefined;
  return `${field}:${sha256Hex(normalised).slice(0, ACCOUNT_KEY_HEX_CHARS)}`;
}

/**
 * The bucket key of a client address: IPv4 as is (also when IPv4-mapped), IPv6 by its /64 — one
 * host usually holds a whole /64, so per-address IPv6 limits would be free to evade.
 */
export function addressKey(ip: string): string {
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(ip);
  if (mapped) return mapped[1]!;
  const address = ip.split('%', 1)[0]!;
  if (!isIPv6(address)) return ip.slice(0, 64);
  return `${ipv6Groups(address).slice(0, 4).join(':')}::/64`;
}

/** The eight 16-bit groups of a valid IPv6 address, without leading zeros. */
function ipv6Groups(address: string): string[] {
  const [head = '', tail] = address.toLowerCase().split('::');
  const groupsOf = (part: string): string[] =>
    part === '' ? [] : part.split(':').flatMap((g) => (g.includes('.') ? ['0', '0'] : [g.replace(/^0+(?=.)/, '')]));
  const front = groupsOf(head);
  const back = tail === undefined ? [] : groupsOf(tail);
  return [...front, ...Array<string>(Math.max(0, 8 - front.length - back.length)).fill('0'), ...back];
}
