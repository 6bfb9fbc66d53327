/**
 * The backup archive format (src/backup/archive.ts, docs/operations.md "Archive format"): what is
 * written reads back item for item, and a truncated, altered, padded or foreign archive is refused.
 */
import { describe, expect, it } from 'vitest';
import { sublevelOf } from '../../../src/store/index.ts';
import { ARCHIVE_FORMAT_VERSION, ArchiveError, decodeArchive, encodeArchive, type ArchiveItem, type BackupHeader } from '../../../src/backup/archive.ts';

const header: BackupHeader = {
  format: ARCHIVE_FORMAT_VERSION,
  clusterId: 'qk-test',
  nodeId: 'node-3',
  nodeAddress: '0x' + 'ab'.repeat(20),
  slot: 3,
  createdAt: 1_700_000_000_000,
  source: 'node',
  storeSchemaVersion: 1,
  storageKeyCheck: 'cd'.repeat(16),
  includesKeys: false,
};

const bytes = (s: string) => new Uint8Array(Buffer.from(s, 'utf8'));

const entries = [
  { key: bytes('!log!0xaa!000000000001'), value: bytes('{"kind":"probe"}') },
  { key: bytes('!log!0xaa!000000000002'), value: bytes('{"kind":"probe","body":"ü"}') },
  { key: bytes('!shares!000000000007'), value: bytes('"b64box"') },
  // An empty value and a key with every byte value.
  { key: bytes('!meta!empty'), value: new Uint8Array(0) },
  { key: new Uint8Array(Array.from({ length: 256 }, (_, i) => i)), value: new Uint8Array([0, 255, 0]) },
];

async function* from<T>(items: Iterable<T>): AsyncGenerator<T> {
  yield* items;
}

async function encode(options: { files?: Array<{ name: string; content: Uint8Array }>; includesKeys?: boolean } = {}): Promise<Buffer> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of encodeArchive({
    header: { ...header, includesKeys: options.includesKeys ?? (options.files?.length ?? 0) > 0 },
    entries: from(entries),
    files: options.files ?? [],
    groupOf: (key) => sublevelOf(key) ?? '(root)',
    facts: () => ({ ownSeq: 2 }),
  })) {
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/** Decode `archive` delivered in chunks of `chunkSize` bytes. */
async function decode(archive: Uint8Array, chunkSize = 7): Promise<ArchiveItem[]> {
  const chunks: Uint8Array[] = [];
  for (let at = 0; at < archive.length; at += chunkSize) chunks.push(archive.subarray(at, at + chunkSize));
  const items: ArchiveItem[] = [];
  for await (const item of decodeArchive(from(chunks))) items.push(item);
  return items;
}

async function refusal(archive: Uint8Array): Promise<ArchiveError> {
  const err = await decode(archive).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err, 'the archive was accepted').toBeInstanceOf(ArchiveError);
  return err as ArchiveError;
}

describe('backup archive format', () => {
  it('round trip: header, every entry byte for byte, files and the summary, whatever the chunking', async () => {
    const keyFile = { name: 'storage.key', content: bytes('00'.repeat(32) + '\n') };
    const archive = await encode({ files: [keyFile] });
    expect(archive.subarray(0, 8).toString('latin1')).toBe('QKBACKUP');
    for (const chunkSize of [1, 7, 4096, archive.length]) {
      const items = await decode(archive, chunkSize);
      expect(items[0]).toEqual({ type: 'header', header: { ...header, includesKeys: true } });
      const got = items.filter((i) => i.type === 'entry').map((i) => ({ key: Buffer.from(i.key).toString('hex'), value: Buffer.from(i.value).toString('hex') }));
      expect(got).toEqual(entries.map((e) => ({ key: Buffer.from(e.key).toString('hex'), value: Buffer.from(e.value).toString('hex') })));
      const file = items.find((i) => i.type === 'file');
      expect(file && Buffer.from(file.content).equals(Buffer.from(keyFile.content))).toBe(true);
      expect(items.at(-1)).toEqual({ type: 'summary', summary: { entries: 5, files: 1, counts: { log: 2, shares: 1, meta: 1, '(root)': 1 }, facts: { ownSeq: 2 } } });
    }
  });

  it('a truncated archive is refused, wherever it was cut', async () => {
    const archive = await encode();
    const cuts = new Set([0, 3, 9, 10, 12, 40, Math.floor(archive.length / 2), archive.length - 33, archive.length - 32, archive.length - 1]);
    for (const cut of cuts) {
      const err = await refusal(archive.subarray(0, cut));
      expect(err.code, `cut at ${cut} of ${archive.length}`).toMatch(cut < 10 ? /NOT_AN_ARCHIVE/ : /TRUNCATED/);
    }
  });

  it('an altered byte anywhere after the preamble fails the SHA-256 (or the framing) check', async () => {
    const archive = await encode();
    for (const at of [12, 30, 120, archive.length - 40, archive.length - 1]) {
      const altered = Buffer.from(archive);
      altered[at] = altered[at]! ^ 0x01;
      const err = await refusal(altered);
      expect(['CORRUPT', 'TRUNCATED'], `byte ${at}`).toContain(err.code);
    }
    // An entry's value changed: only the digest can tell.
    const valueAt = archive.indexOf(Buffer.from('"b64box"'));
    const altered = Buffer.from(archive);
    altered[valueAt + 1] = 'c'.charCodeAt(0);
    const err = await refusal(altered);
    expect(err.code).toBe('CORRUPT');
    expect(err.message).toMatch(/SHA-256 mismatch/);
  });

  it('bytes after the digest, another format version and foreign files are refused', async () => {
    const archive = await encode();
    expect((await refusal(Buffer.concat([archive, Buffer.from([0])]))).message).toMatch(/after the digest/);
    const newer = Buffer.from(archive);
    newer.writeUInt16BE(ARCHIVE_FORMAT_VERSION + 1, 8);
    expect((await refusal(newer)).code).toBe('UNSUPPORTED_VERSION');
    expect((await refusal(Buffer.from('{"not":"an archive"}'))).code).toBe('NOT_AN_ARCHIVE');
    expect((await refusal(new Uint8Array(0))).code).toBe('NOT_AN_ARCHIVE');
  });

  it('a header that claims keys without key files (or the reverse) is refused', async () => {
    expect((await refusal(await encode({ includesKeys: true }))).message).toMatch(/keys are included/);
    expect((await refusal(await encode({ files: [{ name: 'signing.key', content: bytes('x') }], includesKeys: false }))).message).toMatch(/keys are included/);
  });
});
