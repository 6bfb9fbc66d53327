/**
 * Canonical JSON: object keys sorted, no whitespace. Two nodes that hold the same value produce the
 * same bytes, which is what record signatures are computed over.
 */

/** A JSON value as records carry it. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/**
 * Serialise `value` canonically. Throws on values JSON cannot represent (undefined, NaN, bigint…).
 * A value already in canonical order (every object's keys sorted, nothing JSON.stringify would
 * change or drop) is serialised by JSON.stringify itself, in native code: a record's digest lists its
 * envelope's keys in order (`recordDigest` in ./record.ts) and a node writes its own bodies in order
 * ({@link inCanonicalKeyOrder}, ./apply-batch.ts), so a member checking a record takes this path.
 */
export function canonicalJson(value: unknown): string {
  return inCanonicalOrder(value) ? JSON.stringify(value) : assembled(value);
}

/**
 * `value` with every object's keys in canonical order: `value` itself when they already are, else a
 * copy (undefined members left out). A record written with its body in order is serialised by
 * {@link canonicalJson}'s native path by every member that checks it, and stored and sent in that
 * order. Throws as {@link canonicalJson} does.
 */
export function inCanonicalKeyOrder<T>(value: T): T {
  return inCanonicalOrder(value) ? value : (canonicalCopy(value) as T);
}

/**
 * What `JSON.parse(canonicalJson(value))` gives, built directly: every object rebuilt with its keys
 * in canonical order, arrays copied, strings and numbers kept (-0 as 0, as JSON writes it), without
 * writing the value out and reading it back (a secret's body is a few KB). Throws as
 * {@link assembled} does.
 */
function canonicalCopy(value: unknown): unknown {
  if (value === null) return null;
  switch (typeof value) {
    case 'boolean':
    case 'string':
      return value;
    case 'number':
      if (!Number.isFinite(value)) throw new TypeError('non-finite number in record');
      return value === 0 ? 0 : value;
    case 'object': {
      if (Array.isArray(value)) {
        const out: unknown[] = new Array<unknown>(value.length);
        for (let i = 0; i < value.length; i++) out[i] = canonicalCopy(value[i]);
        return out;
      }
      const proto = Object.getPrototypeOf(value) as unknown;
      if (proto !== Object.prototype && proto !== null) throw new TypeError('non-plain object in record');
      const obj = value as Record<string, unknown>;
      const out: Record<string, unknown> = {};
      for (const k of sortedKeys(obj)) {
        const v = obj[k];
        if (v === undefined) continue;
        const copy = canonicalCopy(v);
        // As JSON.parse makes it: an own member, never the prototype.
        if (k === '__proto__') Object.defineProperty(out, k, { value: copy, enumerable: true, writable: true, configurable: true });
        else out[k] = copy;
      }
      return out;
    }
    default:
      throw new TypeError(`cannot encode ${typeof value} in record`);
  }
}

/**
 * Whether `JSON.stringify(value)` is `value`'s canonical form: finite numbers, strings, booleans and
 * null, in plain arrays without holes and plain objects whose keys `Object.keys` lists strictly ascending
 * (in the order {@link sortedKeys} sorts by) and none of whose members is undefined. Anything else —
 * a key out of order, an undefined member, a function, a `toJSON`, NaN — is left to {@link assembled},
 * which sorts, skips or throws.
 */
function inCanonicalOrder(value: unknown): boolean {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return true;
    case 'number':
      return Number.isFinite(value);
    case 'object': {
      if (value === null) return true;
      if (Array.isArray(value)) {
        if (Object.getPrototypeOf(value) !== Array.prototype) return false;
        for (let i = 0; i < value.length; i++) if (!(i in value) || !inCanonicalOrder(value[i])) return false;
        return true;
      }
      const proto = Object.getPrototypeOf(value) as unknown;
      if (proto !== Object.prototype && proto !== null) return false;
      const obj = value as Record<string, unknown>;
      const keys = Object.keys(obj);
      for (let i = 0; i < keys.length; i++) {
        if (i > 0 && !(keys[i - 1]! < keys[i]!)) return false;
        if (!inCanonicalOrder(obj[keys[i]!])) return false;
      }
      return true;
    }
    default:
      return false;
  }
}

/** The canonical form built piece by piece: keys sorted, undefined members left out. */
function assembled(value: unknown): string {
  if (value === null) return 'null';
  switch (typeof value) {
    case 'boolean':
      return value ? 'true' : 'false';
    case 'number':
      if (!Number.isFinite(value)) throw new TypeError('non-finite number in record');
      return JSON.stringify(value);
    case 'string':
      return JSON.stringify(value);
    case 'object': {
      // Built by concatenation: this runs for every record signed or verified (a catch-up's hot path).
      if (Array.isArray(value)) {
        let out = '[';
        for (let i = 0; i < value.length; i++) out += (i === 0 ? '' : ',') + canonicalJson(value[i]);
        return out + ']';
      }
      const proto = Object.getPrototypeOf(value) as unknown;
      if (proto !== Object.prototype && proto !== null) throw new TypeError('non-plain object in record');
      const obj = value as Record<string, unknown>;
      const keys = sortedKeys(obj);
      let out = '{';
      for (const k of keys) {
        const v = obj[k];
        if (v === undefined) continue;
        out += (out.length === 1 ? '' : ',') + JSON.stringify(k) + ':' + canonicalJson(v);
      }
      return out + '}';
    }
    default:
      throw new TypeError(`cannot encode ${typeof value} in record`);
  }
}

/** Objects with more keys than this are sorted by `Array.prototype.sort`; fewer, in place. */
const INSERTION_SORT_MAX_KEYS = 24;

/**
 * `Object.keys(obj)` in `Array.prototype.sort`'s default order (UTF-16 code units, as `<` compares
 * strings). A record's objects have a handful of keys each: sorted in place, the array `Object.keys`
 * made is all that is allocated (the built-in sort takes a work copy — over a record per member per
 * write, a tenth of what the nodes allocated while creating secrets).
 */
function sortedKeys(obj: Record<string, unknown>): string[] {
  const keys = Object.keys(obj);
  if (keys.length > INSERTION_SORT_MAX_KEYS) return keys.sort();
  for (let i = 1; i < keys.length; i++) {
    const k = keys[i]!;
    let j = i - 1;
    while (j >= 0 && keys[j]! > k) {
      keys[j + 1] = keys[j]!;
      j--;
    }
    keys[j + 1] = k;
  }
  return keys;
}
