/**
 * The `usedStrings` repository behind "one coordinator per signed string per member" (docs/security.md,
 * Share release): a key is held by the first coordinator that used it — its repeats pass, another's
 * are refused, even among concurrent callers, past the memory bound and across a reopen — and is
 * forgotten only past its horizon: a Web2 entry by its time, a Web3 entry by its chain's block, read
 * in expiry order. Entries of older builds name no holder and refuse everyone.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { importStore, openStore, rawKeyOf, SUBLEVELS, type NodeStore } from '../../../src/store/index.ts';
import { cleanupStack, tempDir } from '../../utils/temp.ts';

const stack = cleanupStack();
afterEach(() => stack.run());

const key = (i: number | string) => String(i).padStart(64, '0');
/** Two coordinators' addresses: the holders of the keys they use. */
const C0 = '0x00000000000000000000000000000000000000c0';
const C1 = '0x00000000000000000000000000000000000000c1';
/** A prune by the clock alone: no chain's head given. */
const byTime = (now: number) => ({ now, blocksBelow: new Map<number, number>() });

async function opened(location: string, options: { usedStringsInMemory?: number } = {}): Promise<NodeStore> {
  const store = await openStore({ location, ...options });
  stack.push(() => store.close());
  return store;
}

describe('used signed strings', () => {
  it('a key is held by one of many concurrent coordinators: all its uses pass, every other one is refused, and after a reopen until pruned', async () => {
    const location = await tempDir(stack);
    let store = await openStore({ location });
    const holders = Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? C0 : C1));
    const outcomes = await Promise.all(holders.map((holder) => store.usedStrings.use(key('a'), holder, { at: 1000 })));
    const winner = holders[outcomes.indexOf(true)];
    expect(outcomes).toEqual(holders.map((holder) => holder === winner));
    const loser = winner === C0 ? C1 : C0;
    expect(await store.usedStrings.use(key('b'), C0, { at: 5000 })).toBe(true);
    await store.close();

    store = await opened(location);
    expect(await store.usedStrings.use(key('a'), loser, { at: 1000 })).toBe(false);
    expect(await store.usedStrings.use(key('a'), winner!, { at: 1000 })).toBe(true);
    // Pruning at t=2000 forgets the first (its time has passed), not the second.
    expect(await store.usedStrings.prune(byTime(2000))).toBe(1);
    expect(await store.usedStrings.use(key('b'), C1, { at: 5000 })).toBe(false);
    expect(await store.usedStrings.use(key('b'), C0, { at: 5000 })).toBe(true);
    expect(await store.usedStrings.use(key('a'), loser, { at: 1000 })).toBe(true);
  });

  it('past its memory bound, a key dropped from memory is still found on disk with its holder; concurrent callers of a fresh one see each other', async () => {
    const store = await opened(await tempDir(stack), { usedStringsInMemory: 3 });
    for (let i = 0; i < 6; i++) expect(await store.usedStrings.use(key(i), C0, { at: 9000 })).toBe(true);
    // Keys 0-2 are no longer in memory: read from the disk, refused to C1 and passed to C0; a fresh
    // key 6 is taken by the first caller, C1, and refused to C0 alone.
    const uses: [number, string][] = [[0, C1], [1, C1], [2, C1], [0, C0], [6, C1], [6, C0], [6, C1]];
    const outcomes = await Promise.all(uses.map(([i, holder]) => store.usedStrings.use(key(i), holder, { at: 9000 })));
    expect(outcomes).toEqual([false, false, false, true, true, false, true]);
    expect(await store.usedStrings.prune(byTime(10_000))).toBe(7);
    expect(await store.usedStrings.use(key(0), C1, { at: 20_000 })).toBe(true);
  });

  it('a Web3 key waits for its own chain: no time forgets it, and a block forgets only that chain\'s keys below it', async () => {
    const location = await tempDir(stack);
    let store = await openStore({ location });
    // Chain 845 is a prefix of 8453's digits: the two must stay apart. A key may hold the separator.
    await store.usedStrings.use(key('c!100'), C0, { chainId: 8453, block: 100 });
    await store.usedStrings.use(key('c101'), C0, { chainId: 8453, block: 101 });
    await store.usedStrings.use(key('d100'), C0, { chainId: 845, block: 100 });
    await store.usedStrings.use(key('w'), C0, { at: 1000 });
    expect(await store.usedStrings.chains()).toEqual([845, 8453]);
    // Any time: only the Web2 key goes.
    expect(await store.usedStrings.prune(byTime(Number.MAX_SAFE_INTEGER))).toBe(1);
    await store.close();

    store = await opened(location);
    // Below 101 on chain 8453: its block-100 key goes; its block-101 key and chain 845's stay.
    expect(await store.usedStrings.prune({ now: 0, blocksBelow: new Map([[8453, 101]]) })).toBe(1);
    expect(await store.usedStrings.use(key('c101'), C1, { chainId: 8453, block: 101 })).toBe(false);
    expect(await store.usedStrings.use(key('d100'), C1, { chainId: 845, block: 100 })).toBe(false);
    expect(await store.usedStrings.use(key('c!100'), C1, { chainId: 8453, block: 100 })).toBe(true);
    // A horizon at or below 0 (a young chain) forgets nothing; then each chain empties in turn.
    expect(await store.usedStrings.prune({ now: 0, blocksBelow: new Map([[845, 0]]) })).toBe(0);
    expect(await store.usedStrings.prune({ now: 0, blocksBelow: new Map([[845, 101], [8453, 1_000]]) })).toBe(3);
    expect(await store.usedStrings.chains()).toEqual([]);
  });

  it('entries written before the expiry index load as Web2 entries of their time, name no holder, and are pruned by their time', async () => {
    // What an older build left on disk (or in a backup it made): key → forget time, Unix ms.
    const location = await tempDir(stack);
    const old = (k: string, forgetAt: number) => ({ key: rawKeyOf(SUBLEVELS.usedStrings, k), value: Buffer.from(JSON.stringify(forgetAt)) });
    await importStore(location, (async function* () {
      yield old(key('old1'), 1000);
      yield old(key('old2'), 5000);
    })());
    const store = await opened(location);
    expect(await store.usedStrings.use(key('old1'), C0, { at: 1000 })).toBe(false);
    expect(await store.usedStrings.prune(byTime(2000))).toBe(1);
    expect(await store.usedStrings.use(key('old1'), C0, { at: 1000 })).toBe(true);
    expect(await store.usedStrings.use(key('old2'), C0, { at: 5000 })).toBe(false);
    expect(await store.usedStrings.use(key('old2'), C1, { at: 5000 })).toBe(false);
    expect(await store.usedStrings.prune(byTime(5000))).toBe(2);
  });

  it('entries written before holders (their expiry alone) refuse every coordinator until their horizon', async () => {
    const location = await tempDir(stack);
    const expiry = `t!${String(3000).padStart(20, '0')}`;
    await importStore(location, (async function* () {
      yield { key: rawKeyOf(SUBLEVELS.usedStrings, key('pre')), value: Buffer.from(JSON.stringify(expiry)) };
      yield { key: rawKeyOf(SUBLEVELS.usedStringsByExpiry, `${expiry}!${key('pre')}`), value: Buffer.from(JSON.stringify('')) };
    })());
    const store = await opened(location);
    expect(await store.usedStrings.use(key('pre'), C0, { at: 3000 })).toBe(false);
    expect(await store.usedStrings.use(key('pre'), C1, { at: 3000 })).toBe(false);
    expect(await store.usedStrings.prune(byTime(2999))).toBe(0);
    expect(await store.usedStrings.prune(byTime(3000))).toBe(1);
    expect(await store.usedStrings.use(key('pre'), C1, { at: 3000 })).toBe(true);
  });
});
