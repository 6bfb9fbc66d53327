/**
 * The sealed spool's chunk cipher (src/crypto/spool-cipher.ts): the threadpool variants (WebCrypto)
 * seal exactly the bytes the synchronous ones do and open them alike, and every binding — chunk
 * index, last flag, spool, key — fails the tag when it does not match.
 */
import { describe, expect, it } from 'vitest';
import { createSpoolCipher, openSpoolCipher, SPOOL_CHUNK_OVERHEAD_BYTES } from '../../../src/crypto/index.ts';

const plaintext = Buffer.from(Array.from({ length: 3000 }, (_, i) => (i * 13) & 0xff));

describe('spool cipher', () => {
  it('seals the same record on the threadpool as inline, and each opens the other', async () => {
    const cipher = createSpoolCipher();
    for (const [index, last] of [
      [0, false],
      [7, true],
    ] as const) {
      const inline = cipher.seal(index, plaintext, last);
      const pooled = await cipher.sealAsync(index, plaintext, last);
      expect(pooled.equals(inline)).toBe(true);
      expect(pooled.length).toBe(plaintext.length + SPOOL_CHUNK_OVERHEAD_BYTES);
      expect((await cipher.openAsync(index, inline, last))!.equals(plaintext)).toBe(true);
      expect(cipher.open(index, pooled, last)!.equals(plaintext)).toBe(true);
    }
    // An empty chunk is a bare tag, and opens to nothing.
    const empty = await cipher.sealAsync(0, new Uint8Array(0), true);
    expect(empty.length).toBe(SPOOL_CHUNK_OVERHEAD_BYTES);
    expect((await cipher.openAsync(0, empty, true))!.length).toBe(0);
    cipher.dispose();
  });

  it('refuses, on the threadpool too, a record with another index, last flag, spool or key, or a changed byte', async () => {
    const cipher = createSpoolCipher();
    const other = createSpoolCipher();
    const sealed = await cipher.sealAsync(3, plaintext, false);
    expect(await cipher.openAsync(4, sealed, false)).toBeUndefined();
    expect(await cipher.openAsync(3, sealed, true)).toBeUndefined();
    expect(await other.openAsync(3, sealed, false)).toBeUndefined();
    const flipped = Buffer.from(sealed);
    flipped[100]! ^= 1;
    expect(await cipher.openAsync(3, flipped, false)).toBeUndefined();
    expect(await cipher.openAsync(3, sealed.subarray(0, SPOOL_CHUNK_OVERHEAD_BYTES - 1), false)).toBeUndefined();
    // The same key and id reopened (a decrypt result after a restart) open it.
    const reopened = openSpoolCipher(cipher.exportKey(), cipher.spoolId);
    expect((await reopened.openAsync(3, sealed, false))!.equals(plaintext)).toBe(true);
    reopened.dispose();
    cipher.dispose();
    await expect(cipher.sealAsync(0, plaintext, false)).rejects.toThrow('disposed');
  });
});
