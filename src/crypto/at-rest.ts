/**
 * AES-256-GCM, the one AEAD of quorumkeep (payload envelopes, sealed boxes, shares at rest), and the
 * at-rest box: a member keeps its Shamir share encrypted under its 32-byte node storage key, bound to
 * the secretId and slot as associated data, so a share copied to another record or slot never opens
 * (docs/architecture.md, Keys and crypto).
 */
import { createCipheriv, createDecipheriv, createSecretKey, KeyObject } from 'node:crypto';

/**
 * An AES-256 key: its bytes, or a KeyObject made of them once ({@link aesKeyObject}) for a key used
 * for many boxes — the node's storage key, on every share read — which saves making one per box.
 */
export type AesKey = Uint8Array | KeyObject;

/**
 * Raw key bytes as a KeyObject: node:crypto takes a much slower path for a Buffer key (a cipher
 * costs several times what it costs from a KeyObject), and these ciphers are on the decrypt hot path.
 * The KeyObject's copy lives in OpenSSL memory, out of JavaScript's reach, and is freed with it.
 */
export function secretKeyOf(key: AesKey) {
  return key instanceof KeyObject ? key : createSecretKey(key);
}

/**
 * A long-lived AES-256 key as a KeyObject, made once: its copy lives in OpenSSL memory as long as
 * the object does (for the node's storage key, the node's life, as the key's bytes do).
 */
export function aesKeyObject(key: Uint8Array): KeyObject {
  checkKey(key);
  return createSecretKey(key);
}
import { concatBytes, systemRandom, type RandomSource } from './bytes.ts';

/** AES-256 key length, in bytes. */
export const AES_256_KEY_BYTES = 32;
/** AES-GCM nonce (IV) length, in bytes: 96 bits, the size GCM is specified for. */
export const AES_GCM_NONCE_BYTES = 12;
/** AES-GCM authentication tag length, in bytes: the full 128 bits, never truncated. */
export const AES_GCM_TAG_BYTES = 16;
/** Bytes an at-rest box adds to its plaintext: nonce ‖ … ‖ tag. */
export const AT_REST_OVERHEAD_BYTES = AES_GCM_NONCE_BYTES + AES_GCM_TAG_BYTES;

const EMPTY = new Uint8Array(0);

function checkKey(key: AesKey): void {
  const bytes = key instanceof KeyObject ? (key.type === 'secret' ? key.symmetricKeySize : undefined) : key instanceof Uint8Array ? key.length : undefined;
  if (bytes !== AES_256_KEY_BYTES) throw new TypeError(`AES-256 key must be ${AES_256_KEY_BYTES} bytes`);
}

function checkKeyAndNonce(key: AesKey, nonce: Uint8Array): void {
  checkKey(key);
  if (!(nonce instanceof Uint8Array) || nonce.length !== AES_GCM_NONCE_BYTES) throw new TypeError(`AES-GCM nonce must be ${AES_GCM_NONCE_BYTES} bytes`);
}

/** An AES-GCM ciphertext (as long as its plaintext) and its 16-byte tag. */
export interface AesGcmSealed {
  /** The encrypted bytes, as many as the plaintext. */
  readonly ciphertext: Uint8Array;
  /** The 16-byte authentication tag over ciphertext and associated data. */
  readonly tag: Uint8Array;
}

/**
 * AES-256-GCM encryption. A (key, nonce) pair must never encrypt twice: callers use a random nonce or
 * a key derived for this one message. Throws a TypeError on a wrong key or nonce length.
 */
export function aes256GcmEncrypt(key: AesKey, nonce: Uint8Array, plaintext: Uint8Array, aad: Uint8Array = EMPTY): AesGcmSealed {
  checkKeyAndNonce(key, nonce);
  const cipher = createCipheriv('aes-256-gcm', secretKeyOf(key), nonce, { authTagLength: AES_GCM_TAG_BYTES });
  cipher.setAAD(aad);
  const head = cipher.update(plaintext);
  const tail = cipher.final();
  // `head` is this call's own buffer (never pooled): handed over as is, no copy of a whole chunk.
  return { ciphertext: tail.length === 0 ? head : concatBytes(head, tail), tag: new Uint8Array(cipher.getAuthTag()) };
}

/**
 * AES-256-GCM decryption: the plaintext, or undefined when the tag does not verify (wrong key,
 * nonce or associated data, or any changed byte) or is not 16 bytes. Throws a TypeError on a wrong
 * key or nonce length, which is the caller's bug rather than bad input.
 */
export function aes256GcmDecrypt(
  key: AesKey,
  nonce: Uint8Array,
  ciphertext: Uint8Array,
  tag: Uint8Array,
  aad: Uint8Array = EMPTY,
): Uint8Array | undefined {
  checkKeyAndNonce(key, nonce);
  if (tag.length !== AES_GCM_TAG_BYTES) return undefined;
  const decipher = createDecipheriv('aes-256-gcm', secretKeyOf(key), nonce, { authTagLength: AES_GCM_TAG_BYTES });
  decipher.setAAD(aad);
  decipher.setAuthTag(tag);
  const head = decipher.update(ciphertext);
  let authenticated = false;
  try {
    const tail = decipher.final();
    authenticated = true;
    if (tail.length === 0) return head;
    const whole = concatBytes(head, tail);
    authenticated = false;
    return whole;
  } catch {
    return undefined;
  } finally {
    // Bytes released before the tag is checked are unauthenticated; no copy of them is left behind.
    // Once the tag holds, `head` itself is the plaintext handed over (no copy of a whole chunk).
    if (!authenticated) head.fill(0);
  }
}

/**
 * Encrypt a share (or any private value) under a node storage key: random nonce (12) ‖ ciphertext ‖
 * tag (16). `aad` binds the box to its place, e.g. the secretId and slot of a share.
 */
export function encryptAtRest(key: AesKey, plaintext: Uint8Array, aad: Uint8Array, random: RandomSource = systemRandom): Uint8Array {
  const nonce = random(AES_GCM_NONCE_BYTES);
  const { ciphertext, tag } = aes256GcmEncrypt(key, nonce, plaintext, aad);
  return concatBytes(nonce, ciphertext, tag);
}

/**
 * Open a box made by {@link encryptAtRest} with the same key and associated data; undefined when the
 * box is too short, altered, or made for other associated data. Throws a TypeError on a wrong key length.
 */
export function decryptAtRest(key: AesKey, box: Uint8Array, aad: Uint8Array): Uint8Array | undefined {
  checkKey(key);
  if (!(box instanceof Uint8Array) || box.length < AT_REST_OVERHEAD_BYTES) return undefined;
  const tagStart = box.length - AES_GCM_TAG_BYTES;
  return aes256GcmDecrypt(
    key,
    box.subarray(0, AES_GCM_NONCE_BYTES),
    box.subarray(AES_GCM_NONCE_BYTES, tagStart),
    box.subarray(tagStart),
    aad,
  );
}
