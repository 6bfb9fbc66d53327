/**
 * The `.cifer` ZIP reader (docs/api.md, Files and jobs): the only importer of yauzl. A decrypt job
 * opens the archive — an uploaded one through its sealed spool, read at random offsets (the central
 * directory is at the end), or an encrypt job's result on disk — checks its shape before the job is
 * accepted, then reads one chunk at a time.
 *
 * What is checked before a job starts: the archive parses; `metadata.json` is present, at most
 * {@link CiferArchiveLimits.maxMetadataBytes}, and consistent (`chunkCount` chunks of `chunkSize`
 * covering `originalSize`, one 1104-byte cifer per chunk); `chunk_0.enc` … `chunk_<n-1>.enc` are all
 * present and none is larger than a sealed chunk can be. The chunks' contents are authenticated by
 * their GCM tags as they are decrypted, and the whole plaintext by `originalHash` at the end.
 */
import { Readable } from 'node:stream';
import yauzl from 'yauzl';
import { z } from 'zod';
import { AppError } from '../../errors/index.ts';
import { AES_GCM_TAG_BYTES, CIFER_BYTES, copyBytes, fromBase64 } from '../../crypto/index.ts';

/** Random access to the bytes of an archive (a sealed spool's plaintext). */
export interface RangeSource {
  /** Total bytes. */
  readonly bytes: number;
  /** Bytes `[start, end)`. */
  readRange(start: number, end: number): AsyncIterable<Buffer>;
  /**
   * Bytes `[start, start + target.length)` copied into `target`: how {@link CiferArchive.chunkInto}
   * reads a stored chunk without a buffer of its own. Without it, chunks are read through yauzl.
   */
  readInto?(start: number, target: Uint8Array): Promise<void>;
}

/** Bounds on what an archive may hold (so a hostile archive costs little memory). */
export interface CiferArchiveLimits {
  /** Entries in the central directory. */
  maxEntries: number;
  /** Bytes of `metadata.json`. */
  maxMetadataBytes: number;
  /** Largest `chunkSize` (plaintext bytes per chunk) accepted: one chunk is held in memory at a time. */
  maxChunkBytes: number;
  /** Largest `originalSize` accepted. */
  maxOriginalBytes: number;
}

const metadataSchema = z.object({
  secretId: z.union([z.number().int().positive(), z.string().regex(/^[1-9][0-9]{0,15}$/).transform(Number)]),
  chainId: z.union([z.number().int(), z.string().regex(/^-?[0-9]{1,16}$/).transform(Number)]),
  originalName: z.string().max(1024),
  originalSize: z.number().int().nonnegative(),
  originalHash: z.string().regex(/^(0x)?[0-9a-fA-F]{64}$/).transform((h) => h.replace(/^0x/, '').toLowerCase()),
  chunkCount: z.number().int().positive(),
  chunkSize: z.number().int().positive(),
  cifers: z.array(z.string().max(4096)),
});

/** `metadata.json` of a `.cifer` archive, checked. */
export type CiferMetadata = z.infer<typeof metadataSchema>;

/** An open archive whose shape has been checked. */
export interface CiferArchive {
  readonly metadata: CiferMetadata;
  /** The encrypted message of chunk `index` (its envelope's `cifer` is `metadata.cifers[index]`). */
  chunk(index: number): Promise<Buffer>;
  /**
   * {@link chunk} into `target` (at least `metadata.chunkSize + 16` bytes): its length. A stored
   * entry is read straight from the source into `target` (its local header checked as yauzl does);
   * any other goes through {@link chunk}.
   */
  chunkInto(index: number, target: Uint8Array): Promise<number>;
  /** The decoded 1104-byte cifer of chunk `index`. */
  cifer(index: number): Uint8Array;
  /** Release the archive (its file handle, when opened from a path). Idempotent. */
  close(): void;
}

function invalid(detail: string): AppError {
  return new AppError('BAD_REQUEST', `Invalid ZIP format: ${detail}`);
}

/** yauzl over a {@link RangeSource}. */
class RangeSourceReader extends yauzl.RandomAccessReader {
  private readonly source: RangeSource;
  constructor(source: RangeSource) {
    super();
    this.source = source;
  }
  override _readStreamForRange(start: number, end: number): Readable {
    return Readable.from(this.source.readRange(start, end));
  }
}

function decodeCifer(metadata: CiferMetadata, index: number): Uint8Array {
  let bytes: Uint8Array;
  try {
    bytes = fromBase64(metadata.cifers[index] ?? '');
  } catch {
    throw invalid(`cifers[${index}] is not base64`);
  }
  if (bytes.length !== CIFER_BYTES) throw invalid(`cifers[${index}] is not ${CIFER_BYTES} bytes`);
  return bytes;
}

const LOCAL_HEADER_SIGNATURE = 0x04034b50;
const LOCAL_HEADER_BYTES = 30;

/**
 * Where a stored, unencrypted entry's bytes start in `source`, read from its local header as yauzl
 * reads it (signature, then name and extra field lengths); undefined for an entry yauzl must
 * inflate. Throws `invalid` on what yauzl would refuse.
 */
async function storedDataStart(source: RangeSource & { readInto(start: number, target: Uint8Array): Promise<void> }, entry: yauzl.Entry, index: number): Promise<number | undefined> {
  if (entry.compressionMethod !== 0 || (entry.generalPurposeBitFlag & 0x1) !== 0 || entry.compressedSize !== entry.uncompressedSize) return undefined;
  const at = entry.relativeOffsetOfLocalHeader;
  if (at + LOCAL_HEADER_BYTES > source.bytes) throw invalid(`chunk_${index}.enc is unreadable`);
  const header = Buffer.alloc(LOCAL_HEADER_BYTES);
  await source.readInto(at, header);
  if (header.readUInt32LE(0) !== LOCAL_HEADER_SIGNATURE) throw invalid(`chunk_${index}.enc is unreadable`);
  const start = at + LOCAL_HEADER_BYTES + header.readUInt16LE(26) + header.readUInt16LE(28);
  if (start + entry.compressedSize > source.bytes) throw invalid(`chunk_${index}.enc is unreadable`);
  return start;
}

async function readEntry(zip: yauzl.ZipFile, entry: yauzl.Entry): Promise<Buffer> {
  const stream = await zip.openReadStreamPromise(entry);
  const parts: Buffer[] = [];
  for await (const part of stream) parts.push(part as Buffer);
  // A stored chunk usually arrives in one piece: no copy of it then.
  return parts.length === 1 ? parts[0]! : Buffer.concat(parts);
}

/**
 * Open a `.cifer` archive and check its shape (see the module comment). 400 `Invalid ZIP format: …`
 * for anything a client sent wrong; other failures (the spool's own) propagate as they are.
 */
export async function openCiferArchive(source: RangeSource | { path: string }, limits: CiferArchiveLimits): Promise<CiferArchive> {
  const options = { lazyEntries: true, autoClose: false, validateEntrySizes: true, strictFileNames: false, decodeStrings: true };
  let zip: yauzl.ZipFile;
  try {
    zip = 'path' in source ? await yauzl.openPromise(source.path, options) : await yauzl.fromRandomAccessReaderPromise(new RangeSourceReader(source), source.bytes, options);
  } catch (err) {
    if (err instanceof AppError) throw err;
    throw invalid('not a ZIP archive');
  }
  try {
    if (zip.entryCount > limits.maxEntries) throw invalid(`more than ${limits.maxEntries} entries`);
    const entries = new Map<string, yauzl.Entry>();
    try {
      for await (const entry of zip.eachEntry()) entries.set(entry.fileName, entry);
    } catch (err) {
      if (err instanceof AppError) throw err;
      throw invalid('unreadable central directory');
    }
    const metaEntry = entries.get('metadata.json');
    if (!metaEntry) throw invalid('missing metadata.json');
    if (metaEntry.uncompressedSize > limits.maxMetadataBytes) throw invalid('metadata.json is too large');
    let raw: unknown;
    try {
      raw = JSON.parse((await readEntry(zip, metaEntry)).toString('utf8'));
    } catch (err) {
      if (err instanceof AppError) throw err;
      throw invalid('metadata.json is not JSON');
    }
    const parsed = metadataSchema.safeParse(raw);
    if (!parsed.success) throw invalid(`metadata.json: ${parsed.error.issues[0]?.path.join('.') || 'shape'} is invalid`);
    const metadata = parsed.data;
    if (metadata.chunkSize > limits.maxChunkBytes) throw invalid(`chunkSize exceeds ${limits.maxChunkBytes} bytes`);
    if (metadata.originalSize > limits.maxOriginalBytes) throw new AppError('PAYLOAD_TOO_LARGE', `originalSize exceeds ${limits.maxOriginalBytes} bytes`, { limitBytes: limits.maxOriginalBytes });
    if (metadata.chunkCount !== Math.max(1, Math.ceil(metadata.originalSize / metadata.chunkSize))) throw invalid('chunkCount does not match originalSize and chunkSize');
    if (metadata.cifers.length !== metadata.chunkCount) throw invalid('cifers must hold one entry per chunk');
    const chunks: yauzl.Entry[] = [];
    for (let i = 0; i < metadata.chunkCount; i++) {
      const entry = entries.get(`chunk_${i}.enc`);
      if (!entry) throw invalid(`missing chunk_${i}.enc`);
      if (entry.uncompressedSize > metadata.chunkSize + AES_GCM_TAG_BYTES) throw invalid(`chunk_${i}.enc is larger than a chunk`);
      chunks.push(entry);
    }
    entries.clear();
    for (let i = 0; i < metadata.chunkCount; i++) decodeCifer(metadata, i);
    let closed = false;
    const chunk = async (index: number): Promise<Buffer> => {
      const entry = chunks[index];
      if (!entry) throw new RangeError(`no chunk ${index}`);
      try {
        return await readEntry(zip, entry);
      } catch (err) {
        if (err instanceof AppError) throw err;
        throw invalid(`chunk_${index}.enc is unreadable`);
      }
    };
    const direct = !('path' in source) && source.readInto ? (source as RangeSource & { readInto(start: number, target: Uint8Array): Promise<void> }) : undefined;
    return {
      metadata,
      chunk,
      async chunkInto(index, target) {
        const entry = chunks[index];
        if (!entry) throw new RangeError(`no chunk ${index}`);
        const start = direct ? await storedDataStart(direct, entry, index) : undefined;
        if (start === undefined) {
          const bytes = await chunk(index);
          if (bytes.length > target.length) throw invalid(`chunk_${index}.enc is larger than a chunk`);
          return copyBytes(bytes, target);
        }
        if (entry.compressedSize > target.length) throw invalid(`chunk_${index}.enc is larger than a chunk`);
        try {
          await direct!.readInto(start, target.subarray(0, entry.compressedSize));
        } catch (err) {
          if (err instanceof AppError) throw err;
          throw invalid(`chunk_${index}.enc is unreadable`);
        }
        return entry.compressedSize;
      },
      cifer: (index) => decodeCifer(metadata, index),
      close() {
        if (closed) return;
        closed = true;
        zip.close();
      },
    };
  } catch (err) {
    zip.close();
    throw err;
  }
}
