/**
 * The verify pool (src/crypto/verify-pool.ts): a batch verified on its worker thread gives exactly
 * what verifyDigest gives inline, item by item — valid signatures, a wrong key, a tampered digest, a
 * malformed signature — and a closed pool still answers, inline. Small batches go to the thread
 * while the event loop is busy, and are verified inline after it sat idle.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createVerifyPool, generatePrivateKey, publicKeyOf, sha256, signDigest, uncompressedPublicKey, verifyDigest, type VerifyItem } from '../../../src/crypto/index.ts';

const pools: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const p of pools.splice(0)) await p.close();
});

function batch(n: number, compressed: boolean): VerifyItem[] {
  const keys = [generatePrivateKey(), generatePrivateKey()];
  const pub = (i: number) => (compressed ? publicKeyOf(keys[i % 2]!, true) : uncompressedPublicKey(publicKeyOf(keys[i % 2]!, true)));
  return Array.from({ length: n }, (_, i) => {
    const digest = sha256(`record ${i}`);
    const sig = signDigest(digest, keys[i % 2]!);
    switch (i % 7) {
      case 3: // signed by the other key
        return { sig, digest, publicKey: pub(i + 1) };
      case 5: // a tampered digest
        return { sig, digest: sha256(`record ${i}!`), publicKey: pub(i) };
      default:
        return { sig, digest, publicKey: pub(i) };
    }
  });
}

describe('verify pool', () => {
  it('on its thread, gives verifyDigest\'s answer for every item of large batches, in order', async () => {
    const pool = createVerifyPool({ minBatch: 8, chunk: 50 });
    pools.push(pool);
    for (const compressed of [true, false]) {
      const items = batch(301, compressed);
      const expected = items.map((it) => verifyDigest(it.sig, it.digest, it.publicKey));
      expect(expected.filter((ok) => !ok).length).toBeGreaterThan(60);
      expect(await pool.verify(items)).toEqual(expected);
    }
  });

  it('sends small batches to the thread while the event loop is busy, and verifies one inline after it sat idle', async () => {
    const runs: string[] = [];
    const pool = createVerifyPool({ onRun: (where, n) => runs.push(`${where} ${n}`) });
    pools.push(pool);
    const items = batch(6, true);
    const expected = items.map((it) => verifyDigest(it.sig, it.digest, it.publicKey));
    // Three small batches in one turn of the loop, as a member's applies under load: the first finds
    // the loop idle, the next two do not.
    const answers = await Promise.all([pool.verify(items.slice(0, 2)), pool.verify(items.slice(2, 4)), pool.verify(items.slice(4))]);
    expect(answers.flat()).toEqual(expected);
    expect(runs).toEqual(['inline 2', 'thread 2', 'thread 2']);
    // The loop sits idle (a quiet member between two writes): the next lone batch is inline.
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(await pool.verify(items.slice(0, 1))).toEqual(expected.slice(0, 1));
    expect(runs.at(-1)).toBe('inline 1');
  });

  it('answers small batches, malformed items and batches after close inline, with the same answers', async () => {
    const pool = createVerifyPool({ minBatch: 8, idleInlineMs: 0 });
    pools.push(pool);
    const items = batch(20, true);
    items[4] = { ...items[4]!, sig: items[4]!.sig.subarray(0, 64) };
    const expected = items.map((it) => verifyDigest(it.sig, it.digest, it.publicKey));
    expect(expected[4]).toBe(false);
    expect(await pool.verify(items)).toEqual(expected);
    expect(await pool.verify(items.slice(0, 3))).toEqual(expected.slice(0, 3));
    await pool.close();
    expect(await pool.verify(batch(40, true).map((it) => it))).toHaveLength(40);
  });
});
