import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import {
  generateOtp,
  generateToken,
  hashOtp,
  hashToken,
  verifyOtp,
  verifyToken,
  type RandomSource,
} from '../../../src/crypto/index.ts';

const FAST = { memoryKiB: 1024, passes: 1 } as const;

/** Replays the given 32-bit values (big-endian), one per call. */
function scriptedRandom(values: number[]): RandomSource & { calls: number } {
  const source = Object.assign((length: number) => {
    const value = values[source.calls++];
    if (value === undefined || length !== 4) throw new Error('script exhausted');
    const out = new Uint8Array(4);
    new DataView(out.buffer).setUint32(0, value);
    return out;
  }, { calls: 0 });
  return source;
}

describe('generateOtp', () => {
  it('gives 6 decimal digits', () => {
    for (let i = 0; i < 1000; i++) expect(generateOtp()).toMatch(/^[0-9]{6}$/);
  });

  it('keeps leading zeros and redraws values that would bias the result', () => {
    // 4_294_000_000 is the first rejected value (the largest multiple of 10^6 below 2^32).
    const random = scriptedRandom([0xffffffff, 4_294_000_000, 42]);
    expect(generateOtp(random)).toBe('000042');
    expect(random.calls).toBe(3);
    expect(generateOtp(scriptedRandom([4_293_999_999]))).toBe('999999');
    expect(generateOtp(scriptedRandom([0]))).toBe('000000');
  });

  it('is roughly uniform (chi-square over the first and last digits of 20,000 codes)', () => {
    const n = 20_000;
    const first = new Array<number>(10).fill(0);
    const last = new Array<number>(10).fill(0);
    for (let i = 0; i < n; i++) {
      const code = generateOtp();
      first[Number(code[0])]!++;
      last[Number(code[5])]!++;
    }
    const chiSquare = (counts: number[]) => counts.reduce((sum, c) => sum + (c - n / 10) ** 2 / (n / 10), 0);
    // 9 degrees of freedom: P(χ² > 40) ≈ 7e-6, so a failure means bias, not bad luck.
    expect(chiSquare(first)).toBeLessThan(40);
    expect(chiSquare(last)).toBeLessThan(40);
  });
});

describe('generateToken', () => {
  it('gives base64url without padding, 256 bits by default', () => {
    const token = generateToken();
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(token, 'base64url')).toHaveLength(32);
    expect(generateToken()).not.toBe(token);
  });

  it('honours the length and the random source, and refuses < 128 bits', () => {
    expect(generateToken(16, (n) => new Uint8Array(n).fill(0xff))).toBe('_____________________w');
    expect(() => generateToken(15)).toThrow(RangeError);
    expect(() => generateToken(2.5)).toThrow(RangeError);
    expect(() => generateToken(1 << 20)).toThrow(RangeError);
  });
});

describe('hashOtp / verifyOtp', () => {
  it('verifies the code in its own context only', async () => {
    const phc = await hashOtp('012345', 'login:alice', FAST);
    expect(phc).toMatch(/^\$argon2id\$v=19\$m=1024,t=1,p=1\$/);
    expect(await verifyOtp('012345', 'login:alice', phc)).toBe(true);
    expect(await verifyOtp('012346', 'login:alice', phc)).toBe(false);
    expect(await verifyOtp('012345', 'login:bob', phc)).toBe(false);
    expect(await verifyOtp('012345', 'reset:alice', phc)).toBe(false);
    expect(await verifyOtp('012345', '', phc)).toBe(false);
  });

  it('uses the default argon2id parameters when none are given', async () => {
    const phc = await hashOtp('999999', 'login:alice');
    expect(phc).toMatch(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
    expect(await verifyOtp('999999', 'login:alice', phc)).toBe(true);
  });

  it('refuses codes that are not 6 digits and contexts containing NUL', async () => {
    await expect(hashOtp('12345', 'ctx', FAST)).rejects.toThrow(TypeError);
    await expect(hashOtp('1234567', 'ctx', FAST)).rejects.toThrow(TypeError);
    await expect(hashOtp('12345a', 'ctx', FAST)).rejects.toThrow(TypeError);
    await expect(hashOtp('123456', 'a\0b', FAST)).rejects.toThrow(TypeError);
    const phc = await hashOtp('123456', 'ctx', FAST);
    for (const code of ['', '12345', ' 123456', '123456 ', '１２３４５６', '123456\0']) {
      expect(await verifyOtp(code, 'ctx', phc)).toBe(false);
    }
    expect(await verifyOtp('123456', 'ctx\0', phc)).toBe(false);
    expect(await verifyOtp('123456', 'ctx', 'not a hash')).toBe(false);
    expect(await verifyOtp(123456 as unknown as string, 'ctx', phc)).toBe(false);
  });
});

describe('hashToken / verifyToken', () => {
  it('is deterministic lowercase SHA-256 hex, bound to the context', () => {
    const token = generateToken();
    const hex = hashToken(token, 'invite:alice');
    expect(hex).toMatch(/^[0-9a-f]{64}$/);
    expect(hashToken(token, 'invite:alice')).toBe(hex);
    expect(hashToken(token, 'invite:bob')).not.toBe(hex);
    expect(verifyToken(token, 'invite:alice', hex)).toBe(true);
    expect(verifyToken(token, 'invite:bob', hex)).toBe(false);
    expect(verifyToken(token + 'x', 'invite:alice', hex)).toBe(false);
  });

  it('has a stable encoding (known answer)', () => {
    // sha256(0x13 ‖ "quorumkeep/token/v1" ‖ u32be(3) ‖ "ctx" ‖ "tok"), computed with Python's hashlib
    expect(hashToken('tok', 'ctx')).toBe('abc7f3e2dd8c1ee1c8431a2b8b0db5f801b6f2f08a893bc8dfd371be85e40b72');
  });

  it('cannot be confused by moving bytes between context and token', () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), fc.string(), fc.string(), (t1, c1, t2, c2) => {
        fc.pre(t1 !== t2 || c1 !== c2);
        return hashToken(t1, c1) !== hashToken(t2, c2);
      }),
    );
    expect(hashToken('ab', 'c')).not.toBe(hashToken('b', 'ca'));
    expect(hashToken('', 'abc')).not.toBe(hashToken('abc', ''));
  });

  it('returns false for malformed stored hashes, never throws', () => {
    const hex = hashToken('tok', 'ctx');
    for (const bad of ['', hex.slice(0, 63), hex + '0', hex.toUpperCase(), `0x${hex}`, 'z'.repeat(64), undefined, null]) {
      expect(verifyToken('tok', 'ctx', bad as string)).toBe(false);
    }
    fc.assert(fc.property(fc.string(), fc.string(), fc.string(), (t, c, h) => verifyToken(t, c, h) === false));
  });
});
