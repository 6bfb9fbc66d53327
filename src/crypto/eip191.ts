/**
 * EIP-191 version 0x45 (`personal_sign`): how wallets sign the `data` strings of the API
 * (docs/architecture.md, Keys and crypto). Digest = keccak-256("\x19Ethereum Signed Message:\n" ‖ decimal
 * UTF-8 byte length ‖ message). Recovery runs on libsecp256k1 (native binding) with @noble/curves as
 * the fallback, through {@link recoverAddress}; the tests cross-check both against viem.
 */
import { concatBytes, fromHex, toHex, utf8 } from './bytes.ts';
import { keccak256 } from './hash.ts';
import { recoverAddress, signDigest } from './secp256k1.ts';

/** The EIP-191 prefix of personal messages; the message's byte length follows it in decimal. */
export const EIP191_PERSONAL_PREFIX = '\x19Ethereum Signed Message:\n';

// r (32) ‖ s (32) ‖ v (1) as 130 hex digits, `0x` optional, either case.
const SIGNATURE_HEX_RE = /^(?:0x)?[0-9a-fA-F]{130}$/;
// Wallets write v as 27/28; some libraries and hardware wallets emit the bare recovery id 0/1.
const ACCEPTED_V = new Set([0, 1, 27, 28]);

/**
 * The 32-byte digest a wallet signs for `message` with `personal_sign`. `lengthOf: 'utf16'` counts
 * the message's UTF-16 code units (JavaScript's `length`) in the prefix instead of its UTF-8 bytes,
 * as cifer-sdk's private-key signer does (`PrivateKeySignerAdapter`: {@link recoverSdkSigner}).
 */
export function eip191Digest(message: string, lengthOf: 'bytes' | 'utf16' = 'bytes'): Uint8Array {
  const body = utf8(message);
  return keccak256(concatBytes(utf8(`${EIP191_PERSONAL_PREFIX}${lengthOf === 'bytes' ? body.length : message.length}`), body));
}

/**
 * The lowercase `0x` address that signed `message` with `personal_sign`, or undefined when the
 * signature is malformed (not 65 bytes of hex, `0x` optional; v not 27, 28, 0 or 1; r or s out of
 * range) or recovers no key. Never throws. High-s signatures are accepted, as `ecrecover` and viem do.
 */
export function recoverPersonalSigner(message: string, signature: string): string | undefined {
  return recoverWith(message, signature, 'bytes');
}

/**
 * The signer of `message` as cifer-sdk's private-key signer signs it (a Web2 session's wallet, or a
 * Web3 backend's key): `personal_sign` whose prefix counts UTF-16 code units, not UTF-8 bytes
 * ({@link eip191Digest}). The two differ only for a message that is not ASCII — an encrypt of
 * "café" — which the real client would otherwise never get through. Undefined for an ASCII message
 * (there the forms are one) and as {@link recoverPersonalSigner} otherwise. docs/security.md,
 * "Signed strings", says why no signature can then be taken for another string.
 */
export function recoverSdkSigner(message: string, signature: string): string | undefined {
  if (typeof message !== 'string' || utf8(message).length === message.length) return undefined;
  return recoverWith(message, signature, 'utf16');
}

function recoverWith(message: string, signature: string, lengthOf: 'bytes' | 'utf16'): string | undefined {
  if (typeof message !== 'string' || typeof signature !== 'string' || !SIGNATURE_HEX_RE.test(signature)) return undefined;
  const sig = fromHex(signature);
  if (!ACCEPTED_V.has(sig[64] ?? -1)) return undefined;
  return recoverAddress(sig, eip191Digest(message, lengthOf));
}

/**
 * Sign `message` as `personal_sign` does: `0x` ‖ r ‖ s ‖ v as 130 hex digits, low-s, v 27 or 28.
 * For clients and tests; nodes sign their records with {@link signDigest} directly.
 */
export function signPersonalMessage(message: string, privateKey: Uint8Array): string {
  return '0x' + toHex(signDigest(eip191Digest(message), privateKey));
}
