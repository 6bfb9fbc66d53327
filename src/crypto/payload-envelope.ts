/**
 * The payload envelope of /encrypt-payload and /decrypt-payload (docs/http.md, Payload encryption):
 * `cifer` = ML-KEM-768 ciphertext (1088) ‖ AES-256-GCM tag (16) = 1104 bytes; `encryptedMessage` =
 * the GCM ciphertext, as long as the plaintext, with no associated data. The GCM key and nonce are
 * the 44 bytes of HKDF-SHA256(sharedSecret, empty salt, "quorumkeep/payload/v1"). A fixed nonce is
 * safe because every envelope has its own encapsulation, hence its own key.
 */
import { hkdfSync } from 'node:crypto';
import { concatBytes, constantTimeEqual, utf8, zeroize } from './bytes.ts';
import { AES_256_KEY_BYTES, AES_GCM_NONCE_BYTES, AES_GCM_TAG_BYTES, aes256GcmDecrypt, aes256GcmEncrypt, secretKeyOf } from './at-rest.ts';
import { MLKEM768_CIPHERTEXT_BYTES, MLKEM_SHARED_SECRET_BYTES, mlkemDecapsulateWithSeed, mlkemEncapsulate, mlkemKeyFromSeed } from './mlkem.ts';

/** Length of a `cifer`: ML-KEM-768 ciphertext ‖ GCM tag, in bytes. */
export const CIFER_BYTES = MLKEM768_CIPHERTEXT_BYTES + AES_GCM_TAG_BYTES;

/** HKDF info of the payload key: a key derived for payloads is never usable elsewhere. */
export const PAYLOAD_HKDF_INFO = 'quorumkeep/payload/v1';

const INFO = utf8(PAYLOAD_HKDF_INFO);
const EMPTY_SALT = new Uint8Array(0);

/** One sealed payload, as the API returns it (before hex/base64). */
export interface SealedPayload {
  /** ML-KEM ciphertext ‖ GCM tag, {@link CIFER_BYTES} bytes. */
  readonly cifer: Uint8Array;
  /** The GCM ciphertext, as long as the plaintext. */
  readonly encryptedMessage: Uint8Array;
}

/** Run `use` with the GCM key and nonce of a shared secret, then wipe both. */
function withPayloadKey<T>(sharedSecret: Uint8Array, use: (key: Uint8Array, nonce: Uint8Array) => T): T {
  if (!(sharedSecret instanceof Uint8Array) || sharedSecret.length !== MLKEM_SHARED_SECRET_BYTES) {
    throw new TypeError(`shared secret must be ${MLKEM_SHARED_SECRET_BYTES} bytes`);
  }
  const okm = new Uint8Array(hkdfSync('sha256', secretKeyOf(sharedSecret), EMPTY_SALT, INFO, AES_256_KEY_BYTES + AES_GCM_NONCE_BYTES));
  try {
    return use(okm.subarray(0, AES_256_KEY_BYTES), okm.subarray(AES_256_KEY_BYTES));
  } finally {
    zeroize(okm);
  }
}

/**
 * Seal with a shared secret already encapsulated (`kemCiphertext` is its 1088-byte ciphertext): the
 * building block of {@link sealPayload}, and how the @noble/post-quantum path produces the same
 * envelope. The caller keeps and zeroes `sharedSecret`.
 */
export function sealPayloadWithSharedSecret(sharedSecret: Uint8Array, kemCiphertext: Uint8Array, plaintext: Uint8Array): SealedPayload {
  if (!(kemCiphertext instanceof Uint8Array) || kemCiphertext.length !== MLKEM768_CIPHERTEXT_BYTES) {
    throw new TypeError(`ML-KEM-768 ciphertext must be ${MLKEM768_CIPHERTEXT_BYTES} bytes`);
  }
  const { ciphertext, tag } = encryptWithSharedSecret(sharedSecret, plaintext);
  return { cifer: concatBytes(kemCiphertext, tag), encryptedMessage: ciphertext };
}

/**
 * The AEAD half of an envelope: `plaintext` under the key and nonce derived from `sharedSecret`, as
 * the GCM ciphertext and the tag that goes after the KEM ciphertext in `cifer`. For a caller that
 * encapsulates on one thread and encrypts on another (./chunk-crypto.ts); the caller zeroes
 * `sharedSecret`.
 */
export function encryptWithSharedSecret(sharedSecret: Uint8Array, plaintext: Uint8Array): { ciphertext: Uint8Array; tag: Uint8Array } {
  return withPayloadKey(sharedSecret, (key, nonce) => aes256GcmEncrypt(key, nonce, plaintext));
}

/**
 * The inverse of {@link encryptWithSharedSecret}: the plaintext, or undefined when `tag` fails. The
 * caller zeroes `sharedSecret`.
 */
export function decryptWithSharedSecret(sharedSecret: Uint8Array, ciphertext: Uint8Array, tag: Uint8Array): Uint8Array | undefined {
  return withPayloadKey(sharedSecret, (key, nonce) => aes256GcmDecrypt(key, nonce, ciphertext, tag));
}

/**
 * Encrypt `plaintext` to a secret's raw ML-KEM-768 public key. Throws a TypeError when the key has the
 * wrong length or is invalid (see {@link mlkemEncapsulate}).
 */
export function sealPayload(publicKey: Uint8Array, plaintext: Uint8Array): SealedPayload {
  const { sharedSecret, ciphertext } = mlkemEncapsulate(publicKey);
  try {
    return sealPayloadWithSharedSecret(sharedSecret, ciphertext, plaintext);
  } finally {
    zeroize(sharedSecret);
  }
}

/**
 * Open an envelope with the decapsulated shared secret: the plaintext, or undefined when `cifer` is not
 * {@link CIFER_BYTES} long or the tag fails (wrong secret, any changed byte). The caller keeps and
 * zeroes `sharedSecret`; the derived key and nonce are zeroed here.
 */
export function openPayloadWithSharedSecret(sharedSecret: Uint8Array, cifer: Uint8Array, encryptedMessage: Uint8Array): Uint8Array | undefined {
  if (!(cifer instanceof Uint8Array) || cifer.length !== CIFER_BYTES || !(encryptedMessage instanceof Uint8Array)) return undefined;
  return decryptWithSharedSecret(sharedSecret, encryptedMessage, cifer.subarray(MLKEM768_CIPHERTEXT_BYTES));
}

/**
 * Open an envelope with a secret's 64-byte seed (rebuilt from its shares): the plaintext, or undefined
 * when `cifer` has the wrong length or the tag fails. Tampering with the KEM ciphertext also ends here
 * as undefined, since ML-KEM's implicit rejection yields a secret no tag verifies under. The shared
 * secret, key and nonce are zeroed before returning; the seed stays the caller's to zero. Throws a
 * TypeError when the seed is not 64 bytes: that is a bug of the caller, not bad input.
 */
export function openPayloadWithSeed(seed: Uint8Array, cifer: Uint8Array, encryptedMessage: Uint8Array): Uint8Array | undefined {
  if (!(cifer instanceof Uint8Array) || cifer.length !== CIFER_BYTES || !(encryptedMessage instanceof Uint8Array)) return undefined;
  const sharedSecret = mlkemDecapsulateWithSeed(seed, cifer.subarray(0, MLKEM768_CIPHERTEXT_BYTES));
  try {
    return openPayloadWithSharedSecret(sharedSecret, cifer, encryptedMessage);
  } finally {
    zeroize(sharedSecret);
  }
}

/** Result of {@link openPayloadWithCheckedSeed}. */
export type CheckedOpen = { ok: true; plaintext: Uint8Array } | { ok: false; reason: 'wrong-seed' | 'decryption-failed' };

/**
 * Open an envelope with a seed rebuilt from shares; when it does not open, tell whether the seed's
 * public key is `expectedPublicKey` (a corrupt or lying share rebuilds another seed: that is not the
 * client's fault and must not read as "Decryption failed"). The check is needed only then: another
 * seed's decapsulation yields a secret no tag verifies under (ML-KEM's implicit rejection), so an
 * envelope that opens was opened with the secret's own seed — and a decrypt that succeeds skips the
 * public key's export. One key import serves both. The shared secret, key and nonce are zeroed; the
 * seed stays the caller's to zero.
 */
export function openPayloadWithCheckedSeed(seed: Uint8Array, expectedPublicKey: Uint8Array, cifer: Uint8Array, encryptedMessage: Uint8Array): CheckedOpen {
  const key = mlkemKeyFromSeed(seed);
  const failed = (): CheckedOpen => ({ ok: false, reason: constantTimeEqual(key.publicKey, expectedPublicKey) ? 'decryption-failed' : 'wrong-seed' });
  if (!(cifer instanceof Uint8Array) || cifer.length !== CIFER_BYTES || !(encryptedMessage instanceof Uint8Array)) return failed();
  const sharedSecret = key.decapsulate(cifer.subarray(0, MLKEM768_CIPHERTEXT_BYTES));
  try {
    const plaintext = openPayloadWithSharedSecret(sharedSecret, cifer, encryptedMessage);
    return plaintext ? { ok: true, plaintext } : failed();
  } finally {
    zeroize(sharedSecret);
  }
}

/** Opens the envelopes of one secret with one import of its key (a file's chunks: one per chunk). */
export interface PayloadOpener {
  /** The plaintext, or undefined when `cifer` has the wrong length or the tag fails. */
  open(cifer: Uint8Array, encryptedMessage: Uint8Array): Uint8Array | undefined;
  /**
   * The shared secret of `cifer` (the caller zeroes it), for {@link decryptWithSharedSecret} on
   * another thread with the tag `cifer.subarray(MLKEM768_CIPHERTEXT_BYTES)`; undefined when `cifer`
   * has the wrong length. Never fails on tampering (ML-KEM rejects implicitly): the tag does.
   */
  decapsulate(cifer: Uint8Array): Uint8Array | undefined;
}

/**
 * Import the key of `seed` once, for many envelopes: undefined when the seed's public key is not
 * `expectedPublicKey` (shares that do not rebuild the secret). The seed is not kept: the caller may
 * zero it as soon as this returns; the imported key lives in OpenSSL memory until the opener is dropped.
 */
export function createPayloadOpener(seed: Uint8Array, expectedPublicKey: Uint8Array): PayloadOpener | undefined {
  const key = mlkemKeyFromSeed(seed);
  if (!constantTimeEqual(key.publicKey, expectedPublicKey)) return undefined;
  return {
    open(cifer, encryptedMessage) {
      if (!(cifer instanceof Uint8Array) || cifer.length !== CIFER_BYTES || !(encryptedMessage instanceof Uint8Array)) return undefined;
      const sharedSecret = key.decapsulate(cifer.subarray(0, MLKEM768_CIPHERTEXT_BYTES));
      try {
        return openPayloadWithSharedSecret(sharedSecret, cifer, encryptedMessage);
      } finally {
        zeroize(sharedSecret);
      }
    },
    decapsulate(cifer) {
      if (!(cifer instanceof Uint8Array) || cifer.length !== CIFER_BYTES) return undefined;
      return key.decapsulate(cifer.subarray(0, MLKEM768_CIPHERTEXT_BYTES));
    },
  };
}
