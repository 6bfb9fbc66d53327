/**
 * The backup archive format (docs/operations.md, "Archive format"): a self-describing, streamable
 * container for a node's store entries, checked end to end by SHA-256 so a truncated or altered
 * archive is refused before anything it holds is used.
 *
 * ```
 * "QKBACKUP" (8 bytes) ‖ format version (u16 BE) ‖ frame* ‖ SHA-256 (32 bytes)
 * frame = type (u8) ‖ payload length (u32 BE) ‖ payload
 *   0x01 header  JSON ({@link BackupHeader}); exactly one, first
 *   0x02 entry   key length (u32 BE) ‖ key ‖ value       (one raw LevelDB key/value)
 *   0x03 file    name length (u16 BE) ‖ name ‖ content   (keys directory, only with --include-keys)
 *   0x04 summary JSON ({@link BackupSummary}); exactly one, last
 * ```
 *
 * The digest covers every byte before it, magic included. Counts in the summary must match the
 * frames read. Pure: no file system, no store — callers bring the byte streams.
 */
import { createHash } from 'node:crypto';

/** First bytes of every archive. */
export const ARCHIVE_MAGIC = 'QKBACKUP';
/** The version this build writes and reads. */
export const ARCHIVE_FORMAT_VERSION = 1;
/** Largest frame accepted: store values are small; anything larger is a corrupted length. */
export const MAX_FRAME_BYTES = 64 * 1024 * 1024;
const DIGEST_BYTES = 32;
const PREAMBLE_BYTES = ARCHIVE_MAGIC.length + 2;
const FRAME_HEAD_BYTES = 5;

const FRAME = { header: 0x01, entry: 0x02, file: 0x03, summary: 0x04 } as const;

/** What an archive says about itself; written first, so it can be shown without reading the rest. */
export interface BackupHeader {
  /** {@link ARCHIVE_FORMAT_VERSION}. */
  format: number;
  clusterId: string;
  nodeId: string;
  /** The node's address (0x…), as in the cluster file. */
  nodeAddress: string;
  /** Member slot, `null` for a gateway. */
  slot: number | null;
  /** When the snapshot was taken, Unix ms. */
  createdAt: number;
  /** `node`: streamed by the running node; `offline`: read from a stopped node's store by the CLI. */
  source: 'node' | 'offline';
  /** Store schema version of the entries (src/store, STORE_SCHEMA_VERSION). */
  storeSchemaVersion: number;
  /**
   * A one-way check value of the node's storage key (a tagged SHA-256, 128 bits): lets `restore`
   * tell whether the keys it finds can open the archive's shares, without the key being stored.
   */
  storageKeyCheck: string;
  /** True when the keys directory is in the archive (`--include-keys`): then it is as sensitive as the node. */
  includesKeys: boolean;
}

/** Written last: what the archive holds, plus facts the writer gathered while streaming. */
export interface BackupSummary {
  /** Store entries. */
  entries: number;
  /** Files of the keys directory. */
  files: number;
  /** Entries per sublevel (or whatever grouping the writer's `groupOf` gives). */
  counts: Record<string, number>;
  /** The writer's own facts (e.g. the version vector of the snapshot). */
  facts: Record<string, unknown>;
}

/** One item of an archive, in order. */
export type ArchiveItem =
  | { type: 'header'; header: BackupHeader }
  | { type: 'entry'; key: Uint8Array; value: Uint8Array }
  | { type: 'file'; name: string; content: Uint8Array }
  | { type: 'summary'; summary: BackupSummary };

/** Why an archive was refused. */
export type ArchiveErrorCode = 'TRUNCATED' | 'CORRUPT' | 'NOT_AN_ARCHIVE' | 'UNSUPPORTED_VERSION';

/** An archive that cannot be used. */
export class ArchiveError extends Error {
  readonly code: ArchiveErrorCode;

  constructor(code: ArchiveErrorCode, message: string) {
    super(message);
    this.name = 'ArchiveError';
    this.code = code;
  }
}

/** Input of {@link encodeArchive}. */
export interface ArchiveContent {
  header: BackupHeader;
  entries: AsyncIterable<{ key: Uint8Array; value: Uint8Array }>;
  /** Files after the entries (the keys directory). @default none */
  files?: Iterable<{ name: string; content: Uint8Array }>;
  /** Group of an entry for the summary's counts. @default everything in "entries" */
  groupOf?: (key: Uint8Array) => string;
  /** Facts for the summary, asked once every entry has been read. @default {} */
  facts?: () => Record<string, unknown>;
}

function u32(n: number): Uint8Array {
  const b = new Uint8Array(4);
  new DataView(b.buffer).setUint32(0, n);
  return b;
}

function u16(n: number): Uint8Array {
  const b = new Uint8Array(2);
  new DataView(b.buffer).setUint16(0, n);
  return b;
}

function frame(type: number, ...parts: Uint8Array[]): Uint8Array {
  const length = parts.reduce((n, p) => n + p.length, 0);
  if (length > MAX_FRAME_BYTES) throw new Error(`backup archive: a frame of ${length} bytes exceeds ${MAX_FRAME_BYTES}`);
  return Buffer.concat([Uint8Array.of(type), u32(length), ...parts]);
}

const json = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));

/** Encode an archive as a stream of chunks (one per frame), digest last. */
export async function* encodeArchive(content: ArchiveContent): AsyncGenerator<Uint8Array> {
  const hash = createHash('sha256');
  const emit = (bytes: Uint8Array) => {
    hash.update(bytes);
    return bytes;
  };
  yield emit(Buffer.concat([Buffer.from(ARCHIVE_MAGIC, 'latin1'), u16(ARCHIVE_FORMAT_VERSION)]));
  yield emit(frame(FRAME.header, json(content.header)));
  const counts: Record<string, number> = {};
  let entries = 0;
  for await (const { key, value } of content.entries) {
    const group = content.groupOf?.(key) ?? 'entries';
    counts[group] = (counts[group] ?? 0) + 1;
    entries++;
    yield emit(frame(FRAME.entry, u32(key.length), key, value));
  }
  let files = 0;
  for (const file of content.files ?? []) {
    const name = new TextEncoder().encode(file.name);
    files++;
    yield emit(frame(FRAME.file, u16(name.length), name, file.content));
  }
  const summary: BackupSummary = { entries, files, counts, facts: content.facts?.() ?? {} };
  yield emit(frame(FRAME.summary, json(summary)));
  yield new Uint8Array(hash.digest());
}

/** Reads exact byte counts from a chunk stream. */
function byteReader(source: AsyncIterable<Uint8Array>) {
  const it = source[Symbol.asyncIterator]();
  let buffered: Buffer = Buffer.alloc(0);
  let ended = false;
  return {
    /** Exactly `n` bytes, or fewer only at the end of the stream. */
    async read(n: number): Promise<Buffer> {
      while (buffered.length < n && !ended) {
        const next = await it.next();
        if (next.done) ended = true;
        else buffered = buffered.length === 0 ? Buffer.from(next.value) : Buffer.concat([buffered, next.value]);
      }
      const out = buffered.subarray(0, n);
      buffered = buffered.subarray(out.length);
      return out;
    },
    /** True when nothing is left. */
    async atEnd(): Promise<boolean> {
      if (buffered.length > 0) return false;
      while (!ended) {
        const next = await it.next();
        if (next.done) ended = true;
        else if (next.value.length > 0) {
          buffered = Buffer.from(next.value);
          return false;
        }
      }
      return true;
    },
  };
}

function parseJson<T>(bytes: Uint8Array, what: string): T {
  try {
    return JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes)) as T;
  } catch {
    throw new ArchiveError('CORRUPT', `backup archive: the ${what} is not valid JSON`);
  }
}

const HEADER_STRINGS = ['clusterId', 'nodeId', 'nodeAddress', 'storageKeyCheck'] as const;

function checkHeader(raw: unknown): BackupHeader {
  const h = raw as Partial<BackupHeader> | null;
  const ok =
    !!h &&
    typeof h === 'object' &&
    HEADER_STRINGS.every((k) => typeof h[k] === 'string') &&
    (h.slot === null || Number.isInteger(h.slot)) &&
    Number.isSafeInteger(h.createdAt) &&
    (h.source === 'node' || h.source === 'offline') &&
    Number.isInteger(h.storeSchemaVersion) &&
    typeof h.includesKeys === 'boolean';
  if (!ok) throw new ArchiveError('CORRUPT', 'backup archive: malformed header');
  return h as BackupHeader;
}

function checkSummary(raw: unknown): BackupSummary {
  const s = raw as Partial<BackupSummary> | null;
  const ok =
    !!s &&
    typeof s === 'object' &&
    Number.isSafeInteger(s.entries) &&
    Number.isSafeInteger(s.files) &&
    !!s.counts &&
    typeof s.counts === 'object' &&
    !!s.facts &&
    typeof s.facts === 'object';
  if (!ok) throw new ArchiveError('CORRUPT', 'backup archive: malformed summary');
  return s as BackupSummary;
}

/**
 * Decode an archive, item by item. The digest is checked only after the summary, so **nothing read
 * may be trusted until the iteration completes**: a consumer writes what it reads somewhere
 * disposable and keeps it only when the loop ends without an {@link ArchiveError}.
 */
export async function* decodeArchive(source: AsyncIterable<Uint8Array>): AsyncGenerator<ArchiveItem> {
  const reader = byteReader(source);
  const hash = createHash('sha256');
  const take = async (n: number, what: string): Promise<Buffer> => {
    const bytes = await reader.read(n);
    if (bytes.length < n) throw new ArchiveError('TRUNCATED', `backup archive: truncated (ended inside the ${what})`);
    hash.update(bytes);
    return bytes;
  };
  const preamble = await reader.read(PREAMBLE_BYTES);
  if (preamble.length < PREAMBLE_BYTES || preamble.subarray(0, ARCHIVE_MAGIC.length).toString('latin1') !== ARCHIVE_MAGIC) {
    throw new ArchiveError('NOT_AN_ARCHIVE', 'not a quorumkeep backup archive');
  }
  hash.update(preamble);
  const version = preamble.readUInt16BE(ARCHIVE_MAGIC.length);
  if (version !== ARCHIVE_FORMAT_VERSION) {
    throw new ArchiveError('UNSUPPORTED_VERSION', `backup archive: format version ${version}; this build reads version ${ARCHIVE_FORMAT_VERSION}`);
  }
  let header: BackupHeader | undefined;
  const counted = { entries: 0, files: 0 };
  for (;;) {
    const head = await take(FRAME_HEAD_BYTES, 'frame header');
    const type = head[0]!;
    const length = head.readUInt32BE(1);
    if (length > MAX_FRAME_BYTES) throw new ArchiveError('CORRUPT', `backup archive: frame length ${length} is out of range`);
    const payload = await take(length, 'frame');
    if (header === undefined && type !== FRAME.header) throw new ArchiveError('CORRUPT', 'backup archive: the header is missing');
    switch (type) {
      case FRAME.header: {
        if (header !== undefined) throw new ArchiveError('CORRUPT', 'backup archive: a second header');
        header = checkHeader(parseJson(payload, 'header'));
        if (header.format !== ARCHIVE_FORMAT_VERSION) throw new ArchiveError('CORRUPT', 'backup archive: the header names another format version');
        yield { type: 'header', header };
        break;
      }
      case FRAME.entry: {
        if (counted.files > 0) throw new ArchiveError('CORRUPT', 'backup archive: an entry after the files');
        if (payload.length < 4) throw new ArchiveError('CORRUPT', 'backup archive: malformed entry');
        const keyLength = payload.readUInt32BE(0);
        if (keyLength > payload.length - 4) throw new ArchiveError('CORRUPT', 'backup archive: malformed entry');
        counted.entries++;
        yield { type: 'entry', key: payload.subarray(4, 4 + keyLength), value: payload.subarray(4 + keyLength) };
        break;
      }
      case FRAME.file: {
        if (payload.length < 2) throw new ArchiveError('CORRUPT', 'backup archive: malformed file');
        const nameLength = payload.readUInt16BE(0);
        if (nameLength > payload.length - 2) throw new ArchiveError('CORRUPT', 'backup archive: malformed file');
        const name = payload.subarray(2, 2 + nameLength).toString('utf8');
        counted.files++;
        yield { type: 'file', name, content: payload.subarray(2 + nameLength) };
        break;
      }
      case FRAME.summary: {
        const summary = checkSummary(parseJson(payload, 'summary'));
        const digest = await reader.read(DIGEST_BYTES);
        if (digest.length < DIGEST_BYTES) throw new ArchiveError('TRUNCATED', 'backup archive: truncated (the digest is missing)');
        if (!digest.equals(hash.digest())) throw new ArchiveError('CORRUPT', 'backup archive: SHA-256 mismatch (the archive was altered or damaged)');
        if (!(await reader.atEnd())) throw new ArchiveError('CORRUPT', 'backup archive: bytes after the digest');
        if (summary.entries !== counted.entries || summary.files !== counted.files) {
          throw new ArchiveError('CORRUPT', `backup archive: the summary counts ${summary.entries} entries and ${summary.files} files, the archive holds ${counted.entries} and ${counted.files}`);
        }
        if (header!.includesKeys !== counted.files > 0) throw new ArchiveError('CORRUPT', 'backup archive: the header and the files disagree on whether keys are included');
        yield { type: 'summary', summary };
        return;
      }
      default:
        throw new ArchiveError('CORRUPT', `backup archive: unknown frame type ${type}`);
    }
  }
}
