/**
 * ML-KEM-768 (FIPS 203) key pairs derived from 64-byte seeds: a secret's seed is what Shamir splits,
 * its public key is the record's `publicKeyCid` (docs/architecture.md, Keys and crypto).
 *
 * The hot path is node:crypto (OpenSSL 3.5, Node ≥ 24.7), an order of magnitude faster than JavaScript;
 * {@link mlkemNoble} (@noble/post-quantum) is the reference the tests cross-check it against.
 *
 * Keys cross into OpenSSL as DER. The private key uses the seed-only PKCS#8 form of
 * draft-ietf-lamps-kyber-certificates (`[0] IMPLICIT OCTET STRING (64)` = d ‖ z), which OpenSSL
 * expands exactly as FIPS 203 ML-KEM.KeyGen_internal(d, z) does; JWK import of an AKP key without
 * `pub` is refused by node:crypto, and DER works on every Node ≥ 24.7.
 */
import { createPrivateKey, createPublicKey, decapsulate, encapsulate, type KeyObject } from 'node:crypto';
import { createRequire } from 'node:module';
import type * as NobleMlKem from '@noble/post-quantum/ml-kem.js';
import { concatBytes, fromHex, toBase64, zeroize } from './bytes.ts';
import { createLruCache } from './lru.ts';

/** Length of an ML-KEM-768 key-generation seed d ‖ z, in bytes. */
export const MLKEM768_SEED_BYTES = 64;
/** Length of a raw ML-KEM-768 encapsulation (public) key, in bytes. */
export const MLKEM768_PUBLIC_KEY_BYTES = 1184;
/** Length of an ML-KEM-768 ciphertext, in bytes. */
export const MLKEM768_CIPHERTEXT_BYTES = 1088;
/** Length of an ML-KEM shared secret (every parameter set), in bytes. */
export const MLKEM_SHARED_SECRET_BYTES = 32;
/** Length of the randomness `m` one encapsulation consumes, in bytes. */
export const MLKEM_ENCAPSULATION_RANDOMNESS_BYTES = 32;
/** How many imported public keys {@link mlkemEncapsulate} keeps. */
export const MLKEM_PUBLIC_KEY_CACHE_SIZE = 128;

// PrivateKeyInfo { version 0, AlgorithmIdentifier { id-alg-ml-kem-768 2.16.840.1.101.3.4.4.2 },
// privateKey OCTET STRING { [0] IMPLICIT OCTET STRING (64) } }, followed by the 64 seed bytes.
const PKCS8_SEED_PREFIX = fromHex('3054020100300b060960864801650304040204428040');
// SubjectPublicKeyInfo { AlgorithmIdentifier { id-alg-ml-kem-768 }, BIT STRING (0 unused bits) },
// followed by the 1184 key bytes. This is also exactly what OpenSSL exports.
const SPKI_PREFIX = fromHex('308204b2300b0609608648016503040402038204a100');

function asBuffer(b: Uint8Array): Buffer {
  return Buffer.from(b.buffer, b.byteOffset, b.byteLength);
}

/** Copy a node:crypto result into a fresh array and wipe the original. */
function takeBytes(b: Buffer): Uint8Array {
  const out = new Uint8Array(b);
  b.fill(0);
  return out;
}

function checkLength(value: Uint8Array, length: number, what: string): void {
  if (!(value instanceof Uint8Array) || value.length !== length) {
    throw new TypeError(`${what} must be a Uint8Array of ${length} bytes`);
  }
}

/**
 * Import the private key of a seed. The temporary DER is zeroed at once; the KeyObject itself lives
 * in OpenSSL memory, which JavaScript cannot wipe, so callers drop it as soon as they are done.
 */
function privateKeyFromSeed(seed: Uint8Array): KeyObject {
  checkLength(seed, MLKEM768_SEED_BYTES, 'ML-KEM-768 seed');
  const der = concatBytes(PKCS8_SEED_PREFIX, seed);
  try {
    return createPrivateKey({ key: asBuffer(der), format: 'der', type: 'pkcs8' });
  } finally {
    zeroize(der);
  }
}

/** The raw 1184-byte ML-KEM-768 public key of a 64-byte seed (d ‖ z). */
export function mlkemPublicKeyFromSeed(seed: Uint8Array): Uint8Array {
  const spki = createPublicKey(privateKeyFromSeed(seed)).export({ format: 'der', type: 'spki' });
  return new Uint8Array(spki.subarray(SPKI_PREFIX.length));
}

/** A key pair imported once from its seed: the public key and decapsulation with the same import. */
export interface MlkemSeedKey {
  /** Raw 1184-byte public key, derived on first read (an export of the imported key). */
  readonly publicKey: Uint8Array;
  /** Decapsulate a 1088-byte ciphertext (implicit rejection: never fails on tampering). */
  decapsulate(ciphertext: Uint8Array): Uint8Array;
}

/**
 * Import a seed's key pair once (the import runs the whole key generation, the dominant cost), for a
 * caller that needs both the public key — e.g. to check the seed rebuilt from shares is the right
 * one — and a decapsulation. Nothing is cached; drop the object when done.
 */
export function mlkemKeyFromSeed(seed: Uint8Array): MlkemSeedKey {
  const priv = privateKeyFromSeed(seed);
  let publicKey: Uint8Array | undefined;
  return {
    get publicKey() {
      return (publicKey ??= new Uint8Array(createPublicKey(priv).export({ format: 'der', type: 'spki' }).subarray(SPKI_PREFIX.length)));
    },
    decapsulate(ciphertext) {
      checkLength(ciphertext, MLKEM768_CIPHERTEXT_BYTES, 'ML-KEM-768 ciphertext');
      return takeBytes(decapsulate(priv, asBuffer(ciphertext)));
    },
  };
}

/** The output of one encapsulation. */
export interface MlkemEncapsulation {
  /** 32 bytes both sides share; private: zero it once the payload key is derived. */
  readonly sharedSecret: Uint8Array;
  /** The 1088-byte ciphertext only the seed's owner can decapsulate. */
  readonly ciphertext: Uint8Array;
}

/** An ML-KEM-768 encapsulator with its own cache of imported public keys. */
export interface MlkemEncapsulator {
  /** See {@link mlkemEncapsulate}. */
  encapsulate(publicKey: Uint8Array): MlkemEncapsulation;
  /** Number of public keys currently cached. */
  cachedKeys(): number;
}

/** Options of {@link createMlkemEncapsulator}. */
export interface MlkemEncapsulatorOptions {
  /** Most recently used public keys kept imported. @default 128 */
  readonly keyCacheSize?: number;
}

/**
 * Create a native (node:crypto) encapsulator. Importing a public key costs as much as an
 * encapsulation again (OpenSSL checks the key's coefficients on import) and payloads go to the same few
 * secrets again and again, so imported keys are kept in an LRU map. Public keys are not secret.
 */
export function createMlkemEncapsulator(options: MlkemEncapsulatorOptions = {}): MlkemEncapsulator {
  const cache = createLruCache<KeyObject>(options.keyCacheSize ?? MLKEM_PUBLIC_KEY_CACHE_SIZE);

  function importPublicKey(publicKey: Uint8Array): KeyObject {
    checkLength(publicKey, MLKEM768_PUBLIC_KEY_BYTES, 'ML-KEM-768 public key');
    return cache.getOrCreate(toBase64(publicKey), () => {
      try {
        // OpenSSL runs the FIPS 203 §7.2 modulus check here: a key with coefficients ≥ q is refused.
        return createPublicKey({ key: asBuffer(concatBytes(SPKI_PREFIX, publicKey)), format: 'der', type: 'spki' });
      } catch {
        throw new TypeError('invalid ML-KEM-768 public key');
      }
    });
  }

  return {
    encapsulate(publicKey) {
      const { sharedKey, ciphertext } = encapsulate(importPublicKey(publicKey));
      return { sharedSecret: takeBytes(sharedKey), ciphertext: new Uint8Array(ciphertext) };
    },
    cachedKeys: () => cache.size(),
  };
}

const defaultEncapsulator = createMlkemEncapsulator();

/**
 * Encapsulate a fresh shared secret to a raw ML-KEM-768 public key with node:crypto. Throws a
 * TypeError when the key has the wrong length or is not a valid key. Imported keys are cached in a
 * process-wide LRU of {@link MLKEM_PUBLIC_KEY_CACHE_SIZE} entries (public data only).
 */
export function mlkemEncapsulate(publicKey: Uint8Array): MlkemEncapsulation {
  return defaultEncapsulator.encapsulate(publicKey);
}

/**
 * Decapsulate `ciphertext` with the key pair of `seed` (node:crypto). Nothing private is cached: the
 * key is derived again on every call. Throws a TypeError on a wrong seed or ciphertext length.
 *
 * ML-KEM rejects implicitly: a tampered ciphertext yields a pseudo-random secret, not an error, so the
 * caller detects tampering at the AEAD that the secret keys.
 */
export function mlkemDecapsulateWithSeed(seed: Uint8Array, ciphertext: Uint8Array): Uint8Array {
  checkLength(ciphertext, MLKEM768_CIPHERTEXT_BYTES, 'ML-KEM-768 ciphertext');
  return takeBytes(decapsulate(privateKeyFromSeed(seed), asBuffer(ciphertext)));
}

let nobleMlKem: typeof NobleMlKem.ml_kem768 | undefined;

/** @noble/post-quantum's ML-KEM-768, loaded on first use: no node path needs it, and every isolate importing this module would carry it. */
function nobleMlKem768(): typeof NobleMlKem.ml_kem768 {
  return (nobleMlKem ??= (createRequire(import.meta.url)('@noble/post-quantum/ml-kem.js') as typeof NobleMlKem).ml_kem768);
}

/**
 * The same operations through @noble/post-quantum: the audited reference the native path is tested
 * against, and the only path that accepts caller-chosen encapsulation randomness (test vectors).
 */
export const mlkemNoble = {
  /** {@link mlkemPublicKeyFromSeed} in JavaScript. */
  publicKeyFromSeed(seed: Uint8Array): Uint8Array {
    checkLength(seed, MLKEM768_SEED_BYTES, 'ML-KEM-768 seed');
    const { publicKey, secretKey } = nobleMlKem768().keygen(seed);
    zeroize(secretKey);
    return publicKey;
  },

  /**
   * {@link mlkemEncapsulate} in JavaScript; `randomness32` is the FIPS 203 message `m`
   * (fresh random bytes when omitted).
   */
  encapsulate(publicKey: Uint8Array, randomness32?: Uint8Array): MlkemEncapsulation {
    checkLength(publicKey, MLKEM768_PUBLIC_KEY_BYTES, 'ML-KEM-768 public key');
    if (randomness32 !== undefined) checkLength(randomness32, MLKEM_ENCAPSULATION_RANDOMNESS_BYTES, 'encapsulation randomness');
    let result: { cipherText: Uint8Array; sharedSecret: Uint8Array };
    try {
      result = nobleMlKem768().encapsulate(publicKey, randomness32);
    } catch {
      throw new TypeError('invalid ML-KEM-768 public key');
    }
    return { sharedSecret: result.sharedSecret, ciphertext: result.cipherText };
  },

  /** {@link mlkemDecapsulateWithSeed} in JavaScript; the expanded secret key is zeroed after use. */
  decapsulateWithSeed(seed: Uint8Array, ciphertext: Uint8Array): Uint8Array {
    checkLength(seed, MLKEM768_SEED_BYTES, 'ML-KEM-768 seed');
    checkLength(ciphertext, MLKEM768_CIPHERTEXT_BYTES, 'ML-KEM-768 ciphertext');
    const { secretKey } = nobleMlKem768().keygen(seed);
    try {
      return nobleMlKem768().decapsulate(ciphertext, secretKey);
    } finally {
      zeroize(secretKey);
    }
  },
};
