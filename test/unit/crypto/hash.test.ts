import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { keccak_256 } from '@noble/hashes/sha3.js';
import { keccak256 } from '../../../src/crypto/hash.ts';
import { toHex } from '../../../src/crypto/bytes.ts';

describe('keccak256', () => {
  it('is Ethereum Keccak-256 (not SHA3-256): the empty string and "abc"', () => {
    expect(toHex(keccak256(new Uint8Array()))).toBe('c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470');
    expect(toHex(keccak256(new TextEncoder().encode('abc')))).toBe('4e03657aea45a94fc7d47ba826c8d667c0d1e6e33a64a036ec44f58fa12d6c45');
  });

  it('agrees with @noble/hashes on any input, across the rate boundary (136 bytes) and when calls follow each other', () => {
    fc.assert(
      fc.property(fc.array(fc.uint8Array({ maxLength: 600 }), { minLength: 1, maxLength: 4 }), (inputs) => {
        for (const input of inputs) expect(toHex(keccak256(input))).toBe(toHex(keccak_256(input)));
      }),
      { numRuns: 300 },
    );
  });

  it('returns a fresh array each call (a later hash never overwrites an earlier result)', () => {
    const a = keccak256(Uint8Array.of(1));
    const copy = toHex(a);
    keccak256(Uint8Array.of(2));
    expect(toHex(a)).toBe(copy);
  });
});
