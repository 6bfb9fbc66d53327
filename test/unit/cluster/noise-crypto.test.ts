/**
 * The cluster's noise crypto (src/cluster/noise-crypto.ts) is @chainsafe/libp2p-noise's default with
 * the session key made a KeyObject once: every frame it seals opens with the default and the other
 * way round, whole or given in pieces, at every size around the default's switch to node:crypto; a
 * changed byte, another nonce or another key is refused; a key's KeyObject is never that of
 * another key.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { defaultCrypto } from '@chainsafe/libp2p-noise/crypto';
import { Uint8ArrayList } from 'uint8arraylist';
import { noiseCrypto } from '../../../src/cluster/noise-crypto.ts';

const nonceOf = (n: number) => {
  const nonce = new Uint8Array(12);
  new DataView(nonce.buffer).setUint32(4, n, true);
  return nonce;
};
const bytes = (b: Uint8Array | Uint8ArrayList) => Buffer.from(b.subarray());
/** The same bytes in three pieces. */
const pieces = (b: Uint8Array) => new Uint8ArrayList(b.subarray(0, 7), b.subarray(7, b.length - 20), b.subarray(b.length - 20));

describe('noise crypto of the cluster', () => {
  it('seals and opens as the default does, whole or in pieces, below and above the switch to node:crypto', () => {
    const k = new Uint8Array(randomBytes(32));
    const ad = new Uint8Array(0);
    for (const size of [0, 100, 1183, 1184, 1200, 1201, 5000, 65_519]) {
      const plaintext = new Uint8Array(randomBytes(size));
      const n = nonceOf(size);
      const ours = noiseCrypto.chaCha20Poly1305Encrypt(plaintext, n, ad, k);
      const theirs = defaultCrypto.chaCha20Poly1305Encrypt(plaintext, n, ad, k);
      expect(bytes(ours)).toEqual(bytes(theirs));
      expect(bytes(noiseCrypto.chaCha20Poly1305Encrypt(pieces(plaintext.length >= 40 ? plaintext : new Uint8Array(40)), n, ad, k))).toEqual(
        bytes(defaultCrypto.chaCha20Poly1305Encrypt(plaintext.length >= 40 ? plaintext : new Uint8Array(40), n, ad, k)),
      );
      const sealed = new Uint8Array(bytes(theirs));
      expect(bytes(noiseCrypto.chaCha20Poly1305Decrypt(sealed.slice(), n, ad, k, new Uint8Array(size)))).toEqual(Buffer.from(plaintext));
      expect(bytes(noiseCrypto.chaCha20Poly1305Decrypt(pieces(sealed.slice()), n, ad, k, new Uint8Array(size)))).toEqual(Buffer.from(plaintext));
    }
  });

  it('refuses a changed byte, another nonce and another key, above the switch and below', () => {
    const k = new Uint8Array(randomBytes(32));
    const other = new Uint8Array(randomBytes(32));
    const ad = new Uint8Array(0);
    for (const size of [300, 3000]) {
      const sealed = new Uint8Array(bytes(noiseCrypto.chaCha20Poly1305Encrypt(new Uint8Array(randomBytes(size)), nonceOf(1), ad, k)));
      const flipped = sealed.slice();
      flipped[5]! ^= 1;
      expect(() => noiseCrypto.chaCha20Poly1305Decrypt(flipped, nonceOf(1), ad, k, new Uint8Array(size))).toThrow();
      expect(() => noiseCrypto.chaCha20Poly1305Decrypt(sealed.slice(), nonceOf(2), ad, k, new Uint8Array(size))).toThrow();
      // `other` was never used before: its KeyObject is its own, not the cached one of `k`.
      expect(() => noiseCrypto.chaCha20Poly1305Decrypt(sealed.slice(), nonceOf(1), ad, other, new Uint8Array(size))).toThrow();
      expect(bytes(noiseCrypto.chaCha20Poly1305Decrypt(sealed.slice(), nonceOf(1), ad, k, new Uint8Array(size))).length).toBe(size);
    }
  });
});
