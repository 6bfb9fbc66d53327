/**
 * Fields in and out of the routes (CONTRIBUTING.md rule 3). In: shape checks shared by the routes — required
 * strings within a length bound, and the `{ data, signature }` pair every signed route takes (docs/architecture.md, "Signed data strings";
 * Signed data strings). They check shapes only — present, of the right JSON type, not too long; what
 * the values mean is the core service's to decide. Out: {@link pick}, so a response carries only the
 * documented fields of what a service returned.
 *
 * Messages, after the field name `parseBody` puts in front: `Required` (absent), `Expected string`
 * (another JSON type), zod's `Too big: expected string to have <=<n> characters`.
 */
import { z } from 'zod';

/** Longest signature accepted (EIP-191: 130–132 hex chars, Ed25519: 128; the services check the value). */
export const SIGNATURE_MAX_CHARS = 1024;
/** Longest chain id or secret id accepted, in a path or a body (decimal ids; the services check them). */
export const ID_MAX_CHARS = 32;
/** Longest Web2 principal id accepted. */
export const PRINCIPAL_ID_MAX_CHARS = 128;
/** Longest job id accepted (ours are 36-character UUIDs). */
export const JOB_ID_MAX_CHARS = 64;
/** Longest signed `data` string accepted, except on the payload routes. */
export const SIGNED_DATA_MAX_CHARS = 4096;

/** zod error map of a required field: `Required` when absent, `expected` for any other wrong type. */
function typeError(expected: string) {
  return (issue: { code?: string; input?: unknown }) => (issue.code === 'invalid_type' ? (issue.input === undefined ? 'Required' : expected) : undefined);
}

/** A required string of at most `maxChars` characters. */
export function text(maxChars: number) {
  return z.string({ error: typeError('Expected string') }).max(maxChars);
}

/**
 * A required string of at most `maxChars` characters, where a JSON number is also accepted and
 * passed on as its decimal string (`1767225600123` → `"1767225600123"`): deployed SDKs send some
 * numeric fields either way.
 */
export function textOrNumber(maxChars: number) {
  return z.preprocess(
    (value) => (typeof value === 'number' ? String(value) : value),
    z.string({ error: typeError('Expected string or number') }).max(maxChars),
  );
}

/** Decimal integers that survive `String(Number(s)) === s`: no sign, no leading zero, ≤ 15 digits. */
const CANONICAL_INTEGER_RE = /^(?:0|[1-9]\d{0,14})$/;

/**
 * An optional number, where a string of decimal digits is also accepted and passed on as a number.
 * Only canonical integers are converted, so a signature over the decimal form still verifies against
 * the service's `String(value)`.
 */
export function optionalNumber() {
  return z
    .preprocess(
      (value) => (typeof value === 'string' && CANONICAL_INTEGER_RE.test(value) ? Number(value) : value),
      z.number({ error: 'Expected number or decimal string' }),
    )
    .optional();
}

/**
 * `{ data, signature }` of a signed route: `data` at most `dataMaxChars` characters (default
 * {@link SIGNED_DATA_MAX_CHARS}), `signature` at most {@link SIGNATURE_MAX_CHARS}. Unknown keys are
 * dropped, never rejected (deployed SDKs send extras); `.extend()` it for routes with more fields.
 */
export function signedBodySchema(dataMaxChars: number = SIGNED_DATA_MAX_CHARS) {
  return z.object({ data: text(dataMaxChars), signature: text(SIGNATURE_MAX_CHARS) });
}

/**
 * The named fields of a service result, for a response body: whatever else the object carries (now
 * or after a later change to the service) never reaches the client. `undefined` values stay, and are
 * left out of the JSON.
 */
export function pick<T extends object, K extends keyof T>(source: T, keys: readonly K[]): Pick<T, K> {
  const picked = {} as Pick<T, K>;
  for (const key of keys) picked[key] = source[key];
  return picked;
}
