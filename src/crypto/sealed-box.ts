/**
 * Sealed boxes (ECIES) to a node's secp256k1 key: shares travel encrypted to the receiving node's key,
 * and deliveries still pending are stored sealed (docs/architecture.md, Keys and crypto).
 *
 * Box = ephemeral public key (33, compressed) ‖ nonce (12) ‖ AES-256-GCM ciphertext ‖ tag (16).
 * Key = HKDF-SHA256(x-coordinate of the ECDH point, salt = ephemeral key ‖ recipient key (both
 * compressed), info "quorumkeep/sealed-box/v1", 32 bytes). Putting both public keys in the salt binds
 * the key to this sender–recipient pair, so a box cannot be re-targeted.
 *
 * The ECDH runs on libsecp256k1 (the `secp256k1` package's native binding) and falls back to
 * node:crypto `createECDH` — far slower: OpenSSL has no optimised secp256k1 — when the binding cannot
 * load. Both are cross-checked against @noble/curves in the tests.
 */
import { ECDH, createECDH, hkdfSync } from 'node:crypto';
import { createRequire } from 'node:module';
import { concatBytes, systemRandom, utf8, zeroize, type RandomSource } from './bytes.ts';
import { AES_256_KEY_BYTES, AES_GCM_NONCE_BYTES, AES_GCM_TAG_BYTES, aes256GcmDecrypt, aes256GcmEncrypt, secretKeyOf } from './at-rest.ts';
import { generatePrivateKey, publicKeyOf } from './secp256k1.ts';
import { createLruCache } from './lru.ts';

/** HKDF info of the box key: a key derived for sealed boxes is never usable elsewhere. */
export const SEALED_BOX_HKDF_INFO = 'quorumkeep/sealed-box/v1';
/** Length of a compressed secp256k1 public key, in bytes. */
export const SECP256K1_COMPRESSED_KEY_BYTES = 33;
/** Length of an uncompressed secp256k1 public key, in bytes. */
export const SECP256K1_UNCOMPRESSED_KEY_BYTES = 65;
/** Bytes a sealed box adds to its plaintext: ephemeral key ‖ nonce ‖ … ‖ tag. */
export const SEALED_BOX_OVERHEAD_BYTES = SECP256K1_COMPRESSED_KEY_BYTES + AES_GCM_NONCE_BYTES + AES_GCM_TAG_BYTES;

const CURVE = 'secp256k1';
const COORDINATE_BYTES = 32;
const INFO = utf8(SEALED_BOX_HKDF_INFO);

/** The one method of the `secp256k1` package's native binding used here (its own input checks run first). */
interface LibsecpEcdh {
  ecdh(
    publicKey: Uint8Array,
    privateKey: Uint8Array,
    options: { hashfn: (x: Uint8Array, y: Uint8Array) => Uint8Array; xbuf: Uint8Array; ybuf: Uint8Array },
    output: Uint8Array,
  ): Uint8Array;
}

// `secp256k1/bindings` is the addon alone; `secp256k1` would fall back to elliptic (see secp256k1.ts).
const libsecp = ((): LibsecpEcdh | undefined => {
  try {
    return createRequire(import.meta.url)('secp256k1/bindings') as LibsecpEcdh;
  } catch {
    return undefined;
  }
})();

/** Which ECDH implementation sealed boxes use: `libsecp256k1` or its fallback `node:crypto`. */
export const sealedBoxEcdhBackend: 'libsecp256k1' | 'node:crypto' = libsecp ? 'libsecp256k1' : 'node:crypto';

/**
 * The x-coordinate of the ECDH point privateKey·publicKey through node:crypto (OpenSSL): the fallback
 * of {@link secp256k1EcdhX}. Throws when either key is invalid. The caller zeroes the result.
 */
export function secp256k1EcdhXOpenSsl(privateKey: Uint8Array, publicKey: Uint8Array): Uint8Array {
  if (privateKey.length !== COORDINATE_BYTES) throw new TypeError(`private key must be ${COORDINATE_BYTES} bytes`);
  // The ECDH object keeps the scalar in OpenSSL memory until collected; JavaScript cannot wipe it.
  const ecdh = createECDH(CURVE);
  ecdh.setPrivateKey(privateKey); // throws for 0 or a scalar ≥ n
  const shared = ecdh.computeSecret(publicKey); // throws for a point not on the curve
  const x = new Uint8Array(shared);
  shared.fill(0);
  return x;
}

/**
 * The x-coordinate (32 bytes) of the ECDH point privateKey·publicKey: libsecp256k1, or node:crypto when
 * the binding cannot load. Throws when either key is invalid. The caller zeroes the result.
 */
export function secp256k1EcdhX(privateKey: Uint8Array, publicKey: Uint8Array): Uint8Array {
  if (!libsecp) return secp256k1EcdhXOpenSsl(privateKey, publicKey);
  const x = new Uint8Array(COORDINATE_BYTES);
  const y = new Uint8Array(COORDINATE_BYTES);
  try {
    // The default hash would be SHA-256(compressed point); the box hashes x itself, through HKDF.
    return libsecp.ecdh(publicKey, privateKey, { hashfn: (xs) => xs, xbuf: x, ybuf: y }, x);
  } finally {
    zeroize(y);
  }
}

/** True for the SEC1 encodings we accept: 02/03 ‖ x, or 04 ‖ x ‖ y (not the hybrid 06/07). */
function hasPublicKeyShape(key: Uint8Array): boolean {
  if (!(key instanceof Uint8Array)) return false;
  if (key.length === SECP256K1_COMPRESSED_KEY_BYTES) return key[0] === 0x02 || key[0] === 0x03;
  return key.length === SECP256K1_UNCOMPRESSED_KEY_BYTES && key[0] === 0x04;
}

/** The box key of one exchange: HKDF over the ECDH x-coordinate, salted with both public keys. */
function boxKey(privateKey: Uint8Array, peerPublicKey: Uint8Array, salt: Uint8Array): Uint8Array {
  const shared = secp256k1EcdhX(privateKey, peerPublicKey);
  try {
    return new Uint8Array(hkdfSync('sha256', secretKeyOf(shared), salt, INFO, AES_256_KEY_BYTES));
  } finally {
    zeroize(shared);
  }
}

/** Recipient public keys, checked and compressed (public data). */
const compressedKeys = createLruCache<Uint8Array>(64);

/** `recipientPublicKey` checked and compressed; throws a TypeError when it is not a point of the curve. */
function compressedRecipient(recipientPublicKey: Uint8Array): Uint8Array {
  if (!hasPublicKeyShape(recipientPublicKey)) throw new TypeError('recipient public key must be a 33- or 65-byte SEC1 secp256k1 key');
  // Recipients are the cluster's few nodes: each one's key is checked and compressed once.
  return compressedKeys.getOrCreate(Buffer.from(recipientPublicKey).toString('hex'), () => {
    try {
      return ECDH.convertKey(recipientPublicKey, CURVE, undefined, undefined, 'compressed') as Buffer;
    } catch {
      throw new TypeError('recipient public key is not a point of secp256k1');
    }
  });
}

/** One box of {@link sealToMany}: its recipient's public key (33 or 65 bytes), plaintext and associated data. */
export interface SealRecipient {
  publicKey: Uint8Array;
  plaintext: Uint8Array;
  aad: Uint8Array;
}

/**
 * Encrypt `plaintext` to a node's secp256k1 public key (33 bytes compressed or 65 uncompressed) with
 * associated data `aad` that the opener must present again. Throws a TypeError when the key is not a
 * point of the curve.
 */
export function sealTo(recipientPublicKey: Uint8Array, plaintext: Uint8Array, aad: Uint8Array, random: RandomSource = systemRandom): Uint8Array {
  return sealToMany([{ publicKey: recipientPublicKey, plaintext, aad }], random)[0]!;
}

/**
 * Boxes to several recipients at once, each exactly as {@link sealTo} makes it and opened the same
 * way, with one ephemeral key for them all (docs/security.md, "Sealed boxes"): each box's key is
 * still the ECDH of that key with its own recipient, salted with both public keys, under its own
 * nonce. Reusing the ephemeral key across recipients is safe for this construction (Bellare,
 * Boldyreva and Staddon, "Randomness re-use in multi-recipient encryption schemes", PKC 2003: DHIES
 * is reproducible) and saves a key generation per box — a deal seals a share to every member.
 * Throws a TypeError when a recipient key is not a point of the curve (before anything is sealed).
 */
export function sealToMany(recipients: readonly SealRecipient[], random: RandomSource = systemRandom): Uint8Array[] {
  const keys = recipients.map((r) => compressedRecipient(r.publicKey));
  const ephemeralPrivateKey = generatePrivateKey(random);
  try {
    const ephemeralPublicKey = publicKeyOf(ephemeralPrivateKey, true);
    return recipients.map((r, i) => {
      const recipient = keys[i]!;
      const key = boxKey(ephemeralPrivateKey, recipient, concatBytes(ephemeralPublicKey, recipient));
      try {
        const nonce = random(AES_GCM_NONCE_BYTES);
        const { ciphertext, tag } = aes256GcmEncrypt(key, nonce, r.plaintext, r.aad);
        return concatBytes(ephemeralPublicKey, nonce, ciphertext, tag);
      } finally {
        zeroize(key);
      }
    });
  } finally {
    zeroize(ephemeralPrivateKey);
  }
}

/**
 * Open a box made by {@link sealTo} with the recipient's 32-byte private key and the same associated
 * data: the plaintext, or undefined on any failure (wrong key or aad, changed or truncated box,
 * malformed input). Never throws. `recipientPublicKey`, the compressed public key of that private
 * key, saves computing it again (a node opens many boxes with its one key).
 */
export function openSealed(recipientPrivateKey: Uint8Array, box: Uint8Array, aad: Uint8Array, recipientPublicKey?: Uint8Array): Uint8Array | undefined {
  if (!(recipientPrivateKey instanceof Uint8Array) || recipientPrivateKey.length !== COORDINATE_BYTES) return undefined;
  if (!(box instanceof Uint8Array) || box.length < SEALED_BOX_OVERHEAD_BYTES || !(aad instanceof Uint8Array)) return undefined;
  const ephemeralPublicKey = box.subarray(0, SECP256K1_COMPRESSED_KEY_BYTES);
  if (!hasPublicKeyShape(ephemeralPublicKey)) return undefined;
  const nonceEnd = SECP256K1_COMPRESSED_KEY_BYTES + AES_GCM_NONCE_BYTES;
  const tagStart = box.length - AES_GCM_TAG_BYTES;
  let key: Uint8Array | undefined;
  try {
    // publicKeyOf and the ECDH throw for an invalid scalar or an ephemeral key off the curve.
    const salt = concatBytes(ephemeralPublicKey, recipientPublicKey ?? publicKeyOf(recipientPrivateKey, true));
    key = boxKey(recipientPrivateKey, ephemeralPublicKey, salt);
    return aes256GcmDecrypt(key, box.subarray(SECP256K1_COMPRESSED_KEY_BYTES, nonceEnd), box.subarray(nonceEnd, tagStart), box.subarray(tagStart), aad);
  } catch {
    return undefined;
  } finally {
    zeroize(key);
  }
}
