/**
 * The job's output buffer pool (src/core/files/buffer-pool.ts): a fixed set handed out and given
 * back, a taker waiting when all are out, zeroing on return and on dispose.
 */
import { describe, expect, it } from 'vitest';
import { createBufferPool } from '../../../../src/core/files/buffer-pool.ts';

describe('buffer pool', () => {
  it('hands out its buffers, makes the next taker wait, and gives a returned one to it', async () => {
    const pool = createBufferPool(2, () => Buffer.alloc(4));
    const a = await pool.take();
    const b = await pool.take();
    expect(a).not.toBe(b);
    let third: Buffer | undefined;
    const waiting = pool.take().then((buffer) => (third = buffer));
    await Promise.resolve();
    expect(third).toBeUndefined();
    pool.give(a);
    await waiting;
    expect(third).toBe(a);
  });

  it('zeroes what is given back when asked, refuses a stranger, and zeroes everything on dispose', async () => {
    const pool = createBufferPool(2, () => Buffer.alloc(4), { zero: true });
    const a = await pool.take();
    a.fill(7);
    pool.give(a);
    expect(a.every((x) => x === 0)).toBe(true);
    expect(() => pool.give(Buffer.alloc(4))).toThrow(/not from this pool/);
    const b = await pool.take();
    b.fill(9);
    pool.dispose();
    expect(b.every((x) => x === 0)).toBe(true);
    await expect(pool.take()).rejects.toThrow(/disposed/);
  });
});
