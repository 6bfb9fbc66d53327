/** Hash functions with domain separation. */
import { createHash } from 'node:crypto';
import { createKeccak } from 'hash-wasm';
import { utf8 } from './bytes.ts';

/**
 * One Keccak-256 hasher for the thread, reused: init → update → digest runs synchronously, so no two
 * calls interleave. hash-wasm's WebAssembly Keccak is several times faster than @noble/hashes' on a
 * signed request's message — and every signed request hashes twice (the EIP-191 digest and the
 * recovered key's address). Node's OpenSSL has SHA3 but not Ethereum's Keccak padding.
 */
const keccakHasher = await createKeccak(256);

/** SHA-256 of the input. */
export function sha256(data: Uint8Array | string): Uint8Array {
  return new Uint8Array(createHash('sha256').update(data).digest());
}

/** Lowercase hex SHA-256 of a string's UTF-8 bytes. */
export function sha256Hex(data: Uint8Array | string): string {
  return createHash('sha256').update(data).digest('hex');
}

/**
 * SHA-256 over a domain label and a message (bytes, or a string as UTF-8): `sha256(len(label) ‖ label ‖ message)`, so hashes made
 * for one purpose can never be replayed as another.
 */
export function taggedHash(label: string, message: Uint8Array | string): Uint8Array {
  const l = utf8(label);
  const h = createHash('sha256');
  h.update(Uint8Array.of(l.length));
  h.update(l);
  // A string is hashed as its UTF-8 bytes (node encodes it without a copy in JavaScript).
  h.update(message);
  return new Uint8Array(h.digest());
}

/** Keccak-256 (Ethereum). */
export function keccak256(data: Uint8Array): Uint8Array {
  keccakHasher.init();
  keccakHasher.update(data);
  return keccakHasher.digest('binary');
}
