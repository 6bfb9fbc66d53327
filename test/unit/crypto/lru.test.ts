/** The small LRU of src/crypto/lru.ts: capacity, recency, and the get/set/delete the job locator uses; the age-ordered map every bounded cache evicts from. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createAgeOrderedMap, createLruCache } from '../../../src/crypto/index.ts';

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

  it('evicts in constant time however many entries it holds, where a Map used as a queue walks its holes', () => {
    // The same work — 20,000 entries, then 20,000 times: add one, drop the oldest — against the same
    // work at 1,000 entries. A Map taking its oldest with keys().next() walks the holes of the
    // entries deleted before it: about 30 times slower per eviction at 20,000 than at 1,000 (node 24).
    // The fastest of five runs: a collection or a preemption in one run (the suite runs files in
    // parallel) says nothing about the structure.
    const perEviction = (size: number, evict: (size: number, rounds: number) => void) => {
      const rounds = 10_000;
      evict(size, rounds);
      let best = Infinity;
      for (let run = 0; run < 5; run++) {
        const t0 = performance.now();
        evict(size, rounds);
        best = Math.min(best, (performance.now() - t0) / rounds);
      }
      return best;
    };
    const ageOrdered = (size: number, rounds: number) => {
      const map = createAgeOrderedMap<number, number>();
      for (let i = 0; i < size; i++) map.set(i, i);
      for (let i = size; i < size + rounds; i++) {
        map.set(i, i);
        map.delete(map.oldest()!);
      }
      expect(map.size).toBe(size);
    };
    const mapQueue = (size: number, rounds: number) => {
      const map = new Map<number, number>();
      for (let i = 0; i < size; i++) map.set(i, i);
      for (let i = size; i < size + rounds; i++) {
        map.set(i, i);
        map.delete(map.keys().next().value!);
      }
    };
    // The Map's growth is the reference the age-ordered map is held to (measured in the same run).
    const mapGrowth = perEviction(20_000, mapQueue) / perEviction(1_000, mapQueue);
    const growth = perEviction(20_000, ageOrdered) / perEviction(1_000, ageOrdered);
    // At least 4×: 20 times the entries should cost nothing more, and timing on a busy machine wobbles.
    expect(growth, `growth ${growth.toFixed(1)}×, a Map's ${mapGrowth.toFixed(1)}×`).toBeLessThan(Math.max(4, mapGrowth / 2.5));
  });
});
