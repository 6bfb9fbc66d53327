import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import {
  MLKEM768_CIPHERTEXT_BYTES,
  MLKEM768_PUBLIC_KEY_BYTES,
  MLKEM768_SEED_BYTES,
  MLKEM_SHARED_SECRET_BYTES,
  createMlkemEncapsulator,
  mlkemDecapsulateWithSeed,
  mlkemEncapsulate,
  mlkemNoble,
  mlkemPublicKeyFromSeed,
  toHex,
} from '../../../src/crypto/index.ts';

const randomSeed = (): Uint8Array => new Uint8Array(randomBytes(MLKEM768_SEED_BYTES));
const seedArb = fc.uint8Array({ minLength: MLKEM768_SEED_BYTES, maxLength: MLKEM768_SEED_BYTES });

/** Both directions of the native ↔ noble cross-check for one seed. */
function crossCheck(seed: Uint8Array): void {
  const publicKey = mlkemPublicKeyFromSeed(seed);
  expect(publicKey.length).toBe(MLKEM768_PUBLIC_KEY_BYTES);
  expect(toHex(publicKey)).toBe(toHex(mlkemNoble.publicKeyFromSeed(seed)));

  const native = mlkemEncapsulate(publicKey);
  expect(native.ciphertext.length).toBe(MLKEM768_CIPHERTEXT_BYTES);
  expect(native.sharedSecret.length).toBe(MLKEM_SHARED_SECRET_BYTES);
  expect(toHex(mlkemNoble.decapsulateWithSeed(seed, native.ciphertext))).toBe(toHex(native.sharedSecret));
  expect(toHex(mlkemDecapsulateWithSeed(seed, native.ciphertext))).toBe(toHex(native.sharedSecret));

  const noble = mlkemNoble.encapsulate(publicKey);
  expect(toHex(mlkemDecapsulateWithSeed(seed, noble.ciphertext))).toBe(toHex(noble.sharedSecret));
}

describe('ML-KEM-768: node:crypto and @noble/post-quantum agree', () => {
  it('uses the FIPS 203 sizes', () => {
    expect([MLKEM768_SEED_BYTES, MLKEM768_PUBLIC_KEY_BYTES, MLKEM768_CIPHERTEXT_BYTES, MLKEM_SHARED_SECRET_BYTES]).toEqual([64, 1184, 1088, 32]);
  });

  it('on public keys and shared secrets for random seeds, in both directions', () => {
    for (let i = 0; i < 6; i++) crossCheck(randomSeed());
    // Edge seeds: all zero and all 0xff are still just seeds.
    crossCheck(new Uint8Array(MLKEM768_SEED_BYTES));
    crossCheck(new Uint8Array(MLKEM768_SEED_BYTES).fill(0xff));
  });

  it('for any seed (property)', () => {
    fc.assert(fc.property(seedArb, (seed) => crossCheck(seed)), { numRuns: 24 });
  });

  it('on a deterministic encapsulation (fixed randomness m)', () => {
    const seed = randomSeed();
    const m = new Uint8Array(32).fill(7);
    const a = mlkemNoble.encapsulate(mlkemPublicKeyFromSeed(seed), m);
    const b = mlkemNoble.encapsulate(mlkemPublicKeyFromSeed(seed), m);
    expect(toHex(a.ciphertext)).toBe(toHex(b.ciphertext));
    expect(toHex(mlkemDecapsulateWithSeed(seed, a.ciphertext))).toBe(toHex(a.sharedSecret));
  });

  it('on the implicit rejection of a tampered ciphertext', () => {
    const seed = randomSeed();
    const { sharedSecret, ciphertext } = mlkemEncapsulate(mlkemPublicKeyFromSeed(seed));
    for (const at of [0, 543, MLKEM768_CIPHERTEXT_BYTES - 1]) {
      const tampered = Uint8Array.from(ciphertext);
      tampered[at]! ^= 0x01;
      const native = mlkemDecapsulateWithSeed(seed, tampered);
      expect(native.length).toBe(MLKEM_SHARED_SECRET_BYTES);
      expect(toHex(native)).not.toBe(toHex(sharedSecret));
      // The rejection secret is J(z ‖ c): both implementations derive the same one.
      expect(toHex(native)).toBe(toHex(mlkemNoble.decapsulateWithSeed(seed, tampered)));
    }
  });

  it('gives another secret to another seed', () => {
    const seed = randomSeed();
    const { sharedSecret, ciphertext } = mlkemEncapsulate(mlkemPublicKeyFromSeed(seed));
    expect(toHex(mlkemDecapsulateWithSeed(randomSeed(), ciphertext))).not.toBe(toHex(sharedSecret));
  });

  it('accepts Buffers as well as Uint8Arrays', () => {
    const seed = randomSeed();
    const publicKey = mlkemPublicKeyFromSeed(Buffer.from(seed));
    const { sharedSecret, ciphertext } = mlkemEncapsulate(Buffer.from(publicKey));
    expect(toHex(mlkemDecapsulateWithSeed(Buffer.from(seed), Buffer.from(ciphertext)))).toBe(toHex(sharedSecret));
  });
});

describe('ML-KEM-768 input checks', () => {
  const seed = randomSeed();
  const publicKey = mlkemPublicKeyFromSeed(seed);
  const { ciphertext } = mlkemEncapsulate(publicKey);

  it('throws a TypeError on wrong lengths', () => {
    for (const length of [0, 32, 63, 65]) {
      const bad = new Uint8Array(length);
      expect(() => mlkemPublicKeyFromSeed(bad)).toThrow(TypeError);
      expect(() => mlkemDecapsulateWithSeed(bad, ciphertext)).toThrow(TypeError);
      expect(() => mlkemNoble.publicKeyFromSeed(bad)).toThrow(TypeError);
      expect(() => mlkemNoble.decapsulateWithSeed(bad, ciphertext)).toThrow(TypeError);
    }
    for (const length of [0, 1183, 1185]) {
      expect(() => mlkemEncapsulate(new Uint8Array(length))).toThrow(TypeError);
      expect(() => mlkemNoble.encapsulate(new Uint8Array(length))).toThrow(TypeError);
    }
    for (const length of [0, 1087, 1089]) {
      expect(() => mlkemDecapsulateWithSeed(seed, new Uint8Array(length))).toThrow(TypeError);
      expect(() => mlkemNoble.decapsulateWithSeed(seed, new Uint8Array(length))).toThrow(TypeError);
    }
    expect(() => mlkemNoble.encapsulate(publicKey, new Uint8Array(31))).toThrow(TypeError);
  });

  it('throws a TypeError on a key with coefficients ≥ q (FIPS 203 modulus check), on both paths', () => {
    const invalid = new Uint8Array(MLKEM768_PUBLIC_KEY_BYTES).fill(0xff);
    expect(() => mlkemEncapsulate(invalid)).toThrow(TypeError);
    expect(() => mlkemNoble.encapsulate(invalid)).toThrow(TypeError);
  });
});

describe('createMlkemEncapsulator', () => {
  it('keeps at most keyCacheSize public keys', () => {
    const encapsulator = createMlkemEncapsulator({ keyCacheSize: 2 });
    const seeds = [randomSeed(), randomSeed(), randomSeed()];
    const keys = seeds.map((s) => mlkemPublicKeyFromSeed(s));
    for (const key of keys) encapsulator.encapsulate(key);
    expect(encapsulator.cachedKeys()).toBe(2);
    // Cached or not, every encapsulation still decapsulates.
    for (const [i, key] of keys.entries()) {
      const { sharedSecret, ciphertext } = encapsulator.encapsulate(key);
      expect(toHex(mlkemDecapsulateWithSeed(seeds[i]!, ciphertext))).toBe(toHex(sharedSecret));
    }
    expect(encapsulator.cachedKeys()).toBe(2);
  });

  it('does not cache invalid keys, nor anything with keyCacheSize 0', () => {
    const encapsulator = createMlkemEncapsulator({ keyCacheSize: 0 });
    encapsulator.encapsulate(mlkemPublicKeyFromSeed(randomSeed()));
    expect(encapsulator.cachedKeys()).toBe(0);
    const caching = createMlkemEncapsulator();
    expect(() => caching.encapsulate(new Uint8Array(MLKEM768_PUBLIC_KEY_BYTES).fill(0xff))).toThrow(TypeError);
    expect(caching.cachedKeys()).toBe(0);
  });

  it('refuses a bad keyCacheSize', () => {
    expect(() => createMlkemEncapsulator({ keyCacheSize: -1 })).toThrow(RangeError);
    expect(() => createMlkemEncapsulator({ keyCacheSize: 1.5 })).toThrow(RangeError);
  });
});
