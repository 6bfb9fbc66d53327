/**
 * The chunk crypto of file jobs (src/crypto/chunk-crypto.ts): on its worker thread and inline it
 * writes the same bytes as the in-thread envelope and spool functions, into the caller's buffers;
 * secrets are zeroed, failed tags leave nothing behind, hashes see the chunks in order, and the
 * shared-memory helpers copy and zero as the plain ones do.
 */
import { createHash } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import {
  CIFER_BYTES,
  allocateShared,
  copyBytes,
  createChunkCrypto,
  createPayloadOpener,
  mlkemPublicKeyFromSeed,
  openChunkPayload,
  openPayloadWithSeed,
  sealChunkPayload,
  zeroize,
  type ChunkCrypto,
} from '../../../src/crypto/index.ts';

const seed = new Uint8Array(64).map((_, i) => i * 7);
const publicKey = mlkemPublicKeyFromSeed(seed);
const threaded = createChunkCrypto();
afterAll(() => threaded.close());

function bufferFor(engine: ChunkCrypto, bytes: number | Uint8Array): Buffer {
  const length = typeof bytes === 'number' ? bytes : bytes.length;
  const out = engine.threaded ? allocateShared(length) : Buffer.alloc(length);
  if (typeof bytes !== 'number') out.set(bytes);
  return out;
}

describe.each([
  ['inline', createChunkCrypto({ thread: false })],
  ['on its thread', threaded],
])('chunk crypto, %s', (_name, engine) => {
  const plaintext = Buffer.from(Array.from({ length: 5000 }, (_, i) => (i * 31) & 0xff));

  it('seals a chunk payload that the envelope opens, and opens it back into a buffer, hashed', async () => {
    const output = bufferFor(engine, plaintext.length);
    const { cifer, crc32 } = await sealChunkPayload(engine, publicKey, bufferFor(engine, plaintext), output);
    expect(cifer).toHaveLength(CIFER_BYTES);
    const ciphertext = Buffer.from(output);
    expect(crc32).toBe((await import('node:zlib')).crc32(ciphertext));
    expect(Buffer.from(openPayloadWithSeed(seed, cifer, ciphertext)!).equals(plaintext)).toBe(true);

    const opener = createPayloadOpener(seed, publicKey)!;
    const hash = engine.startHash();
    const opened = bufferFor(engine, plaintext.length);
    expect(await openChunkPayload(engine, opener, cifer, bufferFor(engine, ciphertext), opened, hash)).toBe(plaintext.length);
    expect(opened.equals(plaintext)).toBe(true);
    expect(Buffer.from(await engine.digest(hash)).equals(createHash('sha256').update(plaintext).digest())).toBe(true);
  });

  it('refuses a changed byte or another cifer, leaving the output untouched and the hash unfed', async () => {
    const output = bufferFor(engine, plaintext.length);
    const { cifer } = await sealChunkPayload(engine, publicKey, bufferFor(engine, plaintext), output);
    const opener = createPayloadOpener(seed, publicKey)!;
    const flipped = bufferFor(engine, output);
    flipped[10]! ^= 1;
    const hash = engine.startHash();
    const opened = bufferFor(engine, plaintext.length);
    expect(await openChunkPayload(engine, opener, cifer, flipped, opened, hash)).toBeUndefined();
    const otherCifer = new Uint8Array(cifer);
    otherCifer[CIFER_BYTES - 1]! ^= 1;
    expect(await openChunkPayload(engine, opener, otherCifer, bufferFor(engine, output), opened, hash)).toBeUndefined();
    expect(await openChunkPayload(engine, opener, cifer.subarray(1), bufferFor(engine, output), opened, hash)).toBeUndefined();
    expect(opened.every((b) => b === 0)).toBe(true);
    expect(Buffer.from(await engine.digest(hash)).equals(createHash('sha256').digest())).toBe(true);
  });

  it('zeroes the shared secret it is given, and refuses an output too small', async () => {
    const secret = new Uint8Array(32).fill(9);
    await engine.payloadSeal(secret, bufferFor(engine, plaintext), bufferFor(engine, plaintext.length));
    expect(secret.every((b) => b === 0)).toBe(true);
    await expect(engine.payloadSeal(new Uint8Array(32).fill(1), bufferFor(engine, plaintext), bufferFor(engine, 10))).rejects.toThrow(/holds 10 bytes/);
  });

  it('hashes sealed chunks in the order they were sent, several hashes apart', async () => {
    const key = (await import('node:crypto')).createSecretKey(new Uint8Array(32).fill(3));
    const [a, b] = [engine.startHash(), engine.startHash()];
    const parts = [plaintext.subarray(0, 100), plaintext.subarray(100, 3000), plaintext.subarray(3000)];
    await Promise.all(parts.map((part, i) => engine.seal(key, new Uint8Array(12).fill(i), new Uint8Array(0), bufferFor(engine, part), bufferFor(engine, part.length + 16), i === 1 ? b : a)));
    const expectA = createHash('sha256').update(parts[0]!).update(parts[2]!).digest();
    expect(Buffer.from(await engine.digest(a)).equals(expectA)).toBe(true);
    expect(Buffer.from(await engine.digest(b)).equals(createHash('sha256').update(parts[1]!).digest())).toBe(true);
    await expect(engine.digest(a)).rejects.toThrow(/unknown hash/);
  });
});

describe('shared memory helpers', () => {
  it('copyBytes copies into shared and plain memory at an offset and refuses what does not fit', () => {
    const source = Buffer.from('abcdefgh');
    for (const target of [allocateShared(12), Buffer.alloc(12)]) {
      expect(copyBytes(source.subarray(2, 6), target, 3)).toBe(4);
      expect(target.subarray(3, 7).toString()).toBe('cdef');
      expect(() => copyBytes(source, target, 5)).toThrow(RangeError);
    }
  });

  it('zeroize zeroes shared memory and views into it, and only them', () => {
    const shared = allocateShared(16).fill(5);
    zeroize(shared.subarray(4, 8));
    expect([...shared]).toEqual([5, 5, 5, 5, 0, 0, 0, 0, 5, 5, 5, 5, 5, 5, 5, 5]);
    zeroize(shared, undefined, null);
    expect(shared.every((b) => b === 0)).toBe(true);
  });

  it('with several threads, a hash sees its chunks in order while other requests run beside them', async () => {
    const engine = createChunkCrypto({ threads: 3 });
    try {
      const key = (await import('node:crypto')).createSecretKey(new Uint8Array(32).fill(4));
      const parts = Array.from({ length: 24 }, (_, i) => Buffer.alloc(1000 + i * 37, i + 1));
      const hash = engine.startHash();
      const requests: Array<Promise<unknown>> = [];
      parts.forEach((part, i) => {
        const nonce = new Uint8Array(12).fill(i);
        requests.push(engine.seal(key, nonce, new Uint8Array(0), bufferFor(engine, part), bufferFor(engine, part.length + 16), hash));
        // Unhashed work in between, free to go to any thread.
        requests.push(engine.seal(key, nonce, new Uint8Array(1), bufferFor(engine, part), bufferFor(engine, part.length + 16)));
      });
      await Promise.all(requests);
      const expected = createHash('sha256');
      for (const part of parts) expected.update(part);
      expect(Buffer.from(await engine.digest(hash)).equals(expected.digest())).toBe(true);
    } finally {
      await engine.close();
    }
  });

  it('a stopped thread fails its requests, and the next request starts a new one', async () => {
    const engine = createChunkCrypto();
    const hash = engine.startHash();
    await engine.close();
    await expect(engine.digest(hash)).rejects.toThrow(/unknown hash/);
    const fresh = engine.startHash();
    expect((await engine.digest(fresh)).length).toBe(32);
    await engine.close();
  });
});

describe('buffers borrowed and given back', () => {
  it('hands a buffer given back to the next borrower of its size, zeroed; other sizes get new ones', () => {
    const engine = createChunkCrypto({ thread: true, cachedBufferBytes: 1024 });
    const first = engine.borrow(256);
    expect(first.buffer).toBeInstanceOf(SharedArrayBuffer);
    first.fill(0xaa);
    engine.giveBack(first);
    expect(first.every((b) => b === 0)).toBe(true);
    expect(engine.borrow(128)).not.toBe(first);
    const again = engine.borrow(256);
    expect(again).toBe(first);
    expect(engine.borrow(256)).not.toBe(first);
  });

  it('keeps a buffer given back twice once, and never views, private memory on a thread, or more than its cap', () => {
    const engine = createChunkCrypto({ thread: true, cachedBufferBytes: 512 });
    const whole = engine.borrow(256);
    engine.giveBack(whole, whole);
    expect(engine.borrow(256)).toBe(whole);
    expect(engine.borrow(256)).not.toBe(whole);

    const outer = engine.borrow(512);
    const view = outer.subarray(0, 256);
    view.fill(1);
    engine.giveBack(view);
    // Zeroed even so: whatever is given back held chunk bytes.
    expect(view.every((b) => b === 0)).toBe(true);
    expect(engine.borrow(256)).not.toBe(view);

    const privateMemory = Buffer.alloc(256);
    engine.giveBack(privateMemory);
    expect(engine.borrow(256)).not.toBe(privateMemory);

    // Cap: 512 bytes kept; a third 256-byte buffer is left to the GC.
    const [a, b, c] = [engine.borrow(256), engine.borrow(256), engine.borrow(256)];
    engine.giveBack(a, b, c);
    const back = [engine.borrow(256), engine.borrow(256), engine.borrow(256)];
    expect(back.filter((x) => x === a || x === b || x === c)).toHaveLength(2);
    expect(back).not.toContain(c);
  });

  it('inline, hands out and keeps private memory', () => {
    const engine = createChunkCrypto({ thread: false });
    const buffer = engine.borrow(64);
    expect(buffer.buffer).not.toBeInstanceOf(SharedArrayBuffer);
    engine.giveBack(buffer);
    expect(engine.borrow(64)).toBe(buffer);
  });
});
