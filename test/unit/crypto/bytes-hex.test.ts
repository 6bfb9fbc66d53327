/**
 * `fromHex` (src/crypto/bytes.ts) takes exactly what `isHex` takes — even-length hex, optionally
 * `0x`-prefixed (lowercase x only) — and decodes it; everything else throws. It checks by decoding
 * (Node stops at the first pair that is not hex), so the property below holds it to the pattern.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { fromHex, isHex, toHex } from '../../../src/crypto/index.ts';

/** Strings near hex: hex digits of both cases, a few that are not, and sometimes a prefix. */
const nearHex = fc
  .tuple(fc.constantFrom('', '0x', '0X', 'x'), fc.array(fc.constantFrom(...'0123456789abcdefABCDEFgxz -'.split('')), { maxLength: 24 }))
  .map(([prefix, chars]) => prefix + chars.join(''));

describe('fromHex', () => {
  it('accepts exactly what isHex accepts, and decodes it byte for byte', () => {
    fc.assert(
      fc.property(fc.oneof(nearHex, fc.string({ maxLength: 24 })), (s) => {
        if (isHex(s)) {
          const body = s.startsWith('0x') ? s.slice(2) : s;
          expect(toHex(fromHex(s))).toBe(body.toLowerCase());
        } else expect(() => fromHex(s)).toThrow(TypeError);
      }),
      { numRuns: 2000 },
    );
  });

  it('round-trips any bytes, with or without the prefix, into an array of its own', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => {
        expect(fromHex(toHex(bytes))).toEqual(bytes);
        const decoded = fromHex('0x' + toHex(bytes));
        expect(decoded).toEqual(bytes);
        expect(decoded.byteOffset).toBe(0);
        expect(decoded.buffer.byteLength).toBe(bytes.length);
      }),
    );
  });

  it('refuses odd lengths, a bare or doubled prefix, and a stray character anywhere', () => {
    for (const bad of ['0', 'abc', '0x0', '0x0x00', '0X00', 'zz', '00zz', 'zz00', '0 00', '00 ', 'ab\n']) expect(() => fromHex(bad), bad).toThrow(TypeError);
    expect(fromHex('')).toEqual(new Uint8Array(0));
    expect(fromHex('0x')).toEqual(new Uint8Array(0));
  });
});
