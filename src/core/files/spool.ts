/**
 * Sealed spool: an upload written to disk before we know who sends it (API.md, Files and jobs: the
 * multipart `file` part precedes `data`/`signature`), without its plaintext ever touching disk.
 *
 * The input is cut into fixed-size chunks, each sealed with AES-256-GCM under a throwaway key held
 * only in memory (../../crypto/spool-cipher.ts), and appended to a 0600 file with an unguessable
 * name. A crash leaves only ciphertext nobody can open; {@link sweepSpools} removes such leftovers.
 *
 * File format: records of `chunkBytes + 16` bytes (ciphertext ‖ tag), the last one shorter unless the
 * input is a multiple of `chunkBytes`; an empty input is one empty chunk (a bare tag), so even an
 * empty spool authenticates. The last chunk is flagged in its associated data: dropping it, or
 * cutting the file anywhere, fails the tag of what is then read as the last record.
 *
 * With ./archive.ts (the result ZIPs), the only module of the files capability that touches node:fs.
 */
import { open, readdir, stat, unlink, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { AppError } from '../../errors/index.ts';
import {
  SPOOL_CHUNK_OVERHEAD_BYTES,
  createSha256Stream,
  createSpoolCipher,
  systemRandom,
  toHex,
  zeroize,
  type RandomSource,
  type Sha256Stream,
  type SpoolCipher,
} from '../../crypto/index.ts';

/** Default plaintext bytes per sealed chunk: 1 MiB. */
export const DEFAULT_SPOOL_CHUNK_BYTES = 1024 * 1024;

/** Every spool file is named `qk-spool-<32 hex>.sealed`; {@link sweepSpools} removes only those. */
const SPOOL_FILE_RE = /^qk-spool-[0-9a-f]{32}\.sealed$/;

/** Options of {@link createSealedSpool}. */
export interface SealedSpoolOptions {
  /** Plaintext bytes per sealed chunk. @default {@link DEFAULT_SPOOL_CHUNK_BYTES} */
  chunkBytes?: number;
  /**
   * Largest plaintext accepted, in bytes: one byte more fails the write with a 413
   * `PAYLOAD_TOO_LARGE` and removes the file. @default Infinity
   */
  maxBytes?: number;
}

/** Dependencies of {@link createSealedSpool}. */
export interface SealedSpoolDeps {
  /** Source of the key and spool id. @default the system CSPRNG */
  random?: RandomSource;
}

/**
 * A spool being written (a node Writable: `pipeline(upload, spool)`) and, once finished, read back.
 * `destroy()` (the Writable's, idempotent; also what any error does) removes the file and zeroes the
 * key; {@link SealedSpool.dispose} does the same and waits until the file is gone.
 */
export interface SealedSpool extends Writable {
  /** Path of the sealed file (ciphertext only). */
  readonly path: string;
  /** Plaintext bytes accepted so far. */
  readonly bytes: number;
  /** SHA-256 of the whole plaintext; available once the spool has finished (`finish` emitted). */
  readonly sha256: Uint8Array | undefined;
  /**
   * The plaintext, chunk by chunk, decrypted and authenticated in order. Throws (AppError
   * `DECRYPTION_FAILED`) on any tampered, reordered, missing or truncated chunk, and when the spool
   * has not finished or was destroyed. Holds one chunk in memory at a time; may be called again.
   */
  read(): AsyncIterableIterator<Buffer>;
  /** Destroy the spool and resolve once its file is removed and its key zeroed. Idempotent. */
  dispose(): Promise<void>;
}

/**
 * Create a sealed spool in `dir` (which must exist): the file is created (mode 0600, exclusive)
 * before this resolves.
 */
export async function createSealedSpool(dir: string, options: SealedSpoolOptions = {}, deps: SealedSpoolDeps = {}): Promise<SealedSpool> {
  const chunkBytes = options.chunkBytes ?? DEFAULT_SPOOL_CHUNK_BYTES;
  if (!Number.isSafeInteger(chunkBytes) || chunkBytes < 1) throw new RangeError('chunkBytes must be a positive integer');
  const maxBytes = options.maxBytes ?? Infinity;
  const cipher = createSpoolCipher(deps.random ?? systemRandom);
  const path = join(dir, `qk-spool-${toHex(cipher.spoolId)}.sealed`);
  let handle: FileHandle;
  try {
    handle = await open(path, 'wx', 0o600);
  } catch (err) {
    cipher.dispose();
    throw err;
  }
  return new SealedSpoolWriter(path, handle, cipher, chunkBytes, maxBytes);
}

class SealedSpoolWriter extends Writable implements SealedSpool {
  readonly path: string;
  private handle: FileHandle | undefined;
  private readonly cipher: SpoolCipher;
  private readonly chunkBytes: number;
  private readonly maxBytes: number;
  private readonly hash: Sha256Stream;
  /** The chunk being filled: sealed only when more data arrives (not last) or at the end (last). */
  private pending: Buffer;
  private pendingLength = 0;
  private nextIndex = 0;
  private total = 0;
  private digest: Uint8Array | undefined;
  private readonly gone: Promise<void>;

  constructor(path: string, handle: FileHandle, cipher: SpoolCipher, chunkBytes: number, maxBytes: number) {
    // autoDestroy off: a finished spool stays on disk to be read; errors destroy it explicitly.
    super({ autoDestroy: false, emitClose: true });
    this.path = path;
    this.handle = handle;
    this.cipher = cipher;
    this.chunkBytes = chunkBytes;
    this.maxBytes = maxBytes;
    this.hash = createSha256Stream();
    this.pending = Buffer.alloc(chunkBytes);
    this.gone = new Promise((resolve) => this.once('close', () => resolve()));
  }

  get bytes(): number {
    return this.total;
  }

  get sha256(): Uint8Array | undefined {
    return this.digest;
  }

  override _write(chunk: unknown, encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    const data = typeof chunk === 'string' ? Buffer.from(chunk, encoding) : (chunk as Uint8Array);
    this.absorb(data).then(
      () => callback(),
      (err: unknown) => this.destroy(err instanceof Error ? err : new Error(String(err))),
    );
  }

  override _final(callback: (error?: Error | null) => void): void {
    this.sealPending(true).then(
      async () => {
        const handle = this.handle;
        this.handle = undefined;
        await handle?.close();
        this.digest = this.hash.digest();
        callback();
      },
      (err: unknown) => this.destroy(err instanceof Error ? err : new Error(String(err))),
    );
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    const handle = this.handle;
    this.handle = undefined;
    this.cipher.dispose();
    zeroize(this.pending);
    this.pendingLength = 0;
    void (async () => {
      await handle?.close().catch(() => undefined);
      await unlink(this.path).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== 'ENOENT') throw err;
      });
    })().then(
      () => callback(error),
      (unlinkErr: unknown) => callback(error ?? (unlinkErr as Error)),
    );
  }

  async dispose(): Promise<void> {
    this.destroy();
    await this.gone;
  }

  async *read(): AsyncIterableIterator<Buffer> {
    if (this.destroyed) throw new AppError('DECRYPTION_FAILED', 'Spool was destroyed');
    if (!this.writableFinished) throw new AppError('DECRYPTION_FAILED', 'Spool is not finished');
    const handle = await open(this.path, 'r');
    try {
      const size = (await handle.stat()).size;
      const recordBytes = this.chunkBytes + SPOOL_CHUNK_OVERHEAD_BYTES;
      let offset = 0;
      let index = 0;
      let plainTotal = 0;
      // One record buffer for the whole read: only the plaintext of the current chunk is allocated.
      const record = Buffer.alloc(Math.min(recordBytes, size));
      // At least one record, even for an empty file: an empty spool is one empty sealed chunk.
      do {
        if (this.destroyed) throw new AppError('DECRYPTION_FAILED', 'Spool was destroyed');
        const length = Math.min(recordBytes, size - offset);
        const { bytesRead } = length > 0 ? await handle.read(record, 0, length, offset) : { bytesRead: 0 };
        offset += bytesRead;
        const last = offset >= size;
        const plaintext = this.cipher.open(index, record.subarray(0, bytesRead), last);
        if (plaintext === undefined) throw new AppError('DECRYPTION_FAILED', `Spool chunk ${index} failed authentication`);
        plainTotal += plaintext.length;
        index += 1;
        yield plaintext;
      } while (offset < size);
      if (plainTotal !== this.total) throw new AppError('DECRYPTION_FAILED', 'Spool length does not match what was written');
    } finally {
      await handle.close();
    }
  }

  /** Hash, count and buffer `data`, sealing each full chunk once more data follows it. */
  private async absorb(data: Uint8Array): Promise<void> {
    if (this.total + data.length > this.maxBytes) {
      throw new AppError('PAYLOAD_TOO_LARGE', `File exceeds ${this.maxBytes} bytes`, { limitBytes: this.maxBytes });
    }
    this.total += data.length;
    this.hash.update(data);
    let offset = 0;
    while (offset < data.length) {
      if (this.pendingLength === this.chunkBytes) await this.sealPending(false);
      const take = Math.min(this.chunkBytes - this.pendingLength, data.length - offset);
      this.pending.set(data.subarray(offset, offset + take), this.pendingLength);
      this.pendingLength += take;
      offset += take;
    }
  }

  private async sealPending(last: boolean): Promise<void> {
    const handle = this.handle;
    if (!handle) throw new Error('spool file is closed');
    const sealed = this.cipher.seal(this.nextIndex, this.pending.subarray(0, this.pendingLength), last);
    this.nextIndex += 1;
    this.pending.fill(0, 0, this.pendingLength);
    this.pendingLength = 0;
    let written = 0;
    while (written < sealed.length) {
      const { bytesWritten } = await handle.write(sealed, written, sealed.length - written);
      written += bytesWritten;
    }
  }
}

/**
 * Remove spool files in `dir` last modified more than `olderThanMs` ago (leftovers of a crash: their
 * keys died with the process, so they are unreadable anyway). Other files are left alone. Returns
 * how many were removed.
 */
export async function sweepSpools(dir: string, olderThanMs: number, now: number = Date.now()): Promise<number> {
  let removed = 0;
  for (const name of await readdir(dir)) {
    if (!SPOOL_FILE_RE.test(name)) continue;
    const path = join(dir, name);
    try {
      if ((await stat(path)).mtimeMs > now - olderThanMs) continue;
      await unlink(path);
      removed += 1;
    } catch (err) {
      // Removed meanwhile by its own spool: nothing to do.
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }
  return removed;
}
