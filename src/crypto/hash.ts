/** Hash functions with domain separation. */
import { hash } from 'node:crypto';
import { createKeccak } from 'hash-wasm';
import { copyBytes, utf8, zeroize } from './bytes.ts';

/**
 * One Keccak-256 hasher for the thread, reused: init → update → digest runs synchronously, so no two
 * calls interleave. hash-wasm's WebAssembly Keccak is several times faster than @noble/hashes' on a
 * signed request's message — and every signed request hashes twice (the EIP-191 digest and the
 * recovered key's address). Node's OpenSSL has SHA3 but not Ethereum's Keccak padding.
 */
const keccakHasher = await createKeccak(256);

/** SHA-256 of the input. */
export function sha256(data: Uint8Array | string): Uint8Array {
  return new Uint8Array(hash('sha256', data, 'buffer'));
}

/** Lowercase hex SHA-256 of a string's UTF-8 bytes. */
export function sha256Hex(data: Uint8Array | string): string {
  return hash('sha256', data, 'hex');
}

/** Each label's `len(label) ‖ label`, as {@link taggedHash} prefixes it (the labels are a few constants, each per cluster at most). */
const tagPrefixes = new Map<string, Buffer>();
const MAX_TAG_PREFIXES = 64;

function tagPrefix(label: string): Buffer {
  let prefix = tagPrefixes.get(label);
  if (prefix === undefined) {
    const l = utf8(label);
    // One byte of length, as `Uint8Array.of` stored it: the labels are far shorter than 256 bytes.
    prefix = Buffer.concat([Uint8Array.of(l.length & 0xff), l]);
    if (tagPrefixes.size >= MAX_TAG_PREFIXES) tagPrefixes.clear();
    tagPrefixes.set(label, prefix);
  }
  return prefix;
}

/**
 * SHA-256 over a domain label and a message (bytes, or a string as UTF-8): `sha256(len(label) ‖ label ‖ message)`, so hashes made
 * for one purpose can never be replayed as another. One call of node's one-shot `hash` over the
 * label's cached prefix and the message in one buffer: every member hashes each record it checks
 * and its batch tree's nodes this way, and a `Hash` object and three updates cost half as much
 * again. The buffer may hold secret material (a share's digest input), so it is zeroed after use.
 */
export function taggedHash(label: string, message: Uint8Array | string): Uint8Array {
  const prefix = tagPrefix(label);
  const input = Buffer.allocUnsafe(prefix.length + (typeof message === 'string' ? Buffer.byteLength(message) : message.length));
  prefix.copy(input, 0);
  if (typeof message === 'string') input.write(message, prefix.length);
  else copyBytes(message, input, prefix.length);
  try {
    return new Uint8Array(hash('sha256', input, 'buffer'));
  } finally {
    zeroize(input);
  }
}

/** Keccak-256 (Ethereum). */
export function keccak256(data: Uint8Array): Uint8Array {
  keccakHasher.init();
  keccakHasher.update(data);
  return keccakHasher.digest('binary');
}
