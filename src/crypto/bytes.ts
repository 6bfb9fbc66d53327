/**
 * Byte helpers: hex/base64 codecs, constant-time comparison, zeroing and the injectable randomness
 * source (CONTRIBUTING.md rule 10).
 */
import { randomBytes as nodeRandomBytes, timingSafeEqual, createHash } from 'node:crypto';

/** A source of cryptographically secure random bytes; injectable so tests can be deterministic. */
export type RandomSource = (length: number) => Uint8Array;

/** The default CSPRNG (node:crypto). */
export const systemRandom: RandomSource = (length) => new Uint8Array(nodeRandomBytes(length));

/** One zero byte: filling with a buffer takes node's memset path (see {@link zeroize}). */
const ZERO_BYTE = new Uint8Array(1);

/** A Buffer over the same bytes as `b` (no copy). */
function bufferView(b: Uint8Array): Buffer {
  return Buffer.from(b.buffer, b.byteOffset, b.byteLength);
}

/**
 * Overwrite every byte of each buffer with zero. Use in `finally` after private material is used.
 * In shared memory (a SharedArrayBuffer) `fill(0)` stores byte by byte, far slower than the memset
 * node uses for a buffer-valued fill, which is what this does there.
 */
export function zeroize(...buffers: Array<Uint8Array | undefined | null>): void {
  for (const b of buffers) {
    if (!b) continue;
    if (b.buffer instanceof SharedArrayBuffer) bufferView(b).fill(ZERO_BYTE);
    else b.fill(0);
  }
}

/**
 * Copy all of `source` into `target` at `offset`; returns the bytes copied. A memmove: into shared
 * memory, `target.set(source, offset)` copies byte by byte, far slower. RangeError when it does
 * not fit.
 */
export function copyBytes(source: Uint8Array, target: Uint8Array, offset = 0): number {
  if (offset < 0 || offset + source.length > target.length) throw new RangeError(`${source.length} bytes do not fit at ${offset} of ${target.length}`);
  return bufferView(source).copy(target, offset);
}

/**
 * Constant-time equality of two byte strings of any length: both are hashed first so the compare
 * leaks neither content nor length.
 */
export function constantTimeEqual(a: Uint8Array | string, b: Uint8Array | string): boolean {
  const da = createHash('sha256').update(a).digest();
  const db = createHash('sha256').update(b).digest();
  return timingSafeEqual(da, db);
}

const HEX_RE = /^(0x)?([0-9a-fA-F]{2})*$/;

/** True when `s` is an even-length hex string, optionally `0x`-prefixed. */
export function isHex(s: string): boolean {
  return HEX_RE.test(s);
}

/**
 * Decode hex (with or without `0x`). Throws on malformed input: what {@link isHex} refuses. Node
 * decodes hex up to the first pair that is not hex, so a body decoded to exactly half its length is
 * well formed — one pass instead of a regular expression before the decoding (a decrypt's 1104-byte
 * cifer and its message are decoded on every member that releases a share).
 */
export function fromHex(s: string): Uint8Array {
  const body = s.startsWith('0x') ? s.slice(2) : s;
  const decoded = Buffer.from(body, 'hex');
  if (decoded.length * 2 !== body.length) throw new TypeError('malformed hex');
  // A copy of its own: a small Buffer is a view into Node's shared pool.
  return new Uint8Array(decoded);
}

/** Lowercase hex without prefix. */
export function toHex(b: Uint8Array): string {
  return Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex');
}

/** Standard base64 with padding. */
export function toBase64(b: Uint8Array): string {
  return Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('base64');
}

const B64_RE = /^[A-Za-z0-9+/]*={0,2}$/;

/** Decode standard base64; throws on malformed input. */
export function fromBase64(s: string): Uint8Array {
  if (s.length % 4 !== 0 || !B64_RE.test(s)) throw new TypeError('malformed base64');
  return new Uint8Array(Buffer.from(s, 'base64'));
}

const ENCODER = new TextEncoder();

/** UTF-8 encode. */
export function utf8(s: string): Uint8Array {
  return ENCODER.encode(s);
}

/** Concatenate byte arrays. */
export function concatBytes(...parts: Uint8Array[]): Uint8Array {
  let len = 0;
  for (const p of parts) len += p.length;
  const out = new Uint8Array(len);
  let off = 0;
  for (const p of parts) {
    out.set(p, off);
    off += p.length;
  }
  return out;
}
