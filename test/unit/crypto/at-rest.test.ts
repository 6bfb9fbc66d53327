import { createSecretKey, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import {
  AT_REST_OVERHEAD_BYTES,
  aes256GcmDecrypt,
  aes256GcmEncrypt,
  aesKeyObject,
  decryptAtRest,
  encryptAtRest,
  fromHex,
  toHex,
  utf8,
} from '../../../src/crypto/index.ts';

const storageKey = new Uint8Array(randomBytes(32));
const share = new Uint8Array(randomBytes(65));
const aadOf = (secretId: string, slot: number): Uint8Array => utf8(`share/${secretId}/${slot}`);

describe('AES-256-GCM', () => {
  // McGrew & Viega, "The Galois/Counter Mode of Operation", test cases 13 and 14 (AES-256, zero key and IV).
  it('matches the GCM specification test vectors', () => {
    const key = new Uint8Array(32);
    const nonce = new Uint8Array(12);
    const empty = aes256GcmEncrypt(key, nonce, new Uint8Array(0));
    expect(toHex(empty.ciphertext)).toBe('');
    expect(toHex(empty.tag)).toBe('530f8afbc74536b9a963b4f1c4cb738b');
    const block = aes256GcmEncrypt(key, nonce, new Uint8Array(16));
    expect(toHex(block.ciphertext)).toBe('cea7403d4d606b6e074ec5d3baf39d18');
    expect(toHex(block.tag)).toBe('d0d1c8a799996bf0265b98b5d48ab919');
    expect(toHex(aes256GcmDecrypt(key, nonce, block.ciphertext, block.tag)!)).toBe('00'.repeat(16));
  });

  it('refuses a tag that is not 16 bytes, and throws on a wrong key or nonce length', () => {
    const key = new Uint8Array(32);
    const nonce = new Uint8Array(12);
    const { ciphertext, tag } = aes256GcmEncrypt(key, nonce, utf8('x'));
    expect(aes256GcmDecrypt(key, nonce, ciphertext, tag.subarray(0, 12))).toBeUndefined();
    expect(() => aes256GcmEncrypt(new Uint8Array(16), nonce, utf8('x'))).toThrow(TypeError);
    expect(() => aes256GcmEncrypt(key, new Uint8Array(16), utf8('x'))).toThrow(TypeError);
    expect(() => aes256GcmDecrypt(key, new Uint8Array(8), ciphertext, tag)).toThrow(TypeError);
  });
});

describe('shares at rest', () => {
  it('round-trip, with a fresh nonce each time', () => {
    const aad = aadOf('secret-1', 2);
    const a = encryptAtRest(storageKey, share, aad);
    const b = encryptAtRest(storageKey, share, aad);
    expect(a.length).toBe(share.length + AT_REST_OVERHEAD_BYTES);
    expect(toHex(a)).not.toBe(toHex(b));
    expect(toHex(decryptAtRest(storageKey, a, aad)!)).toBe(toHex(share));
    expect(toHex(decryptAtRest(storageKey, b, aad)!)).toBe(toHex(share));
  });

  it('round-trip any plaintext and associated data (property)', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), fc.uint8Array({ maxLength: 64 }), (plaintext, aad) => {
        expect(toHex(decryptAtRest(storageKey, encryptAtRest(storageKey, plaintext, aad), aad)!)).toBe(toHex(plaintext));
      }),
    );
  });

  it('use the injected randomness for the nonce', () => {
    const nonce = fromHex('000102030405060708090a0b');
    const box = encryptAtRest(storageKey, share, aadOf('s', 0), () => Uint8Array.from(nonce));
    expect(toHex(box.subarray(0, 12))).toBe(toHex(nonce));
  });

  it('refuse another secretId or slot, another key, a flipped byte, a truncation', () => {
    const box = encryptAtRest(storageKey, share, aadOf('secret-1', 2));
    expect(decryptAtRest(storageKey, box, aadOf('secret-2', 2))).toBeUndefined();
    expect(decryptAtRest(storageKey, box, aadOf('secret-1', 3))).toBeUndefined();
    expect(decryptAtRest(new Uint8Array(randomBytes(32)), box, aadOf('secret-1', 2))).toBeUndefined();
    for (let at = 0; at < box.length; at++) {
      const tampered = Uint8Array.from(box);
      tampered[at]! ^= 0x80;
      expect(decryptAtRest(storageKey, tampered, aadOf('secret-1', 2)), `byte ${at}`).toBeUndefined();
    }
    for (const length of [0, 1, 12, AT_REST_OVERHEAD_BYTES - 1, AT_REST_OVERHEAD_BYTES, box.length - 1]) {
      expect(decryptAtRest(storageKey, box.subarray(0, length), aadOf('secret-1', 2))).toBeUndefined();
    }
  });

  it('throw a TypeError on a storage key that is not 32 bytes', () => {
    expect(() => encryptAtRest(new Uint8Array(31), share, utf8('a'))).toThrow(TypeError);
    expect(() => decryptAtRest(new Uint8Array(33), new Uint8Array(40), utf8('a'))).toThrow(TypeError);
  });

  it('the storage key made a KeyObject once opens and makes the same boxes as its bytes, and a KeyObject of another size is refused', () => {
    const key = aesKeyObject(storageKey);
    const aad = aadOf('000000000042', 3);
    expect(toHex(decryptAtRest(key, encryptAtRest(storageKey, share, aad), aad)!)).toBe(toHex(share));
    expect(toHex(decryptAtRest(storageKey, encryptAtRest(key, share, aad), aad)!)).toBe(toHex(share));
    expect(decryptAtRest(key, encryptAtRest(key, share, aad), aadOf('000000000042', 4))).toBeUndefined();
    expect(decryptAtRest(aesKeyObject(new Uint8Array(randomBytes(32))), encryptAtRest(key, share, aad), aad)).toBeUndefined();
    expect(() => aesKeyObject(new Uint8Array(16))).toThrow(TypeError);
    expect(() => encryptAtRest(createSecretKey(new Uint8Array(16)), share, aad)).toThrow(TypeError);
  });
});
