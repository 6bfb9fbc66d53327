/**
 * GF(2^8) arithmetic against the field of `shamir-secret-sharing` (its `combine` must accept our
 * shares), and the recovery identity: the Lagrange-weighted sum of any `threshold` shares at a
 * missing coordinate is exactly the missing share.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { combine } from 'shamir-secret-sharing';
import { gfAddScaled, gfInv, gfMul, lagrangeAt, splitAt } from '../../../src/crypto/gf256.ts';

/** Every subset of `n` indices with `k` elements. */
function subsets(n: number, k: number): number[][] {
  if (k === 0) return [[]];
  if (n < k) return [];
  return [...subsets(n - 1, k - 1).map((s) => [...s, n - 1]), ...subsets(n - 1, k)];
}

describe('GF(2^8)', () => {
  it('is a field: a · a⁻¹ = 1, multiplication commutes and distributes over xor', () => {
    for (let a = 1; a < 256; a++) expect(gfMul(a, gfInv(a))).toBe(1);
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 255 }), fc.integer({ min: 0, max: 255 }), fc.integer({ min: 0, max: 255 }), (a, b, c) => {
        expect(gfMul(a, b)).toBe(gfMul(b, a));
        expect(gfMul(a, b ^ c)).toBe(gfMul(a, b) ^ gfMul(a, c));
      }),
    );
    // The AES field: {53} · {CA} = {01} (FIPS-197's worked inverse pair).
    expect(gfMul(0x53, 0xca)).toBe(1);
  });
});

describe('shares at chosen coordinates', () => {
  it("are the library's shares: any threshold of them combine to the secret, fewer do not", async () => {
    const secret = new Uint8Array(64).map((_, i) => (i * 37 + 11) & 0xff);
    const xs = [1, 2, 3, 4, 5];
    const shares = splitAt(secret, xs, 3);
    expect(shares.map((s) => s[64])).toEqual(xs);
    for (const subset of subsets(5, 3)) {
      expect(Buffer.from(await combine(subset.map((i) => shares[i]!))).equals(Buffer.from(secret))).toBe(true);
    }
    expect(Buffer.from(await combine([shares[0]!, shares[1]!])).equals(Buffer.from(secret))).toBe(false);
  });

  it('a missing share is the Lagrange-weighted sum of any threshold others, at its own coordinate', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 1, maxLength: 80 }), fc.integer({ min: 2, max: 5 }), fc.integer({ min: 0, max: 10 }), (secret, threshold, seed) => {
        const size = threshold + 2;
        const xs = Array.from({ length: size }, (_, i) => i + 1);
        const shares = splitAt(secret, xs, threshold);
        const lost = seed % size;
        const others = xs.map((_, i) => i).filter((i) => i !== lost);
        for (const helpers of subsets(others.length, threshold).map((s) => s.map((i) => others[i]!))) {
          const helperXs = helpers.map((i) => xs[i]!);
          const rebuilt = new Uint8Array(secret.length);
          helpers.forEach((h, j) => gfAddScaled(rebuilt, lagrangeAt(helperXs, j, xs[lost]!), shares[h]!.subarray(0, secret.length)));
          expect(Buffer.from(rebuilt).equals(Buffer.from(shares[lost]!.subarray(0, secret.length)))).toBe(true);
        }
      }),
      { numRuns: 40 },
    );
  });

  it('refuses repeated or out-of-range coordinates and a threshold above the share count', () => {
    expect(() => splitAt(new Uint8Array(4), [1, 1], 2)).toThrow(RangeError);
    expect(() => splitAt(new Uint8Array(4), [0, 1], 2)).toThrow(RangeError);
    expect(() => splitAt(new Uint8Array(4), [1, 256], 2)).toThrow(RangeError);
    expect(() => splitAt(new Uint8Array(4), [1, 2], 3)).toThrow(RangeError);
    expect(() => gfInv(0)).toThrow(RangeError);
  });
});
