import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createOriginSeqMap, createRecentOriginSeqMap } from '../../../../src/core/replication/origin-seq-map.ts';

/** Operations on a few origins and seqs, so that places repeat. */
const op = fc.oneof(
  fc.record({ op: fc.constant('set' as const), origin: fc.constantFrom('0xa', '0xb', '0xc'), seq: fc.integer({ min: 1, max: 12 }), value: fc.integer() }),
  fc.record({ op: fc.constant('delete' as const), origin: fc.constantFrom('0xa', '0xb', '0xc', '0xd'), seq: fc.integer({ min: 1, max: 12 }) }),
);
const placesOf = (ops: ReadonlyArray<{ origin: string; seq: number }>) => [...new Set(ops.map((o) => `${o.origin}!${o.seq}`))].map((k) => k.split('!')).map(([origin, seq]) => ({ origin: origin!, seq: Number(seq) }));

describe('(origin, seq) maps', () => {
  it('answer as a Map keyed by "<origin>!<seq>" does, whatever the operations (property)', () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 80 }), (ops) => {
        const map = createOriginSeqMap<number>();
        const model = new Map<string, number>();
        for (const o of ops) {
          if (o.op === 'set') {
            map.set(o.origin, o.seq, o.value);
            model.set(`${o.origin}!${o.seq}`, o.value);
          } else {
            map.delete(o.origin, o.seq);
            model.delete(`${o.origin}!${o.seq}`);
          }
          expect(map.size).toBe(model.size);
        }
        for (const { origin, seq } of placesOf(ops)) {
          expect(map.get(origin, seq)).toBe(model.get(`${origin}!${seq}`));
          expect(map.has(origin, seq)).toBe(model.has(`${origin}!${seq}`));
        }
      }),
    );
  });

  it('the recent map keeps the newest places first set, as a Map that drops its oldest key past the capacity (property)', () => {
    const set = op.filter((o): o is Extract<typeof o, { op: 'set' }> => o.op === 'set');
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 8 }), fc.array(set, { maxLength: 80 }), (capacity, ops) => {
        const map = createRecentOriginSeqMap<number>(capacity);
        const model = new Map<string, number>();
        for (const o of ops) {
          map.set(o.origin, o.seq, o.value);
          model.set(`${o.origin}!${o.seq}`, o.value);
          if (model.size > capacity) model.delete(model.keys().next().value!);
          expect(map.size).toBe(model.size);
        }
        for (const { origin, seq } of placesOf(ops)) expect(map.get(origin, seq)).toBe(model.get(`${origin}!${seq}`));
      }),
    );
  });
});
