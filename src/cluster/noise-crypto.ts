/**
 * The crypto of the cluster's noise sessions: @chainsafe/libp2p-noise's default, with one change.
 * For a frame of 1,200 bytes or more the default runs node:crypto's ChaCha20-Poly1305 and hands it
 * the session key as bytes, so every frame makes OpenSSL a new key object from them — a measurable
 * part of a member's CPU under load, when share releases and records come a few KiB a frame. Here
 * each session key (a `CipherState`'s key: made once by the handshake, never changed in place) is
 * made a KeyObject once, kept as long as the key's own bytes are alive (a WeakMap on them). Frames
 * under 1,200 bytes still go to the default's WebAssembly implementation, faster there.
 */
import { createCipheriv, createDecipheriv, createSecretKey, type KeyObject } from 'node:crypto';
import { defaultCrypto } from '@chainsafe/libp2p-noise/crypto';
import type { ICryptoInterface } from '@chainsafe/libp2p-noise';

/** Below this many bytes the default's WebAssembly ChaCha20-Poly1305 is the faster one (its own threshold). */
const NODE_CRYPTO_FROM_BYTES = 1200;
const CHACHA20_POLY1305 = 'chacha20-poly1305';
const TAG_BYTES = 16;

const keyObjects = new WeakMap<Uint8Array, KeyObject>();

/** The session key as a KeyObject, made once per key. */
function keyObjectOf(k: Uint8Array): KeyObject {
  let key = keyObjects.get(k);
  if (!key) {
    key = createSecretKey(k);
    keyObjects.set(k, key);
  }
  return key;
}

/** Encrypt one contiguous frame as the default's node:crypto path does, with the session's KeyObject. */
function encrypt(plaintext: Uint8Array, nonce: Uint8Array, ad: Uint8Array, k: Uint8Array): Uint8Array {
  const cipher = createCipheriv(CHACHA20_POLY1305, keyObjectOf(k), nonce, { authTagLength: TAG_BYTES });
  cipher.setAAD(ad, { plaintextLength: plaintext.byteLength });
  const updated = cipher.update(plaintext);
  const final = cipher.final();
  const tag = cipher.getAuthTag();
  return Buffer.concat([updated, final, tag], updated.byteLength + final.byteLength + tag.byteLength);
}

/** Decrypt one contiguous frame as the default's node:crypto path does, with the session's KeyObject; throws on a bad tag. */
function decrypt(ciphertext: Uint8Array, nonce: Uint8Array, ad: Uint8Array, k: Uint8Array): Uint8Array {
  const decipher = createDecipheriv(CHACHA20_POLY1305, keyObjectOf(k), nonce, { authTagLength: TAG_BYTES });
  const text = ciphertext.subarray(0, ciphertext.length - TAG_BYTES);
  decipher.setAAD(ad, { plaintextLength: text.byteLength });
  decipher.setAuthTag(ciphertext.subarray(ciphertext.length - TAG_BYTES));
  const output = decipher.update(text);
  const final = decipher.final();
  return final.byteLength > 0 ? Buffer.concat([output, final], output.byteLength + final.byteLength) : output;
}

/** The noise crypto of the cluster's connections (src/cluster/libp2p-node.ts). */
export const noiseCrypto: ICryptoInterface = {
  ...defaultCrypto,
  // A frame given in pieces (a list: how decryptStream hands frames over) is made one array first,
  // as the WebAssembly path does.
  chaCha20Poly1305Encrypt(plaintext, nonce, ad, k) {
    return plaintext.byteLength >= NODE_CRYPTO_FROM_BYTES ? encrypt(plaintext.subarray(), nonce, ad, k) : defaultCrypto.chaCha20Poly1305Encrypt(plaintext, nonce, ad, k);
  },
  chaCha20Poly1305Decrypt(ciphertext, nonce, ad, k, dst) {
    return ciphertext.byteLength >= NODE_CRYPTO_FROM_BYTES ? decrypt(ciphertext.subarray(), nonce, ad, k) : defaultCrypto.chaCha20Poly1305Decrypt(ciphertext, nonce, ad, k, dst);
  },
};
