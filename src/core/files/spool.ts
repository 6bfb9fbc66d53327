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
 * Throughput (a 1 GiB upload goes through here twice): chunks are sealed and opened with the
 * cipher's threadpool variants, so the AES runs beside the event loop; the writer fills the next
 * chunk while the previous one is sealed and written (two chunk buffers), and readers fetch and open
 * the next record while the current one is used. Memory stays a few chunks, whatever the size.
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
import { DEFAULT_WRITEBACK_BYTES, Writeback, writeAll } from './archive.ts';

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
  /** fsync the file when the spool finishes (a result that must survive a crash). @default false */
  fsync?: boolean;
  /**
   * With `fsync`: start writing back every this many bytes while the spool is written, so the final
   * fsync has little left (see ./archive.ts, Writeback). 0 = only the final fsync.
   * @default {@link DEFAULT_WRITEBACK_BYTES}
   */
  writebackBytes?: number;
  /**
   * Hash the plaintext as it is written ({@link SealedSpool.sha256}). Off where nobody reads the
   * hash: an uploaded `.cifer` archive, a decrypt result (hashed by its job): a SHA-256 pass over
   * every byte is one of the larger costs of a file job. @default true
   */
  sha256?: boolean;
}

/** Dependencies of {@link createSealedSpool}. */
export interface SealedSpoolDeps {
  /** Source of the key and spool id. @default the system CSPRNG */
  random?: RandomSource;
  /**
   * The cipher to seal with (its key exported first, for a file kept after the process, e.g. a
   * decrypt result); the spool owns it and disposes of it. @default a fresh one from `random`
   */
  cipher?: SpoolCipher;
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
  /**
   * SHA-256 of the whole plaintext; available once the spool has finished (`finish` emitted), unless
   * the spool was created with `sha256: false`.
   */
  readonly sha256: Uint8Array | undefined;
  /**
   * The plaintext, chunk by chunk, decrypted and authenticated in order. Throws (AppError
   * `DECRYPTION_FAILED`) on any tampered, reordered, missing or truncated chunk, and when the spool
   * has not finished or was destroyed. Holds the current chunk and the next one (read ahead) in
   * memory; may be called again.
   */
  read(): AsyncIterableIterator<Buffer>;
  /**
   * Plaintext bytes `[start, end)` of a finished spool (random access, e.g. a ZIP's central directory
   * first), each chunk they touch authenticated; the last chunk opened is kept (and zeroed when
   * replaced or disposed of), so neighbouring reads open it once. Throws like {@link read}, and
   * RangeError outside `[0, bytes]`.
   */
  readRange(start: number, end: number): AsyncIterableIterator<Buffer>;
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
  const cipher = deps.cipher ?? createSpoolCipher(deps.random ?? systemRandom);
  const path = join(dir, `qk-spool-${toHex(cipher.spoolId)}.sealed`);
  let handle: FileHandle;
  try {
    handle = await open(path, 'wx', 0o600);
  } catch (err) {
    cipher.dispose();
    throw err;
  }
  const writebackBytes = options.fsync ? (options.writebackBytes ?? DEFAULT_WRITEBACK_BYTES) : 0;
  return new SealedSpoolWriter(path, handle, cipher, chunkBytes, maxBytes, options.fsync ?? false, writebackBytes, options.sha256 ?? true);
}

/**
 * Plaintext bytes of a sealed file of `fileBytes` bytes: each record adds a tag, and an empty input
 * is one bare tag.
 */
export function sealedPlaintextBytes(fileBytes: number, chunkBytes: number): number {
  const records = Math.max(1, Math.ceil(fileBytes / (chunkBytes + SPOOL_CHUNK_OVERHEAD_BYTES)));
  return fileBytes - records * SPOOL_CHUNK_OVERHEAD_BYTES;
}

/**
 * The records of a sealed file, opened: record `i` on request, with record `i + 1` read and opened
 * in the background meanwhile (a sequential reader never waits for the disk or the AES of the next
 * chunk). Two record buffers, reused; each plaintext is a fresh buffer the caller owns.
 */
class SealedRecordReader {
  private readonly handle: FileHandle;
  private readonly cipher: SpoolCipher;
  private readonly recordBytes: number;
  private readonly size: number;
  /** Records in the file: at least one (an empty input is one sealed empty chunk). */
  readonly count: number;
  private readonly buffers: [Buffer, Buffer];
  /** The record being fetched ahead, and its plaintext to come (undefined: its tag failed). */
  private ahead: { index: number; plaintext: Promise<Buffer | undefined> } | undefined;

  private constructor(handle: FileHandle, cipher: SpoolCipher, chunkBytes: number, size: number) {
    this.handle = handle;
    this.cipher = cipher;
    this.recordBytes = chunkBytes + SPOOL_CHUNK_OVERHEAD_BYTES;
    this.size = size;
    this.count = Math.max(1, Math.ceil(size / this.recordBytes));
    const bufferBytes = Math.min(this.recordBytes, size);
    this.buffers = [Buffer.alloc(bufferBytes), Buffer.alloc(bufferBytes)];
  }

  static async open(path: string, cipher: SpoolCipher, chunkBytes: number): Promise<SealedRecordReader> {
    const handle = await open(path, 'r');
    try {
      return new SealedRecordReader(handle, cipher, chunkBytes, (await handle.stat()).size);
    } catch (err) {
      await handle.close();
      throw err;
    }
  }

  /** The plaintext of record `index`, authenticated (AppError `DECRYPTION_FAILED` when not). */
  async plaintext(index: number): Promise<Buffer> {
    let pending: Promise<Buffer | undefined>;
    if (this.ahead?.index === index) pending = this.ahead.plaintext;
    else {
      // Its buffer may be the one a fetch ahead still fills: let that finish first.
      await this.ahead?.plaintext.catch(() => undefined);
      this.discardAhead();
      pending = this.fetch(index);
    }
    this.ahead = undefined;
    const plaintext = await pending;
    if (plaintext === undefined) throw new AppError('DECRYPTION_FAILED', `Spool chunk ${index} failed authentication`);
    if (index + 1 < this.count) {
      const next = this.fetch(index + 1);
      // A failure is reported to whoever asks for that record; nobody may, so keep it handled.
      next.catch(() => undefined);
      this.ahead = { index: index + 1, plaintext: next };
    }
    return plaintext;
  }

  /** Stop fetching ahead and close the file. */
  async close(): Promise<void> {
    await this.ahead?.plaintext.catch(() => undefined);
    this.discardAhead();
    await this.handle.close();
  }

  private discardAhead(): void {
    const ahead = this.ahead;
    this.ahead = undefined;
    // Plaintext fetched ahead and never handed out is zeroed.
    void ahead?.plaintext.then((plaintext) => plaintext?.fill(0), () => undefined);
  }

  private async fetch(index: number): Promise<Buffer | undefined> {
    if (index < 0 || index >= this.count) throw new RangeError(`no spool record ${index}`);
    const offset = index * this.recordBytes;
    const length = Math.max(0, Math.min(this.recordBytes, this.size - offset));
    const buffer = this.buffers[index % 2]!;
    let read = 0;
    while (read < length) {
      const { bytesRead } = await this.handle.read(buffer, read, length - read, offset + read);
      if (bytesRead === 0) break;
      read += bytesRead;
    }
    return this.cipher.openAsync(index, buffer.subarray(0, read), index === this.count - 1);
  }
}

/**
 * The plaintext of the sealed file at `path`, chunk by chunk, authenticated in order (see
 * {@link SealedSpool.read}); `alive()` is asked before each chunk (a destroyed spool stops). Throws
 * AppError `DECRYPTION_FAILED` on any tampering, and when the total is not `expectedBytes`.
 */
export async function* readSealedFile(
  path: string,
  cipher: SpoolCipher,
  chunkBytes: number,
  expectedBytes: number,
  alive: () => boolean = () => true,
): AsyncGenerator<Buffer> {
  const records = await SealedRecordReader.open(path, cipher, chunkBytes);
  try {
    let plainTotal = 0;
    for (let index = 0; index < records.count; index++) {
      if (!alive()) throw new AppError('DECRYPTION_FAILED', 'Spool was destroyed');
      const plaintext = await records.plaintext(index);
      plainTotal += plaintext.length;
      yield plaintext;
    }
    if (plainTotal !== expectedBytes) throw new AppError('DECRYPTION_FAILED', 'Spool length does not match what was written');
  } finally {
    await records.close();
  }
}

class SealedSpoolWriter extends Writable implements SealedSpool {
  readonly path: string;
  private handle: FileHandle | undefined;
  private readonly cipher: SpoolCipher;
  private readonly chunkBytes: number;
  private readonly maxBytes: number;
  private readonly hash: Sha256Stream | undefined;
  /** The chunk being filled: sealed only when more data arrives (not last) or at the end (last). */
  private pending: Buffer;
  private pendingLength = 0;
  /** The other chunk buffer: free, or being sealed and written by {@link inFlight}. */
  private spare: Buffer;
  /** The seal and write of the previous chunk (at most one at a time); rejects with its failure. */
  private inFlight: Promise<void> = Promise.resolve();
  /** File offset of the next record. */
  private offset = 0;
  private nextIndex = 0;
  private total = 0;
  private digest: Uint8Array | undefined;
  private readonly gone: Promise<void>;
  private readonly fsync: boolean;
  private readonly writeback: Writeback | undefined;
  /** Reads the finished spool for {@link readRange} (opened on first use, closed on destroy). */
  private records: Promise<SealedRecordReader> | undefined;
  /** The chunk {@link readRange} opened last, kept for the next read nearby. */
  private cached: { index: number; plaintext: Buffer } | undefined;
  /** The {@link openChunk} in progress (they run one after another). */
  private opening: Promise<void> = Promise.resolve();

  constructor(
    path: string,
    handle: FileHandle,
    cipher: SpoolCipher,
    chunkBytes: number,
    maxBytes: number,
    fsync: boolean,
    writebackBytes: number,
    sha256: boolean,
  ) {
    // autoDestroy off: a finished spool stays on disk to be read; errors destroy it explicitly.
    super({ autoDestroy: false, emitClose: true });
    this.path = path;
    this.handle = handle;
    this.cipher = cipher;
    this.chunkBytes = chunkBytes;
    this.maxBytes = maxBytes;
    this.fsync = fsync;
    // A file to be fsync'd is written back as it grows, so the final fsync has little left to do.
    this.writeback = writebackBytes > 0 ? new Writeback(handle, writebackBytes) : undefined;
    this.hash = sha256 ? createSha256Stream() : undefined;
    this.pending = Buffer.alloc(chunkBytes);
    this.spare = Buffer.alloc(chunkBytes);
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
    // Copied into the chunk buffer before the callback: the caller may reuse or zero `data` then.
    this.absorb(data).then(
      () => callback(),
      (err: unknown) => this.destroy(err instanceof Error ? err : new Error(String(err))),
    );
  }

  override _final(callback: (error?: Error | null) => void): void {
    this.sealPending(true)
      .then(async () => {
        await this.inFlight;
        await this.writeback?.done();
        const handle = this.handle;
        this.handle = undefined;
        if (this.fsync) await handle?.sync();
        await handle?.close();
        this.digest = this.hash?.digest();
        callback();
      })
      .catch((err: unknown) => this.destroy(err instanceof Error ? err : new Error(String(err))));
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    const handle = this.handle;
    this.handle = undefined;
    const records = this.records;
    this.records = undefined;
    this.cached?.plaintext.fill(0);
    this.cached = undefined;
    void (async () => {
      // Nothing may still use the key, the buffers or the file once they are gone.
      await this.inFlight.catch(() => undefined);
      await this.writeback?.done().catch(() => undefined);
      await (await records?.catch(() => undefined))?.close().catch(() => undefined);
      this.cipher.dispose();
      zeroize(this.pending);
      zeroize(this.spare);
      this.pendingLength = 0;
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
    yield* readSealedFile(this.path, this.cipher, this.chunkBytes, this.total, () => !this.destroyed);
  }

  async *readRange(start: number, end: number): AsyncIterableIterator<Buffer> {
    if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end) || start < 0 || end < start || end > this.total) {
      throw new RangeError(`range [${start}, ${end}) is outside the spool's ${this.total} bytes`);
    }
    if (this.destroyed) throw new AppError('DECRYPTION_FAILED', 'Spool was destroyed');
    if (!this.writableFinished) throw new AppError('DECRYPTION_FAILED', 'Spool is not finished');
    let at = start;
    while (at < end) {
      const index = Math.floor(at / this.chunkBytes);
      const plaintext = await this.openChunk(index);
      const from = at - index * this.chunkBytes;
      const to = Math.min(plaintext.length, end - index * this.chunkBytes);
      // A copy: the cached chunk is zeroed when it is replaced.
      yield Buffer.from(plaintext.subarray(from, to));
      at += to - from;
    }
  }

  /**
   * Chunk `index` of the finished spool, authenticated (from the cache when it was the last opened).
   * One at a time: the record reader keeps one fetch ahead and two buffers, for one caller.
   */
  private openChunk(index: number): Promise<Buffer> {
    const opened = this.opening.then(() => this.openChunkNow(index));
    this.opening = opened.then(
      () => undefined,
      () => undefined,
    );
    return opened;
  }

  private async openChunkNow(index: number): Promise<Buffer> {
    if (this.cached?.index === index) return this.cached.plaintext;
    if (this.destroyed) throw new AppError('DECRYPTION_FAILED', 'Spool was destroyed');
    this.records ??= SealedRecordReader.open(this.path, this.cipher, this.chunkBytes);
    const plaintext = await (await this.records).plaintext(index);
    if (this.destroyed) {
      plaintext.fill(0);
      throw new AppError('DECRYPTION_FAILED', 'Spool was destroyed');
    }
    this.cached?.plaintext.fill(0);
    this.cached = { index, plaintext };
    return plaintext;
  }

  /** Hash, count and buffer `data`, sealing each full chunk once more data follows it. */
  private async absorb(data: Uint8Array): Promise<void> {
    if (this.total + data.length > this.maxBytes) {
      throw new AppError('PAYLOAD_TOO_LARGE', `File exceeds ${this.maxBytes} bytes`, { limitBytes: this.maxBytes });
    }
    this.total += data.length;
    this.hash?.update(data);
    let offset = 0;
    while (offset < data.length) {
      if (this.pendingLength === this.chunkBytes) await this.sealPending(false);
      const take = Math.min(this.chunkBytes - this.pendingLength, data.length - offset);
      this.pending.set(data.subarray(offset, offset + take), this.pendingLength);
      this.pendingLength += take;
      offset += take;
    }
  }

  /**
   * Hand the pending chunk to the threadpool to be sealed and appended, and go on filling the other
   * buffer; waits only for the previous chunk's seal and write (so at most two chunks are held).
   */
  private async sealPending(last: boolean): Promise<void> {
    await this.inFlight;
    const handle = this.handle;
    if (!handle) throw new Error('spool file is closed');
    const buffer = this.pending;
    const length = this.pendingLength;
    const index = this.nextIndex;
    const at = this.offset;
    this.nextIndex += 1;
    this.offset += length + SPOOL_CHUNK_OVERHEAD_BYTES;
    this.pending = this.spare;
    this.pendingLength = 0;
    this.spare = buffer;
    this.inFlight = (async () => {
      let sealed: Buffer;
      try {
        sealed = await this.cipher.sealAsync(index, buffer.subarray(0, length), last);
      } finally {
        buffer.fill(0, 0, length);
      }
      await writeAll(handle, [sealed], at);
      this.writeback?.wrote(at + sealed.length, Promise.resolve());
    })();
    // Failures surface where `inFlight` is awaited; this only keeps them from being "unhandled".
    this.inFlight.catch(() => undefined);
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
