/**
 * secp256k1 signatures for node keys (record signatures, session grants) and EIP-191 recovery.
 *
 * The hot path is libsecp256k1 through the `secp256k1` package's native binding. Its JavaScript
 * fallback (elliptic) is refused on purpose: when the binding cannot load we use @noble/curves, the
 * audited reference (docs/architecture.md, Keys and crypto).
 */
import { createRequire } from 'node:module';
import type * as NobleCurvesSecp256k1 from '@noble/curves/secp256k1.js';
import { keccak256 } from './hash.ts';
import { toHex, zeroize, type RandomSource, systemRandom } from './bytes.ts';

interface NativeSecp256k1 {
  privateKeyVerify(key: Uint8Array): boolean;
  publicKeyCreate(key: Uint8Array, compressed?: boolean): Uint8Array;
  publicKeyConvert(key: Uint8Array, compressed?: boolean): Uint8Array;
  ecdsaSign(msg32: Uint8Array, key: Uint8Array): { signature: Uint8Array; recid: number };
  ecdsaVerify(sig: Uint8Array, msg32: Uint8Array, pub: Uint8Array): boolean;
  ecdsaRecover(sig: Uint8Array, recid: number, msg32: Uint8Array, compressed?: boolean): Uint8Array;
}

function loadNative(): NativeSecp256k1 | undefined {
  try {
    // `secp256k1/bindings` is the native addon only; `secp256k1` itself would fall back to elliptic.
    return createRequire(import.meta.url)('secp256k1/bindings') as NativeSecp256k1;
  } catch {
    return undefined;
  }
}

const native = loadNative();

let noble: typeof NobleCurvesSecp256k1.secp256k1 | undefined;

/**
 * @noble/curves' secp256k1, loaded on first use: only a process without the native binding (and the
 * tests that cross-check it) needs it, and every isolate that imports this module — the event loop's
 * and each crypto thread's — would otherwise carry its code and tables (a few MiB each).
 */
function nobleSecp(): typeof NobleCurvesSecp256k1.secp256k1 {
  return (noble ??= (createRequire(import.meta.url)('@noble/curves/secp256k1.js') as typeof NobleCurvesSecp256k1).secp256k1);
}

/** Which implementation is in use: `native` (libsecp256k1) or `noble` (@noble/curves). */
export const secp256k1Backend: 'native' | 'noble' = native ? 'native' : 'noble';

/** A 65-byte recoverable signature: r ‖ s ‖ v (v = recid + 27, Ethereum style). */
export type RecoverableSignature = Uint8Array;

/** Generate a new random secp256k1 private key. */
export function generatePrivateKey(random: RandomSource = systemRandom): Uint8Array {
  for (;;) {
    const k = random(32);
    if (isValidPrivateKey(k)) return k;
    zeroize(k);
  }
}

/** True when `key` is a valid private scalar. */
export function isValidPrivateKey(key: Uint8Array): boolean {
  if (key.length !== 32) return false;
  return native ? native.privateKeyVerify(key) : nobleSecp().utils.isValidSecretKey(key);
}

/** Uncompressed (65 bytes) or compressed (33) public key for a private key. */
export function publicKeyOf(priv: Uint8Array, compressed = true): Uint8Array {
  return native ? native.publicKeyCreate(priv, compressed) : nobleSecp().getPublicKey(priv, compressed);
}

/** Ethereum address (lowercase, 0x-prefixed) of a public key (any encoding). */
export function addressOfPublicKey(pub: Uint8Array): string {
  const uncompressed = pub.length === 65 ? pub : native ? native.publicKeyConvert(pub, false) : nobleSecp().Point.fromBytes(pub).toBytes(false);
  return '0x' + toHex(keccak256(uncompressed.subarray(1)).subarray(12));
}

/**
 * A public key in uncompressed form (65 bytes). Verifying against it skips the square root a
 * compressed key costs on every verify (a visible share of a verification): keys checked many times —
 * the cluster's node keys — are converted once.
 */
export function uncompressedPublicKey(pub: Uint8Array): Uint8Array {
  if (pub.length === 65) return pub;
  return native ? native.publicKeyConvert(pub, false) : nobleSecp().Point.fromBytes(pub).toBytes(false);
}

/** Ethereum address of a private key. */
export function addressOfPrivateKey(priv: Uint8Array): string {
  return addressOfPublicKey(publicKeyOf(priv, false));
}

/** Sign a 32-byte digest; returns r ‖ s ‖ v (65 bytes, low-S). */
export function signDigest(digest: Uint8Array, priv: Uint8Array): RecoverableSignature {
  if (digest.length !== 32) throw new TypeError('digest must be 32 bytes');
  const out = new Uint8Array(65);
  if (native) {
    const { signature, recid } = native.ecdsaSign(digest, priv);
    out.set(signature, 0);
    out[64] = recid + 27;
  } else {
    const rec = nobleSecp().sign(digest, priv, { prehash: false, format: 'recovered' });
    // noble's recovered format is recid ‖ r ‖ s
    out.set(rec.subarray(1), 0);
    out[64] = (rec[0] ?? 0) + 27;
  }
  return out;
}

function splitSig(sig: Uint8Array): { rs: Uint8Array; recid: number } | undefined {
  if (sig.length !== 65) return undefined;
  const v = sig[64] ?? 0;
  const recid = v >= 27 ? v - 27 : v;
  if (recid !== 0 && recid !== 1) return undefined;
  return { rs: sig.subarray(0, 64), recid };
}

/** Verify a 65-byte signature over a digest against a public key. Never throws. */
export function verifyDigest(sig: Uint8Array, digest: Uint8Array, pub: Uint8Array): boolean {
  const parts = splitSig(sig);
  if (!parts || digest.length !== 32) return false;
  try {
    return native
      ? native.ecdsaVerify(parts.rs, digest, pub)
      : nobleSecp().verify(parts.rs, digest, pub, { prehash: false, lowS: true });
  } catch {
    return false;
  }
}

/** Recover the signer's address from a 65-byte signature over a digest; undefined when invalid. */
export function recoverAddress(sig: Uint8Array, digest: Uint8Array): string | undefined {
  const parts = splitSig(sig);
  if (!parts || digest.length !== 32) return undefined;
  try {
    let pub: Uint8Array;
    if (native) {
      pub = native.ecdsaRecover(parts.rs, parts.recid, digest, false);
    } else {
      const rec = new Uint8Array(65);
      rec[0] = parts.recid;
      rec.set(parts.rs, 1);
      pub = nobleSecp().recoverPublicKey(rec, digest, { prehash: false });
    }
    return addressOfPublicKey(pub);
  } catch {
    return undefined;
  }
}
