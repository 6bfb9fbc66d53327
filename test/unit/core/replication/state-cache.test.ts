import { describe, expect, it } from 'vitest';
import type { ReplicatedRecord } from '../../../../src/core/replication/record.ts';
import { approximateBytes, createStateCache } from '../../../../src/core/replication/state-cache.ts';

const state = (key: string, v: number) => ({ kind: 'note', key, origin: '0xa', seq: v, hlc: [v, 0], body: { v }, sig: '0x00' }) as ReplicatedRecord;

/** A store stub counting reads; `hold` makes the next read wait for `release()`. */
function countingStore(initial: ReplicatedRecord[]) {
  const states = new Map(initial.map((r) => [r.key, r]));
  const reads: string[] = [];
  let held: Promise<void> | undefined;
  let release = () => undefined as void;
  return {
    reads,
    states,
    hold() {
      held = new Promise<void>((r) => (release = r));
    },
    release: () => release(),
    store: {
      async getState(_kind: string, key: string) {
        reads.push(key);
        const value = states.get(key);
        if (held) {
          const wait = held;
          held = undefined;
          await wait;
        }
        return value;
      },
    },
  };
}

describe('state cache', () => {
  it('reads a state through once and serves it from memory after; absence too', async () => {
    const s = countingStore([state('a', 1)]);
    const cache = createStateCache({ maxEntries: 10 }, { store: s.store });
    expect(await cache.get('note', 'a')).toEqual(state('a', 1));
    expect(await cache.get('note', 'a')).toEqual(state('a', 1));
    expect(await cache.get('note', 'none')).toBeUndefined();
    expect(await cache.get('note', 'none')).toBeUndefined();
    expect(s.reads).toEqual(['a', 'none']);
  });

  it('serves a committed winner from memory without a read', async () => {
    const s = countingStore([state('a', 1)]);
    const cache = createStateCache({ maxEntries: 10 }, { store: s.store });
    cache.update([state('a', 2), state('b', 3)]);
    expect(await cache.get('note', 'a')).toEqual(state('a', 2));
    expect(await cache.get('note', 'b')).toEqual(state('b', 3));
    expect(s.reads).toEqual([]);
  });

  it('evicts the least recently used entry beyond maxEntries', async () => {
    const s = countingStore([state('a', 1), state('b', 2), state('c', 3)]);
    const cache = createStateCache({ maxEntries: 2 }, { store: s.store });
    await cache.get('note', 'a');
    await cache.get('note', 'b');
    await cache.get('note', 'a'); // a is now the most recent
    await cache.get('note', 'c'); // evicts b
    await cache.get('note', 'a');
    await cache.get('note', 'b');
    expect(s.reads).toEqual(['a', 'b', 'c', 'b']);
  });

  it('evicts the least recently used entries beyond maxBytes, and never caches a state bigger than the budget', async () => {
    const big = (key: string) => ({ ...state(key, 1), body: { pk: 'x'.repeat(4000) } }) as ReplicatedRecord;
    const s = countingStore([big('a'), big('b'), big('c'), { ...state('huge', 1), body: { pk: 'y'.repeat(20_000) } } as ReplicatedRecord]);
    const one = approximateBytes(big('a'));
    expect(one).toBeGreaterThan(4000);
    // Room for two of them (with their entry overhead), not three.
    const cache = createStateCache({ maxEntries: 100, maxBytes: Math.floor(2.5 * (one + 100)) }, { store: s.store });
    for (const k of ['a', 'b', 'a', 'c', 'a', 'b']) await cache.get('note', k);
    expect(s.reads).toEqual(['a', 'b', 'c', 'b']);
    expect(cache.size().entries).toBe(2);
    expect(cache.size().bytes).toBeLessThanOrEqual(2.5 * (one + 100));
    await cache.get('note', 'huge');
    await cache.get('note', 'huge');
    expect(s.reads.filter((k) => k === 'huge')).toHaveLength(2);
    // …and caching it did not push out what was there.
    expect(cache.size().entries).toBe(2);
  });

  it('never caches a read that raced a commit', async () => {
    const s = countingStore([state('a', 1)]);
    const cache = createStateCache({ maxEntries: 10 }, { store: s.store });
    s.hold();
    const racing = cache.get('note', 'a');
    // A commit replaces the state while the read is in flight; the read still answers what it read.
    s.states.set('a', state('a', 2));
    cache.update([state('a', 2)]);
    s.release();
    expect(await racing).toEqual(state('a', 1));
    expect(await cache.get('note', 'a')).toEqual(state('a', 2));
    // Another key read in the same window is not cached either: it is read again.
    s.hold();
    const other = cache.get('note', 'x');
    cache.update([]);
    s.release();
    await other;
    await cache.get('note', 'x');
    expect(s.reads).toEqual(['a', 'x', 'x']);
  });
});
