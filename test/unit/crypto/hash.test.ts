import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { keccak_256 } from '@noble/hashes/sha3.js';
import { createHash } from 'node:crypto';
import { keccak256, taggedHash } from '../../../src/crypto/hash.ts';
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

describe('taggedHash', () => {
  /** The definition: SHA-256 over one byte of the label's length, the label and the message, as UTF-8. */
  const reference = (label: string, message: Uint8Array | string) => {
    const l = new TextEncoder().encode(label);
    return createHash('sha256').update(Uint8Array.of(l.length)).update(l).update(message).digest('hex');
  };

  it('is sha256(len(label) ‖ label ‖ message) for any label, byte or string message (multi-byte UTF-8 too)', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 80, unit: 'grapheme' }), fc.oneof(fc.uint8Array({ maxLength: 700 }), fc.string({ maxLength: 300, unit: 'binary' })), (label, message) => {
        expect(toHex(taggedHash(label, message))).toBe(reference(label, message));
      }),
      { numRuns: 400 },
    );
  });

  it('keeps labels apart however many there have been, and returns a fresh array each call', () => {
    const first = taggedHash('quorumkeep/test/a', 'm');
    for (let i = 0; i < 200; i++) expect(toHex(taggedHash(`quorumkeep/test/${i}`, 'm'))).toBe(reference(`quorumkeep/test/${i}`, 'm'));
    expect(toHex(taggedHash('quorumkeep/test/a', 'm'))).toBe(toHex(first));
    const copy = toHex(first);
    taggedHash('quorumkeep/test/a', 'other');
    expect(toHex(first)).toBe(copy);
  });
});
