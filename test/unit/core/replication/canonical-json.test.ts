/**
 * Canonical JSON (src/core/replication/canonical-json.ts), what every record signature is computed
 * over: keys in `Array.prototype.sort`'s default order at every depth, no whitespace, `undefined`
 * members left out — the same bytes as a plain reference (the built-in sort at every object) for any
 * JSON value, whatever order its keys were written in, small and large objects alike (two sorts).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson, inCanonicalKeyOrder } from '../../../../src/core/replication/canonical-json.ts';

/** The reference: every object's members in the built-in sort's order of their keys, joined (integer-like keys included: no object is rebuilt, whose own order would put them first). */
function reference(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(reference).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const obj = value as Record<string, unknown>;
    return `{${Object.keys(obj)
      .sort()
      .filter((k) => obj[k] !== undefined)
      .map((k) => `${JSON.stringify(k)}:${reference(obj[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value);
}

/** The same object with its keys written in reverse order. */
function reversed(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(reversed);
  if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value).reverse().map(([k, v]) => [k, reversed(v)]));
  return value;
}

describe('canonical JSON', () => {
  it('is the reference serialisation of any JSON value, whatever order its keys come in (property)', () => {
    const key = fc.oneof(fc.string(), fc.string({ unit: 'grapheme' }), fc.constantFrom('a', 'B', '_', '10', '9', 'é', '\u{1F600}', '\uFFFF'));
    const json = fc.letrec((tie) => ({
      value: fc.oneof({ depthSize: 'small' }, fc.constant(null), fc.boolean(), fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.string(), fc.array(tie('value'), { maxLength: 4 }), tie('object')),
      // Up to 40 keys: objects past the in-place sort's size too.
      object: fc.dictionary(key, tie('value'), { maxKeys: 40 }),
    })).value;
    fc.assert(
      fc.property(json, (v) => {
        expect(canonicalJson(v)).toBe(reference(v));
        expect(canonicalJson(reversed(v))).toBe(canonicalJson(v));
      }),
      { numRuns: 300 },
    );
  });

  it('leaves out undefined members and refuses what JSON cannot carry', () => {
    expect(canonicalJson({ b: 1, a: undefined, c: [1, 'x'] })).toBe('{"b":1,"c":[1,"x"]}');
    for (const bad of [Number.NaN, Infinity, 1n, () => 1, new Date(0), { a: new Map() }]) expect(() => canonicalJson(bad)).toThrow(TypeError);
  });

  it('with every key already in order, is what JSON.stringify writes — and refuses or fixes alike what it would not', () => {
    // Keys in order, as records are written: the native path.
    expect(canonicalJson({ a: 1, b: [true, null, 'x'], c: { d: -0, e: 1e21 } })).toBe('{"a":1,"b":[true,null,"x"],"c":{"d":0,"e":1e+21}}');
    // In order but not what JSON.stringify may write as it is: the same answers as out of order.
    expect(canonicalJson({ a: undefined, b: 1 })).toBe('{"b":1}');
    for (const bad of [{ a: 1, b: Number.NaN }, { a: [1, Infinity] }, { a: 1, toJSON: () => ({}) }, Object.assign(new Array<number>(3), { 0: 1, 2: 3 }), { a: new Date(0) }]) expect(() => canonicalJson(bad)).toThrow(TypeError);
    class Listed extends Array<number> {
      toJSON() {
        return 'not the array';
      }
    }
    // An array's own toJSON is never asked: its elements are written, as always.
    expect(canonicalJson({ a: Listed.from([1, 2]) })).toBe('{"a":[1,2]}');
  });

  it('property: a value rebuilt in canonical key order serialises as JSON.stringify does, to the same bytes as in any order', () => {
    const json = fc.letrec((tie) => ({
      value: fc.oneof({ depthSize: 'small' }, fc.constant(null), fc.boolean(), fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.string(), fc.array(tie('value'), { maxLength: 4 }), tie('object')),
      object: fc.dictionary(fc.oneof(fc.string(), fc.constantFrom('a', 'B', '10', '9', 'é')), tie('value'), { maxKeys: 30 }),
    })).value;
    fc.assert(
      fc.property(json, (v) => {
        const ordered = JSON.parse(reference(v)) as unknown;
        expect(canonicalJson(ordered)).toBe(reference(v));
        expect(canonicalJson(ordered)).toBe(canonicalJson(reversed(v)));
      }),
      { numRuns: 300 },
    );
  });

  it('property: inCanonicalKeyOrder gives what JSON.parse of the canonical form gives, keys in the same order at every depth, and the value itself when already in order', () => {
    const key = fc.oneof(fc.string(), fc.constantFrom('a', 'B', '10', '9', 'é', '__proto__', 'toString'));
    const json = fc.letrec((tie) => ({
      value: fc.oneof({ depthSize: 'small' }, fc.constant(null), fc.boolean(), fc.integer(), fc.constant(-0), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.string(), fc.array(tie('value'), { maxLength: 4 }), tie('object')),
      object: fc.dictionary(key, tie('value'), { maxKeys: 30 }),
    })).value;
    /** Every object's keys, depth first: the order as well as the content (-0 is 0 in JSON, and a value already in order keeps its own). */
    const shape = (v: unknown): unknown => (Array.isArray(v) ? v.map(shape) : v !== null && typeof v === 'object' ? Object.keys(v).map((k) => [k, shape((v as Record<string, unknown>)[k])]) : v === 0 ? 0 : v);
    fc.assert(
      fc.property(json, (v) => {
        const parsed = JSON.parse(canonicalJson(v)) as unknown;
        for (const input of [v, reversed(v)]) {
          const ordered = inCanonicalKeyOrder(input);
          expect(shape(ordered)).toEqual(shape(parsed));
          expect(canonicalJson(ordered)).toBe(canonicalJson(v));
        }
        // Already in order (as JSON.parse made it, unless an object has integer-like keys, which
        // JavaScript lists first, in numeric order): nothing is copied.
        if (JSON.stringify(parsed) === canonicalJson(v)) expect(inCanonicalKeyOrder(parsed)).toBe(parsed);
      }),
      { numRuns: 300 },
    );
    // What the canonical form refuses, the copy refuses.
    for (const bad of [{ b: 1, a: Number.NaN }, { b: [1, Infinity], a: 1 }, { b: 1, a: () => 1 }, { b: 1, a: new Date(0) }, { b: 1, a: [undefined] }, { b: 1, a: 1n }]) {
      expect(() => canonicalJson(bad)).toThrow(TypeError);
      expect(() => inCanonicalKeyOrder(bad)).toThrow(TypeError);
    }
    expect(inCanonicalKeyOrder({ b: 1, a: undefined, c: -0 })).toEqual({ b: 1, c: 0 });
  });
});
