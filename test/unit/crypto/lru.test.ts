/** The small LRU of src/crypto/lru.ts: capacity, recency, and the get/set/delete the job locator uses; the age-ordered map every bounded cache evicts from. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createAgeOrderedMap, createLruCache, setWithin } from '../../../src/crypto/index.ts';
import { collectAllNow } from '../../../src/crypto/young-garbage.ts';

describe('createLruCache', () => {
  it('evicts the least recently used entry; get and set count as uses', () => {
    const lru = createLruCache<string>(2);
    lru.set('a', '1');
    lru.set('b', '2');
    expect(lru.get('a')).toBe('1');
    lru.set('c', '3');
    expect(lru.get('b')).toBeUndefined();
    expect(lru.get('a')).toBe('1');
    lru.set('c', '4');
    lru.set('d', '5');
    expect(lru.get('a')).toBeUndefined();
    expect(lru.get('c')).toBe('4');
    expect(lru.size()).toBe(2);
  });

  it('getOrCreate creates once per cached key; delete forgets', () => {
    const lru = createLruCache<number>(4);
    let made = 0;
    expect(lru.getOrCreate('k', () => ++made)).toBe(1);
    expect(lru.getOrCreate('k', () => ++made)).toBe(1);
    lru.delete('k');
    expect(lru.get('k')).toBeUndefined();
    expect(lru.getOrCreate('k', () => ++made)).toBe(2);
  });

  it('capacity 0 caches nothing', () => {
    const lru = createLruCache<number>(0);
    lru.set('a', 1);
    expect(lru.get('a')).toBeUndefined();
    expect(lru.getOrCreate('a', () => 2)).toBe(2);
    expect(lru.size()).toBe(0);
  });
});

describe('createAgeOrderedMap', () => {
  const op = fc.oneof(
    fc.record({ op: fc.constant('set' as const), key: fc.integer({ min: 0, max: 15 }), value: fc.integer() }),
    fc.record({ op: fc.constant('delete' as const), key: fc.integer({ min: 0, max: 15 }) }),
    fc.record({ op: fc.constant('renew' as const), key: fc.integer({ min: 0, max: 15 }) }),
    fc.record({ op: fc.constant('evict' as const) }),
  );

  it('answers as a Map in insertion order does: renew is delete-then-set, the oldest is the first key (property)', () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 400 }), (ops) => {
        const map = createAgeOrderedMap<number, number>();
        const model = new Map<number, number>();
        for (const o of ops) {
          if (o.op === 'set') {
            map.set(o.key, o.value);
            model.set(o.key, o.value);
          } else if (o.op === 'delete') {
            expect(map.delete(o.key)).toBe(model.delete(o.key));
          } else if (o.op === 'renew') {
            map.renew(o.key);
            if (model.has(o.key)) {
              const v = model.get(o.key)!;
              model.delete(o.key);
              model.set(o.key, v);
            }
          } else {
            const oldest = map.oldest();
            expect(oldest).toBe(model.keys().next().value);
            if (oldest !== undefined) {
              map.delete(oldest);
              model.delete(oldest);
            }
          }
          expect(map.size).toBe(model.size);
          expect(map.oldest()).toBe(model.keys().next().value);
        }
        for (let key = 0; key <= 15; key++) {
          expect(map.get(key)).toBe(model.get(key));
          expect(map.has(key)).toBe(model.has(key));
        }
      }),
      { numRuns: 200 },
    );
  });

  it('setWithin drops the oldest for a new key at capacity, and nothing for a key it holds', () => {
    const map = createAgeOrderedMap<string, number>();
    expect(['a', 'b', 'c'].map((k, i) => setWithin(map, k, i, 3))).toEqual([false, false, false]);
    expect(setWithin(map, 'b', 9, 3)).toBe(false);
    expect([map.size, map.get('a'), map.get('b')]).toEqual([3, 0, 9]);
    expect(setWithin(map, 'd', 3, 3)).toBe(true);
    expect([map.size, map.has('a'), map.oldest()]).toEqual([3, false, 'b']);
  });

  it('keeps nothing of a deleted key alive: its place in the queue is emptied, renewed or not', async () => {
    // Object keys, as the state cache's (its entries, each holding a record): a deleted key's place
    // behind the oldest must not hold it until the queue is rebuilt.
    const map = createAgeOrderedMap<object, number>();
    const refs: Array<WeakRef<object>> = [];
    (() => {
      for (let i = 0; i < 200; i++) {
        const key = { i };
        refs.push(new WeakRef(key));
        map.set(key, i);
      }
    })();
    (() => {
      for (let i = 0; i < 200; i++) {
        const key = refs[i]!.deref()!;
        if (i % 2 === 1) map.delete(key);
        else if (i % 4 === 0) map.renew(key);
      }
    })();
    expect(map.size).toBe(100);
    // WeakRefs let go of their targets only once the current job is over.
    await new Promise((resolve) => setImmediate(resolve));
    collectAllNow();
    const alive = refs.map((r, i) => [i, r.deref() !== undefined] as const);
    expect(alive.filter(([i, a]) => a !== (i % 2 === 0)).map(([i]) => i)).toEqual([]);
    expect(map.oldest()).toBe(refs[2]!.deref());
  });

  it('evicts in constant time however many entries it holds, where a Map used as a queue walks its holes', () => {
    // 20,000 entries, then 10,000 times: add one, drop the oldest. The reference, in the same run and
    // at the same size (so the same cache misses): a Map that adds one and deletes a key known in
    // advance. A Map taking its oldest with keys().next() walks the holes of the entries deleted
    // before it: 40 to 90 times that reference (node 24); the age-ordered map stays within 4 of it.
    // Only the evictions are timed, the fastest of five runs: filling the map, a collection or a
    // preemption (the suite runs files in parallel) says nothing about the structure.
    const size = 20_000;
    const rounds = 10_000;
    const perEviction = (evict: () => number) => {
      evict();
      let best = Infinity;
      for (let run = 0; run < 5; run++) best = Math.min(best, evict() / rounds);
      return best;
    };
    const timed = <M>(map: M, add: (map: M, key: number) => void, drop: (map: M, key: number) => void) => () => {
      for (let i = 0; i < size; i++) add(map, i);
      const t0 = performance.now();
      for (let i = size; i < size + rounds; i++) {
        add(map, i);
        drop(map, i);
      }
      return performance.now() - t0;
    };
    const ageOrdered = () => {
      const map = createAgeOrderedMap<number, number>();
      const elapsed = timed(map, (m, i) => m.set(i, i), (m) => m.delete(m.oldest()!))();
      expect([map.size, map.oldest()]).toEqual([size, rounds]);
      return elapsed;
    };
    const knownKey = () => timed(new Map<number, number>(), (m, i) => m.set(i, i), (m, i) => m.delete(i - size))();
    const mapQueue = () => timed(new Map<number, number>(), (m, i) => m.set(i, i), (m) => m.delete(m.keys().next().value!))();
    const reference = perEviction(knownKey);
    const ours = perEviction(ageOrdered) / reference;
    const aMapQueue = perEviction(mapQueue) / reference;
    expect(ours, `${ours.toFixed(1)}× a known key's, a Map's queue ${aMapQueue.toFixed(1)}×`).toBeLessThan(12);
  });
});
