import { createHash } from 'node:crypto';
import { readFile, readdir, stat, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { SPOOL_READ_AHEAD_RECORDS, SPOOL_WRITE_BUFFERS, createSealedSpool, sweepSpools, type SealedSpool } from '../../../../src/core/files/spool.ts';
import { createChunkCrypto } from '../../../../src/crypto/index.ts';
import { isAppError } from '../../../../src/errors/index.ts';
import { cleanupStack, tempDir } from '../../../utils/temp.ts';

const CHUNK = 4096;
const TAG = 16;
const stack = cleanupStack();
afterEach(() => stack.run());

/** A recognisable plaintext: the marker repeated, cut to `size` bytes. */
function pattern(size: number, marker = 'PLAINTEXT-MARKER-'): Buffer {
  const unit = Buffer.from(marker);
  const out = Buffer.alloc(size);
  for (let i = 0; i < size; i += unit.length) unit.copy(out, i);
  return out;
}

async function spoolOf(dir: string, data: Buffer, options: { chunkBytes?: number; maxBytes?: number; fsync?: boolean; writebackBytes?: number } = {}): Promise<SealedSpool> {
  const spool = await createSealedSpool(dir, { chunkBytes: CHUNK, ...options });
  stack.push(() => spool.dispose());
  // Odd-sized pieces, so chunk boundaries never line up with writes.
  const pieces: Buffer[] = [];
  for (let i = 0; i < data.length; i += 1000) pieces.push(data.subarray(i, i + 1000));
  await pipeline(Readable.from(pieces), spool);
  return spool;
}

async function readAll(spool: SealedSpool): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const part of spool.read()) parts.push(part);
  return Buffer.concat(parts);
}

async function expectReadFails(spool: SealedSpool): Promise<void> {
  const err = await readAll(spool).then(() => undefined, (e: unknown) => e);
  expect(isAppError(err) && err.code).toBe('DECRYPTION_FAILED');
}

describe('sealed spool', () => {
  it.each([0, 1, CHUNK - 1, CHUNK, CHUNK + 1, 5 * CHUNK + 123])('round-trips %i bytes with count and SHA-256', async (size) => {
    const dir = await tempDir(stack);
    const data = pattern(size);
    const spool = await spoolOf(dir, data);
    expect(spool.bytes).toBe(size);
    expect(Buffer.from(spool.sha256!).toString('hex')).toBe(createHash('sha256').update(data).digest('hex'));
    expect((await readAll(spool)).equals(data)).toBe(true);
    // Readable twice; each chunk at most chunkBytes.
    for await (const part of spool.read()) expect(part.length).toBeLessThanOrEqual(CHUNK);
    const mode = (await stat(spool.path)).mode & 0o777;
    expect(mode).toBe(0o600);
    expect(spool.path).toMatch(/qk-spool-[0-9a-f]{32}\.sealed$/);
  });

  it('never writes the plaintext to disk', async () => {
    const dir = await tempDir(stack);
    const spool = await spoolOf(dir, pattern(3 * CHUNK + 17));
    const raw = await readFile(spool.path);
    expect(raw.length).toBe(3 * CHUNK + 17 + 4 * TAG);
    expect(raw.includes(Buffer.from('PLAINTEXT-MARKER'))).toBe(false);
    expect(raw.includes(Buffer.from('MARKER-PLAIN'))).toBe(false);
  });

  it('fails on a tampered byte', async () => {
    const dir = await tempDir(stack);
    const spool = await spoolOf(dir, pattern(3 * CHUNK));
    const raw = await readFile(spool.path);
    raw[CHUNK + 5]! ^= 1;
    await writeFile(spool.path, raw);
    await expectReadFails(spool);
  });

  it('fails when the last chunk is dropped', async () => {
    const dir = await tempDir(stack);
    const spool = await spoolOf(dir, pattern(2 * CHUNK + 100));
    const raw = await readFile(spool.path);
    await writeFile(spool.path, raw.subarray(0, 2 * (CHUNK + TAG)));
    await expectReadFails(spool);
  });

  it('fails when the file is cut mid-chunk or emptied', async () => {
    const dir = await tempDir(stack);
    const spool = await spoolOf(dir, pattern(2 * CHUNK));
    const raw = await readFile(spool.path);
    await writeFile(spool.path, raw.subarray(0, CHUNK + TAG + 10));
    await expectReadFails(spool);
    await writeFile(spool.path, Buffer.alloc(0));
    await expectReadFails(spool);
  });

  it('fails when two chunks are swapped', async () => {
    const dir = await tempDir(stack);
    const spool = await spoolOf(dir, pattern(3 * CHUNK, 'ABCDEFGHIJKLMNOPQ'));
    const raw = await readFile(spool.path);
    const rec = CHUNK + TAG;
    const swapped = Buffer.concat([raw.subarray(rec, 2 * rec), raw.subarray(0, rec), raw.subarray(2 * rec)]);
    await writeFile(spool.path, swapped);
    await expectReadFails(spool);
  });

  it('refuses a chunk from another spool', async () => {
    const dir = await tempDir(stack);
    const a = await spoolOf(dir, pattern(CHUNK + 1));
    const b = await spoolOf(dir, pattern(CHUNK + 1));
    await writeFile(a.path, await readFile(b.path));
    await expectReadFails(a);
  });

  it('fails cleanly past maxBytes and removes its file', async () => {
    const dir = await tempDir(stack);
    const spool = await createSealedSpool(dir, { chunkBytes: CHUNK, maxBytes: 10_000 });
    const err = await pipeline(Readable.from([pattern(6000), pattern(6000)]), spool).then(() => undefined, (e: unknown) => e);
    expect(isAppError(err) && err.code).toBe('PAYLOAD_TOO_LARGE');
    expect(isAppError(err) && err.status).toBe(413);
    await spool.dispose();
    expect(await readdir(dir)).toEqual([]);
  });

  it('accepts exactly maxBytes', async () => {
    const dir = await tempDir(stack);
    const spool = await spoolOf(dir, pattern(10_000), { maxBytes: 10_000 });
    expect(spool.bytes).toBe(10_000);
  });

  it('destroy removes the file, is idempotent, and a destroyed spool is unreadable', async () => {
    const dir = await tempDir(stack);
    const spool = await spoolOf(dir, pattern(CHUNK * 2));
    expect(await readdir(dir)).toHaveLength(1);
    spool.destroy();
    spool.destroy();
    await spool.dispose();
    await spool.dispose();
    expect(await readdir(dir)).toEqual([]);
    await expectReadFails(spool);
  });

  it('destroy mid-write removes the file', async () => {
    const dir = await tempDir(stack);
    const spool = await createSealedSpool(dir, { chunkBytes: CHUNK });
    spool.write(pattern(3 * CHUNK));
    await spool.dispose();
    expect(await readdir(dir)).toEqual([]);
  });

  it('a reader stopped early (its next chunk already read ahead) leaves the spool disposable', async () => {
    const dir = await tempDir(stack);
    const data = pattern(4 * CHUNK + 5);
    const spool = await spoolOf(dir, data);
    for await (const part of spool.read()) {
      expect(part.equals(data.subarray(0, CHUNK))).toBe(true);
      break;
    }
    // Reads again from the start after a reader gave up.
    expect((await readAll(spool)).equals(data)).toBe(true);
    await spool.dispose();
    expect(await readdir(dir)).toEqual([]);
  });

  it('an fsync spool written back as it grows reads back the same bytes', async () => {
    const dir = await tempDir(stack);
    const data = pattern(9 * CHUNK + 3);
    const spool = await spoolOf(dir, data, { fsync: true, writebackBytes: 2 * CHUNK });
    expect(spool.bytes).toBe(data.length);
    expect((await stat(spool.path)).size).toBe(data.length + 10 * TAG);
    expect((await readAll(spool)).equals(data)).toBe(true);
  });

  it('sweeps only old spool files', async () => {
    const dir = await tempDir(stack);
    const old = await spoolOf(dir, pattern(10));
    const fresh = await spoolOf(dir, pattern(10));
    await writeFile(join(dir, 'other.txt'), 'x');
    const past = new Date(Date.now() - 3_600_000);
    await utimes(old.path, past, past);
    await utimes(join(dir, 'other.txt'), past, past);
    expect(await sweepSpools(dir, 60_000)).toBe(1);
    expect((await readdir(dir)).sort()).toEqual([fresh.path.slice(dir.length + 1), 'other.txt'].sort());
    // Without an age (a node starting, before any job of its own): every spool file, however new.
    await utimes(fresh.path, new Date(Date.now() + 60_000), new Date(Date.now() + 60_000));
    expect(await sweepSpools(dir)).toBe(1);
    expect(await readdir(dir)).toEqual(['other.txt']);
  });

  // RSS, loosely: node frees the per-chunk buffers only when V8 next collects (about every 64 MiB
  // of released buffers), so the bound that matters is that memory is flat in the input size and
  // well under it: 256 MiB streams through with about what 64 MiB needs. Alone the peaks are 28–50
  // MiB; in the full suite, with every test worker busy, the collection comes later and a peak
  // reached 101 MiB (one fresh-clone run in each of the last two sessions failed on it), so the
  // bound is half the larger stream: a spool that held what it was given would pass 256.
  it('keeps memory bounded whatever the size (64 MiB and 256 MiB streamed through, each under 128 MiB)', async () => {
    const dir = await tempDir(stack);
    const piece = pattern(64 * 1024);
    async function peakDelta(total: number): Promise<number> {
      const spool = await createSealedSpool(dir, { chunkBytes: 1024 * 1024 });
      stack.push(() => spool.dispose());
      const before = process.memoryUsage().rss;
      let peak = before;
      const sample = (): void => {
        peak = Math.max(peak, process.memoryUsage().rss);
      };
      async function* source(): AsyncGenerator<Buffer> {
        for (let sent = 0; sent < total; sent += piece.length) {
          if (sent % (4 * 1024 * 1024) === 0) sample();
          yield piece;
        }
      }
      await pipeline(source(), spool);
      let read = 0;
      for await (const part of spool.read()) {
        read += part.length;
        sample();
      }
      expect(read).toBe(total);
      await spool.dispose();
      return peak - before;
    }
    // A first, short run pays the one-time costs (the crypto worker threads, buffer pools, JIT), which
    // are tens of MiB and not what this test is about: after it, memory must not grow with the stream.
    await peakDelta(16 * 1024 * 1024);
    const small = await peakDelta(64 * 1024 * 1024);
    const large = await peakDelta(256 * 1024 * 1024);
    expect(small).toBeLessThan(128 * 1024 * 1024);
    expect(large).toBeLessThan(128 * 1024 * 1024);
  });
});

describe('readRange: random access to a finished spool', () => {
  async function range(spool: SealedSpool, start: number, end: number): Promise<Buffer> {
    const parts: Buffer[] = [];
    for await (const part of spool.readRange(start, end)) parts.push(part);
    return Buffer.concat(parts);
  }

  it('gives exactly the bytes of any range, across chunk boundaries and in any order', async () => {
    const dir = await tempDir(stack);
    const data = Buffer.alloc(3 * CHUNK + 123);
    for (let i = 0; i < data.length; i++) data[i] = (i * 131 + (i >> 8)) & 0xff;
    const spool = await spoolOf(dir, data);
    await fc.assert(
      fc.asyncProperty(fc.nat(data.length), fc.nat(data.length), async (a, b) => {
        const [start, end] = a <= b ? [a, b] : [b, a];
        expect((await range(spool, start, end)).equals(data.subarray(start, end))).toBe(true);
      }),
      { numRuns: 60 },
    );
    expect((await range(spool, 0, data.length)).equals(data)).toBe(true);
  });

  it('an empty spool has an empty range; a range outside the spool is a RangeError', async () => {
    const dir = await tempDir(stack);
    const empty = await spoolOf(dir, Buffer.alloc(0));
    expect(await range(empty, 0, 0)).toHaveLength(0);
    const spool = await spoolOf(dir, pattern(100));
    await expect(range(spool, 0, 101)).rejects.toBeInstanceOf(RangeError);
    await expect(range(spool, 5, 4)).rejects.toBeInstanceOf(RangeError);
  });

  it('serves callers that read at once, each its own bytes', async () => {
    const dir = await tempDir(stack);
    const data = Buffer.alloc(6 * CHUNK + 77);
    for (let i = 0; i < data.length; i++) data[i] = (i * 7 + (i >> 10)) & 0xff;
    const spool = await spoolOf(dir, data);
    const ranges: Array<[number, number]> = [
      [0, 3 * CHUNK],
      [5 * CHUNK + 3, data.length],
      [CHUNK - 5, 4 * CHUNK + 5],
      [2 * CHUNK, 2 * CHUNK + 1],
    ];
    const read = await Promise.all(ranges.map(([start, end]) => range(spool, start, end)));
    read.forEach((bytes, i) => expect(bytes.equals(data.subarray(...ranges[i]!)), String(ranges[i])).toBe(true));
  });

  it('a tampered chunk fails its tag when a range touches it', async () => {
    const dir = await tempDir(stack);
    const spool = await spoolOf(dir, pattern(2 * CHUNK + 10));
    const sealed = await readFile(spool.path);
    sealed[CHUNK + TAG + 5]! ^= 1;
    await writeFile(spool.path, sealed);
    expect((await range(spool, 0, 100)).length).toBe(100);
    await expect(range(spool, CHUNK + 1, CHUNK + 20)).rejects.toSatisfy((err: unknown) => isAppError(err) && err.code === 'DECRYPTION_FAILED');
  });
});

describe('with a threaded engine (several chunks in flight each way)', () => {
  const engine = createChunkCrypto();
  afterAll(() => engine.close());
  // More records than the writer's buffers and the reader's window, so both rings wrap many times.
  const records = 4 * (SPOOL_WRITE_BUFFERS + SPOOL_READ_AHEAD_RECORDS);

  async function threadedSpool(dir: string, data: Buffer): Promise<SealedSpool> {
    const spool = await createSealedSpool(dir, { chunkBytes: CHUNK }, { engine });
    stack.push(() => spool.dispose());
    const pieces: Buffer[] = [];
    for (let i = 0; i < data.length; i += 1000) pieces.push(data.subarray(i, i + 1000));
    await pipeline(Readable.from(pieces), spool);
    return spool;
  }

  it('round-trips, hashes in order, and reads each chunk once in order, in place or copied', async () => {
    const dir = await tempDir(stack);
    const data = Buffer.alloc(records * CHUNK + 321);
    for (let i = 0; i < data.length; i++) data[i] = (i * 13 + (i >> 12)) & 0xff;
    const spool = await threadedSpool(dir, data);
    expect(Buffer.from(spool.sha256!).toString('hex')).toBe(createHash('sha256').update(data).digest('hex'));
    expect((await readAll(spool)).equals(data)).toBe(true);
    const inPlace: Buffer[] = [];
    // A view is valid until the next chunk is asked for: copy it at once.
    for await (const part of spool.chunks()) inPlace.push(Buffer.from(part));
    expect(Buffer.concat(inPlace).equals(data)).toBe(true);
  });

  it('random ranges, forwards and back across the read-ahead window, give exactly their bytes', async () => {
    const dir = await tempDir(stack);
    const data = Buffer.alloc(records * CHUNK + 99);
    for (let i = 0; i < data.length; i++) data[i] = (i * 31 + (i >> 9)) & 0xff;
    const spool = await threadedSpool(dir, data);
    await fc.assert(
      fc.asyncProperty(fc.nat(data.length), fc.nat(3 * CHUNK), async (start, span) => {
        const end = Math.min(data.length, start + span);
        const target = Buffer.alloc(end - start);
        await spool.readRangeInto(start, target);
        expect(target.equals(data.subarray(start, end))).toBe(true);
      }),
      { numRuns: 80 },
    );
  });

  it('a tampered record far ahead fails when reached, not before', async () => {
    const dir = await tempDir(stack);
    const data = pattern(records * CHUNK);
    const spool = await threadedSpool(dir, data);
    const sealed = await readFile(spool.path);
    const bad = records - 2;
    sealed[bad * (CHUNK + TAG) + 7]! ^= 1;
    await writeFile(spool.path, sealed);
    let good = 0;
    const err = await (async () => {
      for await (const part of spool.read()) good += part.length;
    })().then(() => undefined, (e: unknown) => e);
    expect(isAppError(err) && err.code).toBe('DECRYPTION_FAILED');
    expect(good).toBe(bad * CHUNK);
  });

  it('gives every buffer it borrowed back to the engine, zeroed, once written, read, ranged and disposed, for a later spool to reuse', async () => {
    const dir = await tempDir(stack);
    const out = new Set<Buffer>();
    const tracked = createChunkCrypto({ thread: true });
    stack.push(() => tracked.close());
    const borrow = tracked.borrow.bind(tracked);
    const giveBack = tracked.giveBack.bind(tracked);
    tracked.borrow = (bytes) => {
      const buffer = borrow(bytes);
      out.add(buffer);
      return buffer;
    };
    tracked.giveBack = (...buffers) => {
      for (const buffer of buffers) {
        if (!buffer) continue;
        out.delete(buffer);
        giveBack(buffer);
        expect(buffer.every((b) => b === 0)).toBe(true);
      }
    };
    const data = pattern(records * CHUNK + 123);
    const spool = await createSealedSpool(dir, { chunkBytes: CHUNK }, { engine: tracked });
    await pipeline(Readable.from([data]), spool);
    // The writer's buffers went back when it finished.
    expect(out.size).toBe(0);
    expect((await readAll(spool)).equals(data)).toBe(true);
    expect(out.size).toBe(0);
    const parts: Buffer[] = [];
    for await (const part of spool.readRange(CHUNK - 5, 3 * CHUNK)) parts.push(part);
    expect(Buffer.concat(parts).equals(data.subarray(CHUNK - 5, 3 * CHUNK))).toBe(true);
    // The random-access reader holds its buffers until the spool goes.
    expect(out.size).toBeGreaterThan(0);
    await spool.dispose();
    expect(out.size).toBe(0);
    // The next spool of that chunk size borrows those buffers again.
    const next = await createSealedSpool(dir, { chunkBytes: CHUNK }, { engine: tracked });
    stack.push(() => next.dispose());
    await pipeline(Readable.from([data]), next);
    expect((await readAll(next)).equals(data)).toBe(true);
  });
});
