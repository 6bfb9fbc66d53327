/**
 * Password hashing with argon2id (node:crypto, asynchronous on libuv's threadpool), stored as PHC
 * strings so the parameters travel with the hash and can be raised later (docs/architecture.md, Keys and
 * crypto: "Passwords").
 *
 * PHC format: `$argon2id$v=19$m=<KiB>,t=<passes>,p=<lanes>$<salt>$<hash>`, salt and hash in standard
 * base64 without padding — the format of the argon2 reference implementation, so hashes can be
 * checked with any argon2 tool.
 */
import { argon2 as argon2Callback, timingSafeEqual } from 'node:crypto';
import { systemRandom, toHex, utf8, zeroize, type RandomSource } from './bytes.ts';

/** argon2id cost parameters. */
export interface Argon2idParams {
  /** Memory cost in KiB. @default 19456 (19 MiB) */
  readonly memoryKiB: number;
  /** Number of passes over memory (argon2 `t`). @default 2 */
  readonly passes: number;
  /** Lanes (argon2 `p`). @default 1 */
  readonly parallelism: number;
  /** Length of the stored hash in bytes. @default 32 */
  readonly tagLength: number;
  /** Length of the random per-hash salt in bytes. @default 16 */
  readonly saltLength: number;
}

/** OWASP's argon2id baseline (m=19 MiB, t=2, p=1): tens of milliseconds of a core a hash (docs/http.md, "Abuse limits"). */
export const ARGON2ID_DEFAULTS: Readonly<Argon2idParams> = Object.freeze({
  memoryKiB: 19456,
  passes: 2,
  parallelism: 1,
  tagLength: 32,
  saltLength: 16,
});

/**
 * Inclusive bounds on every parameter, for new hashes and stored ones alike. The upper bounds stop a
 * tampered or corrupt stored hash from costing a gigabyte or minutes per verification; security
 * floors (the lowest acceptable production cost) are policy and belong to config validation. Memory
 * must also be at least 8 KiB per lane (argon2's own rule).
 */
export const ARGON2ID_LIMITS = Object.freeze({
  memoryKiB: Object.freeze({ min: 8, max: 1024 * 1024 }),
  passes: Object.freeze({ min: 1, max: 10 }),
  parallelism: Object.freeze({ min: 1, max: 16 }),
  tagLength: Object.freeze({ min: 16, max: 64 }),
  saltLength: Object.freeze({ min: 8, max: 64 }),
});

const ARGON2_VERSION = 19; // 0x13, the only version node:crypto implements
const MAX_PHC_LENGTH = 256; // the longest legal string is ~190 characters

function paramsError(params: Argon2idParams): string | undefined {
  for (const name of Object.keys(ARGON2ID_LIMITS) as Array<keyof Argon2idParams>) {
    const value = params[name];
    const { min, max } = ARGON2ID_LIMITS[name];
    if (!Number.isSafeInteger(value) || value < min || value > max) {
      return `argon2id ${name} must be an integer in [${min}, ${max}], got ${String(value)}`;
    }
  }
  if (params.memoryKiB < 8 * params.parallelism) return 'argon2id memoryKiB must be at least 8 × parallelism';
  return undefined;
}

/** Merge options over the defaults and validate; throws RangeError on a bad value. */
function resolveParams(options: Partial<Argon2idParams> | undefined): Argon2idParams {
  const params: Argon2idParams = { ...ARGON2ID_DEFAULTS, ...stripUndefined(options ?? {}) };
  const error = paramsError(params);
  if (error) throw new RangeError(error);
  return params;
}

function stripUndefined(options: Partial<Argon2idParams>): Partial<Argon2idParams> {
  return Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined));
}

// Passwords are compared after Unicode NFC normalisation (RFC 8265, OpaqueString profile), so the
// same password typed on two keyboards that compose accents differently still matches.
function passwordBytes(password: string): Uint8Array {
  return utf8(password.normalize('NFC'));
}

function runArgon2id(message: Uint8Array, salt: Uint8Array, params: Argon2idParams): Promise<Uint8Array> {
  return new Promise((resolve, reject) => {
    // A synchronous throw (invalid parameters) inside the executor becomes a rejection.
    argon2Callback(
      'argon2id',
      {
        message,
        nonce: salt,
        parallelism: params.parallelism,
        tagLength: params.tagLength,
        memory: params.memoryKiB,
        passes: params.passes,
      },
      (err, derivedKey) => (err ? reject(err) : resolve(derivedKey)),
    );
  });
}

function encodeB64(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64').replace(/=+$/, '');
}

const B64_NOPAD_RE = /^[A-Za-z0-9+/]+$/;

/** Strict unpadded base64: refuses padding, stray characters and non-zero trailing bits. */
function decodeB64(s: string): Uint8Array | undefined {
  if (!B64_NOPAD_RE.test(s) || s.length % 4 === 1) return undefined;
  const bytes = new Uint8Array(Buffer.from(s, 'base64'));
  return encodeB64(bytes) === s ? bytes : undefined;
}

function formatPhc(params: Argon2idParams, salt: Uint8Array, hash: Uint8Array): string {
  const { memoryKiB: m, passes: t, parallelism: p } = params;
  return `$argon2id$v=${ARGON2_VERSION}$m=${m},t=${t},p=${p}$${encodeB64(salt)}$${encodeB64(hash)}`;
}

interface ParsedPhc {
  readonly params: Argon2idParams;
  readonly salt: Uint8Array;
  readonly hash: Uint8Array;
}

// Decimal integers without leading zeros, parameters in the canonical order: one spelling per hash.
const INT = '(0|[1-9][0-9]{0,9})';
const PHC_RE = new RegExp(`^\\$argon2id\\$v=${ARGON2_VERSION}\\$m=${INT},t=${INT},p=${INT}\\$([A-Za-z0-9+/]+)\\$([A-Za-z0-9+/]+)$`);

/** Parse and bound-check a stored argon2id PHC string; undefined when malformed or out of bounds. */
function parsePhc(phc: unknown): ParsedPhc | undefined {
  if (typeof phc !== 'string' || phc.length > MAX_PHC_LENGTH) return undefined;
  const match = PHC_RE.exec(phc);
  if (!match) return undefined;
  const [, m, t, p, saltB64, hashB64] = match as unknown as [string, string, string, string, string, string];
  const salt = decodeB64(saltB64);
  const hash = decodeB64(hashB64);
  if (!salt || !hash) return undefined;
  const params: Argon2idParams = {
    memoryKiB: Number(m),
    passes: Number(t),
    parallelism: Number(p),
    tagLength: hash.length,
    saltLength: salt.length,
  };
  if (paramsError(params)) return undefined;
  return { params, salt, hash };
}

/**
 * Hash a password with argon2id under a fresh random salt; returns a PHC string.
 *
 * Throws RangeError when `options` are out of bounds (a configuration error). The password's JS
 * string cannot be wiped; the UTF-8 copy and the raw hash are zeroed after use.
 *
 * @param options cost parameters over {@link ARGON2ID_DEFAULTS}
 * @param random the salt's randomness source @default systemRandom
 */
export async function hashPassword(
  password: string,
  options?: Partial<Argon2idParams>,
  random: RandomSource = systemRandom,
): Promise<string> {
  if (typeof password !== 'string') throw new TypeError('password must be a string');
  const params = resolveParams(options);
  const salt = random(params.saltLength);
  if (salt.length !== params.saltLength) throw new RangeError('random source returned a short salt');
  const message = passwordBytes(password);
  let hash: Uint8Array | undefined;
  try {
    hash = await runArgon2id(message, salt, params);
    return formatPhc(params, salt, hash);
  } finally {
    zeroize(message, hash);
  }
}

/**
 * Check a password against a stored PHC string, recomputing with the parameters stored in it.
 *
 * Never throws: a malformed string, another algorithm or version, or parameters beyond
 * {@link ARGON2ID_LIMITS} all give `false`. The digests are compared with `timingSafeEqual`.
 */
export async function verifyPassword(password: string, phc: string): Promise<boolean> {
  if (typeof password !== 'string') return false;
  const parsed = parsePhc(phc);
  if (!parsed) return false;
  const message = passwordBytes(password);
  let computed: Uint8Array | undefined;
  try {
    computed = await runArgon2id(message, parsed.salt, parsed.params);
    return computed.length === parsed.hash.length && timingSafeEqual(computed, parsed.hash);
  } catch {
    return false;
  } finally {
    zeroize(message, computed, parsed.hash);
  }
}

/**
 * True when a stored hash should be replaced at the next successful login: it is not a well-formed
 * argon2id PHC string, or any of its parameters (memory, passes, lanes, hash or salt length) differs
 * from `current`. Differing rather than "lower" so that a deliberate downgrade also converges.
 *
 * @param current the parameters new hashes are made with, over {@link ARGON2ID_DEFAULTS}
 */
export function needsRehash(phc: string, current?: Partial<Argon2idParams>): boolean {
  const want = resolveParams(current);
  const parsed = parsePhc(phc);
  if (!parsed) return true;
  zeroize(parsed.hash);
  const have = parsed.params;
  return (
    have.memoryKiB !== want.memoryKiB ||
    have.passes !== want.passes ||
    have.parallelism !== want.parallelism ||
    have.tagLength !== want.tagLength ||
    have.saltLength !== want.saltLength
  );
}

/**
 * argon2id cost of {@link derivePasswordKeySeed}: above the server's hashing cost (the derived key's
 * public half is held by every member, as the password's hash is), and paid once per login.
 */
export const PASSWORD_KEY_PARAMS: Readonly<Argon2idParams> = Object.freeze({
  memoryKiB: 65536,
  passes: 3,
  parallelism: 1,
  tagLength: 32,
  saltLength: 16,
});

/**
 * A 32-byte key seed derived from a password with argon2id: the client's Ed25519 key of a Web2
 * principal (docs/client.md, "The account key"), so that a login needs only the email and the
 * password and no long-lived key is kept on disk. The salt is `label` and `context` (the principal
 * id): one key per account and per use. The caller zeroes the seed after use.
 */
export async function derivePasswordKeySeed(password: string, label: string, context: string): Promise<Uint8Array> {
  if (typeof password !== 'string') throw new TypeError('password must be a string');
  const message = passwordBytes(password);
  const salt = utf8(`${label}:${context}`);
  try {
    return await runArgon2id(message, salt, PASSWORD_KEY_PARAMS);
  } finally {
    zeroize(message);
  }
}

/** A FIFO semaphore around password hashing, with a bounded queue. */
export interface HashLimiter {
  /**
   * Run `fn` when a slot is free; callers are served strictly in arrival order. When
   * `maxQueued` callers are already waiting, rejects at once with the `overloaded()` error and
   * `fn` never runs.
   */
  run<T>(fn: () => Promise<T>): Promise<T>;
  /** Number of functions running now (never more than `maxConcurrent`). */
  active(): number;
  /** Number of callers waiting for a slot (never more than `maxQueued`). */
  queued(): number;
}

/** Options of {@link createHashLimiter} beyond the concurrency. */
export interface HashLimiterOptions {
  /**
   * Most callers waiting for a slot; one more is refused at once. Each waiter costs about one
   * hash time ÷ `maxConcurrent` of delay to everyone behind it, so this bounds the wait.
   * @default Infinity (an unbounded queue)
   */
  maxQueued?: number;
  /**
   * The error a refused caller gets (the caller's policy: e.g. a 503 with Retry-After); called
   * once per refusal, so it may also count them. @default a plain `Error("hash queue full")`
   */
  overloaded?: () => Error;
}

/**
 * Bound how many argon2 computations run at once. Each one holds a libuv threadpool thread (4 by
 * default, shared with fs, dns and zlib) and `memoryKiB` of memory for the whole hash, so a login burst must
 * queue here rather than starve the rest of the process. Keep `maxConcurrent` below the threadpool
 * size; N × 19 MiB is the peak memory.
 *
 * With `maxQueued`, excess load is shed: a caller arriving when the queue is full is refused before
 * it takes anything (no slot, no queue entry), so a refusal leaves the limiter exactly as it was.
 * Without it the queue is unbounded and a flood delays every caller behind it.
 */
export function createHashLimiter(maxConcurrent: number, options: HashLimiterOptions = {}): HashLimiter {
  if (!Number.isSafeInteger(maxConcurrent) || maxConcurrent < 1) {
    throw new RangeError(`maxConcurrent must be a positive integer, got ${String(maxConcurrent)}`);
  }
  const maxQueued = options.maxQueued ?? Number.POSITIVE_INFINITY;
  if (maxQueued !== Number.POSITIVE_INFINITY && (!Number.isSafeInteger(maxQueued) || maxQueued < 0)) {
    throw new RangeError(`maxQueued must be a non-negative integer, got ${String(maxQueued)}`);
  }
  const overloaded = options.overloaded ?? (() => new Error('hash queue full'));
  let running = 0;
  // FIFO of waiting callers: an array consumed from `head`, compacted now and then (O(1) amortised).
  let waiting: Array<() => void> = [];
  let head = 0;

  function acquire(): Promise<void> {
    if (running < maxConcurrent) {
      running++;
      return Promise.resolve();
    }
    return new Promise((resolve) => waiting.push(resolve));
  }

  function release(): void {
    if (head < waiting.length) {
      const next = waiting[head]!;
      waiting[head++] = noop;
      if (head > 1024 && head * 2 > waiting.length) {
        waiting = waiting.slice(head);
        head = 0;
      }
      // Hand the slot straight to the oldest waiter: `running` is unchanged, nobody can barge in.
      next();
    } else {
      running--;
    }
  }

  return {
    async run<T>(fn: () => Promise<T>): Promise<T> {
      // Refuse before touching any state: nothing to undo, and the refusal costs no hash.
      if (running >= maxConcurrent && waiting.length - head >= maxQueued) throw overloaded();
      await acquire();
      try {
        return await fn();
      } finally {
        release();
      }
    },
    active: () => running,
    queued: () => waiting.length - head,
  };
}

function noop(): void {}

/** Makes a login for an unknown account cost what a wrong password for a known one costs. */
export interface TimingEqualizer {
  /** Run a real argon2id verification against a dummy hash; always resolves `false`. */
  verifyAgainstDummy(password: string): Promise<false>;
}

/**
 * Create a {@link TimingEqualizer}. The dummy hash is made on first use (one extra hash, once) with
 * `options` — pass the same parameters real hashes use, or the times differ — from a random password
 * nobody knows. Route it through the same {@link HashLimiter} as real verifications.
 *
 * @param options cost parameters over {@link ARGON2ID_DEFAULTS}; validated now (RangeError)
 * @param random randomness for the dummy password and salt @default systemRandom
 */
export function createTimingEqualizer(
  options?: Partial<Argon2idParams>,
  random: RandomSource = systemRandom,
): TimingEqualizer {
  const params = resolveParams(options);
  let dummy: Promise<string> | undefined;

  function dummyHash(): Promise<string> {
    dummy ??= (async () => {
      const secret = random(16);
      try {
        return await hashPassword(toHex(secret), params, random);
      } finally {
        zeroize(secret);
      }
    })().catch((err: unknown) => {
      dummy = undefined; // let the next call try again
      throw err;
    });
    return dummy;
  }

  return {
    async verifyAgainstDummy(password: string): Promise<false> {
      await verifyPassword(typeof password === 'string' ? password : '', await dummyHash());
      return false;
    },
  };
}
