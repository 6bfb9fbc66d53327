/**
 * The `usedStrings` repository behind "once per signed string per member" (docs/security.md): a key is
 * used once, even by concurrent callers and across a reopen, and forgotten only after its time.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { openStore } from '../../../src/store/index.ts';
import { cleanupStack, tempDir } from '../../utils/temp.ts';

const stack = cleanupStack();
afterEach(() => stack.run());

describe('used signed strings', () => {
  it('a key is used once, by exactly one of many concurrent callers, and stays used after a reopen until pruned', async () => {
    const location = await tempDir(stack);
    let store = await openStore({ location });
    const outcomes = await Promise.all(Array.from({ length: 20 }, () => store.usedStrings.use('a'.repeat(64), 1000)));
    expect(outcomes.filter(Boolean)).toHaveLength(1);
    expect(await store.usedStrings.use('b'.repeat(64), 5000)).toBe(true);
    await store.close();

    store = await openStore({ location });
    stack.push(() => store.close());
    expect(await store.usedStrings.use('a'.repeat(64), 1000)).toBe(false);
    // Pruning at t=2000 forgets the first (its time has passed), not the second.
    expect(await store.usedStrings.prune(2000)).toBe(1);
    expect(await store.usedStrings.use('b'.repeat(64), 5000)).toBe(false);
    expect(await store.usedStrings.use('a'.repeat(64), 1000)).toBe(true);
  });

  it('past its memory bound, a key dropped from memory is still found on disk, by one of many concurrent callers', async () => {
    const location = await tempDir(stack);
    const store = await openStore({ location, usedStringsInMemory: 3 });
    stack.push(() => store.close());
    const key = (i: number) => String(i).padStart(64, '0');
    for (let i = 0; i < 6; i++) expect(await store.usedStrings.use(key(i), 9000)).toBe(true);
    // Keys 0-2 are no longer in memory: each is refused from the disk, and a fresh one taken once.
    const outcomes = await Promise.all([0, 1, 2, 0, 6, 6, 6].map((i) => store.usedStrings.use(key(i), 9000)));
    expect(outcomes).toEqual([false, false, false, false, true, false, false]);
    expect(await store.usedStrings.prune(10_000)).toBe(7);
    expect(await store.usedStrings.use(key(0), 20_000)).toBe(true);
  });
});
