/**
 * Client binary formats (docs/http.md, Payload encryption): `0x`-prefixed hex out, hex with or without
 * `0x` or base64 in; and the payload's one size bound. Shared by the payload routes and the members'
 * share-release check.
 */
import { AppError } from '../../errors/index.ts';
import { fromBase64, fromHex, toBase64, toHex } from '../../crypto/index.ts';
import type { BinaryFormat } from './types.ts';

const BASE64_RE = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** Encode bytes in a client format: `0x`-prefixed hex or base64. */
export function encodeBinary(bytes: Uint8Array, format: BinaryFormat): string {
  return format === 'hex' ? '0x' + toHex(bytes) : toBase64(bytes);
}

/** Decode a client's hex (with or without `0x`) or base64; 400 naming `field` when malformed. */
export function decodeBinary(text: string, format: BinaryFormat, field: string): Uint8Array {
  if (format === 'hex') {
    try {
      return fromHex(text);
    } catch {
      throw new AppError('BAD_REQUEST', `${field} is not valid hex`);
    }
  }
  if (!BASE64_RE.test(text)) throw new AppError('BAD_REQUEST', `${field} is not valid base64`);
  return fromBase64(text);
}

/**
 * The shortest payload, bytes (docs/http.md, Payload encryption): encrypt refuses an empty message,
 * so an encrypted message — the GCM ciphertext, as long as its plaintext — is never empty either.
 * An empty last part is what a "remove delegate" setDelegate string ends with: no member may take it
 * for a decrypt (docs/security.md, Share release).
 */
export const PAYLOAD_MIN_BYTES = 1;

/** Decode a decrypt's `encryptedMessage`; 400 when malformed or shorter than {@link PAYLOAD_MIN_BYTES}. */
export function decodeEncryptedMessage(text: string, format: BinaryFormat): Uint8Array {
  const message = decodeBinary(text, format, 'encryptedMessage');
  if (message.length < PAYLOAD_MIN_BYTES) throw new AppError('BAD_REQUEST', 'encryptedMessage is empty');
  return message;
}
