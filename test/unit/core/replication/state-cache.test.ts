import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
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
    // A key read while another key's commit lands is cached: under load some commit always is.
    s.hold();
    const other = cache.get('note', 'x');
    cache.update([state('b', 3)]);
    s.release();
    await other;
    await cache.get('note', 'x');
    expect(s.reads).toEqual(['a', 'x']);
    // Once more changes landed than the cache remembers, a read in flight is not cached.
    s.hold();
    const late = cache.get('note', 'y');
    cache.update(Array.from({ length: 5000 }, (_, i) => state(`k${i}`, i)));
    s.release();
    await late;
    await cache.get('note', 'y');
    expect(s.reads).toEqual(['a', 'x', 'y', 'y']);
  });

  it('answers a key past the highest of its kind as absent without a read, and learns higher keys from commits', async () => {
    const s = countingStore([state('000000000001', 1), state('000000000002', 2)]);
    const store = {
      ...s.store,
      async *listStateKeys(_kind: string, o: { reverse?: boolean; limit?: number } = {}) {
        const keys = [...s.states.keys()].sort();
        if (o.reverse) keys.reverse();
        yield keys.slice(0, o.limit ?? keys.length);
      },
    };
    const cache = createStateCache({ maxEntries: 10 }, { store });
    await cache.open(['note', 'empty']);
    expect(await cache.get('note', '000000000003')).toBeUndefined();
    expect(cache.peek('note', '000000000003')).toBeNull();
    expect(await cache.get('empty', 'anything')).toBeUndefined();
    expect(s.reads).toEqual([]);
    // A key at or below the highest is read.
    expect(await cache.get('note', '000000000002')).toEqual(state('000000000002', 2));
    expect(cache.peek('note', '000000000001')).toBeUndefined();
    expect(s.reads).toEqual(['000000000002']);
    // A commit raises the highest: the key is served, and the one past it is still absent.
    s.states.set('000000000003', state('000000000003', 3));
    cache.update([state('000000000003', 3)]);
    cache.forget('note', '000000000003');
    expect(await cache.get('note', '000000000003')).toEqual(state('000000000003', 3));
    expect(await cache.get('note', '000000000004')).toBeUndefined();
    expect(s.reads).toEqual(['000000000002', '000000000003']);
    // A key beyond printable ASCII is read: LevelDB's byte order and JavaScript's may differ on it.
    expect(await cache.get('note', 'z\u{1F600}')).toBeUndefined();
    expect(s.reads).toEqual(['000000000002', '000000000003', 'z\u{1F600}']);
  });

  it('answers what the store holds, whatever commits land while reads are in flight (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.oneof(fc.record({ op: fc.constant('commit' as const), key: fc.constantFrom('a', 'b', 'c', 'd') }), fc.record({ op: fc.constant('read' as const), key: fc.constantFrom('a', 'b', 'c', 'd', 'e'), ticks: fc.integer({ min: 0, max: 3 }) }), fc.record({ op: fc.constant('forget' as const), key: fc.constantFrom('a', 'b') })), { maxLength: 40 }),
        async (ops) => {
          const held = new Map<string, ReplicatedRecord>([['a', state('a', 0)]]);
          const store = {
            async getState(_kind: string, key: string) {
              const v = held.get(key);
              await new Promise((r) => setImmediate(r));
              return v;
            },
            async *listStateKeys(_kind: string, o: { reverse?: boolean; limit?: number } = {}) {
              const keys = [...held.keys()].sort();
              if (o.reverse) keys.reverse();
              yield keys.slice(0, o.limit ?? keys.length);
            },
          };
          const cache = createStateCache({ maxEntries: 3 }, { store });
          await cache.open(['note']);
          const reads: Array<Promise<unknown>> = [];
          let v = 1;
          for (const o of ops) {
            if (o.op === 'commit') {
              const r = state(o.key, v++);
              held.set(o.key, r);
              cache.update([r]);
            } else if (o.op === 'forget') {
              held.delete(o.key);
              cache.forget('note', o.key);
            } else {
              reads.push(cache.get('note', o.key));
              for (let t = 0; t < o.ticks; t++) await new Promise((r) => setImmediate(r));
            }
          }
          await Promise.all(reads);
          for (const key of ['a', 'b', 'c', 'd', 'e']) {
            expect(await cache.get('note', key), key).toEqual(held.get(key));
            expect(cache.peek('note', key) ?? undefined, key).toEqual(cache.peek('note', key) === undefined ? undefined : held.get(key));
          }
        },
      ),
      { numRuns: 200 },
    );
  });
});
