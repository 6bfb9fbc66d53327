/**
 * Canonical JSON: object keys sorted, no whitespace. Two nodes that hold the same value produce the
 * same bytes, which is what record signatures are computed over.
 */

/** A JSON value as records carry it. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** Serialise `value` canonically. Throws on values JSON cannot represent (undefined, NaN, bigint…). */
export function canonicalJson(value: unknown): string {
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
      const keys = Object.keys(obj).sort();
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
