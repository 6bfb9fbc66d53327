/**
 * Shamir secret sharing of a secret's 64-byte seed, threshold-of-size (docs/architecture.md, Keys and
 * crypto), over `shamir-secret-sharing` (Privy; audited by Cure53 and Zellic; GF(2^8)) for splitting;
 * combining interpolates with gf256.ts's constant-time arithmetic instead (see {@link combineShares}).
 *
 * A share is `y-bytes ‖ x`: as long as the secret plus one byte, its last byte the non-zero
 * x-coordinate (the library draws distinct x-coordinates at random). Constraints:
 * - The library takes 2 ≤ threshold ≤ shares ≤ 255; we combine 1 to 255 shares. A cluster of size 1
 *   has threshold 1, which the library refuses, so {@link splitSecret} handles threshold 1 itself:
 *   the polynomial is the constant secret, every share carries the secret's bytes (x = 1 … shares), and
 *   {@link combineShares} of a single share returns its bytes. This is what Shamir's scheme means for
 *   threshold 1 — any one share is the secret — and the shares are encrypted at rest regardless.
 * - Combining never detects wrong input: fewer than threshold shares, or a corrupted share, give a
 *   wrong value without an error. Callers count shares and authenticate the result (a rebuilt seed
 *   must reproduce the secret's public key).
 * - The library's random polynomial coefficients are JavaScript arrays we cannot reach to wipe.
 */
import { split } from 'shamir-secret-sharing';
import { zeroize } from './bytes.ts';
import { gfAddScaled, lagrangeAt, splitAt } from './gf256.ts';

/** Largest number of shares (and threshold): x-coordinates are the non-zero elements of GF(2^8). */
export const SHAMIR_MAX_SHARES = 255;
/** Bytes a share adds to its secret: the x-coordinate. */
export const SHAMIR_SHARE_OVERHEAD_BYTES = 1;

/**
 * A plain Uint8Array copy: the library checks `constructor === Uint8Array`, which a Node Buffer (a
 * subclass) fails. The caller zeroes the copy.
 */
function plainCopy(bytes: Uint8Array): Uint8Array {
  const out = new Uint8Array(bytes.length);
  out.set(bytes);
  return out;
}

/**
 * Split `secret` into `shares` shares, any `threshold` of which rebuild it and fewer of which reveal
 * nothing about it. Requires 1 ≤ threshold ≤ shares ≤ 255 (integers) and a non-empty secret; throws a
 * TypeError or RangeError naming the bad argument otherwise. The secret is left as it was.
 */
export async function splitSecret(secret: Uint8Array, shares: number, threshold: number): Promise<Uint8Array[]> {
  if (!(secret instanceof Uint8Array) || secret.length === 0) throw new TypeError('secret must be a non-empty Uint8Array');
  if (!Number.isInteger(shares) || shares < 1 || shares > SHAMIR_MAX_SHARES) {
    throw new RangeError(`shares must be an integer from 1 to ${SHAMIR_MAX_SHARES} (got ${shares})`);
  }
  if (!Number.isInteger(threshold) || threshold < 1 || threshold > shares) {
    throw new RangeError(`threshold must be an integer from 1 to shares (${shares}) (got ${threshold})`);
  }
  if (threshold === 1) {
    return Array.from({ length: shares }, (_, i) => {
      const share = new Uint8Array(secret.length + SHAMIR_SHARE_OVERHEAD_BYTES);
      share.set(secret);
      share[secret.length] = i + 1;
      return share;
    });
  }
  const copy = plainCopy(secret);
  try {
    return await split(copy, shares, threshold);
  } finally {
    zeroize(copy);
  }
}

/**
 * Rebuild a secret from shares of one {@link splitSecret} call, in any order. Requires 1 to 255 shares,
 * all of the same length (≥ 2 bytes) with distinct x-coordinates; throws a TypeError or RangeError
 * otherwise. With fewer shares than the threshold the result is a wrong value, not an error.
 */
/**
 * How many times this process combined shares into a secret: what the recovery tests count to show
 * that rebuilding a member's share never combines a seed (docs/security.md, "Share recovery").
 */
export const shamirCounters = { combines: 0 };

export async function combineShares(shares: Uint8Array[]): Promise<Uint8Array> {
  shamirCounters.combines++;
  if (!Array.isArray(shares) || shares.length < 1 || shares.length > SHAMIR_MAX_SHARES) {
    throw new RangeError(`shares must be an array of 1 to ${SHAMIR_MAX_SHARES} shares`);
  }
  const length = shares[0]?.length ?? 0;
  const seen = new Set<number>();
  for (const share of shares) {
    if (!(share instanceof Uint8Array)) throw new TypeError('each share must be a Uint8Array');
    if (share.length !== length || length < 1 + SHAMIR_SHARE_OVERHEAD_BYTES) throw new RangeError('shares must all have the same length of at least 2 bytes');
    const x = share[length - 1] ?? 0;
    if (x === 0 || seen.has(x)) throw new RangeError('shares must have distinct non-zero x-coordinates');
    seen.add(x);
  }
  // One point determines only a constant polynomial: its y-bytes are the secret (threshold 1).
  if (shares.length === 1) return shares[0]!.slice(0, length - SHAMIR_SHARE_OVERHEAD_BYTES);
  // Lagrange interpolation at 0, one coefficient per share (the x-coordinates are public), each
  // share's y-bytes scaled and added with gf256.ts's constant-time multiply. The library's `combine`
  // gives the same bytes (a property test holds them equal) but interpolates byte by byte through
  // log/exp tables indexed by the share bytes: a lookup whose timing depends on them. The time is
  // the same (about 10 µs for three 65-byte shares).
  const xs = shares.map((share) => share[length - 1]!);
  const secret = new Uint8Array(length - SHAMIR_SHARE_OVERHEAD_BYTES);
  shares.forEach((share, j) => gfAddScaled(secret, lagrangeAt(xs, j, 0), share.subarray(0, length - SHAMIR_SHARE_OVERHEAD_BYTES)));
  return secret;
}

/**
 * The x-coordinate of a member's share: its slot + 1. Fixed coordinates (the library draws random
 * ones) are what let a member that lost its share get it back, byte for byte, from `threshold` others
 * (docs/security.md, "Share recovery").
 */
export function shareXOfSlot(slot: number): number {
  return slot + 1;
}

/**
 * Split `secret` into one share per slot, at x = slot + 1, any `threshold` of which rebuild it with
 * {@link combineShares}. Same rules as {@link splitSecret}; slots are 0…254.
 */
export function splitSecretForSlots(secret: Uint8Array, slots: readonly number[], threshold: number): Uint8Array[] {
  return splitAt(secret, slots.map(shareXOfSlot), threshold);
}
