/** Hash functions with domain separation. */
import { createHash } from 'node:crypto';
import { keccak_256 } from '@noble/hashes/sha3.js';
import { utf8 } from './bytes.ts';

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
  return keccak_256(data);
}
