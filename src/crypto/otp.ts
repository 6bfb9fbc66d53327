/**
 * One-time passwords (6 digits, mailed to users) and one-time tokens (links, API handshakes).
 *
 * Both are stored only as hashes and compared in constant time (docs/architecture.md, Keys and crypto).
 * They need different hashes: a 6-digit OTP has ~20 bits of entropy, so a fast hash of it is
 * reversed by enumeration — it gets argon2id; a token has ≥ 128 bits, so SHA-256 suffices and keeps
 * lookups cheap. Every hash is bound to a context (purpose and principal, chosen by the caller, e.g.
 * `login:<accountId>`) so a code issued for one never verifies for another. Argon2id only slows an
 * offline search of a leaked OTP hash; attempt limits and short expiry are what protect OTPs online.
 */
import { timingSafeEqual } from 'node:crypto';
import { concatBytes, systemRandom, utf8, zeroize, type RandomSource } from './bytes.ts';
import { taggedHash } from './hash.ts';
import { hashPassword, verifyPassword, type Argon2idParams } from './password.ts';

/** Number of decimal digits in an OTP. */
export const OTP_DIGITS = 6;

const OTP_MODULUS = 10 ** OTP_DIGITS;
// Largest multiple of 10^6 that fits in 32 bits: values at or above it are redrawn, so every code
// is equally likely (plain `x % 10^6` would favour low codes by 1 part in ~4300).
const OTP_ACCEPT_BELOW = Math.floor(2 ** 32 / OTP_MODULUS) * OTP_MODULUS;
const OTP_RE = new RegExp(`^[0-9]{${OTP_DIGITS}}$`);

const OTP_LABEL = 'quorumkeep/otp/v1';
const TOKEN_LABEL = 'quorumkeep/token/v1';

/** Bounds of {@link generateToken}'s length in bytes; 16 bytes is the 128-bit floor. */
export const TOKEN_BYTES_MIN = 16;
export const TOKEN_BYTES_MAX = 1024;

/**
 * A uniformly random 6-digit code, leading zeros kept (`"004217"`), by rejection sampling over
 * 32-bit draws from `random`.
 *
 * @param random @default systemRandom
 */
export function generateOtp(random: RandomSource = systemRandom): string {
  for (;;) {
    const bytes = random(4);
    if (bytes.length !== 4) throw new RangeError('random source returned too few bytes');
    const x = ((bytes[0]! << 24) | (bytes[1]! << 16) | (bytes[2]! << 8) | bytes[3]!) >>> 0;
    zeroize(bytes);
    if (x < OTP_ACCEPT_BELOW) return String(x % OTP_MODULUS).padStart(OTP_DIGITS, '0');
  }
}

/**
 * A random one-time token: `bytes` random bytes as base64url without padding (43 characters for
 * the default 32 bytes, 256 bits).
 *
 * @param bytes token length in bytes, in [{@link TOKEN_BYTES_MIN}, {@link TOKEN_BYTES_MAX}] @default 32
 * @param random @default systemRandom
 */
export function generateToken(bytes = 32, random: RandomSource = systemRandom): string {
  if (!Number.isSafeInteger(bytes) || bytes < TOKEN_BYTES_MIN || bytes > TOKEN_BYTES_MAX) {
    throw new RangeError(`token length must be an integer in [${TOKEN_BYTES_MIN}, ${TOKEN_BYTES_MAX}] bytes`);
  }
  const raw = random(bytes);
  if (raw.length !== bytes) throw new RangeError('random source returned too few bytes');
  try {
    return Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength).toString('base64url');
  } finally {
    zeroize(raw);
  }
}

// The context may not contain NUL: it separates context from code, so no (context, code) pair can
// be spelled as another.
function otpMessage(code: string, context: string): string | undefined {
  if (typeof code !== 'string' || typeof context !== 'string') return undefined;
  if (!OTP_RE.test(code) || context.includes('\0')) return undefined;
  return `${OTP_LABEL}\0${context}\0${code}`;
}

/**
 * Hash an OTP for storage: argon2id over `quorumkeep/otp/v1\0<context>\0<code>`, as a PHC string.
 *
 * Throws TypeError when `code` is not {@link OTP_DIGITS} digits or `context` contains NUL.
 *
 * @param options argon2id parameters @default ARGON2ID_DEFAULTS
 * @param random salt randomness @default systemRandom
 */
export async function hashOtp(
  code: string,
  context: string,
  options?: Partial<Argon2idParams>,
  random: RandomSource = systemRandom,
): Promise<string> {
  const message = otpMessage(code, context);
  if (message === undefined) throw new TypeError(`OTP must be ${OTP_DIGITS} digits and context must not contain NUL`);
  return hashPassword(message, options, random);
}

/**
 * Check an OTP against its stored hash for the same context. Never throws; a code that is not
 * {@link OTP_DIGITS} digits is refused without running argon2 (its format is no secret).
 */
export async function verifyOtp(code: string, context: string, phc: string): Promise<boolean> {
  const message = otpMessage(code, context);
  if (message === undefined) return false;
  return verifyPassword(message, phc);
}

function tokenDigest(token: string, context: string): Uint8Array {
  const ctx = utf8(context);
  const length = new Uint8Array(4);
  new DataView(length.buffer).setUint32(0, ctx.length);
  // Length-prefixed context, then the token: unambiguous whatever the two contain.
  const body = concatBytes(length, ctx, utf8(token));
  try {
    return taggedHash(TOKEN_LABEL, body);
  } finally {
    zeroize(body);
  }
}

/**
 * Hash a high-entropy token for storage: lowercase hex SHA-256 of the label `quorumkeep/token/v1`,
 * the length-prefixed context and the token. Deterministic, so it can also serve as a lookup key.
 */
export function hashToken(token: string, context: string): string {
  if (typeof token !== 'string' || typeof context !== 'string') throw new TypeError('token and context must be strings');
  return Buffer.from(tokenDigest(token, context)).toString('hex');
}

const DIGEST_HEX_RE = /^[0-9a-f]{64}$/;

/** Check a token against its stored {@link hashToken} hex in constant time. Never throws. */
export function verifyToken(token: string, context: string, hex: string): boolean {
  if (typeof token !== 'string' || typeof context !== 'string') return false;
  if (typeof hex !== 'string' || !DIGEST_HEX_RE.test(hex)) return false;
  return timingSafeEqual(tokenDigest(token, context), Buffer.from(hex, 'hex'));
}
