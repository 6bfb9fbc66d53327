/**
 * Durable single puts are group-committed (src/store/level-store.ts, `durablePut`): puts made in one
 * event-loop turn, or while a batch is being written, go together in one batch — one LevelDB write,
 * one fsync, for all of them — each resolving once its batch is written; a later put of one key wins over an earlier one, and
 * closing the store waits for the queued puts instead of dropping them.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Level } from 'level';
import { openStore } from '../../../src/store/index.ts';
import { cleanupStack, tempDir } from '../../utils/temp.ts';

const stack = cleanupStack();
afterEach(() => {
  vi.restoreAllMocks();
  return stack.run();
});

describe('durable puts', () => {
  it('made at once go in one batch, and each is stored once it resolves', async () => {
    const location = await tempDir(stack);
    const store = await openStore({ location });
    const batches = vi.spyOn(Level.prototype, 'batch');
    const labels = Array.from({ length: 200 }, (_, i) => i + 1);
    const resolved: number[] = [];
    await Promise.all(labels.map((l) => store.shares.put(l, Uint8Array.of(l % 256, 1)).then(() => resolved.push(l))));
    // All made in one turn: one write for the 200 (the first does not go alone).
    expect(batches.mock.calls.length).toBe(1);
    expect(resolved.sort((a, b) => a - b)).toEqual(labels);
    await store.close();

    const reopened = await openStore({ location });
    stack.push(() => reopened.close());
    for (const l of labels) expect(await reopened.shares.get(l), String(l)).toEqual(Uint8Array.of(l % 256, 1));
  });

  it('keep their order: of two puts of one key, the later one is stored', async () => {
    const location = await tempDir(stack);
    const store = await openStore({ location });
    // The puts go in one batch, in order.
    await Promise.all([store.shares.put(1, Uint8Array.of(1)), store.shares.put(9, Uint8Array.of(2)), store.shares.put(9, Uint8Array.of(3)), store.putMeta('m', 'a'), store.putMeta('m', 'b')]);
    await store.close();
    const reopened = await openStore({ location });
    stack.push(() => reopened.close());
    expect(await reopened.shares.get(9)).toEqual(Uint8Array.of(3));
    expect(await reopened.getMeta('m')).toBe('b');
  });

  it('queued when the store is closed are written first', async () => {
    const location = await tempDir(stack);
    const store = await openStore({ location });
    const puts = Array.from({ length: 50 }, (_, i) => store.shares.put(i + 1, Uint8Array.of(i)));
    await store.close();
    await Promise.all(puts);
    const reopened = await openStore({ location });
    stack.push(() => reopened.close());
    expect((await reopened.shares.heldLabels!()).has(50)).toBe(true);
  });

  it('after the store is closed reject instead of hanging', async () => {
    const store = await openStore({ location: await tempDir(stack) });
    await store.close();
    await expect(store.shares.put(1, Uint8Array.of(1))).rejects.toThrow();
  });
});
