/**
 * Property tests of the Web2 accounts routes against a real 5-member cluster (docs/http.md, Errors:
 * "Every error is JSON … never a 500 for bad input"). fast-check sends arbitrary JSON, records with
 * the right field names but arbitrary values or wrong types, strings up to 100 KB, `__proto__` and
 * `constructor` keys, and raw non-JSON bytes to every POST under /web2/auth, and arbitrary query
 * strings to the two GETs, through both coordinators.
 *
 * Inputs that happen to be valid are rare but allowed (200/201); valid-looking passwords are kept
 * rare because each one costs an argon2id hash.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { startLocalCluster, type LocalCluster } from 'quorumkeep/testing';
import { bigTextUpTo, checkReply, expectCoordinatorsHealthy, fetchReply, objectText, shortTextWith, wrongType, type Reply } from '../utils/fuzz.ts';
import { postJson } from '../utils/http.ts';
import { newEmail, otpFrom } from '../utils/web2.ts';

/** Runs per POST endpoint (10 endpoints) and per GET endpoint (2): about 150 in all. */
const POST_RUNS = 12;
const GET_RUNS = 15;
/**
 * Every run is a round trip to a real cluster, so shrinking a failure can take thousands of them:
 * stop after this long and report the smallest counterexample found so far.
 */
const FC_TIME_LIMIT_MS = 8_000;

let cluster: LocalCluster;
let coordinators: string[];

beforeAll(async () => {
  cluster = await startLocalCluster({ size: 5, threshold: 3, coordinators: 2 });
  coordinators = cluster.coordinators;
});
afterAll(() => cluster?.stop());

// ---------------------------------------------------------------------------------------------
// Arbitraries

/** Field names of each POST body (docs/http.md, Web2 accounts). */
const POST_FIELDS: Record<string, readonly string[]> = {
  register: ['email', 'password'],
  'verify-email': ['email', 'otp'],
  'resend-otp': ['email'],
  'forgot-password': ['email'],
  'reset-password': ['email', 'otp', 'newPassword'],
  'verify-credentials': ['email', 'password'],
  'register-key': ['principalId', 'password', 'publicKey', 'signature'],
  'retry-node-registration': ['principalId'],
  'request-deletion': ['email', 'password', 'principalId'],
  'confirm-deletion': ['email', 'otp'],
};

/** Short strings of every flavour: ASCII, any code point, graphemes, lone surrogates. */
const shortText = shortTextWith(['', ' ', '\u0000', '\ud800', '__proto__', 'constructor', 'toString', '0x', '-1', 'null', '<script>']);

/** Strings of 1,000 to 100,000 characters (one repeated chunk, possibly cut inside a surrogate pair). */
const bigText = bigTextUpTo(100_000);

/** Characters whose UTF-8 form is longer than their UTF-16 form, and a few ASCII ones. */
const wideChar = fc.constantFrom('é', 'ß', 'ж', '中', '😀', 'a', '.', '-');

/**
 * Email-shaped strings: mostly unusable, sometimes plausible — including long non-ASCII local parts,
 * whose UTF-8 form is longer than their character count.
 */
const emailish = fc.oneof(
  { arbitrary: shortText, weight: 3 },
  { arbitrary: fc.emailAddress(), weight: 1 },
  {
    arbitrary: fc
      .tuple(fc.string({ unit: wideChar, minLength: 1, maxLength: 200, size: 'max' }), fc.constantFrom('example.test', 'EXAMPLE.test', 'x.y'))
      .map(([local, domain]) => `${local}@${domain}`),
    weight: 3,
  },
  {
    arbitrary: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 120, size: 'max' }).map((local) => `${local}@example.test`),
    weight: 1,
  },
  { arbitrary: fc.constantFrom('@', 'a@', '@b', 'a@b@c', ' a@b.c ', 'a@b.c\n', 'A@B.C'), weight: 1 },
);

/** Password-shaped strings: almost always shorter than 8 characters (argon2id is only paid on the rest). */
const passwordish = fc.oneof(
  { arbitrary: fc.string({ maxLength: 7 }), weight: 8 },
  { arbitrary: fc.string({ unit: 'grapheme', maxLength: 3 }), weight: 3 },
  { arbitrary: fc.string({ minLength: 8, maxLength: 40 }), weight: 1 },
);

const otpish = fc.oneof(fc.stringMatching(/^\d{6}$/), fc.stringMatching(/^\d{0,12}$/), shortText);
const hexish = fc.oneof(fc.stringMatching(/^[0-9a-fA-F]{0,140}$/), fc.stringMatching(/^(0x)?[0-9a-f]{64}$/), fc.stringMatching(/^[0-9a-f]{128}$/));
const principalIdish = fc.oneof(fc.uuid({ version: 4 }), fc.uuid(), shortText);

/** A plausible value for a field, by its name. */
function fieldValue(field: string): fc.Arbitrary<unknown> {
  switch (field) {
    case 'email':
      return emailish;
    case 'password':
    case 'newPassword':
      return passwordish;
    case 'otp':
      return otpish;
    case 'principalId':
      return principalIdish;
    default:
      return fc.oneof(hexish, shortText);
  }
}

/** What is sent: a JSON value (stringified here) or a raw body, with its Content-Type. */
type Payload = { kind: 'json'; value: unknown } | { kind: 'raw'; body: string | Uint8Array; contentType: string };

function payloads(fields: readonly string[]): fc.Arbitrary<Payload> {
  const json = (value: fc.Arbitrary<unknown>) => value.map((v): Payload => ({ kind: 'json', value: v }));
  const all = (value: (field: string) => fc.Arbitrary<unknown>) => fc.record(Object.fromEntries(fields.map((f) => [f, value(f)]))) as fc.Arbitrary<Record<string, unknown>>;
  const some = (value: (field: string) => fc.Arbitrary<unknown>) =>
    fc.record(Object.fromEntries(fields.map((f) => [f, value(f)])), { requiredKeys: [] }) as fc.Arbitrary<Record<string, unknown>>;
  return fc.oneof(
    // Any JSON at all: arrays, scalars, nested objects.
    { arbitrary: json(fc.jsonValue({ maxDepth: 3 })), weight: 1 },
    // The right field names with plausible values, all of them or some.
    { arbitrary: json(all(fieldValue)), weight: 3 },
    { arbitrary: json(some(fieldValue)), weight: 1 },
    // The right field names with wrong types or any JSON.
    { arbitrary: json(some(() => fc.oneof(wrongType, fc.jsonValue({ maxDepth: 2 })))), weight: 1 },
    // A huge string in one field, plausible values in the others.
    { arbitrary: fc.tuple(all(fieldValue), fc.constantFrom(...fields), bigText).map(([r, f, big]): Payload => ({ kind: 'json', value: { ...r, [f]: big } })), weight: 1 },
    // `__proto__` / `constructor` keys, raw so they travel as own keys.
    {
      arbitrary: fc
        .tuple(all(fieldValue), fc.subarray(['__proto__', 'constructor', 'prototype', 'hasOwnProperty', 'toJSON'], { minLength: 1 }), fc.jsonValue({ maxDepth: 2 }))
        .map(([r, names, v]): Payload => ({
          kind: 'raw',
          contentType: 'application/json',
          body: objectText([...names.map((n): [string, unknown] => [n, typeof v === 'object' && v !== null ? v : { email: v, polluted: true }]), ...Object.entries(r)]),
        })),
      weight: 1,
    },
    // Not JSON at all.
    { arbitrary: fc.uint8Array({ maxLength: 512 }).map((b): Payload => ({ kind: 'raw', body: b, contentType: 'application/json' })), weight: 1 },
    { arbitrary: fc.string({ maxLength: 64 }).map((s): Payload => ({ kind: 'raw', body: s, contentType: 'application/json' })), weight: 1 },
    // A valid-looking body with another media type.
    { arbitrary: all(fieldValue).map((r): Payload => ({ kind: 'raw', body: JSON.stringify(r), contentType: 'text/plain' })), weight: 1 },
  );
}

/** Query strings: the right keys (repeated or not) with arbitrary values, other keys, raw percent soup. */
function queries(keys: readonly string[]): fc.Arbitrary<string> {
  const value = fc.oneof(shortText, emailish, principalIdish, hexish, fc.string({ maxLength: 1000 }));
  const key = fc.oneof(fc.constantFrom(...keys, ...keys.map((k) => k.toUpperCase()), '__proto__', 'constructor'), fc.string({ maxLength: 8 }));
  const pairs = fc.array(fc.tuple(key, value), { maxLength: 4 }).map((ps) => new URLSearchParams(ps).toString());
  const raw = fc.stringMatching(/^[A-Za-z0-9=&%_.~+-]{0,200}$/);
  return fc.oneof(pairs, pairs, raw, fc.constantFrom('', '=', '&&', `${keys[0]}=%ZZ`, `${keys[0]}=%00`, `${keys[0]}[]=x`, `${keys[0]}[a]=1`));
}

// ---------------------------------------------------------------------------------------------
// The property

async function send(url: string, payload: Payload): Promise<Reply> {
  const init: RequestInit =
    payload.kind === 'json'
      ? { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(payload.value) ?? 'null' }
      : { method: 'POST', headers: { 'content-type': payload.contentType }, body: payload.body };
  return fetchReply(url, init);
}

describe('fuzzing POST /web2/auth/*', () => {
  for (const [path, fields] of Object.entries(POST_FIELDS)) {
    it(`${path}: never a 5xx, always a JSON error with error and code`, async () => {
      await fc.assert(
        fc.asyncProperty(fc.nat({ max: 1 }), payloads(fields), async (which, payload) => {
          checkReply(await send(`${coordinators[which]}/web2/auth/${path}`, payload));
        }),
        { numRuns: POST_RUNS, interruptAfterTimeLimit: FC_TIME_LIMIT_MS },
      );
    });
  }
});

describe('fuzzing the GETs', () => {
  const gets: Array<[string, readonly string[]]> = [
    ['/web2/auth/node-registration-status', ['principalId']],
    ['/web2/principal/byEmail', ['emailHex', 'email']],
  ];
  for (const [path, keys] of gets) {
    it(`${path}: never a 5xx, always a JSON error with error and code`, async () => {
      await fc.assert(
        fc.asyncProperty(fc.nat({ max: 1 }), queries(keys), async (which, query) => {
          checkReply(await fetchReply(`${coordinators[which]}${path}${query === '' ? '' : `?${query}`}`));
        }),
        { numRuns: GET_RUNS, interruptAfterTimeLimit: FC_TIME_LIMIT_MS },
      );
    });
  }
});

describe('after the fuzzing', () => {
  it('both coordinators are healthy with 5 reachable, and a normal registration still works', async () => {
    await expectCoordinatorsHealthy(coordinators);
    const email = newEmail('afterfuzz');
    const reg = await postJson<{ principalId: string }>(`${coordinators[1]}/web2/auth/register`, { email, password: 'after-fuzz-password' });
    expect(reg.status).toBe(201);
    const otp = await otpFrom(cluster, email, 'verify');
    expect((await postJson(`${coordinators[0]}/web2/auth/verify-email`, { email, otp })).status).toBe(200);
  });
});

describe('regressions found by fuzzing', () => {
  // 143 characters (within the 254-character limit) but 273 UTF-8 bytes ("é" is 2): more than the
  // 254 bytes the hex keys of emailIndex and mailCooldown records allow.
  const wide = `${'é'.repeat(130)}@example.test`;

  it('an email longer than 254 UTF-8 bytes (but not characters) is a 4xx or accepted on every route, never a 5xx, and the cluster still converges', async () => {
    const [A, B] = coordinators as [string, string];
    const replies = [
      await send(`${A}/web2/auth/forgot-password`, { kind: 'json', value: { email: wide } }),
      await send(`${B}/web2/auth/resend-otp`, { kind: 'json', value: { email: wide } }),
      await send(`${A}/web2/auth/register`, { kind: 'json', value: { email: wide, password: 'long-enough-password' } }),
      await send(`${B}/web2/auth/verify-credentials`, { kind: 'json', value: { email: wide, password: 'long-enough-password' } }),
    ];
    for (const r of replies) checkReply(r);
    // Whatever was written through the coordinators reaches every member.
    await cluster.waitForConvergence({ timeoutMs: 5000 });
  });
});
