/**
 * Canonical JSON (src/core/replication/canonical-json.ts), what every record signature is computed
 * over: keys in `Array.prototype.sort`'s default order at every depth, no whitespace, `undefined`
 * members left out — the same bytes as a plain reference (the built-in sort at every object) for any
 * JSON value, whatever order its keys were written in, small and large objects alike (two sorts).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../../../../src/core/replication/canonical-json.ts';

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
});
