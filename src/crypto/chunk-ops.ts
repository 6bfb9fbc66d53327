/**
 * The per-chunk work of a file job (AES-256-GCM seal and open of a sealed-spool record, the payload
 * AEAD of a `.cifer` chunk, SHA-256 and CRC-32 of what passes), written into a caller's output
 * buffer. ./chunk-crypto.ts runs these either inline or on its worker thread (./chunk-worker.ts):
 * the same functions, so both produce the same bytes.
 *
 * Why output buffers: node:crypto hands back a fresh buffer from every `update`; on a thread whose
 * heap holds a whole node (five, in the bench), each such megabyte brings a full garbage collection
 * closer (V8 collects after a fixed amount of new external memory), and those collections were a
 * large share of a file job's CPU. On the worker thread the fresh buffers are collected in a heap of a few MiB, and the caller's
 * output buffers (shared memory, ./chunk-crypto.ts) are reused chunk after chunk.
 */
import { createCipheriv, createDecipheriv, createHash, type Hash, type KeyObject } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { copyBytes, zeroize } from './bytes.ts';
import { AES_GCM_TAG_BYTES } from './at-rest.ts';
import { decryptWithSharedSecret, encryptWithSharedSecret } from './payload-envelope.ts';

function checkRoom(output: Uint8Array, bytes: number): void {
  if (output.length < bytes) throw new RangeError(`output holds ${output.length} bytes, ${bytes} needed`);
}

/** AES-256-GCM of `input` into `output` as ciphertext ‖ tag; returns the bytes written. */
export function gcmSealInto(key: KeyObject, nonce: Uint8Array, aad: Uint8Array, input: Uint8Array, output: Uint8Array): number {
  checkRoom(output, input.length + AES_GCM_TAG_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, nonce, { authTagLength: AES_GCM_TAG_BYTES });
  cipher.setAAD(aad);
  let at = 0;
  for (const part of [cipher.update(input), cipher.final(), cipher.getAuthTag()]) at += copyBytes(part, output, at);
  return at;
}

/**
 * Open ciphertext ‖ tag into `output`: the plaintext's length, or undefined when the tag fails (then
 * nothing of it is left in `output` or behind).
 */
export function gcmOpenInto(key: KeyObject, nonce: Uint8Array, aad: Uint8Array, sealed: Uint8Array, output: Uint8Array): number | undefined {
  if (sealed.length < AES_GCM_TAG_BYTES) return undefined;
  const tagStart = sealed.length - AES_GCM_TAG_BYTES;
  checkRoom(output, tagStart);
  const decipher = createDecipheriv('aes-256-gcm', key, nonce, { authTagLength: AES_GCM_TAG_BYTES });
  decipher.setAAD(aad);
  decipher.setAuthTag(sealed.subarray(tagStart));
  const head = decipher.update(sealed.subarray(0, tagStart));
  try {
    decipher.final();
    return copyBytes(head, output);
  } catch {
    return undefined;
  } finally {
    // Authenticated and copied, or not: no copy of the released bytes is left behind.
    head.fill(0);
  }
}

/**
 * The payload AEAD of a chunk (./payload-envelope.ts) into `output`: the tag for its `cifer` and
 * the CRC-32 of the ciphertext (its ZIP entry's). `sharedSecret` is zeroed here.
 */
export function payloadSealInto(sharedSecret: Uint8Array, plaintext: Uint8Array, output: Uint8Array): { tag: Uint8Array; crc32: number } {
  checkRoom(output, plaintext.length);
  try {
    const { ciphertext, tag } = encryptWithSharedSecret(sharedSecret, plaintext);
    copyBytes(ciphertext, output);
    return { tag, crc32: crc32(ciphertext) };
  } finally {
    zeroize(sharedSecret);
  }
}

/**
 * Open a chunk's payload ciphertext with its shared secret and tag into `output`: the plaintext's
 * length, or undefined when the tag fails. `sharedSecret` is zeroed here.
 */
export function payloadOpenInto(sharedSecret: Uint8Array, tag: Uint8Array, ciphertext: Uint8Array, output: Uint8Array): number | undefined {
  checkRoom(output, ciphertext.length);
  let plaintext: Uint8Array | undefined;
  try {
    plaintext = decryptWithSharedSecret(sharedSecret, ciphertext, tag);
    if (!plaintext) return undefined;
    return copyBytes(plaintext, output);
  } finally {
    zeroize(sharedSecret, plaintext);
  }
}

/** Incremental SHA-256 states by id (one per spool or job), kept where the chunks pass. */
export class ChunkHashes {
  private readonly hashes = new Map<number, Hash>();

  start(id: number): void {
    this.hashes.set(id, createHash('sha256'));
  }

  update(id: number, data: Uint8Array): void {
    const hash = this.hashes.get(id);
    if (!hash) throw new Error(`unknown hash ${id}`);
    hash.update(data);
  }

  /** The digest; the state is forgotten. */
  digest(id: number): Uint8Array {
    const hash = this.hashes.get(id);
    if (!hash) throw new Error(`unknown hash ${id}`);
    this.hashes.delete(id);
    return new Uint8Array(hash.digest());
  }

  drop(id: number): void {
    this.hashes.delete(id);
  }
}

/** Bytes in shared memory, as they cross to the worker thread. */
export interface SharedView {
  buffer: SharedArrayBuffer;
  offset: number;
  length: number;
}

/** One piece of chunk work; `B` is how its bytes travel (arrays inline, shared views to a thread). */
export type ChunkRequest<B> =
  | { op: 'seal'; key: KeyObject; nonce: Uint8Array; aad: Uint8Array; input: B; output: B; hash?: number | undefined }
  | { op: 'open'; key: KeyObject; nonce: Uint8Array; aad: Uint8Array; input: B; output: B }
  | { op: 'payloadSeal'; secret: B; input: B; output: B }
  | { op: 'payloadOpen'; secret: B; tag: Uint8Array; input: B; output: B; hash?: number | undefined }
  | { op: 'hashStart' | 'hashDigest' | 'hashDrop'; hash: number };

/** What a {@link ChunkRequest} answers, by operation. */
export type ChunkResult = number | undefined | Uint8Array | { tag: Uint8Array; crc32: number };

/** Run one request (inline, or on the worker thread with its views turned into arrays). */
export function runChunkRequest(hashes: ChunkHashes, request: ChunkRequest<Uint8Array>): ChunkResult {
  switch (request.op) {
    case 'seal':
      if (request.hash !== undefined) hashes.update(request.hash, request.input);
      return gcmSealInto(request.key, request.nonce, request.aad, request.input, request.output);
    case 'open':
      return gcmOpenInto(request.key, request.nonce, request.aad, request.input, request.output);
    case 'payloadSeal':
      return payloadSealInto(request.secret, request.input, request.output);
    case 'payloadOpen': {
      const length = payloadOpenInto(request.secret, request.tag, request.input, request.output);
      if (length !== undefined && request.hash !== undefined) hashes.update(request.hash, request.output.subarray(0, length));
      return length;
    }
    case 'hashStart':
      hashes.start(request.hash);
      return undefined;
    case 'hashDigest':
      return hashes.digest(request.hash);
    case 'hashDrop':
      hashes.drop(request.hash);
      return undefined;
  }
}
