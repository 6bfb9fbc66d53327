/**
 * The `usedStrings` repository behind "once per signed string per member" (docs/security.md): a key is
 * used once, even by concurrent callers and across a reopen, and forgotten only past its horizon — a
 * Web2 entry by its time, a Web3 entry by its chain's block — read in expiry order.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { importStore, openStore, rawKeyOf, SUBLEVELS, type NodeStore } from '../../../src/store/index.ts';
import { cleanupStack, tempDir } from '../../utils/temp.ts';

const stack = cleanupStack();
afterEach(() => stack.run());

const key = (i: number | string) => String(i).padStart(64, '0');
/** A prune by the clock alone: no chain's head given. */
const byTime = (now: number) => ({ now, blocksBelow: new Map<number, number>() });

async function opened(location: string, options: { usedStringsInMemory?: number } = {}): Promise<NodeStore> {
  const store = await openStore({ location, ...options });
  stack.push(() => store.close());
  return store;
}

describe('used signed strings', () => {
  it('a key is used once, by exactly one of many concurrent callers, and stays used after a reopen until pruned', async () => {
    const location = await tempDir(stack);
    let store = await openStore({ location });
    const outcomes = await Promise.all(Array.from({ length: 20 }, () => store.usedStrings.use(key('a'), { at: 1000 })));
    expect(outcomes.filter(Boolean)).toHaveLength(1);
    expect(await store.usedStrings.use(key('b'), { at: 5000 })).toBe(true);
    await store.close();

    store = await opened(location);
    expect(await store.usedStrings.use(key('a'), { at: 1000 })).toBe(false);
    // Pruning at t=2000 forgets the first (its time has passed), not the second.
    expect(await store.usedStrings.prune(byTime(2000))).toBe(1);
    expect(await store.usedStrings.use(key('b'), { at: 5000 })).toBe(false);
    expect(await store.usedStrings.use(key('a'), { at: 1000 })).toBe(true);
  });

  it('past its memory bound, a key dropped from memory is still found on disk, by one of many concurrent callers', async () => {
    const store = await opened(await tempDir(stack), { usedStringsInMemory: 3 });
    for (let i = 0; i < 6; i++) expect(await store.usedStrings.use(key(i), { at: 9000 })).toBe(true);
    // Keys 0-2 are no longer in memory: each is refused from the disk, and a fresh one taken once.
    const outcomes = await Promise.all([0, 1, 2, 0, 6, 6, 6].map((i) => store.usedStrings.use(key(i), { at: 9000 })));
    expect(outcomes).toEqual([false, false, false, false, true, false, false]);
    expect(await store.usedStrings.prune(byTime(10_000))).toBe(7);
    expect(await store.usedStrings.use(key(0), { at: 20_000 })).toBe(true);
  });

  it('a Web3 key waits for its own chain: no time forgets it, and a block forgets only that chain\'s keys below it', async () => {
    const location = await tempDir(stack);
    let store = await openStore({ location });
    // Chain 845 is a prefix of 8453's digits: the two must stay apart. A key may hold the separator.
    await store.usedStrings.use(key('c!100'), { chainId: 8453, block: 100 });
    await store.usedStrings.use(key('c101'), { chainId: 8453, block: 101 });
    await store.usedStrings.use(key('d100'), { chainId: 845, block: 100 });
    await store.usedStrings.use(key('w'), { at: 1000 });
    expect(await store.usedStrings.chains()).toEqual([845, 8453]);
    // Any time: only the Web2 key goes.
    expect(await store.usedStrings.prune(byTime(Number.MAX_SAFE_INTEGER))).toBe(1);
    await store.close();

    store = await opened(location);
    // Below 101 on chain 8453: its block-100 key goes; its block-101 key and chain 845's stay.
    expect(await store.usedStrings.prune({ now: 0, blocksBelow: new Map([[8453, 101]]) })).toBe(1);
    expect(await store.usedStrings.use(key('c101'), { chainId: 8453, block: 101 })).toBe(false);
    expect(await store.usedStrings.use(key('d100'), { chainId: 845, block: 100 })).toBe(false);
    expect(await store.usedStrings.use(key('c!100'), { chainId: 8453, block: 100 })).toBe(true);
    // A horizon at or below 0 (a young chain) forgets nothing; then each chain empties in turn.
    expect(await store.usedStrings.prune({ now: 0, blocksBelow: new Map([[845, 0]]) })).toBe(0);
    expect(await store.usedStrings.prune({ now: 0, blocksBelow: new Map([[845, 101], [8453, 1_000]]) })).toBe(3);
    expect(await store.usedStrings.chains()).toEqual([]);
  });

  it('entries written before the expiry index load as Web2 entries of their time, and are pruned by it', async () => {
    // What an older build left on disk (or in a backup it made): key → forget time, Unix ms.
    const location = await tempDir(stack);
    const old = (k: string, forgetAt: number) => ({ key: rawKeyOf(SUBLEVELS.usedStrings, k), value: Buffer.from(JSON.stringify(forgetAt)) });
    await importStore(location, (async function* () {
      yield old(key('old1'), 1000);
      yield old(key('old2'), 5000);
    })());
    const store = await opened(location);
    expect(await store.usedStrings.use(key('old1'), { at: 1000 })).toBe(false);
    expect(await store.usedStrings.prune(byTime(2000))).toBe(1);
    expect(await store.usedStrings.use(key('old1'), { at: 1000 })).toBe(true);
    expect(await store.usedStrings.use(key('old2'), { at: 5000 })).toBe(false);
    expect(await store.usedStrings.prune(byTime(5000))).toBe(2);
  });
});
