import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { combine } from 'shamir-secret-sharing';
import { SHAMIR_MAX_SHARES, combineShares, splitSecret, toHex } from '../../../src/crypto/index.ts';

const newSeed = (): Uint8Array => new Uint8Array(randomBytes(64));

/** Every subset of `k` of the indices 0 … n-1. */
function subsets(n: number, k: number): number[][] {
  if (k === 0) return [[]];
  if (n < k) return [];
  return [...subsets(n - 1, k - 1).map((s) => [...s, n - 1]), ...subsets(n - 1, k)];
}

describe('Shamir secret sharing', () => {
  it('3-of-5: every subset of 3, 4 or 5 shares, in any order, rebuilds a 64-byte seed', async () => {
    const seed = newSeed();
    const shares = await splitSecret(seed, 5, 3);
    expect(shares).toHaveLength(5);
    for (const share of shares) expect(share.length).toBe(65);
    for (const k of [3, 4, 5]) {
      for (const subset of subsets(5, k)) {
        const picked = subset.map((i) => shares[i]!);
        expect(toHex(await combineShares(picked)), `shares ${subset.join(',')}`).toBe(toHex(seed));
        expect(toHex(await combineShares(picked.reverse()))).toBe(toHex(seed));
      }
    }
  });

  it('3-of-5: any 2 shares give another value', async () => {
    const seed = newSeed();
    const shares = await splitSecret(seed, 5, 3);
    for (const subset of subsets(5, 2)) {
      expect(toHex(await combineShares(subset.map((i) => shares[i]!)))).not.toBe(toHex(seed));
    }
  });

  it('shares == threshold works (2-of-2, 5-of-5)', async () => {
    const seed = newSeed();
    expect(toHex(await combineShares(await splitSecret(seed, 2, 2)))).toBe(toHex(seed));
    const five = await splitSecret(seed, 5, 5);
    expect(toHex(await combineShares(five))).toBe(toHex(seed));
    expect(toHex(await combineShares(five.slice(1)))).not.toBe(toHex(seed));
  });

  it('threshold 1 (a cluster of one): every share alone is the secret', async () => {
    const seed = newSeed();
    const single = await splitSecret(seed, 1, 1);
    expect(single).toHaveLength(1);
    expect(toHex(await combineShares(single))).toBe(toHex(seed));
    const three = await splitSecret(seed, 3, 1);
    for (const share of three) expect(toHex(await combineShares([share]))).toBe(toHex(seed));
    expect(toHex(await combineShares(three))).toBe(toHex(seed));
  });

  it('any threshold-of-size split rebuilds from a random threshold subset (property)', async () => {
    const shape = fc
      .integer({ min: 1, max: 7 })
      .chain((size) => fc.tuple(fc.constant(size), fc.integer({ min: 1, max: size })))
      .chain(([size, threshold]) =>
        fc.tuple(fc.constant(size), fc.constant(threshold), fc.shuffledSubarray([...Array(size).keys()], { minLength: threshold, maxLength: threshold })),
      );
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ minLength: 1, maxLength: 96 }), shape, async (secret, [size, threshold, picked]) => {
        const shares = await splitSecret(secret, size, threshold);
        expect(toHex(await combineShares(picked.map((i) => shares[i]!)))).toBe(toHex(secret));
      }),
      { numRuns: 60 },
    );
  });

  it('combines to the very bytes the library’s own combine gives, for any 2 or more shares, right or wrong (property)', async () => {
    // Our combine interpolates with constant-time arithmetic (src/crypto/gf256.ts); the library is
    // the reference, including for too few shares, where both give the same wrong value.
    const shape = fc
      .integer({ min: 2, max: 9 })
      .chain((size) => fc.tuple(fc.constant(size), fc.integer({ min: 2, max: size })))
      .chain(([size, threshold]) => fc.tuple(fc.constant(size), fc.constant(threshold), fc.shuffledSubarray([...Array(size).keys()], { minLength: 2, maxLength: size })));
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ minLength: 1, maxLength: 96 }), shape, async (secret, [size, threshold, picked]) => {
        const shares = await splitSecret(secret, size, threshold);
        const chosen = picked.map((i) => shares[i]!);
        expect(toHex(await combineShares(chosen))).toBe(toHex(await combine(chosen.map((s) => Uint8Array.from(s)))));
      }),
      { numRuns: 200 },
    );
  });

  it('accepts Node Buffers (which the library alone refuses) and leaves the secret intact', async () => {
    const seed = Buffer.from(newSeed());
    const before = seed.toString('hex');
    const shares = await splitSecret(seed, 3, 2);
    expect(seed.toString('hex')).toBe(before);
    expect(Buffer.from(await combineShares(shares.slice(0, 2).map((s) => Buffer.from(s)))).toString('hex')).toBe(before);
  });

  it('refuses bad arguments with clear errors', async () => {
    const seed = newSeed();
    await expect(splitSecret(new Uint8Array(0), 3, 2)).rejects.toThrow(/secret must be a non-empty/);
    await expect(splitSecret(seed, 0, 1)).rejects.toThrow(RangeError);
    await expect(splitSecret(seed, SHAMIR_MAX_SHARES + 1, 2)).rejects.toThrow(/shares must be an integer from 1 to 255/);
    await expect(splitSecret(seed, 2.5, 2)).rejects.toThrow(RangeError);
    await expect(splitSecret(seed, 3, 4)).rejects.toThrow(/threshold must be an integer from 1 to shares/);
    await expect(splitSecret(seed, 3, 0)).rejects.toThrow(RangeError);

    const shares = await splitSecret(seed, 3, 2);
    await expect(combineShares([])).rejects.toThrow(RangeError);
    await expect(combineShares([shares[0]!, shares[0]!])).rejects.toThrow(/distinct/);
    await expect(combineShares([shares[0]!, shares[1]!.subarray(1)])).rejects.toThrow(/same length/);
    await expect(combineShares([new Uint8Array(1), new Uint8Array(1)])).rejects.toThrow(/at least 2 bytes/);
    await expect(combineShares([shares[0]!, 'x' as unknown as Uint8Array])).rejects.toThrow(TypeError);
  });
});
