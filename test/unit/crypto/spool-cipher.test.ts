/**
 * The sealed spool's chunk cipher (src/crypto/spool-cipher.ts): the variants into a caller's buffer
 * (through a chunk crypto, inline and on its worker thread) seal exactly the bytes the synchronous
 * ones do and open them alike, and every binding — chunk index, last flag, spool, key — fails the tag
 * when it does not match.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { allocateShared, createChunkCrypto, createSpoolCipher, openSpoolCipher, SPOOL_CHUNK_OVERHEAD_BYTES, type ChunkCrypto } from '../../../src/crypto/index.ts';

const plaintext = Buffer.from(Array.from({ length: 3000 }, (_, i) => (i * 13) & 0xff));
const threaded = createChunkCrypto();
afterAll(() => threaded.close());

/** `bytes` copied into a buffer the engine can use. */
function bufferFor(engine: ChunkCrypto, bytes: Uint8Array, room = bytes.length): Buffer {
  const out = engine.threaded ? allocateShared(room) : Buffer.alloc(room);
  out.set(bytes);
  return out;
}

describe.each([
  ['inline', createChunkCrypto({ thread: false })],
  ['on its thread', threaded],
])('spool cipher into buffers, %s', (_name, engine) => {
  const sealInto = async (cipher: ReturnType<typeof createSpoolCipher>, index: number, input: Uint8Array, last: boolean): Promise<Buffer> => {
    const output = bufferFor(engine, new Uint8Array(0), input.length + SPOOL_CHUNK_OVERHEAD_BYTES);
    const length = await cipher.sealInto(engine, index, bufferFor(engine, input), last, output);
    return output.subarray(0, length);
  };
  const openInto = async (cipher: ReturnType<typeof createSpoolCipher>, index: number, sealed: Uint8Array, last: boolean): Promise<Buffer | undefined> => {
    const output = bufferFor(engine, new Uint8Array(0), Math.max(0, sealed.length - SPOOL_CHUNK_OVERHEAD_BYTES));
    const length = await cipher.openInto(engine, index, bufferFor(engine, sealed), last, output);
    return length === undefined ? undefined : output.subarray(0, length);
  };

  it('seals the same record as inline, and each opens the other', async () => {
    const cipher = createSpoolCipher();
    for (const [index, last] of [
      [0, false],
      [7, true],
    ] as const) {
      const inline = cipher.seal(index, plaintext, last);
      const into = await sealInto(cipher, index, plaintext, last);
      expect(into.equals(inline)).toBe(true);
      expect(into.length).toBe(plaintext.length + SPOOL_CHUNK_OVERHEAD_BYTES);
      expect((await openInto(cipher, index, inline, last))!.equals(plaintext)).toBe(true);
      expect(cipher.open(index, into, last)!.equals(plaintext)).toBe(true);
    }
    // An empty chunk is a bare tag, and opens to nothing.
    const empty = await sealInto(cipher, 0, new Uint8Array(0), true);
    expect(empty.length).toBe(SPOOL_CHUNK_OVERHEAD_BYTES);
    expect((await openInto(cipher, 0, empty, true))!.length).toBe(0);
    cipher.dispose();
  });

  it('refuses a record with another index, last flag, spool or key, or a changed byte, leaving nothing in the output', async () => {
    const cipher = createSpoolCipher();
    const other = createSpoolCipher();
    const sealed = await sealInto(cipher, 3, plaintext, false);
    expect(await openInto(cipher, 4, sealed, false)).toBeUndefined();
    expect(await openInto(cipher, 3, sealed, true)).toBeUndefined();
    expect(await openInto(other, 3, sealed, false)).toBeUndefined();
    const flipped = Buffer.from(sealed);
    flipped[100]! ^= 1;
    const output = bufferFor(engine, new Uint8Array(0), plaintext.length);
    expect(await cipher.openInto(engine, 3, bufferFor(engine, flipped), false, output)).toBeUndefined();
    expect(output.every((b) => b === 0)).toBe(true);
    expect(await openInto(cipher, 3, sealed.subarray(0, SPOOL_CHUNK_OVERHEAD_BYTES - 1), false)).toBeUndefined();
    // The same key and id reopened (a decrypt result after a restart) open it.
    const reopened = openSpoolCipher(cipher.exportKey(), cipher.spoolId);
    expect((await openInto(reopened, 3, sealed, false))!.equals(plaintext)).toBe(true);
    reopened.dispose();
    cipher.dispose();
    await expect(sealInto(cipher, 0, plaintext, false)).rejects.toThrow('disposed');
  });
});
