/**
 * The `.cifer` reader's shape checks (src/core/files/cifer-archive.ts): every refusal names what is
 * wrong, and a well-formed archive opens from a path and from a sealed spool alike.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { openCiferArchive, type CiferArchiveLimits } from '../../../../src/core/files/cifer-archive.ts';
import { createSealedSpool } from '../../../../src/core/files/spool.ts';
import { CIFER_BYTES, toBase64 } from '../../../../src/crypto/index.ts';
import { cleanupStack, tempDir } from '../../../utils/temp.ts';
import { zipOf } from '../../../utils/files.ts';

const stack = cleanupStack();
afterEach(() => stack.run());

const LIMITS: CiferArchiveLimits = { maxEntries: 10, maxMetadataBytes: 64 * 1024, maxChunkBytes: 1000, maxOriginalBytes: 10_000 };
const CIFER = toBase64(new Uint8Array(CIFER_BYTES).fill(7));

function metadata(overrides: Record<string, unknown> = {}) {
  return { secretId: 3, chainId: -1, originalName: 'a.txt', originalSize: 250, originalHash: 'ab'.repeat(32), chunkCount: 3, chunkSize: 100, cifers: [CIFER, CIFER, CIFER], ...overrides };
}

function archive(meta: unknown = metadata(), drop?: string): Promise<Buffer> {
  const entries: [string, Buffer][] = [
    ['chunk_0.enc', Buffer.alloc(116, 1)],
    ['chunk_1.enc', Buffer.alloc(116, 2)],
    ['chunk_2.enc', Buffer.alloc(66, 3)],
    ['metadata.json', Buffer.from(typeof meta === 'string' ? meta : JSON.stringify(meta))],
  ];
  return zipOf(entries.filter(([name]) => name !== drop));
}

async function openBytes(bytes: Buffer) {
  const dir = await tempDir(stack);
  const path = join(dir, 'a.zip');
  await writeFile(path, bytes);
  return openCiferArchive({ path }, LIMITS);
}

async function refusal(bytes: Buffer): Promise<string> {
  try {
    (await openBytes(bytes)).close();
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error('archive opened');
}

describe('openCiferArchive', () => {
  it('opens a well-formed archive from a path and from a sealed spool, chunk by chunk', async () => {
    const bytes = await archive();
    const fromPath = await openBytes(bytes);
    expect(fromPath.metadata).toMatchObject({ secretId: 3, chainId: -1, chunkCount: 3 });
    expect((await fromPath.chunk(2)).equals(Buffer.alloc(66, 3))).toBe(true);
    expect(fromPath.cifer(1)).toHaveLength(CIFER_BYTES);
    fromPath.close();

    const dir = await tempDir(stack);
    const spool = await createSealedSpool(dir, { chunkBytes: 64 });
    stack.push(() => spool.dispose());
    await pipeline(Readable.from([bytes]), spool);
    const fromSpool = await openCiferArchive({ bytes: spool.bytes, readRange: (s, e) => spool.readRange(s, e) }, LIMITS);
    expect((await fromSpool.chunk(0)).equals(Buffer.alloc(116, 1))).toBe(true);
    fromSpool.close();
  });

  it('reads each chunk into a buffer, straight from the source or through yauzl, the same bytes', async () => {
    const bytes = await archive();
    const dir = await tempDir(stack);
    const spool = await createSealedSpool(dir, { chunkBytes: 64 });
    stack.push(() => spool.dispose());
    await pipeline(Readable.from([bytes]), spool);
    const direct = await openCiferArchive({ bytes: spool.bytes, readRange: (s, e) => spool.readRange(s, e), readInto: (s, t) => spool.readRangeInto(s, t) }, LIMITS);
    const viaYauzl = await openBytes(bytes);
    const target = Buffer.alloc(116);
    for (const [i, expected] of [Buffer.alloc(116, 1), Buffer.alloc(116, 2), Buffer.alloc(66, 3)].entries()) {
      for (const opened of [direct, viaYauzl]) {
        target.fill(0xee);
        const length = await opened.chunkInto(i, target);
        expect(target.subarray(0, length).equals(expected)).toBe(true);
      }
    }
    await expect(direct.chunkInto(0, Buffer.alloc(100))).rejects.toThrow(/chunk_0.enc is larger than a chunk/);
    direct.close();
    viaYauzl.close();
  });

  it('refuses a chunk whose local header is not one when read straight from the source', async () => {
    const bytes = await archive();
    // The first local header is at 0: break its signature.
    bytes[0] = 0;
    const source = { bytes: bytes.length, readRange: async function* (s: number, e: number) { yield bytes.subarray(s, e); }, readInto: async (s: number, t: Uint8Array) => void t.set(bytes.subarray(s, s + t.length)) };
    const opened = await openCiferArchive(source, LIMITS);
    await expect(opened.chunkInto(0, Buffer.alloc(116))).rejects.toThrow('Invalid ZIP format: chunk_0.enc is unreadable');
    opened.close();
  });

  it('names a missing metadata.json or chunk', async () => {
    expect(await refusal(await archive(metadata(), 'metadata.json'))).toBe('Invalid ZIP format: missing metadata.json');
    expect(await refusal(await archive(metadata(), 'chunk_1.enc'))).toBe('Invalid ZIP format: missing chunk_1.enc');
  });

  it('refuses what is not a ZIP, metadata that is not JSON or inconsistent, and oversize parts', async () => {
    expect(await refusal(Buffer.from('not a zip at all'))).toMatch(/^Invalid ZIP format: not a ZIP/);
    expect(await refusal(await archive('{'))).toMatch(/not JSON/);
    expect(await refusal(await archive(metadata({ chunkCount: 2 })))).toMatch(/chunkCount does not match/);
    expect(await refusal(await archive(metadata({ cifers: [CIFER, CIFER] })))).toMatch(/one entry per chunk/);
    expect(await refusal(await archive(metadata({ cifers: [CIFER, 'AAAA', CIFER] })))).toMatch(/cifers\[1\] is not 1104 bytes/);
    expect(await refusal(await archive(metadata({ chunkSize: 50, chunkCount: 5, cifers: Array(5).fill(CIFER) })))).toMatch(/missing chunk_3\.enc|larger than a chunk/);
    expect(await refusal(await archive(metadata({ chunkSize: 2000, chunkCount: 1, cifers: [CIFER] })))).toMatch(/chunkSize exceeds/);
    expect(await refusal(await archive(metadata({ originalSize: 20_000, chunkSize: 1000, chunkCount: 20, cifers: Array(20).fill(CIFER) })))).toMatch(/originalSize exceeds/);
    expect(await refusal(await archive(metadata({ secretId: 'x' })))).toMatch(/metadata.json: secretId is invalid/);
  });
});
