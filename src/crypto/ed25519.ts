/**
 * Ed25519 (RFC 8032) signatures of principals. Verification runs on node:crypto (OpenSSL, an order of
 * magnitude faster than JavaScript); @noble/curves is the reference and the fallback (docs/architecture.md, Keys and crypto).
 *
 * Both paths apply the same strict rules, so they agree:
 * - public key: 64 lowercase hex chars, canonical y (< p), not one of the 8 small-order points
 *   (a small-order key lets one signature verify for many messages; libsodium refuses them too);
 * - signature: 128 hex chars, optional `0x`, either case; S < L (non-malleable).
 * noble's strict mode (`zip215: false`) applies these checks itself. OpenSSL checks S and the point but
 * neither canonical y nor small order, so the native path checks those bytes first. The two paths can
 * only disagree on signatures crafted by a key's owner on a key with a torsion component
 * (cofactored vs cofactorless equation): never on honest keys, never to forge someone else's.
 */
import { createPrivateKey, createPublicKey, sign, verify, type KeyObject } from 'node:crypto';
import { ed25519 } from '@noble/curves/ed25519.js';
import { concatBytes, fromHex, utf8, zeroize } from './bytes.ts';
import { createLruCache } from './lru.ts';

const SPKI_PREFIX = fromHex('302a300506032b6570032100');
const PKCS8_PREFIX = fromHex('302e020100300506032b657004220420');

const PUBLIC_KEY_HEX_RE = /^[0-9a-f]{64}$/;
const SIGNATURE_HEX_RE = /^(?:0x)?[0-9a-fA-F]{128}$/;

/** How many imported public keys {@link verifyEd25519} keeps. */
export const ED25519_KEY_CACHE_SIZE = 1024;

// The y coordinates (sign bit masked) of the 8 points of small order: the encodings libsodium's
// blocklist keeps once non-canonical y is refused separately. Tested against noble.
const SMALL_ORDER_Y = [
  '0000000000000000000000000000000000000000000000000000000000000000', // order 4 (two points)
  '0100000000000000000000000000000000000000000000000000000000000000', // order 1 (identity)
  'ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f', // order 2 (y = p - 1)
  '26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05', // order 8 (two points)
  'c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a', // order 8 (two points)
].map((hex) => fromHex(hex));

function hasSmallOrder(key: Uint8Array): boolean {
  return SMALL_ORDER_Y.some((y) => {
    for (let i = 0; i < 31; i++) if (key[i] !== y[i]) return false;
    return ((key[31] ?? 0) & 0x7f) === y[31];
  });
}

// y < p = 2^255 - 19 (little-endian, sign bit masked): only 19 encodings, all ≥ ed ff … ff 7f, fail.
function hasCanonicalY(key: Uint8Array): boolean {
  if (((key[31] ?? 0) & 0x7f) !== 0x7f) return true;
  for (let i = 30; i >= 1; i--) if (key[i] !== 0xff) return true;
  return (key[0] ?? 0) < 0xed;
}

/** The key's bytes when it passes the byte-level rules (not yet that it is on the curve). */
function publicKeyBytes(hex: unknown): Uint8Array | undefined {
  if (typeof hex !== 'string' || !PUBLIC_KEY_HEX_RE.test(hex)) return undefined;
  const key = fromHex(hex);
  return hasCanonicalY(key) && !hasSmallOrder(key) ? key : undefined;
}

function signatureBytes(hex: unknown): Uint8Array | undefined {
  return typeof hex === 'string' && SIGNATURE_HEX_RE.test(hex) ? fromHex(hex) : undefined;
}

function messageBytes(message: unknown): Uint8Array | undefined {
  if (typeof message === 'string') return utf8(message);
  return message instanceof Uint8Array ? message : undefined;
}

function asBuffer(b: Uint8Array): Buffer {
  return Buffer.from(b.buffer, b.byteOffset, b.byteLength);
}

/**
 * True when `hex` is a usable Ed25519 public key: exactly 64 lowercase hex characters encoding a
 * point of the curve (canonically) that is not of small order. Uses noble (a point decompression in
 * JavaScript): meant for registration, not for every request.
 */
export function isEd25519PublicKeyHex(hex: string): boolean {
  if (publicKeyBytes(hex) === undefined) return false;
  try {
    return !ed25519.Point.fromHex(hex, false).isSmallOrder();
  } catch {
    return false;
  }
}

/** An Ed25519 verifier with its own cache of imported keys. */
export interface Ed25519Verifier {
  /** See {@link verifyEd25519}. */
  verify(publicKeyHex: string, message: string | Uint8Array, signatureHex: string): boolean;
  /** Number of keys currently cached. */
  cachedKeys(): number;
}

/** Options of {@link createEd25519Verifier}. */
export interface Ed25519VerifierOptions {
  /** Most recently used public keys kept imported. @default 1024 */
  readonly keyCacheSize?: number;
}

/**
 * Create a native (node:crypto) verifier. Importing a key costs a good share of a verification and
 * the same principal key is checked again and again, so imported keys are kept in an LRU map.
 */
export function createEd25519Verifier(options: Ed25519VerifierOptions = {}): Ed25519Verifier {
  const keys = createLruCache<KeyObject>(options.keyCacheSize ?? ED25519_KEY_CACHE_SIZE);
  // OpenSSL does not check the point here; an off-curve key fails in verify() instead.
  const keyObjectOf = (hex: string, raw: Uint8Array): KeyObject =>
    keys.getOrCreate(hex, () => createPublicKey({ key: asBuffer(concatBytes(SPKI_PREFIX, raw)), format: 'der', type: 'spki' }));

  return {
    verify(publicKeyHex, message, signatureHex) {
      const raw = publicKeyBytes(publicKeyHex);
      const signature = signatureBytes(signatureHex);
      const data = messageBytes(message);
      if (!raw || !signature || !data) return false;
      try {
        return verify(null, data, keyObjectOf(publicKeyHex, raw), signature);
      } catch {
        return false;
      }
    },
    cachedKeys: () => keys.size(),
  };
}

const defaultVerifier = createEd25519Verifier();

/**
 * Verify an Ed25519 signature with node:crypto. `message` is UTF-8 encoded when a string;
 * `signatureHex` is 128 hex characters, `0x` optional. Never throws: malformed input gives `false`.
 * Keys are cached in a process-wide LRU of {@link ED25519_KEY_CACHE_SIZE} entries (public data only).
 */
export function verifyEd25519(publicKeyHex: string, message: string | Uint8Array, signatureHex: string): boolean {
  return defaultVerifier.verify(publicKeyHex, message, signatureHex);
}

/** {@link verifyEd25519} through @noble/curves (strict RFC 8032 mode): the reference and fallback. */
export function verifyEd25519Noble(publicKeyHex: string, message: string | Uint8Array, signatureHex: string): boolean {
  if (typeof publicKeyHex !== 'string' || !PUBLIC_KEY_HEX_RE.test(publicKeyHex)) return false;
  const signature = signatureBytes(signatureHex);
  const data = messageBytes(message);
  if (!signature || !data) return false;
  try {
    // zip215: false refuses non-canonical encodings and small-order keys, as the native path does.
    return ed25519.verify(signature, data, fromHex(publicKeyHex), { zip215: false });
  } catch {
    return false;
  }
}

function privateKeyOf(seed32: Uint8Array): KeyObject {
  if (!(seed32 instanceof Uint8Array) || seed32.length !== 32) throw new TypeError('Ed25519 seed must be 32 bytes');
  const der = concatBytes(PKCS8_PREFIX, seed32);
  try {
    return createPrivateKey({ key: asBuffer(der), format: 'der', type: 'pkcs8' });
  } finally {
    zeroize(der);
  }
}

/** Sign with an RFC 8032 private key (its 32-byte seed); returns the 64-byte signature. */
export function signEd25519(privateKeySeed32: Uint8Array, message: string | Uint8Array): Uint8Array {
  const data = messageBytes(message);
  if (!data) throw new TypeError('message must be a string or Uint8Array');
  return new Uint8Array(sign(null, data, privateKeyOf(privateKeySeed32)));
}

/** The 32-byte public key of an RFC 8032 private key seed. */
export function ed25519PublicKeyOf(seed32: Uint8Array): Uint8Array {
  const spki = createPublicKey(privateKeyOf(seed32)).export({ format: 'der', type: 'spki' });
  return new Uint8Array(spki.subarray(SPKI_PREFIX.length));
}
