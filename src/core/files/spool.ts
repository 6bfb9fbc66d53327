/**
 * Sealed spool: an upload written to disk before we know who sends it (docs/http.md, Files and jobs: the
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
 * Throughput (a 1 GiB upload goes through here twice): chunks are sealed and opened (and an
 * upload hashed) by a chunk crypto (src/crypto/chunk-crypto.ts; the files service's runs on a worker
 * thread) into buffers allocated once per spool and reader, so a chunk costs the event loop no new
 * buffer; the writer fills the next chunk while the previous ones are sealed and written, and
 * readers fetch and open the next records while the current one is used, a few chunks each way
 * ({@link SPOOL_WRITE_BUFFERS}, {@link SPOOL_READ_AHEAD_RECORDS}) so the engine always has work
 * queued. Memory stays a few chunks, whatever the size.
 *
 * With ./archive.ts (the result ZIPs), the only module of the files capability that touches node:fs.
 */
import { open, readdir, stat, unlink, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { AppError } from '../../errors/index.ts';
import {
  SPOOL_CHUNK_OVERHEAD_BYTES,
  copyBytes,
  createChunkCrypto,
  createSpoolCipher,
  systemRandom,
  toHex,
  zeroize,
  type ChunkCrypto,
  type ChunkHash,
  type RandomSource,
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
  /**
   * Seals, opens and hashes the chunks (shared by the spools of a node; not closed here).
   * @default an inline one (`createChunkCrypto({ thread: false })`)
   */
  engine?: ChunkCrypto;
  /**
   * Asked before each write is accepted, with its byte count (after `maxBytes`): a throw refuses the
   * write, and the spool is destroyed with that error as over `maxBytes` — how an upload's bytes are
   * charged to a budget before they reach disk (./upload-budget.ts). @default every write accepted
   */
  admit?: (bytes: number) => void;
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
   * has not finished or was destroyed. Holds the current chunk and the next
   * {@link SPOOL_READ_AHEAD_RECORDS} (read ahead) in memory; may be called again.
   */
  read(): AsyncIterableIterator<Buffer>;
  /**
   * {@link read} without a copy: each chunk is a view into the reader's own buffers (shared memory
   * with a threaded engine, so it may go straight to the engine), valid only until `held` more
   * chunks are asked for (by default: until the next), and zeroed when the reader is done. For a
   * caller that uses each chunk at once, or a few at a time.
   */
  chunks(held?: number): AsyncIterableIterator<Buffer>;
  /**
   * Plaintext bytes `[start, end)` of a finished spool (random access, e.g. a ZIP's central directory
   * first), each chunk they touch authenticated; the last chunk opened is kept (and zeroed when
   * replaced or disposed of), so neighbouring reads open it once. Throws like {@link read}, and
   * RangeError outside `[0, bytes]`.
   */
  readRange(start: number, end: number): AsyncIterableIterator<Buffer>;
  /** Plaintext bytes `[start, start + target.length)` copied into `target` (as {@link readRange}). */
  readRangeInto(start: number, target: Uint8Array): Promise<void>;
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
  const engine = deps.engine ?? createChunkCrypto({ thread: false });
  const path = join(dir, `qk-spool-${toHex(cipher.spoolId)}.sealed`);
  let handle: FileHandle;
  try {
    handle = await open(path, 'wx', 0o600);
  } catch (err) {
    cipher.dispose();
    throw err;
  }
  const writebackBytes = options.fsync ? (options.writebackBytes ?? DEFAULT_WRITEBACK_BYTES) : 0;
  return new SealedSpoolWriter(path, handle, cipher, engine, chunkBytes, maxBytes, options.fsync ?? false, writebackBytes, options.sha256 ?? true, deps.admit);
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
 * Records a reader fetches and opens ahead of the one asked for. One is not enough with a threaded
 * engine: every record then costs a round trip to the worker through an event loop that is busy
 * with other work, and the worker sat idle between requests (mostly idle on the decrypt-file
 * bench); with a few queued it goes from one record to the next.
 */
export const SPOOL_READ_AHEAD_RECORDS = 3;

/**
 * Chunk buffers of a spool being written: the chunk being filled, and up to this many less one
 * being sealed and written meanwhile (see {@link SPOOL_READ_AHEAD_RECORDS} for why more than one).
 */
export const SPOOL_WRITE_BUFFERS = 4;

/**
 * The records of a sealed file, opened: record `i` on request, with records `i + 1` … `i +`
 * {@link SPOOL_READ_AHEAD_RECORDS} read and opened in the background meanwhile (a sequential reader
 * never waits for the disk or the AES of the next chunks). A ring of record and plaintext buffers,
 * one slot per record in flight or held, allocated on first use and reused: a plaintext handed out
 * is a view, valid until `held` more records are requested; every buffer is zeroed on close.
 */
class SealedRecordReader {
  private readonly handle: FileHandle;
  private readonly cipher: SpoolCipher;
  private readonly engine: ChunkCrypto;
  private readonly recordBytes: number;
  private readonly size: number;
  /** Records in the file: at least one (an empty input is one sealed empty chunk). */
  readonly count: number;
  /** Record `i` is read into `slots[i % slots.length]` and opened into its plaintext buffer. */
  private readonly slots: Array<{ record: Buffer; plaintext: Buffer } | undefined>;
  /** Records being fetched ahead, by index, and their plaintext to come (undefined: its tag failed). */
  private readonly ahead = new Map<number, Promise<Buffer | undefined>>();

  private constructor(handle: FileHandle, cipher: SpoolCipher, engine: ChunkCrypto, chunkBytes: number, size: number, held: number) {
    this.handle = handle;
    this.cipher = cipher;
    this.engine = engine;
    this.recordBytes = chunkBytes + SPOOL_CHUNK_OVERHEAD_BYTES;
    this.size = size;
    this.count = Math.max(1, Math.ceil(size / this.recordBytes));
    // The records ahead and the views held never share a slot: they are consecutive records.
    this.slots = new Array<undefined>(Math.min(this.count, SPOOL_READ_AHEAD_RECORDS + held)).fill(undefined);
  }

  static async open(path: string, cipher: SpoolCipher, engine: ChunkCrypto, chunkBytes: number, held = 1): Promise<SealedRecordReader> {
    if (!Number.isSafeInteger(held) || held < 1) throw new RangeError('held must be a positive integer');
    const handle = await open(path, 'r');
    try {
      return new SealedRecordReader(handle, cipher, engine, chunkBytes, (await handle.stat()).size, held);
    } catch (err) {
      await handle.close();
      throw err;
    }
  }

  /**
   * The plaintext of record `index`, authenticated (AppError `DECRYPTION_FAILED` when not): a view
   * into this reader's buffers, valid until `held` more calls (for sequential records).
   */
  async plaintext(index: number): Promise<Buffer> {
    let pending = this.ahead.get(index);
    this.ahead.delete(index);
    // Fetches of other records may still fill the slots this one and its followers use: let them
    // finish first (a sequential reader has none).
    await this.discardAhead((other) => other < index || pending === undefined);
    pending ??= this.fetch(index);
    const plaintext = await pending;
    if (plaintext === undefined) throw new AppError('DECRYPTION_FAILED', `Spool chunk ${index} failed authentication`);
    // The slot of the record `held` back (a view no longer valid) takes the last one ahead.
    for (let next = index + 1; next <= index + SPOOL_READ_AHEAD_RECORDS && next < this.count; next++) {
      if (this.ahead.has(next)) continue;
      const fetching = this.fetch(next);
      // A failure is reported to whoever asks for that record; nobody may, so keep it handled.
      fetching.catch(() => undefined);
      this.ahead.set(next, fetching);
    }
    return plaintext;
  }

  /** Stop fetching ahead, zero every buffer (given back to the engine) and close the file. */
  async close(): Promise<void> {
    await this.discardAhead(() => true);
    for (const slot of this.slots) this.engine.giveBack(slot?.record, slot?.plaintext);
    this.slots.fill(undefined);
    await this.handle.close();
  }

  /** Wait for the fetches ahead that `which` picks, forget them and zero what they opened (never handed out). */
  private async discardAhead(which: (index: number) => boolean): Promise<void> {
    for (const [index, fetching] of [...this.ahead]) {
      if (!which(index)) continue;
      this.ahead.delete(index);
      zeroize(await fetching.catch(() => undefined));
    }
  }

  private async fetch(index: number): Promise<Buffer | undefined> {
    if (index < 0 || index >= this.count) throw new RangeError(`no spool record ${index}`);
    const offset = index * this.recordBytes;
    const length = Math.max(0, Math.min(this.recordBytes, this.size - offset));
    const slotIndex = index % this.slots.length;
    let slot = this.slots[slotIndex];
    if (!slot) {
      const bufferBytes = Math.min(this.recordBytes, this.size);
      slot = { record: this.engine.borrow(bufferBytes), plaintext: this.engine.borrow(Math.max(0, bufferBytes - SPOOL_CHUNK_OVERHEAD_BYTES)) };
      this.slots[slotIndex] = slot;
    }
    const buffer = slot.record;
    let read = 0;
    while (read < length) {
      const { bytesRead } = await this.handle.read(buffer, read, length - read, offset + read);
      if (bytesRead === 0) break;
      read += bytesRead;
    }
    const opened = await this.cipher.openInto(this.engine, index, buffer.subarray(0, read), index === this.count - 1, slot.plaintext);
    return opened === undefined ? undefined : slot.plaintext.subarray(0, opened);
  }
}

/** A new buffer holding `bytes` (a memmove; `Buffer.from` copies shared memory byte by byte). */
function copyOf(bytes: Uint8Array): Buffer {
  const copy = Buffer.allocUnsafeSlow(bytes.length);
  copyBytes(bytes, copy);
  return copy;
}

/** Options of {@link readSealedFile}. */
export interface ReadSealedFileOptions {
  /** Opens the records. @default an inline one */
  engine?: ChunkCrypto;
  /** Asked before each chunk: a destroyed spool stops. @default always alive */
  alive?: () => boolean;
  /**
   * Yield views into the reader's buffers (valid until `held` more chunks are asked for, zeroed at
   * the end) rather than fresh copies the caller owns. @default false
   */
  inPlace?: boolean;
  /** With `inPlace`: how many chunks a view outlives. @default 1 */
  held?: number;
}

/**
 * The plaintext of the sealed file at `path`, chunk by chunk, authenticated in order (see
 * {@link SealedSpool.read} and {@link SealedSpool.chunks}). Throws AppError `DECRYPTION_FAILED` on
 * any tampering, and when the total is not `expectedBytes`.
 */
export async function* readSealedFile(
  path: string,
  cipher: SpoolCipher,
  chunkBytes: number,
  expectedBytes: number,
  options: ReadSealedFileOptions = {},
): AsyncGenerator<Buffer> {
  const alive = options.alive ?? (() => true);
  const records = await SealedRecordReader.open(path, cipher, options.engine ?? createChunkCrypto({ thread: false }), chunkBytes, options.inPlace ? (options.held ?? 1) : 1);
  try {
    let plainTotal = 0;
    for (let index = 0; index < records.count; index++) {
      if (!alive()) throw new AppError('DECRYPTION_FAILED', 'Spool was destroyed');
      const plaintext = await records.plaintext(index);
      plainTotal += plaintext.length;
      yield options.inPlace ? plaintext : copyOf(plaintext);
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
  private readonly engine: ChunkCrypto;
  private readonly chunkBytes: number;
  private readonly maxBytes: number;
  private readonly admit: ((bytes: number) => void) | undefined;
  /** The upload's SHA-256, fed as each chunk is sealed (in order, where the AES runs). */
  private hash: ChunkHash | undefined;
  /**
   * Chunk `i` is filled in `slots[i % slots.length].plain`, sealed into its `sealed` and written
   * from there; `done` settles once the slot's last chunk is sealed and written (the slot is then
   * free). Buffers are allocated on first use (a small upload takes one slot). Seals are requested
   * in chunk order, so the hash sees the chunks in order.
   */
  private readonly slots: Array<{ plain: Buffer; sealed: Buffer; done: Promise<void> }> = [];
  /** Plaintext bytes in the chunk being filled (`slots[nextIndex % slots.length].plain`): sealed only when more data arrives (not last) or at the end (last). */
  private pendingLength = 0;
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
    engine: ChunkCrypto,
    chunkBytes: number,
    maxBytes: number,
    fsync: boolean,
    writebackBytes: number,
    sha256: boolean,
    admit: ((bytes: number) => void) | undefined,
  ) {
    // autoDestroy off: a finished spool stays on disk to be read; errors destroy it explicitly.
    super({ autoDestroy: false, emitClose: true });
    this.path = path;
    this.handle = handle;
    this.cipher = cipher;
    this.engine = engine;
    this.chunkBytes = chunkBytes;
    this.maxBytes = maxBytes;
    this.admit = admit;
    this.fsync = fsync;
    // A file to be fsync'd is written back as it grows, so the final fsync has little left to do.
    this.writeback = writebackBytes > 0 ? new Writeback(handle, writebackBytes) : undefined;
    this.hash = sha256 ? engine.startHash() : undefined;
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
        // Every chunk is sealed and written: the buffers go back to the engine (a reader may take them).
        for (const slot of this.slots.splice(0)) this.engine.giveBack(slot.plain, slot.sealed);
        await this.writeback?.done();
        const handle = this.handle;
        this.handle = undefined;
        if (this.fsync) await handle?.sync();
        await handle?.close();
        const hash = this.hash;
        this.hash = undefined;
        if (hash) this.digest = await this.engine.digest(hash);
        callback();
      })
      .catch((err: unknown) => this.destroy(err instanceof Error ? err : new Error(String(err))));
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    const handle = this.handle;
    this.handle = undefined;
    const records = this.records;
    this.records = undefined;
    zeroize(this.cached?.plaintext);
    this.cached = undefined;
    void (async () => {
      // Nothing may still use the key, the buffers or the file once they are gone.
      await this.inFlight.catch(() => undefined);
      await this.writeback?.done().catch(() => undefined);
      await (await records?.catch(() => undefined))?.close().catch(() => undefined);
      if (this.hash) this.engine.dropHash(this.hash);
      this.hash = undefined;
      this.cipher.dispose();
      for (const slot of this.slots.splice(0)) this.engine.giveBack(slot.plain, slot.sealed);
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
    yield* readSealedFile(this.path, this.cipher, this.chunkBytes, this.total, { engine: this.engine, alive: () => !this.destroyed });
  }

  async *chunks(held = 1): AsyncIterableIterator<Buffer> {
    if (this.destroyed) throw new AppError('DECRYPTION_FAILED', 'Spool was destroyed');
    if (!this.writableFinished) throw new AppError('DECRYPTION_FAILED', 'Spool is not finished');
    yield* readSealedFile(this.path, this.cipher, this.chunkBytes, this.total, { engine: this.engine, alive: () => !this.destroyed, inPlace: true, held });
  }

  private checkRange(start: number, end: number): void {
    if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end) || start < 0 || end < start || end > this.total) {
      throw new RangeError(`range [${start}, ${end}) is outside the spool's ${this.total} bytes`);
    }
    if (this.destroyed) throw new AppError('DECRYPTION_FAILED', 'Spool was destroyed');
    if (!this.writableFinished) throw new AppError('DECRYPTION_FAILED', 'Spool is not finished');
  }

  /** Views of the plaintext of `[start, end)`, chunk by chunk; each valid until the next is read. */
  private async *views(start: number, end: number): AsyncGenerator<Uint8Array> {
    this.checkRange(start, end);
    let at = start;
    while (at < end) {
      const index = Math.floor(at / this.chunkBytes);
      const plaintext = await this.openChunk(index);
      const from = at - index * this.chunkBytes;
      const to = Math.min(plaintext.length, end - index * this.chunkBytes);
      if (to <= from) throw new AppError('DECRYPTION_FAILED', 'Spool is shorter than written');
      yield plaintext.subarray(from, to);
      at += to - from;
    }
  }

  async readRangeInto(start: number, target: Uint8Array): Promise<void> {
    let offset = 0;
    for await (const view of this.views(start, start + target.length)) offset += copyBytes(view, target, offset);
  }

  async *readRange(start: number, end: number): AsyncIterableIterator<Buffer> {
    // A copy: the cached chunk is a view into the reader's buffers, reused for the next chunks.
    for await (const view of this.views(start, end)) yield copyOf(view);
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
    this.records ??= SealedRecordReader.open(this.path, this.cipher, this.engine, this.chunkBytes);
    // The reader's view replaces the cached one (which may share its buffer); the reader zeroes both.
    this.cached = undefined;
    const plaintext = await (await this.records).plaintext(index);
    if (this.destroyed) {
      zeroize(plaintext);
      throw new AppError('DECRYPTION_FAILED', 'Spool was destroyed');
    }
    this.cached = { index, plaintext };
    return plaintext;
  }

  /** Count and buffer `data`, sealing (and hashing) each full chunk once more data follows it. */
  private async absorb(data: Uint8Array): Promise<void> {
    if (this.total + data.length > this.maxBytes) {
      throw new AppError('PAYLOAD_TOO_LARGE', `File exceeds ${this.maxBytes} bytes`, { limitBytes: this.maxBytes });
    }
    this.admit?.(data.length);
    this.total += data.length;
    let offset = 0;
    while (offset < data.length) {
      if (this.pendingLength === this.chunkBytes) await this.sealPending(false);
      const pending = await this.pendingSlot();
      const take = Math.min(this.chunkBytes - this.pendingLength, data.length - offset);
      copyBytes(data.subarray(offset, offset + take), pending.plain, this.pendingLength);
      this.pendingLength += take;
      offset += take;
    }
  }

  /** The slot of the chunk being filled, once free (its previous chunk sealed and written). */
  private async pendingSlot(): Promise<{ plain: Buffer; sealed: Buffer; done: Promise<void> }> {
    const at = this.nextIndex % SPOOL_WRITE_BUFFERS;
    let slot = this.slots[at];
    if (!slot) {
      slot = { plain: this.engine.borrow(this.chunkBytes), sealed: this.engine.borrow(this.chunkBytes + SPOOL_CHUNK_OVERHEAD_BYTES), done: Promise.resolve() };
      this.slots[at] = slot;
    } else if (this.pendingLength === 0) await slot.done;
    return slot;
  }

  /** Every seal and write started so far; rejects with the first failure. */
  private get inFlight(): Promise<void> {
    return Promise.all(this.slots.map((slot) => slot.done)).then(() => undefined);
  }

  /**
   * Hand the pending chunk to the engine to be sealed and appended, without waiting: the next
   * chunk fills another slot (waiting only when all are still being sealed or written), so the
   * engine always has the next chunks queued.
   */
  private async sealPending(last: boolean): Promise<void> {
    const slot = await this.pendingSlot();
    const handle = this.handle;
    if (!handle) throw new Error('spool file is closed');
    const index = this.nextIndex;
    const length = this.pendingLength;
    const at = this.offset;
    this.nextIndex += 1;
    this.offset += length + SPOOL_CHUNK_OVERHEAD_BYTES;
    this.pendingLength = 0;
    // Requested here, synchronously: seals reach the engine in chunk order.
    const sealedBytes = (async () => {
      try {
        return await this.cipher.sealInto(this.engine, index, slot.plain.subarray(0, length), last, slot.sealed, this.hash);
      } finally {
        zeroize(slot.plain.subarray(0, length));
      }
    })();
    const write = sealedBytes.then((bytes) => writeAll(handle, [slot.sealed.subarray(0, bytes)], at));
    slot.done = write;
    this.writeback?.wrote(at + length + SPOOL_CHUNK_OVERHEAD_BYTES, write);
    // Failures surface where `done` is awaited (the slot's reuse, the end); this only keeps them from being "unhandled".
    write.catch(() => undefined);
  }
}

/**
 * Remove spool files in `dir` last modified more than `olderThanMs` ago, or every one when it is
 * undefined (leftovers of a crash: their keys died with the process, so they are unreadable anyway).
 * Other files are left alone. Returns how many were removed.
 */
export async function sweepSpools(dir: string, olderThanMs?: number, now: number = Date.now()): Promise<number> {
  let removed = 0;
  for (const name of await readdir(dir)) {
    if (!SPOOL_FILE_RE.test(name)) continue;
    const path = join(dir, name);
    try {
      if (olderThanMs !== undefined && (await stat(path)).mtimeMs > now - olderThanMs) continue;
      await unlink(path);
      removed += 1;
    } catch (err) {
      // Removed meanwhile by its own spool: nothing to do.
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }
  return removed;
}
