import { createDecipheriv, createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { hkdf } from '@noble/hashes/hkdf.js';
import { sha256 } from '@noble/hashes/sha2.js';
import {
  SEALED_BOX_OVERHEAD_BYTES,
  concatBytes,
  generatePrivateKey,
  openSealed,
  publicKeyOf,
  sealTo,
  sealToMany,
  sealedBoxEcdhBackend,
  secp256k1EcdhX,
  secp256k1EcdhXOpenSsl,
  toHex,
  utf8,
  type RandomSource,
} from '../../../src/crypto/index.ts';

const recipient = generatePrivateKey();
const recipientPublicKey = publicKeyOf(recipient);
const aad = utf8('share:secret-42:slot-3');
const plaintext = utf8('a Shamir share, 65 bytes or so');

/** A deterministic RandomSource (SHA-256 in counter mode) so two seals can be compared. */
function counterRandom(label: string): RandomSource {
  let counter = 0;
  return (length) => {
    const out = new Uint8Array(length);
    for (let i = 0; i < length; i += 32) out.set(createHash('sha256').update(`${label}/${counter++}`).digest().subarray(0, length - i), i);
    return out;
  };
}

/** An independent opener: @noble/curves ECDH, @noble/hashes HKDF, OpenSSL GCM called directly. */
function openWithNoble(privateKey: Uint8Array, box: Uint8Array, associated: Uint8Array): string {
  const ephemeral = box.subarray(0, 33);
  const x = secp256k1.getSharedSecret(privateKey, ephemeral, true).subarray(1);
  const salt = concatBytes(ephemeral, secp256k1.getPublicKey(privateKey, true));
  const key = hkdf(sha256, x, salt, utf8('quorumkeep/sealed-box/v1'), 32);
  const decipher = createDecipheriv('aes-256-gcm', key, box.subarray(33, 45));
  decipher.setAAD(associated);
  decipher.setAuthTag(box.subarray(box.length - 16));
  return Buffer.concat([decipher.update(box.subarray(45, box.length - 16)), decipher.final()]).toString('hex');
}

describe('secp256k1 ECDH: libsecp256k1, node:crypto and @noble/curves agree', () => {
  it('runs on libsecp256k1 here (the binding is installed)', () => {
    expect(sealedBoxEcdhBackend).toBe('libsecp256k1');
  });

  it('on the shared x-coordinate for random key pairs, compressed or not', () => {
    fc.assert(
      fc.property(fc.boolean(), (compressed) => {
        const a = generatePrivateKey();
        const b = generatePrivateKey();
        const expected = toHex(secp256k1.getSharedSecret(a, publicKeyOf(b), true).subarray(1));
        expect(toHex(secp256k1EcdhX(a, publicKeyOf(b, compressed)))).toBe(expected);
        expect(toHex(secp256k1EcdhX(b, publicKeyOf(a, compressed)))).toBe(expected);
        expect(toHex(secp256k1EcdhXOpenSsl(a, publicKeyOf(b, compressed)))).toBe(expected);
      }),
      { numRuns: 12 },
    );
  });

  it('both paths throw on an invalid scalar or point', () => {
    const pub = publicKeyOf(generatePrivateKey());
    const offCurve = new Uint8Array(33).fill(0xff);
    offCurve[0] = 0x02;
    for (const ecdh of [secp256k1EcdhX, secp256k1EcdhXOpenSsl]) {
      expect(() => ecdh(new Uint8Array(32), pub)).toThrow();
      expect(() => ecdh(new Uint8Array(31).fill(1), pub)).toThrow();
      expect(() => ecdh(generatePrivateKey(), offCurve)).toThrow();
    }
  });
});

describe('sealed boxes', () => {
  it('round-trip to a compressed or uncompressed recipient key, for empty and long plaintexts', () => {
    for (const key of [recipientPublicKey, publicKeyOf(recipient, false)]) {
      for (const message of [new Uint8Array(0), plaintext, new Uint8Array(10_000).fill(9)]) {
        const box = sealTo(key, message, aad);
        expect(box.length).toBe(message.length + SEALED_BOX_OVERHEAD_BYTES);
        expect(toHex(openSealed(recipient, box, aad)!)).toBe(toHex(message));
      }
    }
    expect(SEALED_BOX_OVERHEAD_BYTES).toBe(33 + 12 + 16);
  });

  it('opens with the recipient\'s public key given (not computed again), and not with another key given', () => {
    const box = sealTo(recipientPublicKey, plaintext, aad);
    expect(toHex(openSealed(recipient, box, aad, recipientPublicKey)!)).toBe(toHex(plaintext));
    expect(openSealed(recipient, box, aad, publicKeyOf(generatePrivateKey()))).toBeUndefined();
    // A key off the curve is refused on every seal, not only the first (the checked form is cached).
    const offCurve = new Uint8Array(33).fill(0xff);
    offCurve[0] = 0x02;
    for (let i = 0; i < 2; i++) expect(() => sealTo(offCurve, plaintext, aad)).toThrow(TypeError);
  });

  it('round-trip for any key and plaintext (property)', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 256 }), fc.uint8Array({ maxLength: 64 }), (message, associated) => {
        const key = generatePrivateKey();
        const box = sealTo(publicKeyOf(key), message, associated);
        expect(toHex(openSealed(key, box, associated)!)).toBe(toHex(message));
      }),
      { numRuns: 40 },
    );
  });

  it('open with an independent @noble/curves ECDH + HKDF (same format and key schedule)', () => {
    for (let i = 0; i < 8; i++) {
      const key = generatePrivateKey();
      const box = sealTo(publicKeyOf(key, i % 2 === 0), plaintext, aad);
      expect(openWithNoble(key, box, aad)).toBe(toHex(plaintext));
    }
  });

  it('use a fresh ephemeral key and nonce each time, from the injected randomness', () => {
    const a = sealTo(recipientPublicKey, plaintext, aad);
    const b = sealTo(recipientPublicKey, plaintext, aad);
    expect(toHex(a.subarray(0, 45))).not.toBe(toHex(b.subarray(0, 45)));
    const c = sealTo(recipientPublicKey, plaintext, aad, counterRandom('x'));
    const d = sealTo(recipientPublicKey, plaintext, aad, counterRandom('x'));
    expect(toHex(c)).toBe(toHex(d));
    expect(toHex(openSealed(recipient, c, aad)!)).toBe(toHex(plaintext));
  });

  it('refuse another key or other associated data', () => {
    const box = sealTo(recipientPublicKey, plaintext, aad);
    expect(openSealed(generatePrivateKey(), box, aad)).toBeUndefined();
    expect(openSealed(recipient, box, utf8('share:secret-42:slot-4'))).toBeUndefined();
    expect(openSealed(recipient, box, new Uint8Array(0))).toBeUndefined();
  });

  it('refuse a flipped bit in any byte, and every truncation', () => {
    const box = sealTo(recipientPublicKey, plaintext, aad);
    for (let at = 0; at < box.length; at++) {
      const tampered = Uint8Array.from(box);
      tampered[at]! ^= 1 << at % 8;
      expect(openSealed(recipient, tampered, aad), `byte ${at}`).toBeUndefined();
    }
    for (let length = 0; length < box.length; length++) {
      expect(openSealed(recipient, box.subarray(0, length), aad), `length ${length}`).toBeUndefined();
    }
    expect(openSealed(recipient, Uint8Array.of(...box, 0), aad)).toBeUndefined();
  });

  it('never throw on malformed private keys or boxes', () => {
    const box = sealTo(recipientPublicKey, plaintext, aad);
    const n = secp256k1.Point.CURVE().n;
    const badKeys = [new Uint8Array(0), new Uint8Array(31).fill(1), new Uint8Array(33).fill(1), new Uint8Array(32), Uint8Array.from(Buffer.from(n.toString(16), 'hex'))];
    for (const key of badKeys) expect(openSealed(key, box, aad)).toBeUndefined();
    const notOnCurve = Uint8Array.from(box);
    notOnCurve.set(new Uint8Array(32).fill(0xff), 1);
    expect(openSealed(recipient, notOnCurve, aad)).toBeUndefined();
    const unknown = undefined as unknown as Uint8Array;
    expect(openSealed(unknown, box, aad)).toBeUndefined();
    expect(openSealed(recipient, unknown, aad)).toBeUndefined();
    expect(openSealed(recipient, box, unknown)).toBeUndefined();
  });

  it('sealTo throws a TypeError for a recipient key that is not a point', () => {
    const uncompressed = publicKeyOf(recipient, false);
    const offCurve = Uint8Array.from(uncompressed);
    offCurve[64]! ^= 1;
    const hybrid = Uint8Array.from(uncompressed);
    hybrid[0] = 0x06 + (uncompressed[64]! & 1); // OpenSSL would take it; SEC1 users do not send it
    const badPrefix = Uint8Array.from(recipientPublicKey);
    badPrefix[0] = 0x05;
    const noX = new Uint8Array(33).fill(0xff);
    noX[0] = 0x02;
    for (const key of [new Uint8Array(0), recipientPublicKey.subarray(1), offCurve, hybrid, badPrefix, noX]) {
      expect(() => sealTo(key, plaintext, aad)).toThrow(TypeError);
    }
  });

  it('sealToMany: one ephemeral key for every box, each box opening for its own recipient and associated data only (property)', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.uint8Array({ maxLength: 96 }), fc.uint8Array({ minLength: 1, maxLength: 32 }), fc.boolean()), { minLength: 1, maxLength: 6 }), (boxes) => {
        const keys = boxes.map(() => generatePrivateKey());
        const sealed = sealToMany(boxes.map(([message, associated, compressed], i) => ({ publicKey: publicKeyOf(keys[i]!, compressed), plaintext: message, aad: associated })));
        expect(sealed).toHaveLength(boxes.length);
        // One ephemeral key, a nonce of its own per box.
        expect(new Set(sealed.map((b) => toHex(b.subarray(0, 33)))).size).toBe(1);
        expect(new Set(sealed.map((b) => toHex(b.subarray(33, 45)))).size).toBe(boxes.length);
        sealed.forEach((box, i) => {
          const [message, associated] = boxes[i]!;
          expect(toHex(openSealed(keys[i]!, box, associated)!)).toBe(toHex(message));
          expect(openWithNoble(keys[i]!, box, associated)).toBe(toHex(message));
          // Another recipient of the same deal cannot open it, nor can its own recipient under other data.
          if (boxes.length > 1) expect(openSealed(keys[(i + 1) % boxes.length]!, box, associated)).toBeUndefined();
          expect(openSealed(keys[i]!, box, Uint8Array.of(...associated, 0))).toBeUndefined();
        });
      }),
      { numRuns: 25 },
    );
  });

  it('sealToMany throws a TypeError for any recipient key that is not a point, before drawing any randomness', () => {
    let drawn = 0;
    const random: RandomSource = (length) => {
      drawn++;
      return counterRandom('many')(length);
    };
    const good = { publicKey: recipientPublicKey, plaintext, aad };
    expect(() => sealToMany([good, { ...good, publicKey: new Uint8Array(33).fill(0xff) }], random)).toThrow(TypeError);
    expect(drawn).toBe(0);
  });
});
