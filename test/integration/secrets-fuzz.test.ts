/**
 * Property tests of the session, secret, public-key and payload routes against a real 5-member
 * cluster (docs/http.md, Errors: "Every error is JSON … never a 500 for bad input").
 *
 * fast-check sends, through both coordinators: any JSON; bodies with the right field names and
 * plausible, wrong-typed or missing values; huge strings; `__proto__` and `constructor` keys; raw
 * non-JSON bytes; and — the part that reaches past the shape checks — data strings built from
 * plausible parts (a fresh timestamp, a live session's address, an existing secret, a real
 * ciphertext) mixed with random ones, `_`-heavy strings, random hex signatures and real signatures
 * by the session wallet over whatever data was generated. Every answer must be JSON: 200/201, or a
 * 4xx with `error` and `code`.
 *
 * A last property checks that encrypt → decrypt returns any Unicode string, `_` included.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { startLocalCluster, type LocalCluster } from 'quorumkeep/testing';
import { bigTextUpTo, checkReply, expectCoordinatorsHealthy, fetchReply, objectText, shortTextWith, wrongType } from '../utils/fuzz.ts';
import { postJson } from '../utils/http.ts';
import { newPrincipal, newSessionWallet, openSession, signData, type Principal } from '../utils/session.ts';

/** Runs per route; each is a round trip to a real cluster. */
const RUNS = 100;
/** Runs of the encrypt → decrypt property (each decrypt gathers shares from a quorum). */
const ROUND_TRIP_RUNS = 15;
/**
 * Shrinking a failure can take thousands of round trips: stop after this long and report the
 * smallest counterexample found so far.
 */
const FC_TIME_LIMIT_MS = 6_000;

let cluster: LocalCluster;
let coordinators: string[];
/** Owner of {@link secretId}; its session wallet signs the generated data strings. */
let alice: Principal;
/** Another live session, whose wallet signs data naming alice's address (signer mismatch). */
let bob: Principal;
/** Signs the generated POST /web2/session bodies (never alice: a short ttl must not end her session). */
let opener: Principal;
let secretId: number;
/** A real payload sealed to {@link secretId}. */
let sealed: { cifer: string; encryptedMessage: string };

beforeAll(async () => {
  // No EVM chain: a Web3 string is then a 400 "Chain <id> is not supported", not a 503 for an RPC
  // this sandbox cannot reach (test/integration/web3-signed.test.ts covers a real chain).
  cluster = await startLocalCluster({ size: 5, threshold: 3, coordinators: 2, nodeConfig: { chains: [] } });
  coordinators = cluster.coordinators;
  const [A, B] = coordinators as [string, string];
  [alice, bob, opener] = await Promise.all([newPrincipal(cluster, A, 'alice'), newPrincipal(cluster, B, 'bob'), newPrincipal(cluster, A, 'opener')]);
  await Promise.all([openSession(A, alice), openSession(B, bob)]);
  const created = await postJson<{ secretId: number }>(`${B}/web2/secret`, alice.signed(0));
  if (created.status !== 201) throw new Error(`create secret: ${created.status} ${JSON.stringify(created.body)}`);
  secretId = created.body.secretId;
  const enc = await postJson<{ cifer: string; encryptedMessage: string }>(`${A}/encrypt-payload`, alice.signed(secretId, 'fuzz target'));
  if (enc.status !== 200) throw new Error(`encrypt: ${enc.status} ${JSON.stringify(enc.body)}`);
  sealed = enc.body;
}, 60_000);
afterAll(() => cluster?.stop());

// ---------------------------------------------------------------------------------------------
// Placeholders: values only known when a run is sent (fresh timestamps, ids made in beforeAll)

const NOW = Symbol('now');
const STALE = Symbol('11 min ago');
const ADDRESS = Symbol("alice's session address");
const ADDRESS_UPPER = Symbol("alice's session address, uppercase hex");
const BOB_ADDRESS = Symbol("bob's session address");
const FRESH_ADDRESS = Symbol('an address with no session');
const SECRET = Symbol("alice's secret id");
const PRINCIPAL = Symbol("alice's principal id");
const CIFER = Symbol('a real cifer');
const CIFER_TAMPERED = Symbol('a real cifer with its first byte flipped');
const CIPHERTEXT = Symbol('a real encryptedMessage');
const OPENER = Symbol("opener's principal id");
const BOB_PRINCIPAL = Symbol("bob's principal id");
/** `signature`: alice's session wallet over the generated `data`. */
const SIGNED = Symbol('signed by the session wallet');
/** `signature`: bob's session wallet over the generated `data`. */
const SIGNED_BY_OTHER = Symbol('signed by another session wallet');
/** `signature` of POST /web2/session: opener's Ed25519 key over the generated fields. */
const ED25519_SIGNED = Symbol("signed by opener's Ed25519 key");

type Placeholder = symbol;
/** A part of a data string: literal, or a placeholder. */
type Part = string | Placeholder;
/** A data string to be built from parts at send time. */
class DataTemplate {
  readonly parts: readonly Part[];
  constructor(parts: readonly Part[]) {
    this.parts = parts;
  }
}

function resolvePart(p: Part): string {
  if (typeof p === 'string') return p;
  switch (p) {
    case NOW:
      return String(Date.now());
    case STALE:
      return String(Date.now() - 11 * 60_000);
    case ADDRESS:
      return alice.wallet.address;
    case ADDRESS_UPPER:
      return `0x${alice.wallet.address.slice(2).toUpperCase()}`;
    case BOB_ADDRESS:
      return bob.wallet.address;
    case FRESH_ADDRESS:
      return newSessionWallet().address;
    case SECRET:
      return String(secretId);
    case PRINCIPAL:
      return alice.principalId;
    case OPENER:
      return opener.principalId;
    case BOB_PRINCIPAL:
      return bob.principalId;
    case CIFER:
      return sealed.cifer;
    case CIFER_TAMPERED:
      return `0x${(parseInt(sealed.cifer.slice(2, 4), 16) ^ 1).toString(16).padStart(2, '0')}${sealed.cifer.slice(4)}`;
    case CIPHERTEXT:
      return sealed.encryptedMessage;
    default:
      throw new Error(`unresolvable placeholder ${String(p.description)}`);
  }
}

/** Resolve every placeholder of a generated body; signatures last, over the resolved values. */
function resolveBody(template: Record<string, unknown>): Record<string, unknown> {
  const resolveValue = (v: unknown): unknown => (v instanceof DataTemplate ? v.parts.map(resolvePart).join('_') : typeof v === 'symbol' && ![SIGNED, SIGNED_BY_OTHER, ED25519_SIGNED].includes(v) ? resolvePart(v) : v);
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(template)) out[k] = resolveValue(v);
  const text = (v: unknown) => (typeof v === 'string' ? v : JSON.stringify(v) ?? '');
  for (const [k, v] of Object.entries(out)) {
    if (v === SIGNED) out[k] = signData(alice.wallet, text(out.data)).signature;
    else if (v === SIGNED_BY_OTHER) out[k] = signData(bob.wallet, text(out.data)).signature;
    else if (v === ED25519_SIGNED) {
      const ttl = 'ttl' in out ? `:${text(out.ttl)}` : '';
      out[k] = opener.key.sign(`cifer_session:${text(out.principalId)}:${text(out.timestamp)}:${text(out.sessionAddress)}${ttl}`);
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Arbitraries

/** Short strings of every flavour: ASCII, any code point, graphemes, lone surrogates. */
const shortText = shortTextWith(['', ' ', '_', '__', '\u0000', '\ud800', '__proto__', 'constructor', 'toString', '0x', '-1', 'null', 'NaN', '1e309', '<script>']);

/** Strings of 1,000 to 300,000 characters: past every field limit, sometimes past the 1 MiB body limit. */
const bigText = bigTextUpTo(300_000);

const digits = fc.stringMatching(/^-?\d{0,20}$/);
const hexish = fc.oneof(
  fc.stringMatching(/^(0x)?[0-9a-fA-F]{0,140}$/),
  fc.stringMatching(/^(0x)?[0-9a-f]{130}$/),
  fc.stringMatching(/^[0-9a-f]{128}$/),
  fc.uint8Array({ minLength: 1104, maxLength: 1104 }).map((b) => `0x${Buffer.from(b).toString('hex')}`),
);

/** A random part: a wrong chain, id, address or timestamp, another live value, or any text. */
const randomPart: fc.Arbitrary<Part> = fc.oneof(
  { arbitrary: fc.constantFrom<Part>(STALE, BOB_ADDRESS, FRESH_ADDRESS, ADDRESS_UPPER, PRINCIPAL, BOB_PRINCIPAL, SECRET, CIPHERTEXT, '0', '', '-1'), weight: 3 },
  { arbitrary: fc.constantFrom('-2', '1', '8453', '-0', '01', ' -1', '+1', '-1.0', '00', '-5', '1.5', '9007199254740993', '99999999999999999'), weight: 2 },
  { arbitrary: fc.stringMatching(/^0x[0-9a-fA-F]{0,44}$/), weight: 1 },
  { arbitrary: digits, weight: 1 },
  { arbitrary: fc.uuid(), weight: 1 },
  { arbitrary: hexish, weight: 1 },
  { arbitrary: shortText, weight: 2 },
);

/** `_`-heavy strings: parts of anything, empty ones included. */
const underscored = fc.array(fc.oneof(shortText, fc.constant('')), { maxLength: 10 }).map((parts) => parts.join('_'));

/**
 * `data` values of a route whose valid string is `-1_<subject>_<alice's address>_<now>[_extra…]`:
 * valid ones, valid ones with one part replaced, inserted or removed, parts drawn at random,
 * `_`-heavy strings, any text, huge text.
 */
function dataValue(subject: Part, extras: fc.Arbitrary<Part[]>): fc.Arbitrary<unknown> {
  const valid = extras.map((extra): Part[] => ['-1', subject, ADDRESS, NOW, ...extra]);
  const spoiled = fc.tuple(valid, fc.nat(), randomPart, fc.constantFrom('replace', 'insert', 'remove')).map(([parts, at, part, op]) => {
    const out = [...parts];
    const i = at % (out.length + (op === 'insert' ? 1 : 0));
    if (op === 'replace') out[i] = part;
    else if (op === 'insert') out.splice(i, 0, part);
    else out.splice(i, 1);
    return new DataTemplate(out);
  });
  const drawn = fc.array(randomPart, { minLength: 1, maxLength: 7 }).map((parts) => new DataTemplate(parts));
  return fc.oneof(
    { arbitrary: valid.map((parts) => new DataTemplate(parts)), weight: 4 },
    { arbitrary: spoiled, weight: 6 },
    { arbitrary: drawn, weight: 2 },
    { arbitrary: underscored, weight: 1 },
    { arbitrary: shortText, weight: 1 },
    { arbitrary: bigText, weight: 1 },
  );
}

const signatureValue: fc.Arbitrary<unknown> = fc.oneof(
  { arbitrary: fc.constant(SIGNED), weight: 10 },
  { arbitrary: fc.constant(SIGNED_BY_OTHER), weight: 1 },
  { arbitrary: hexish, weight: 1 },
  { arbitrary: shortText, weight: 1 },
);

/** Usually a valid name, sometimes not. */
const formatValue = fc.oneof({ arbitrary: fc.constantFrom('hex', 'base64'), weight: 6 }, { arbitrary: fc.constantFrom('HEX', 'Base64', 'utf8', ''), weight: 1 }, { arbitrary: fc.oneof(shortText, fc.integer()), weight: 1 });
const idValue = fc.oneof({ arbitrary: fc.constantFrom<unknown>(SECRET, '-1', -1), weight: 6 }, { arbitrary: fc.constantFrom<unknown>(0, '0', 8453, '-2', 1.5), weight: 1 }, { arbitrary: fc.oneof(digits, fc.integer(), fc.double(), shortText), weight: 1 });
/** Usually the valid value, sometimes anything. */
const mostly = (valid: unknown, other: fc.Arbitrary<unknown>) => fc.oneof({ arbitrary: fc.constant(valid), weight: 5 }, { arbitrary: other, weight: 1 });
const signed = (subject: Part, extras: fc.Arbitrary<Part[]> = fc.constant([])) => ({ data: dataValue(subject, extras), signature: signatureValue });

/** A route's fields: plausible values per name, and the names a valid body may leave out. */
interface FuzzRoute {
  fields: Record<string, fc.Arbitrary<unknown>>;
  optional?: string[];
}

const ROUTES: Record<string, FuzzRoute> = {
  '/web2/session': {
    fields: {
      principalId: mostly(OPENER, fc.oneof(fc.uuid(), shortText)),
      timestamp: mostly(NOW, fc.oneof(fc.constant(STALE), digits, fc.integer(), shortText)),
      signature: mostly(ED25519_SIGNED, fc.oneof(hexish, shortText)),
      sessionAddress: mostly(FRESH_ADDRESS, fc.oneof(fc.constantFrom(BOB_ADDRESS, ADDRESS_UPPER), fc.stringMatching(/^0x[0-9a-fA-F]{0,44}$/), shortText)),
      ttl: fc.oneof(
        { arbitrary: fc.integer({ min: 60_000, max: 2_592_000_000 }), weight: 4 },
        { arbitrary: fc.constantFrom(59_999, 2_592_000_001, 900_000.5, -1, 0, '60000', '0600000', '1e5'), weight: 1 },
        { arbitrary: fc.oneof(fc.double(), shortText), weight: 1 },
      ),
    },
    optional: ['ttl'],
  },
  '/web2/session/status': { fields: signed('0') },
  '/web2/secret': { fields: signed('0') },
  '/jobs/dataConsumption': { fields: signed('0') },
  '/web2/secrets': { fields: signed(PRINCIPAL) },
  '/web2/setDelegate': { fields: signed(SECRET, fc.constantFrom<Part[]>([''], [BOB_PRINCIPAL])) },
  '/secret-public-key': { fields: { ...signed(SECRET), chainId: idValue, secretId: idValue } },
  '/encrypt-payload': { fields: { ...signed(SECRET, fc.array(fc.oneof(shortText, underscored), { minLength: 1, maxLength: 3 })), outputFormat: formatValue }, optional: ['outputFormat'] },
  '/decrypt-payload': {
    fields: { ...signed(SECRET, fc.constant([CIPHERTEXT])), cifer: mostly(CIFER, fc.oneof(fc.constant(CIFER_TAMPERED), hexish)), inputFormat: mostly('hex', formatValue) },
    optional: ['inputFormat'],
  },
};

/** What is sent: a body template (resolved and stringified at send time) or raw bytes, with a Content-Type. */
type Payload = { kind: 'json'; value: unknown } | { kind: 'proto'; keys: string[]; junk: unknown; fields: Record<string, unknown> } | { kind: 'raw'; body: string | Uint8Array; contentType: string };

function payloads({ fields, optional = [] }: FuzzRoute): fc.Arbitrary<Payload> {
  const names = Object.keys(fields);
  const json = (value: fc.Arbitrary<unknown>) => value.map((v): Payload => ({ kind: 'json', value: v }));
  const all = fc.record(fields, { requiredKeys: names.filter((n) => !optional.includes(n)) }) as fc.Arbitrary<Record<string, unknown>>;
  const some = fc.record(fields, { requiredKeys: [] }) as fc.Arbitrary<Record<string, unknown>>;
  const typed = fc.record(Object.fromEntries(names.map((n) => [n, fc.oneof(wrongType, fc.jsonValue({ maxDepth: 2 }))])), { requiredKeys: [] });
  return fc.oneof(
    // The right field names with plausible values (real signatures, fresh timestamps), all or some.
    { arbitrary: json(all), weight: 8 },
    { arbitrary: json(some), weight: 2 },
    // Plausible values, one field replaced by a wrong type.
    { arbitrary: fc.tuple(all, fc.constantFrom(...names), wrongType).map(([r, f, v]): Payload => ({ kind: 'json', value: { ...r, [f]: v } })), weight: 1 },
    // Wrong types or any JSON in every field; any JSON at all.
    { arbitrary: json(typed), weight: 1 },
    { arbitrary: json(fc.jsonValue({ maxDepth: 3 })), weight: 1 },
    // A huge string in one field.
    { arbitrary: fc.tuple(all, fc.constantFrom(...names), bigText).map(([r, f, big]): Payload => ({ kind: 'json', value: { ...r, [f]: big } })), weight: 1 },
    // `__proto__` / `constructor` keys as own keys of the body.
    {
      arbitrary: fc
        .tuple(all, fc.subarray(['__proto__', 'constructor', 'prototype', 'toJSON', 'hasOwnProperty'], { minLength: 1 }), fc.jsonValue({ maxDepth: 2 }))
        .map(([r, keys, junk]): Payload => ({ kind: 'proto', keys, junk, fields: r })),
      weight: 1,
    },
    // Not JSON; JSON under another media type.
    { arbitrary: fc.uint8Array({ maxLength: 512 }).map((b): Payload => ({ kind: 'raw', body: b, contentType: 'application/json' })), weight: 1 },
    { arbitrary: underscored.map((s): Payload => ({ kind: 'raw', body: s, contentType: 'application/json' })), weight: 1 },
    { arbitrary: fc.jsonValue({ maxDepth: 2 }).map((v): Payload => ({ kind: 'raw', body: JSON.stringify(v) ?? 'null', contentType: 'text/plain' })), weight: 1 },
  );
}

function requestOf(payload: Payload): RequestInit {
  const json = (body: string): RequestInit => ({ method: 'POST', headers: { 'content-type': 'application/json' }, body });
  switch (payload.kind) {
    case 'json': {
      const value = payload.value !== null && typeof payload.value === 'object' && !Array.isArray(payload.value) ? resolveBody(payload.value as Record<string, unknown>) : payload.value;
      return json(JSON.stringify(value) ?? 'null');
    }
    case 'proto': {
      const junk = payload.junk !== null && typeof payload.junk === 'object' ? payload.junk : { data: payload.junk, polluted: true };
      return json(objectText([...payload.keys.map((k): [string, unknown] => [k, junk]), ...Object.entries(resolveBody(payload.fields))]));
    }
    case 'raw':
      return { method: 'POST', headers: { 'content-type': payload.contentType }, body: payload.body };
  }
}

/** Path segments: any text (encoded), raw percent soup, ids. */
const segment = fc.oneof(
  { arbitrary: fc.constantFrom<unknown>(SECRET, '-1', '0', '8453', '-5', 'abc', '1.5', '%ZZ', '%00', '%', '%2F', '%2e%2e', '__proto__', 'constructor'), weight: 3 },
  { arbitrary: shortText.map((s) => encodeURIComponent(s.replace(/[\ud800-\udfff]/g, '?'))), weight: 2 },
  { arbitrary: fc.stringMatching(/^[A-Za-z0-9%._~-]{1,40}$/), weight: 2 },
  { arbitrary: digits.filter((d) => d !== ''), weight: 1 },
);
const segmentText = (s: unknown) => (typeof s === 'symbol' ? resolvePart(s) : String(s));

/** Authorization headers: none, the right token (in several spellings), wrong ones. */
const authorization = fc.oneof(
  { arbitrary: fc.constantFrom<string | undefined>(undefined, 'TOKEN', 'bearer TOKEN', 'Bearer  TOKEN ', 'Bearer', 'Bearer ', 'Basic TOKEN', 'Bearer TOKENx', 'Bearer TOKEN TOKEN'), weight: 3 },
  { arbitrary: fc.stringMatching(/^[\x20-\x7e]{0,80}$/), weight: 1 },
);
const authHeaders = (value: string | undefined): Record<string, string> => (value === undefined ? {} : { authorization: value.replaceAll('TOKEN', cluster.adminToken) });

// ---------------------------------------------------------------------------------------------
// The properties

const FC_OPTIONS = { numRuns: RUNS, interruptAfterTimeLimit: FC_TIME_LIMIT_MS };

describe('fuzzing the POST routes', () => {
  for (const [path, route] of Object.entries(ROUTES)) {
    it(`POST ${path}: never a 5xx, always JSON, errors with error and code`, async () => {
      await fc.assert(
        fc.asyncProperty(fc.nat({ max: 1 }), payloads(route), async (which, payload) => {
          checkReply(await fetchReply(`${coordinators[which]}${path}`, requestOf(payload)));
        }),
        FC_OPTIONS,
      );
    });
  }
});

describe('fuzzing the path and header routes', () => {
  it('GET /secret-public-key/:chainId/:secretId: never a 5xx, always JSON', async () => {
    await fc.assert(
      fc.asyncProperty(fc.nat({ max: 1 }), fc.oneof(fc.constant('-1'), segment), fc.oneof(fc.constant(SECRET), segment), async (which, chainId, id) => {
        checkReply(await fetchReply(`${coordinators[which]}/secret-public-key/${segmentText(chainId)}/${segmentText(id)}`, { method: 'GET' }));
      }),
      FC_OPTIONS,
    );
  });

  it('GET /web2/secret-failures: never a 5xx, always JSON, whatever the Authorization', async () => {
    await fc.assert(
      fc.asyncProperty(fc.nat({ max: 1 }), authorization, async (which, auth) => {
        checkReply(await fetchReply(`${coordinators[which]}/web2/secret-failures`, { method: 'GET', headers: authHeaders(auth) }));
      }),
      FC_OPTIONS,
    );
  });

  it('POST /web2/secret-failures/:secretId/retry: never a 5xx, always JSON, whatever the id, body and Authorization', async () => {
    await fc.assert(
      fc.asyncProperty(fc.nat({ max: 1 }), segment, authorization, payloads({ fields: { secretId: idValue }, optional: ['secretId'] }), async (which, id, auth, payload) => {
        const init = requestOf(payload);
        init.headers = { ...(init.headers as Record<string, string>), ...authHeaders(auth) };
        checkReply(await fetchReply(`${coordinators[which]}/web2/secret-failures/${segmentText(id)}/retry`, init));
      }),
      FC_OPTIONS,
    );
  });
});

describe('encrypt → decrypt', () => {
  /** Any well-formed Unicode but the empty string (a payload is one byte at least), `_` often, alone or in runs. */
  const plaintext = fc.string({ unit: fc.oneof({ arbitrary: fc.constantFrom('_', '__', '_-1_'), weight: 1 }, { arbitrary: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 1 }), weight: 3 }), minLength: 1, maxLength: 200 });

  it('returns any Unicode string to the owner, across coordinators and formats', async () => {
    await fc.assert(
      fc.asyncProperty(plaintext, fc.nat({ max: 1 }), fc.constantFrom('hex', 'base64'), async (text, which, format) => {
        const [encUrl, decUrl] = which === 0 ? coordinators : [...coordinators].reverse();
        const enc = await postJson<{ cifer: string; encryptedMessage: string }>(`${encUrl}/encrypt-payload`, { ...alice.signed(secretId, text), outputFormat: format });
        expect(enc.status, JSON.stringify(enc.body)).toBe(200);
        const dec = await postJson(`${decUrl}/decrypt-payload`, { cifer: enc.body.cifer, ...alice.signed(secretId, enc.body.encryptedMessage), inputFormat: format });
        expect(dec.status, JSON.stringify(dec.body)).toBe(200);
        expect(dec.body.decryptedMessage).toBe(text);
      }),
      { numRuns: ROUND_TRIP_RUNS },
    );
  });
});

describe('after the fuzzing', () => {
  it('both coordinators are healthy with 5 reachable, and alice still decrypts through her session', async () => {
    await expectCoordinatorsHealthy(coordinators);
    const dec = await postJson(`${coordinators[1]}/decrypt-payload`, { cifer: sealed.cifer, ...alice.signed(secretId, sealed.encryptedMessage) });
    expect(dec.status, JSON.stringify(dec.body)).toBe(200);
    expect(dec.body.decryptedMessage).toBe('fuzz target');
    await cluster.waitForConvergence({ timeoutMs: 10_000 });
  });
});
