import { createDecipheriv, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { hkdf } from '@noble/hashes/hkdf.js';
import { sha256 } from '@noble/hashes/sha2.js';
import {
  CIFER_BYTES,
  MLKEM768_CIPHERTEXT_BYTES,
  mlkemDecapsulateWithSeed,
  mlkemNoble,
  mlkemPublicKeyFromSeed,
  openPayloadWithSeed,
  openPayloadWithCheckedSeed,
  mlkemKeyFromSeed,
  openPayloadWithSharedSecret,
  sealPayload,
  sealPayloadWithSharedSecret,
  toHex,
  utf8,
} from '../../../src/crypto/index.ts';

const newSeed = (): Uint8Array => new Uint8Array(randomBytes(64));
const seed = newSeed();
const publicKey = mlkemPublicKeyFromSeed(seed);

function flipped(bytes: Uint8Array, byte: number, bit = byte % 8): Uint8Array {
  const out = Uint8Array.from(bytes);
  out[byte]! ^= 1 << bit;
  return out;
}

describe('payload envelope', () => {
  it('is 1104 bytes of cifer and a message as long as the plaintext', () => {
    expect(CIFER_BYTES).toBe(1104);
    const { cifer, encryptedMessage } = sealPayload(publicKey, utf8('hello'));
    expect(cifer.length).toBe(CIFER_BYTES);
    expect(encryptedMessage.length).toBe(5);
  });

  it('round-trips empty, short, UTF-8 and 100 KiB plaintexts', () => {
    const plaintexts = [new Uint8Array(0), utf8('x'), utf8('héllo wörld 🌍 _ 1_2_3'), new Uint8Array(randomBytes(100 * 1024))];
    for (const plaintext of plaintexts) {
      const { cifer, encryptedMessage } = sealPayload(publicKey, plaintext);
      expect(toHex(openPayloadWithSeed(seed, cifer, encryptedMessage)!)).toBe(toHex(plaintext));
    }
  });

  it('round-trips any plaintext (property)', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 512 }), (plaintext) => {
        const { cifer, encryptedMessage } = sealPayload(publicKey, plaintext);
        expect(toHex(openPayloadWithSeed(seed, cifer, encryptedMessage)!)).toBe(toHex(plaintext));
      }),
      { numRuns: 40 },
    );
  });

  it('encrypts the same plaintext differently every time', () => {
    const a = sealPayload(publicKey, utf8('same'));
    const b = sealPayload(publicKey, utf8('same'));
    expect(toHex(a.cifer)).not.toBe(toHex(b.cifer));
    expect(toHex(a.encryptedMessage)).not.toBe(toHex(b.encryptedMessage));
  });

  it('refuses a flipped bit in any byte of the cifer (KEM ciphertext or tag)', () => {
    const { cifer, encryptedMessage } = sealPayload(publicKey, utf8('attack at dawn'));
    for (let at = 0; at < CIFER_BYTES; at++) {
      expect(openPayloadWithSeed(seed, flipped(cifer, at), encryptedMessage), `byte ${at}`).toBeUndefined();
    }
  });

  it('refuses a flipped bit in any byte of the message, and a changed message length', () => {
    const plaintext = new Uint8Array(randomBytes(64));
    const { cifer, encryptedMessage } = sealPayload(publicKey, plaintext);
    for (let at = 0; at < encryptedMessage.length; at++) {
      expect(openPayloadWithSeed(seed, cifer, flipped(encryptedMessage, at)), `byte ${at}`).toBeUndefined();
    }
    expect(openPayloadWithSeed(seed, cifer, encryptedMessage.subarray(1))).toBeUndefined();
    expect(openPayloadWithSeed(seed, cifer, Uint8Array.of(...encryptedMessage, 0))).toBeUndefined();
  });

  it('refuses another seed, and a cifer of the wrong length', () => {
    const { cifer, encryptedMessage } = sealPayload(publicKey, utf8('secret'));
    expect(openPayloadWithSeed(newSeed(), cifer, encryptedMessage)).toBeUndefined();
    expect(openPayloadWithSeed(seed, cifer.subarray(0, CIFER_BYTES - 1), encryptedMessage)).toBeUndefined();
    expect(openPayloadWithSeed(seed, Uint8Array.of(...cifer, 0), encryptedMessage)).toBeUndefined();
    expect(openPayloadWithSeed(seed, new Uint8Array(0), encryptedMessage)).toBeUndefined();
  });

  it('throws on a seed of the wrong length (a caller bug, not bad input)', () => {
    const { cifer, encryptedMessage } = sealPayload(publicKey, utf8('secret'));
    expect(() => openPayloadWithSeed(new Uint8Array(63), cifer, encryptedMessage)).toThrow(TypeError);
  });

  it('throws a TypeError for an invalid public key', () => {
    expect(() => sealPayload(new Uint8Array(1183), utf8('x'))).toThrow(TypeError);
    expect(() => sealPayload(new Uint8Array(1184).fill(0xff), utf8('x'))).toThrow(TypeError);
  });
});

describe('payload envelope: the @noble/post-quantum path interoperates', () => {
  it('noble encapsulation sealed with the same HKDF/GCM opens natively', () => {
    const plaintext = utf8('from noble');
    const { sharedSecret, ciphertext } = mlkemNoble.encapsulate(publicKey);
    const { cifer, encryptedMessage } = sealPayloadWithSharedSecret(sharedSecret, ciphertext, plaintext);
    expect(toHex(openPayloadWithSeed(seed, cifer, encryptedMessage)!)).toBe(toHex(plaintext));
  });

  it('a native envelope opens with a noble decapsulation', () => {
    const plaintext = utf8('to noble');
    const { cifer, encryptedMessage } = sealPayload(publicKey, plaintext);
    const sharedSecret = mlkemNoble.decapsulateWithSeed(seed, cifer.subarray(0, MLKEM768_CIPHERTEXT_BYTES));
    expect(toHex(openPayloadWithSharedSecret(sharedSecret, cifer, encryptedMessage)!)).toBe(toHex(plaintext));
  });

  it('follows the specified layout: key ‖ nonce = HKDF-SHA256(ss, "", "quorumkeep/payload/v1", 44)', () => {
    const plaintext = utf8('layout');
    const { cifer, encryptedMessage } = sealPayload(publicKey, plaintext);
    const sharedSecret = mlkemDecapsulateWithSeed(seed, cifer.subarray(0, MLKEM768_CIPHERTEXT_BYTES));
    const okm = hkdf(sha256, sharedSecret, new Uint8Array(0), utf8('quorumkeep/payload/v1'), 44);
    const decipher = createDecipheriv('aes-256-gcm', okm.subarray(0, 32), okm.subarray(32));
    decipher.setAuthTag(cifer.subarray(MLKEM768_CIPHERTEXT_BYTES));
    const opened = Buffer.concat([decipher.update(encryptedMessage), decipher.final()]);
    expect(opened.toString('utf8')).toBe('layout');
  });

  it('openPayloadWithSharedSecret refuses a wrong secret and a short cifer', () => {
    const { sharedSecret, ciphertext } = mlkemNoble.encapsulate(publicKey);
    const { cifer, encryptedMessage } = sealPayloadWithSharedSecret(sharedSecret, ciphertext, utf8('x'));
    expect(openPayloadWithSharedSecret(new Uint8Array(32), cifer, encryptedMessage)).toBeUndefined();
    expect(openPayloadWithSharedSecret(sharedSecret, cifer.subarray(1), encryptedMessage)).toBeUndefined();
    expect(() => sealPayloadWithSharedSecret(sharedSecret, ciphertext.subarray(1), utf8('x'))).toThrow(TypeError);
    expect(() => sealPayloadWithSharedSecret(sharedSecret.subarray(1), ciphertext, utf8('x'))).toThrow(TypeError);
  });
});

describe('openPayloadWithCheckedSeed (decrypt with a seed rebuilt from shares)', () => {
  it('opens with the right seed, and tells a wrong seed apart from a tampered envelope', () => {
    const { cifer, encryptedMessage } = sealPayload(publicKey, utf8('checked'));
    const ok = openPayloadWithCheckedSeed(seed, publicKey, cifer, encryptedMessage);
    expect(ok.ok && Buffer.from(ok.plaintext).toString()).toBe('checked');
    expect(openPayloadWithCheckedSeed(newSeed(), publicKey, cifer, encryptedMessage)).toEqual({ ok: false, reason: 'wrong-seed' });
    expect(openPayloadWithCheckedSeed(seed, publicKey, flipped(cifer, 5), encryptedMessage)).toEqual({ ok: false, reason: 'decryption-failed' });
    expect(openPayloadWithCheckedSeed(seed, publicKey, cifer, flipped(encryptedMessage, 0))).toEqual({ ok: false, reason: 'decryption-failed' });
    // A wrong seed is named as such whatever else is wrong: a tampered envelope, a cifer of the wrong length.
    expect(openPayloadWithCheckedSeed(newSeed(), publicKey, flipped(cifer, 5), encryptedMessage)).toEqual({ ok: false, reason: 'wrong-seed' });
    expect(openPayloadWithCheckedSeed(newSeed(), publicKey, cifer.subarray(1), encryptedMessage)).toEqual({ ok: false, reason: 'wrong-seed' });
    expect(openPayloadWithCheckedSeed(seed, publicKey, cifer.subarray(1), encryptedMessage)).toEqual({ ok: false, reason: 'decryption-failed' });
  });

  it('mlkemKeyFromSeed gives the same public key and shared secrets as the separate functions', () => {
    const s = newSeed();
    const key = mlkemKeyFromSeed(s);
    expect(toHex(key.publicKey)).toBe(toHex(mlkemPublicKeyFromSeed(s)));
    const { ciphertext } = mlkemNoble.encapsulate(key.publicKey);
    expect(toHex(key.decapsulate(ciphertext))).toBe(toHex(mlkemDecapsulateWithSeed(s, ciphertext)));
  });
});
