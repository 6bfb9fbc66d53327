/**
 * The chunk cipher of a sealed spool (issue 12: an upload is spooled to disk before we know who
 * sends it, and plaintext never touches disk). Each spool has its own random AES-256 key, held only
 * in memory, so the nonce can simply be the chunk index: a (key, nonce) pair never repeats. The
 * associated data binds the spool id, the chunk index and a "last chunk" flag, so a chunk moved to
 * another place or spool, a reordering and a truncation after any chunk all fail the tag.
 *
 * Each operation comes twice: synchronous (node:crypto, on the calling thread, a fresh buffer out)
 * and into a caller's buffer through a {@link ChunkCrypto} (./chunk-crypto.ts: on its worker thread,
 * beside the event loop, allocating nothing there): a file job on a 1 GiB upload seals and opens
 * every byte at least once. Both produce the same bytes.
 */
import { createCipheriv, createDecipheriv, createHash, type KeyObject } from 'node:crypto';
import { systemRandom, utf8, zeroize, type RandomSource } from './bytes.ts';
import { AES_256_KEY_BYTES, AES_GCM_NONCE_BYTES, AES_GCM_TAG_BYTES, secretKeyOf } from './at-rest.ts';
import type { ChunkCrypto, ChunkHash } from './chunk-crypto.ts';

/** Length of a spool id, in bytes (random; also names the spool file). */
export const SPOOL_ID_BYTES = 16;
/** Bytes a sealed chunk adds to its plaintext: the GCM tag. */
export const SPOOL_CHUNK_OVERHEAD_BYTES = AES_GCM_TAG_BYTES;

/** Domain label at the start of every chunk's associated data. */
const SPOOL_AAD_LABEL = utf8('quorumkeep/spool/v1');

/** Seals and opens the chunks of one spool; `dispose()` zeroes the key. */
export interface SpoolCipher {
  /** The spool's random id, bound into every chunk. */
  readonly spoolId: Uint8Array;
  /** Ciphertext ‖ tag of chunk `index`; `last` marks the final chunk. */
  seal(index: number, plaintext: Uint8Array, last: boolean): Buffer;
  /** The plaintext of chunk `index`, or undefined when its tag fails (tampered, moved, wrong `last`). */
  open(index: number, sealed: Uint8Array, last: boolean): Buffer | undefined;
  /**
   * {@link seal} into `output` (at least 16 bytes longer than `plaintext`) through `engine`, after
   * hashing `plaintext` into `hash`; resolves to the record's length. Neither buffer may change
   * until the promise settles (another thread may use them).
   */
  sealInto(engine: ChunkCrypto, index: number, plaintext: Uint8Array, last: boolean, output: Uint8Array, hash?: ChunkHash): Promise<number>;
  /**
   * {@link open} into `output` through `engine`: the plaintext's length, or undefined when the tag
   * fails (nothing of it is then in `output`). Neither buffer may change until the promise settles.
   */
  openInto(engine: ChunkCrypto, index: number, sealed: Uint8Array, last: boolean, output: Uint8Array): Promise<number | undefined>;
  /**
   * A copy of the key (the caller seals it at rest and zeroes the copy): for a sealed file that must
   * outlive the process, such as a decrypt job's result.
   */
  exportKey(): Uint8Array;
  /** Zero the key bytes and drop the key object; later calls throw. Idempotent. */
  dispose(): void;
}

function nonceOf(index: number): Buffer {
  if (!Number.isSafeInteger(index) || index < 0) throw new RangeError('chunk index must be a non-negative safe integer');
  const nonce = Buffer.alloc(AES_GCM_NONCE_BYTES);
  nonce.writeBigUInt64BE(BigInt(index), AES_GCM_NONCE_BYTES - 8);
  return nonce;
}

function aadOf(spoolId: Uint8Array, index: number, last: boolean): Buffer {
  const aad = Buffer.alloc(SPOOL_AAD_LABEL.length + spoolId.length + 8 + 1);
  aad.set(SPOOL_AAD_LABEL, 0);
  aad.set(spoolId, SPOOL_AAD_LABEL.length);
  aad.writeBigUInt64BE(BigInt(index), SPOOL_AAD_LABEL.length + spoolId.length);
  aad[aad.length - 1] = last ? 1 : 0;
  return aad;
}

/** A fresh spool cipher: a random 32-byte key and a random {@link SPOOL_ID_BYTES}-byte id. */
export function createSpoolCipher(random: RandomSource = systemRandom): SpoolCipher {
  return openSpoolCipher(random(AES_256_KEY_BYTES), random(SPOOL_ID_BYTES));
}

/**
 * The cipher of an existing sealed file, from its key (exported by {@link SpoolCipher.exportKey}) and
 * id. Takes ownership of `keyBytes`: `dispose()` zeroes them.
 */
export function openSpoolCipher(keyBytes: Uint8Array, spoolId: Uint8Array): SpoolCipher {
  if (keyBytes.length !== AES_256_KEY_BYTES) throw new RangeError(`spool key must be ${AES_256_KEY_BYTES} bytes`);
  if (spoolId.length !== SPOOL_ID_BYTES) throw new RangeError(`spool id must be ${SPOOL_ID_BYTES} bytes`);
  // The KeyObject copy lives in OpenSSL memory and is freed with the object (see secretKeyOf).
  let key: KeyObject | undefined = secretKeyOf(keyBytes);
  const live = (): KeyObject => {
    if (!key) throw new Error('spool cipher disposed');
    return key;
  };
  return {
    spoolId,
    seal(index, plaintext, last) {
      const cipher = createCipheriv('aes-256-gcm', live(), nonceOf(index), { authTagLength: AES_GCM_TAG_BYTES });
      cipher.setAAD(aadOf(spoolId, index, last));
      const head = cipher.update(plaintext);
      const tail = cipher.final();
      return Buffer.concat([head, tail, cipher.getAuthTag()]);
    },
    open(index, sealed, last) {
      if (sealed.length < AES_GCM_TAG_BYTES) return undefined;
      const tagStart = sealed.length - AES_GCM_TAG_BYTES;
      const decipher = createDecipheriv('aes-256-gcm', live(), nonceOf(index), { authTagLength: AES_GCM_TAG_BYTES });
      decipher.setAAD(aadOf(spoolId, index, last));
      decipher.setAuthTag(sealed.subarray(tagStart));
      const head = decipher.update(sealed.subarray(0, tagStart));
      try {
        const tail = decipher.final();
        return tail.length === 0 ? head : Buffer.concat([head, tail]);
      } catch {
        // Bytes released before the tag check are unauthenticated: leave none behind.
        head.fill(0);
        return undefined;
      }
    },
    async sealInto(engine, index, plaintext, last, output, hash) {
      return engine.seal(live(), nonceOf(index), aadOf(spoolId, index, last), plaintext, output, hash);
    },
    async openInto(engine, index, sealed, last, output) {
      return engine.open(live(), nonceOf(index), aadOf(spoolId, index, last), sealed, output);
    },
    exportKey() {
      live();
      return new Uint8Array(keyBytes);
    },
    dispose() {
      zeroize(keyBytes);
      key = undefined;
    },
  };
}

/** An incremental SHA-256 (e.g. the `originalHash` of a streamed upload). */
export interface Sha256Stream {
  update(data: Uint8Array): void;
  /** The 32-byte digest; call once. */
  digest(): Uint8Array;
}

/** A new incremental SHA-256. */
export function createSha256Stream(): Sha256Stream {
  const hash = createHash('sha256');
  return {
    update: (data) => void hash.update(data),
    digest: () => new Uint8Array(hash.digest()),
  };
}
