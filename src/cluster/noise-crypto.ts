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
import { Uint8ArrayList } from 'uint8arraylist';

/** Below this many bytes the default's WebAssembly ChaCha20-Poly1305 is the faster one (its own threshold). */
const NODE_CRYPTO_FROM_BYTES = 1200;
/** Received frames up to this size are opened as one array (see `chaCha20Poly1305Decrypt`). */
const WHOLE_FRAME_MAX_BYTES = 8192;
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

/**
 * Encrypt as the default's node:crypto path does — a frame in pieces piece by piece, with no copy
 * of the whole — with the session's KeyObject.
 */
function encrypt(plaintext: Uint8Array | Uint8ArrayList, nonce: Uint8Array, ad: Uint8Array, k: Uint8Array): Uint8Array | Uint8ArrayList {
  const cipher = createCipheriv(CHACHA20_POLY1305, keyObjectOf(k), nonce, { authTagLength: TAG_BYTES });
  cipher.setAAD(ad, { plaintextLength: plaintext.byteLength });
  if (plaintext instanceof Uint8Array) {
    const updated = cipher.update(plaintext);
    const final = cipher.final();
    const tag = cipher.getAuthTag();
    return Buffer.concat([updated, final, tag], updated.byteLength + final.byteLength + tag.byteLength);
  }
  const output = new Uint8ArrayList();
  for (const buf of plaintext) output.append(cipher.update(buf));
  const final = cipher.final();
  if (final.byteLength > 0) output.append(final);
  output.append(cipher.getAuthTag());
  return output;
}

/** Decrypt as the default's node:crypto path does, with the session's KeyObject; throws on a bad tag. */
function decrypt(ciphertext: Uint8Array | Uint8ArrayList, nonce: Uint8Array, ad: Uint8Array, k: Uint8Array): Uint8Array | Uint8ArrayList {
  const decipher = createDecipheriv(CHACHA20_POLY1305, keyObjectOf(k), nonce, { authTagLength: TAG_BYTES });
  const text = ciphertext instanceof Uint8Array ? ciphertext.subarray(0, ciphertext.length - TAG_BYTES) : ciphertext.sublist(0, ciphertext.length - TAG_BYTES);
  decipher.setAAD(ad, { plaintextLength: text.byteLength });
  decipher.setAuthTag(ciphertext.subarray(ciphertext.length - TAG_BYTES));
  if (text instanceof Uint8Array) {
    const output = decipher.update(text);
    const final = decipher.final();
    return final.byteLength > 0 ? Buffer.concat([output, final], output.byteLength + final.byteLength) : output;
  }
  const output = new Uint8ArrayList();
  for (const buf of text) output.append(decipher.update(buf));
  const final = decipher.final();
  if (final.byteLength > 0) output.append(final);
  return output;
}

/** The noise crypto of the cluster's connections (src/cluster/libp2p-node.ts). */
export const noiseCrypto: ICryptoInterface = {
  ...defaultCrypto,
  chaCha20Poly1305Encrypt(plaintext, nonce, ad, k) {
    return plaintext.byteLength >= NODE_CRYPTO_FROM_BYTES ? encrypt(plaintext, nonce, ad, k) : defaultCrypto.chaCha20Poly1305Encrypt(plaintext, nonce, ad, k);
  },
  // A received frame comes in pieces (a list). A small one is opened as one array and handed on as
  // one, which the length-prefixed decoding and the RPC layer after it read more cheaply than a list
  // of pieces; a large one piece by piece, as the default does (measured both ways: `npm run bench
  // -- decrypt-load` and `-- creates`, docs/benchmarks.md).
  chaCha20Poly1305Decrypt(ciphertext, nonce, ad, k, dst) {
    if (ciphertext.byteLength < NODE_CRYPTO_FROM_BYTES) return defaultCrypto.chaCha20Poly1305Decrypt(ciphertext, nonce, ad, k, dst);
    return decrypt(ciphertext.byteLength <= WHOLE_FRAME_MAX_BYTES ? ciphertext.subarray() : ciphertext, nonce, ad, k);
  },
};
