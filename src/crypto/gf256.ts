/**
 * Arithmetic in GF(2^8) with the AES polynomial x^8 + x^4 + x^3 + x + 1 (0x11b) — the field of
 * `shamir-secret-sharing` — for what that library does not offer: shares at chosen x-coordinates
 * (x = slot + 1, so a lost share's coordinate is known) and a share rebuilt at a missing coordinate
 * from `threshold` others without combining the secret (docs/security.md, "Share recovery").
 *
 * Multiplication is a fixed 8-round shift-and-add with masks instead of branches or table lookups,
 * so its time does not depend on the (secret) share bytes.
 */
import { hkdfSync } from 'node:crypto';
import { systemRandom, type RandomSource } from './bytes.ts';

/** a · b in GF(2^8), constant time. */
export function gfMul(a: number, b: number): number {
  let product = 0;
  for (let i = 0; i < 8; i++) {
    product ^= -(b & 1) & a;
    const carry = -((a >> 7) & 1) & 0x1b;
    a = ((a << 1) & 0xff) ^ carry;
    b >>= 1;
  }
  return product;
}

/** a^-1 in GF(2^8) (a^254), for public coordinates; throws for 0. */
export function gfInv(a: number): number {
  if (a === 0) throw new RangeError('0 has no inverse in GF(2^8)');
  let result = 1;
  let base = a;
  for (let e = 254; e > 0; e >>= 1) {
    if (e & 1) result = gfMul(result, base);
    base = gfMul(base, base);
  }
  return result;
}

/**
 * The Lagrange coefficient of the point at `xs[index]` for evaluating at `at`, over the points `xs`
 * (distinct, non-zero, public): Π_{k≠index} (at − x_k) / (x_index − x_k).
 */
export function lagrangeAt(xs: readonly number[], index: number, at: number): number {
  let num = 1;
  let den = 1;
  for (let k = 0; k < xs.length; k++) {
    if (k === index) continue;
    num = gfMul(num, at ^ xs[k]!);
    den = gfMul(den, xs[index]! ^ xs[k]!);
  }
  return gfMul(num, gfInv(den));
}

/** out[i] ^= c · v[i] for every byte (a scaled vector added in place), constant time in v. */
export function gfAddScaled(out: Uint8Array, c: number, v: Uint8Array): void {
  for (let i = 0; i < out.length; i++) out[i]! ^= gfMul(c, v[i]!);
}

/**
 * Shamir shares of `secret` at the x-coordinates `xs` (distinct, 1..255), any `threshold` of which
 * rebuild it: the library's format (`y-bytes ‖ x`), so its `combine` takes them. The polynomial's
 * random coefficients are zeroed before returning.
 */
export function splitAt(secret: Uint8Array, xs: readonly number[], threshold: number, random: RandomSource = systemRandom): Uint8Array[] {
  if (!(secret instanceof Uint8Array) || secret.length === 0) throw new TypeError('secret must be a non-empty Uint8Array');
  if (new Set(xs).size !== xs.length || xs.some((x) => !Number.isInteger(x) || x < 1 || x > 255)) throw new RangeError('x-coordinates must be distinct integers from 1 to 255');
  if (!Number.isInteger(threshold) || threshold < 1 || threshold > xs.length) throw new RangeError(`threshold must be an integer from 1 to ${xs.length}`);
  const degree = threshold - 1;
  const coefficients = random(secret.length * degree);
  const shares = xs.map((x) => {
    const share = new Uint8Array(secret.length + 1);
    share[secret.length] = x;
    return share;
  });
  try {
    for (let i = 0; i < secret.length; i++) {
      for (const share of shares) {
        const x = share[secret.length]!;
        // Horner: a_d·x^d + … + a_1·x + secret.
        let y = 0;
        for (let d = degree; d >= 1; d--) y = gfMul(y ^ coefficients[i * degree + d - 1]!, x);
        share[i] = y ^ secret[i]!;
      }
    }
    return shares;
  } finally {
    coefficients.fill(0);
  }
}

/**
 * A pairwise pad of a zero-sharing (docs/security.md, "Share recovery"): `length` bytes from
 * HKDF-SHA-256 over the two helpers' secp256k1 ECDH secret (`sharedX`, which only they can compute)
 * and `context` (the round, the helper set, the pair). Helper j masks its contribution with the xor
 * of its pads with every other helper; each pad appears twice across the helpers, so the masks xor
 * to zero, and the recovering member, which cannot compute any pad, learns only the sum.
 */
export function pairwisePad(sharedX: Uint8Array, context: string, length: number): Uint8Array {
  return new Uint8Array(hkdfSync('sha256', sharedX, new Uint8Array(0), new TextEncoder().encode(`quorumkeep/recover-pad/v1\n${context}`), length));
}
