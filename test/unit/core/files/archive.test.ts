/**
 * The `.cifer` ZIP writer (src/core/files/archive.ts): what it writes opens with yauzl (what the
 * decrypt path and the tests read with) and passes `unzip -t` (Info-ZIP, CRCs checked; those checks
 * skip without it unless `CI` is set) — an empty entry, the usual chunks + metadata.json, and more
 * entries than a plain ZIP can count (ZIP64 end records); a failing producer leaves nothing behind.
 */
import { execFile } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { crc32 } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import yauzl from 'yauzl';
import { writeZipFile, type ZipEntrySource } from '../../../../src/core/files/archive.ts';
import { cleanupStack, tempDir } from '../../../utils/temp.ts';
import { patterned, unzip } from '../../../utils/files.ts';
import { onPath, requireTool } from '../../../utils/tools.ts';

const stack = cleanupStack();
afterEach(() => stack.run());

const MTIME = new Date('2026-03-04T05:06:08Z');

/** Info-ZIP's unzip: its CRC-checking reading is a second opinion next to yauzl's. */
const unzipNeed = requireTool('archive (unzip -t checks)', "Info-ZIP's unzip", onPath('unzip'));

function entriesOf(contents: ReadonlyArray<[string, Buffer]>): ZipEntrySource[] {
  return contents.map(([name, bytes]) => ({ name, produce: async () => bytes }));
}

/** `unzip -t` on `path` (quietly: `-tq`): its report; it exits non-zero on any error (CRC included). */
async function unzipTest(path: string, quiet = false): Promise<string> {
  unzipNeed.assertPresent();
  const { stdout } = await promisify(execFile)('unzip', [quiet ? '-tq' : '-t', path], { maxBuffer: 64 * 1024 * 1024 });
  return stdout;
}

describe('writeZipFile', () => {
  it('writes stored entries that yauzl and unzip read back byte for byte, the empty one included', async () => {
    const dir = await tempDir(stack);
    const path = join(dir, 'a.cifer');
    const contents: Array<[string, Buffer]> = [
      ['chunk_0.enc', patterned(100_000, 1)],
      ['chunk_1.enc', Buffer.alloc(0)],
      ['chunk_2.enc', patterned(1234, 2)],
      ['metadata.json', Buffer.from(JSON.stringify({ chunkCount: 3, name: 'é.txt' }))],
    ];
    const size = await writeZipFile(path, entriesOf(contents), MTIME);
    const bytes = await readFile(path);
    expect(size).toBe(bytes.length);
    expect(await readdir(dir)).toEqual(['a.cifer']);

    const read = await unzip(bytes);
    expect([...read.keys()]).toEqual(contents.map(([name]) => name));
    for (const [name, content] of contents) expect(read.get(name)!.equals(content), name).toBe(true);

    const zip = await yauzl.fromBufferPromise(bytes, { lazyEntries: true });
    for await (const entry of zip.eachEntry()) {
      const content = contents.find(([name]) => name === entry.fileName)![1];
      expect(entry.compressionMethod).toBe(0);
      expect(entry.crc32).toBe(crc32(content));
      expect(entry.getLastModDate().getTime()).toBe(MTIME.getTime());
    }
    if (!unzipNeed.skip) expect(await unzipTest(path)).toMatch(/No errors detected/);
  });

  it('counts past 65,535 entries with ZIP64 end records', async () => {
    const dir = await tempDir(stack);
    const path = join(dir, 'many.zip');
    const count = 70_000;
    const entries: ZipEntrySource[] = Array.from({ length: count }, (_, i) => ({ name: `chunk_${i}.enc`, produce: async () => Buffer.from(String(i)) }));
    await writeZipFile(path, entries, MTIME);
    const bytes = await readFile(path);
    // The ZIP64 end-of-central-directory record and its locator precede the classic record.
    expect(bytes.readUInt32LE(bytes.length - 22 - 20 - 56)).toBe(0x06064b50);
    expect(bytes.readUInt32LE(bytes.length - 22 - 20)).toBe(0x07064b50);
    expect(bytes.readUInt16LE(bytes.length - 22 + 10)).toBe(0xffff);

    const zip = await yauzl.fromBufferPromise(bytes, { lazyEntries: true });
    expect(zip.entryCount).toBe(count);
    let seen = 0;
    let last: yauzl.Entry | undefined;
    for await (const entry of zip.eachEntry()) {
      expect(entry.fileName).toBe(`chunk_${seen}.enc`);
      seen += 1;
      last = entry;
    }
    expect(seen).toBe(count);
    const parts: Buffer[] = [];
    for await (const part of await zip.openReadStreamPromise(last!)) parts.push(part as Buffer);
    expect(Buffer.concat(parts).toString()).toBe(String(count - 1));
    if (!unzipNeed.skip) expect(await unzipTest(path, true)).toMatch(/No errors detected/);
  });

  it('writes an archive of one empty entry', async () => {
    const dir = await tempDir(stack);
    const path = join(dir, 'empty.zip');
    await writeZipFile(path, entriesOf([['chunk_0.enc', Buffer.alloc(0)]]), MTIME);
    const read = await unzip(await readFile(path));
    expect(read.get('chunk_0.enc')!.length).toBe(0);
    if (!unzipNeed.skip) expect(await unzipTest(path)).toMatch(/No errors detected/);
  });

  it('leaves nothing behind when a producer fails, while an earlier entry is still being written', async () => {
    const dir = await tempDir(stack);
    const path = join(dir, 'failed.zip');
    const entries: ZipEntrySource[] = [
      { name: 'chunk_0.enc', produce: async () => patterned(1 << 20) },
      {
        name: 'chunk_1.enc',
        produce: async () => {
          throw new Error('producer failed');
        },
      },
    ];
    await expect(writeZipFile(path, entries, MTIME, { writebackBytes: 1 })).rejects.toThrow('producer failed');
    expect(await readdir(dir)).toEqual([]);
  });

  it('takes a CRC it is given, writes a reused buffer before it is reused, and says when each is written', async () => {
    const dir = await tempDir(stack);
    const contents: Array<[string, Buffer]> = Array.from({ length: 12 }, (_, i) => [`chunk_${i}.enc`, patterned(20_000 + i, i)]);
    // Two buffers for twelve small entries: each must be written (not batched) before it comes back.
    const free: Buffer[] = [Buffer.alloc(30_000), Buffer.alloc(30_000)];
    const waiting: Array<(buffer: Buffer) => void> = [];
    let written = 0;
    const entries: ZipEntrySource[] = contents.map(([name, bytes]) => ({
      name,
      async produce() {
        const buffer: Buffer = free.pop() ?? (await new Promise<Buffer>((resolve) => waiting.push(resolve)));
        bytes.copy(buffer);
        return {
          data: buffer.subarray(0, bytes.length),
          crc32: crc32(bytes),
          written: () => {
            written += 1;
            buffer.fill(0xff);
            const next = waiting.shift();
            if (next) next(buffer);
            else free.push(buffer);
          },
        };
      },
    }));
    await writeZipFile(join(dir, 'pooled.zip'), entries, MTIME);
    await writeZipFile(join(dir, 'plain.zip'), entriesOf(contents), MTIME);
    expect(written).toBe(contents.length);
    expect((await readFile(join(dir, 'pooled.zip'))).equals(await readFile(join(dir, 'plain.zip')))).toBe(true);
  });

  it('writes the same archive whether or not it asks for write-back on the way', async () => {
    const dir = await tempDir(stack);
    const contents: Array<[string, Buffer]> = Array.from({ length: 20 }, (_, i) => [`chunk_${i}.enc`, patterned(50_000 + i, i)]);
    await writeZipFile(join(dir, 'a.zip'), entriesOf(contents), MTIME, { writebackBytes: 0 });
    await writeZipFile(join(dir, 'b.zip'), entriesOf(contents), MTIME, { writebackBytes: 100_000 });
    expect((await readFile(join(dir, 'a.zip'))).equals(await readFile(join(dir, 'b.zip')))).toBe(true);
  });
});
