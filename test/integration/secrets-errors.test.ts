/**
 * Every error row of docs/http.md "Signed routes: what is checked where", "Sessions", "Secrets",
 * "Public keys" and "Payload encryption", through real HTTP on a real 5-member cluster: each answer
 * is checked for its status, its machine code and a body of exactly `{ error, code }`.
 *
 * The signed-data rules are the same on every session-signed route, so they are one table run
 * against each route (part counts, chain id, address, timestamp and its ±10 min window, signature
 * shape, signer, and the session: unknown, expired, ended by account deletion). Route-specific rows
 * follow in one `describe` per route.
 *
 * The expired session is made by the cluster's injectable clock: every node reads
 * `Date.now() + offset`, `beforeAll` moves `offset` past a 60 s session's end, and every timestamp
 * the tests sign is taken from the same shifted clock.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalCluster, waitFor, type LocalCluster } from 'quorumkeep/testing';
import { getJson, postJson, type JsonResponse } from '../utils/http.ts';
import { expectApiError, newEd25519, otpFrom, verifiedAccount } from '../utils/web2.ts';
import { newPrincipal, newSessionWallet, openSession, sessionRequest, signData, type Principal, type SessionWallet } from '../utils/session.ts';

/** Freshness window of a Web2 signed string (docs/architecture.md, Signed data strings: |now − timestamp| ≤ 600000 ms). */
const FRESHNESS_MS = 600_000;
/** Shortest session ttl (docs/http.md, Sessions: 60000 ≤ ttl ≤ 2592000000). */
const TTL_MIN_MS = 60_000;
const TTL_MAX_MS = 2_592_000_000;
/** Bytes of a cifer: ML-KEM-768 ciphertext (1088) ‖ GCM tag (16). */
const CIFER_BYTES = 1104;

let cluster: LocalCluster;
let A: string;
let B: string;
/** Added to the wall clock of every node; only ever moves forward. */
let offset = 0;
/** The cluster's clock: what every signed timestamp is taken from. */
const now = () => Date.now() + offset;

type Signed = { data: string; signature: string };
/** A payload encrypted to one of the caller's secrets. */
interface Sealed {
  secretId: number;
  plaintext: string;
  cifer: string;
  encryptedMessage: string;
}
/** Who signs a request: a session wallet, the principal it should stand for, and a secret to name. */
interface Caller {
  principalId: string;
  wallet: SessionWallet;
  sealed: Sealed;
}

/** Owner of the secret the table names; session on A. */
let alice: Principal;
/** Another principal with an active session (on B). */
let bob: Principal;
/** A third principal, never owner nor delegate of alice's secrets. */
let carol: Principal;
/** A principal whose account was deleted after it opened a session and created a secret. */
let doomed: Principal;
/** A principal whose 60 s session has expired. */
let expiring: Principal;
/** A verified account that never registered an Ed25519 key. */
let keyless: { email: string; password: string; principalId: string };

let aliceCaller: Caller;
let doomedCaller: Caller;
let expiredCaller: Caller;
/** A wallet no session was ever opened for. */
let strangerCaller: Caller;

/** Signed `-1_<subject>_<wallet>_<now>[_extra]` by the principal's session wallet. */
const signedBy = (p: Principal, subject: string | number, extra?: string, at = now()) => p.signed(subject, extra, at);

async function createSecret(url: string, p: Principal): Promise<number> {
  const res = await postJson<{ secretId: number }>(`${url}/web2/secret`, signedBy(p, 0));
  if (res.status !== 201) throw new Error(`create secret: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.secretId;
}

async function seal(url: string, p: Principal, secretId: number, plaintext: string): Promise<Sealed> {
  const res = await postJson<{ cifer: string; encryptedMessage: string }>(`${url}/encrypt-payload`, signedBy(p, secretId, plaintext));
  if (res.status !== 200) throw new Error(`encrypt: ${res.status} ${JSON.stringify(res.body)}`);
  return { secretId, plaintext, cifer: res.body.cifer, encryptedMessage: res.body.encryptedMessage };
}

const statusOf = async (url: string, p: Principal) => (await postJson(`${url}/web2/session/status`, signedBy(p, 0))).status;

/** Delete an account the way the SDK does: request-deletion, the OTP from the mailbox, confirm-deletion. */
async function deleteAccount(url: string, p: Principal): Promise<void> {
  const req = await postJson(`${url}/web2/auth/request-deletion`, { email: p.email, password: p.password, principalId: p.principalId });
  if (req.status !== 200) throw new Error(`request-deletion: ${req.status} ${JSON.stringify(req.body)}`);
  const otp = await otpFrom(cluster, p.email, 'delete');
  const conf = await postJson(`${url}/web2/auth/confirm-deletion`, { email: p.email, otp });
  if (conf.status !== 200) throw new Error(`confirm-deletion: ${conf.status} ${JSON.stringify(conf.body)}`);
}

beforeAll(async () => {
  // No EVM chain: a positive chain id is the 400 of a chain that is not enabled (Web3 is test/integration/web3-*.test.ts).
  cluster = await startLocalCluster({ size: 5, threshold: 3, coordinators: 2, clock: now, nodeConfig: { chains: [] } });
  [A, B] = cluster.coordinators as [string, string];
  [alice, bob, carol, doomed, expiring, keyless] = await Promise.all([
    newPrincipal(cluster, A, 'alice'),
    newPrincipal(cluster, B, 'bob'),
    newPrincipal(cluster, A, 'carol'),
    newPrincipal(cluster, B, 'doomed'),
    newPrincipal(cluster, A, 'expiring'),
    verifiedAccount(cluster, B, 'keyless'),
  ]);
  await Promise.all([openSession(A, alice), openSession(B, bob), openSession(A, carol), openSession(B, doomed), openSession(A, expiring, { ttl: TTL_MIN_MS })]);

  const [aliceSecret, doomedSecret, expiringSecret] = await Promise.all([createSecret(B, alice), createSecret(A, doomed), createSecret(B, expiring)]);
  const [aliceSealed, doomedSealed, expiringSealed] = await Promise.all([
    seal(A, alice, aliceSecret, 'the table payload'),
    seal(B, doomed, doomedSecret, 'sealed before the deletion'),
    seal(A, expiring, expiringSecret, 'sealed before the expiry'),
  ]);
  aliceCaller = { principalId: alice.principalId, wallet: alice.wallet, sealed: aliceSealed };
  doomedCaller = { principalId: doomed.principalId, wallet: doomed.wallet, sealed: doomedSealed };
  expiredCaller = { principalId: expiring.principalId, wallet: expiring.wallet, sealed: expiringSealed };
  strangerCaller = { principalId: randomUUID(), wallet: newSessionWallet(), sealed: aliceSealed };

  // Both sessions were active; then the account is deleted and the 60 s session runs out.
  if ((await statusOf(A, doomed)) !== 200 || (await statusOf(B, expiring)) !== 200) throw new Error('sessions were not active');
  await deleteAccount(A, doomed);
  for (const url of [A, B]) await waitFor(async () => (await statusOf(url, doomed)) === 401, { timeoutMs: 5000, intervalMs: 50, description: `deletion to reach ${url}` });
  offset += TTL_MIN_MS + 1000;
}, 60_000);
afterAll(() => cluster?.stop());

/**
 * An API error (docs/http.md, Errors): the status, the machine code, a JSON body of exactly
 * `{ error, code }`, and the message where the spec fixes it.
 */
function expectError(res: JsonResponse, status: number, code: string, message?: string): void {
  expectApiError(res, status, code);
  const shown = JSON.stringify(res.body);
  expect(res.headers.get('content-type'), shown).toMatch(/^application\/json/);
  expect(Object.keys(res.body).sort(), shown).toEqual(['code', 'error']);
  if (message !== undefined) expect(res.body.error, shown).toBe(message);
}

/** Flip the low bit of byte `at` of a `0x` hex string (negative: from the end). */
function flipByte(hex: string, at: number): string {
  const bytes = Buffer.from(hex.slice(2), 'hex');
  const i = at < 0 ? bytes.length + at : at;
  bytes[i] = bytes[i]! ^ 0x01;
  return '0x' + bytes.toString('hex');
}

// ---------------------------------------------------------------------------------------------
// The signed-data table: the same rules on every session-signed route

/** A session-signed route as the table sees it. */
interface SignedRoute {
  path: string;
  /** Part counts that must be refused. */
  badPartCounts: number[];
  /** Status of a valid request. @default 200 */
  okStatus?: number;
  /** The answer to a session that is unknown, expired or ended. @default 403 `No active session` */
  inactive?: { status: number; code: string; message: string };
  /** Parts of a valid data string by `c` signed at `at`. */
  parts(c: Caller, at: number): string[];
  /** Body fields besides `data` and `signature`. */
  fields?(c: Caller): Record<string, unknown>;
}

const NO_SESSION = { status: 403, code: 'FORBIDDEN', message: 'No active session' };

/** `parts` of a valid `-1_<subject>_<address>_<at>[_<extra>]` by the caller. */
const dataOf =
  (subject: (c: Caller) => string | number, extra?: (c: Caller) => string) =>
  (c: Caller, at: number): string[] => ['-1', String(subject(c)), c.wallet.address, String(at), ...(extra ? [extra(c)] : [])];
const zero = () => 0;
const ownSecret = (c: Caller) => c.sealed.secretId;

const SIGNED_ROUTES: SignedRoute[] = [
  { path: '/web2/session/status', badPartCounts: [3, 5], inactive: { status: 401, code: 'SESSION_INACTIVE', message: 'Session inactive' }, parts: dataOf(zero) },
  { path: '/web2/secret', badPartCounts: [3, 5], okStatus: 201, parts: dataOf(zero) },
  { path: '/web2/secrets', badPartCounts: [3, 5], parts: dataOf((c) => c.principalId) },
  // An empty delegate: clearing, which the owner may always do.
  { path: '/web2/setDelegate', badPartCounts: [4, 6], parts: dataOf(ownSecret, () => '') },
  { path: '/secret-public-key', badPartCounts: [3, 5], parts: dataOf(ownSecret), fields: (c) => ({ chainId: -1, secretId: c.sealed.secretId }) },
  // Everything after the 4th `_` is the plaintext, so only fewer parts are wrong.
  { path: '/encrypt-payload', badPartCounts: [3, 4], parts: dataOf(ownSecret, () => 'table_plaintext') },
  { path: '/decrypt-payload', badPartCounts: [4, 6], parts: dataOf(ownSecret, (c) => c.sealed.encryptedMessage), fields: (c) => ({ cifer: c.sealed.cifer }) },
];

type Outcome = 'ok' | 'inactive' | { status: number; code: string; message?: string };

/** One row of the table: how a valid request is spoiled, and the answer. */
interface Row {
  name: string;
  outcome: Outcome;
  /** Who signs; alice by default. */
  caller?: () => Caller;
  /** Timestamp relative to now, ms. @default 0 */
  age?: number;
  /** Change the parts of the data string before it is joined and signed. */
  mutate?: (parts: string[]) => void;
  /** Signs instead of the caller's wallet. */
  signer?: () => SessionWallet;
  /** The body sent, from the signed pair (before the route's own fields). @default the pair */
  body?: (pair: Signed, c: Caller) => Record<string, unknown>;
}

const bad = (message?: string): Outcome => ({ status: 400, code: 'BAD_REQUEST', ...(message === undefined ? {} : { message }) });
const invalid: Outcome = { status: 400, code: 'VALIDATION_FAILED' };
const forbidden: Outcome = { status: 403, code: 'FORBIDDEN' };
const setPart = (i: number, value: string) => (parts: string[]) => {
  parts[i] = value;
};

const SIGNED_ROWS: Row[] = [
  { name: 'chain id -2', outcome: bad('Chain -2 is not supported'), mutate: setPart(0, '-2') },
  { name: 'chain id abc', outcome: bad(), mutate: setPart(0, 'abc') },
  { name: 'positive chain id 8453 (no Web3 chain enabled)', outcome: bad('Chain 8453 is not supported'), mutate: setPart(0, '8453') },
  { name: 'address too short', outcome: bad(), mutate: setPart(2, '0x1234') },
  { name: 'address of 40 non-hex characters', outcome: bad(), mutate: setPart(2, `0x${'zz'.repeat(20)}`) },
  { name: 'non-numeric timestamp', outcome: bad(), mutate: setPart(3, 'yesterday') },
  { name: 'empty timestamp', outcome: bad(), mutate: setPart(3, '') },
  { name: 'timestamp 10 min + 1 s old', outcome: bad(), age: -(FRESHNESS_MS + 1000) },
  { name: 'timestamp 10 min + 1 s in the future', outcome: bad(), age: FRESHNESS_MS + 1000 },
  { name: 'timestamp 9 min old (accepted)', outcome: 'ok', age: -9 * 60_000 },
  { name: 'address in uppercase hex (accepted: compared case-insensitively)', outcome: 'ok', mutate: (parts) => setPart(2, `0x${parts[2]!.slice(2).toUpperCase()}`)(parts) },
  { name: 'signed by another session wallet (signer mismatch)', outcome: forbidden, signer: () => bob.wallet },
  { name: 'a signature of other data by the same wallet', outcome: forbidden, body: (pair, c) => ({ data: pair.data, signature: signData(c.wallet, `${pair.data}0`).signature }) },
  { name: 'malformed signature (too short)', outcome: bad(), body: (pair) => ({ data: pair.data, signature: '0x1234' }) },
  { name: 'malformed signature (65 bytes of non-hex)', outcome: bad(), body: (pair) => ({ data: pair.data, signature: `0x${'zz'.repeat(65)}` }) },
  { name: 'unknown session address', outcome: 'inactive', caller: () => strangerCaller },
  { name: 'expired session', outcome: 'inactive', caller: () => expiredCaller },
  { name: 'session of a deleted account', outcome: 'inactive', caller: () => doomedCaller },
  { name: 'missing data', outcome: invalid, body: (pair) => ({ signature: pair.signature }) },
  { name: 'missing signature', outcome: invalid, body: (pair) => ({ data: pair.data }) },
  { name: 'data as a number', outcome: invalid, body: (pair) => ({ data: 12345, signature: pair.signature }) },
  { name: 'signature as an array', outcome: invalid, body: (pair) => ({ data: pair.data, signature: [pair.signature] }) },
];

/** `parts` cut or padded to `n`. */
function resize(parts: string[], n: number): void {
  parts.length = Math.min(parts.length, n);
  while (parts.length < n) parts.push('extra');
}

function expectOutcome(res: JsonResponse, route: SignedRoute, outcome: Outcome): void {
  if (outcome === 'ok') {
    expect(res.status, JSON.stringify(res.body)).toBe(route.okStatus ?? 200);
    expect(res.body.success ?? res.body.active, JSON.stringify(res.body)).toBe(true);
  } else {
    const { status, code, message } = outcome === 'inactive' ? (route.inactive ?? NO_SESSION) : outcome;
    expectError(res, status, code, message);
  }
}

for (const [routeIndex, route] of SIGNED_ROUTES.entries()) {
  describe(`POST ${route.path}: signed data`, () => {
    const rows: Row[] = [...route.badPartCounts.map((n): Row => ({ name: `${n} parts`, outcome: bad(), mutate: (parts) => resize(parts, n) })), ...SIGNED_ROWS];
    for (const [rowIndex, row] of rows.entries()) {
      const { status, code } = row.outcome === 'ok' ? { status: route.okStatus ?? 200, code: 'accepted' } : row.outcome === 'inactive' ? (route.inactive ?? NO_SESSION) : row.outcome;
      it(`${row.name} → ${status} ${code}`, async () => {
        const caller = row.caller?.() ?? aliceCaller;
        const parts = route.parts(caller, now() + (row.age ?? 0));
        row.mutate?.(parts);
        const pair = signData(row.signer?.() ?? caller.wallet, parts.join('_'));
        const body = { ...route.fields?.(caller), ...(row.body ? row.body(pair, caller) : pair) };
        // Both coordinators answer every rule.
        const url = (routeIndex + rowIndex) % 2 === 0 ? A : B;
        expectOutcome(await postJson(`${url}${route.path}`, body), route, row.outcome);
      });
    }
  });
}

// ---------------------------------------------------------------------------------------------
// Sessions

describe('POST /web2/session', () => {
  const open = (url: string, body: unknown) => postJson(`${url}/web2/session`, body);
  /** A valid request by alice's key for a fresh wallet. */
  const valid = (options: { timestamp?: number; ttl?: number } = {}) => sessionRequest(alice.principalId, alice.key, newSessionWallet(), { timestamp: now(), ...options });

  for (const field of ['principalId', 'timestamp', 'signature', 'sessionAddress'] as const) {
    it(`400 VALIDATION_FAILED without ${field}`, async () => {
      const body: Record<string, unknown> = valid();
      delete body[field];
      expectError(await open(A, body), 400, 'VALIDATION_FAILED');
    });
  }

  it('400 VALIDATION_FAILED for a principalId that is not a string', async () => {
    expectError(await open(B, { ...valid(), principalId: 42 }), 400, 'VALIDATION_FAILED');
  });

  for (const timestamp of ['soon', '-1', '1.5', '', '0x10', '1e12']) {
    it(`400 BAD_REQUEST for the timestamp ${JSON.stringify(timestamp)} (signed as sent)`, async () => {
      const wallet = newSessionWallet();
      const signature = alice.key.sign(`cifer_session:${alice.principalId}:${timestamp}:${wallet.address}`);
      expectError(await open(A, { principalId: alice.principalId, timestamp, signature, sessionAddress: wallet.address }), 400, 'BAD_REQUEST');
    });
  }

  it('400 BAD_REQUEST for a timestamp 10 min + 1 s old', async () => {
    expectError(await open(A, valid({ timestamp: now() - FRESHNESS_MS - 1000 })), 400, 'BAD_REQUEST');
  });

  it('400 BAD_REQUEST for a timestamp 10 min + 1 s in the future', async () => {
    expectError(await open(B, valid({ timestamp: now() + FRESHNESS_MS + 1000 })), 400, 'BAD_REQUEST');
  });

  it('201 for a timestamp 9 min old, also sent as a JSON number', async () => {
    const res = await open(A, valid({ timestamp: now() - 9 * 60_000 }));
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const asNumber = valid({ timestamp: now() - 9 * 60_000 });
    const res2 = await open(B, { ...asNumber, timestamp: Number(asNumber.timestamp) });
    expect(res2.status, JSON.stringify(res2.body)).toBe(201);
  });

  for (const sessionAddress of ['0x1234', 'not-an-address', `0x${'g'.repeat(40)}`, `0x${'a'.repeat(41)}`, 'a'.repeat(42)]) {
    it(`400 BAD_REQUEST for the sessionAddress ${JSON.stringify(sessionAddress)} (signed as sent)`, async () => {
      const timestamp = String(now());
      const signature = alice.key.sign(`cifer_session:${alice.principalId}:${timestamp}:${sessionAddress}`);
      expectError(await open(A, { principalId: alice.principalId, timestamp, signature, sessionAddress }), 400, 'BAD_REQUEST');
    });
  }

  for (const ttl of [TTL_MIN_MS - 1, TTL_MAX_MS + 1, 60_000.5, 0, -TTL_MIN_MS]) {
    it(`400 BAD_REQUEST for the ttl ${ttl} (signed as sent)`, async () => {
      expectError(await open(B, valid({ ttl })), 400, 'BAD_REQUEST');
    });
  }

  for (const ttl of ['abc', '60000.5', true, [60_000]]) {
    it(`400 VALIDATION_FAILED for the ttl ${JSON.stringify(ttl)}`, async () => {
      expectError(await open(A, { ...valid(), ttl }), 400, 'VALIDATION_FAILED');
    });
  }

  it(`201 for the ttl bounds ${TTL_MIN_MS} and ${TTL_MAX_MS}, with expiresAt = now + ttl`, async () => {
    for (const ttl of [TTL_MIN_MS, TTL_MAX_MS]) {
      const before = now();
      const res = await open(A, valid({ ttl }));
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      const expiresAt = Date.parse(res.body.expiresAt as string);
      expect(expiresAt).toBeGreaterThanOrEqual(before + ttl);
      expect(expiresAt).toBeLessThanOrEqual(now() + ttl);
    }
  });

  it('401 UNAUTHORIZED for an Ed25519 signature by another key', async () => {
    const wallet = newSessionWallet();
    const forged = sessionRequest(alice.principalId, newEd25519(), wallet, { timestamp: now() });
    expectError(await open(A, forged), 401, 'UNAUTHORIZED');
    // The wallet got no session.
    expectError(await postJson(`${A}/web2/session/status`, signData(wallet, `-1_0_${wallet.address}_${now()}`)), 401, 'SESSION_INACTIVE', 'Session inactive');
  });

  it('401 UNAUTHORIZED for the signature of another principal (bob signs for alice)', async () => {
    const wallet = newSessionWallet();
    const theirs = sessionRequest(bob.principalId, bob.key, wallet, { timestamp: now() });
    expectError(await open(B, { ...theirs, principalId: alice.principalId }), 401, 'UNAUTHORIZED');
  });

  it('401 UNAUTHORIZED when a ttl is sent that the signature does not cover', async () => {
    expectError(await open(A, { ...valid(), ttl: TTL_MIN_MS }), 401, 'UNAUTHORIZED');
  });

  it('401 UNAUTHORIZED for a malformed signature', async () => {
    for (const signature of ['', '0x1234', 'zz'.repeat(64)]) expectError(await open(B, { ...valid(), signature }), 401, 'UNAUTHORIZED');
  });

  it('404 NOT_FOUND for an unknown principal', async () => {
    const key = newEd25519();
    expectError(await open(A, sessionRequest(randomUUID(), key, newSessionWallet(), { timestamp: now() })), 404, 'NOT_FOUND');
  });

  it('404 NOT_FOUND for a deleted principal, even with its old key', async () => {
    expectError(await open(B, sessionRequest(doomed.principalId, doomed.key, newSessionWallet(), { timestamp: now() })), 404, 'NOT_FOUND');
  });

  it('403 FORBIDDEN for a principal without a registered key', async () => {
    expectError(await open(A, sessionRequest(keyless.principalId, newEd25519(), newSessionWallet(), { timestamp: now() })), 403, 'FORBIDDEN');
  });

  it("403 FORBIDDEN for a session address bound to another principal's live session; that session stays bob's", async () => {
    expectError(await open(A, sessionRequest(alice.principalId, alice.key, bob.wallet, { timestamp: now() })), 403, 'FORBIDDEN');
    const status = await postJson(`${B}/web2/session/status`, signedBy(bob, 0));
    expect(status.status).toBe(200);
    expect(status.body.principalId).toBe(bob.principalId);
  });
});

describe('POST /web2/session/status', () => {
  it('400 BAD_REQUEST when the second part is not 0', async () => {
    expectError(await postJson(`${A}/web2/session/status`, signedBy(alice, 7)), 400, 'BAD_REQUEST');
  });

  it('an account deletion ends the session on both coordinators; it never comes back', async () => {
    for (const url of [A, B]) expectError(await postJson(`${url}/web2/session/status`, signedBy(doomed, 0)), 401, 'SESSION_INACTIVE', 'Session inactive');
  });

  it('expired: 401 SESSION_INACTIVE, and a new session for the same wallet makes it active again', async () => {
    const fresh = await newPrincipal(cluster, B, 'renew');
    const opened = await postJson(`${B}/web2/session`, sessionRequest(fresh.principalId, fresh.key, fresh.wallet, { timestamp: now(), ttl: TTL_MIN_MS }));
    expect(opened.status, JSON.stringify(opened.body)).toBe(201);
    expect((await postJson(`${A}/web2/session/status`, signedBy(fresh, 0))).status).toBe(200);
    offset += TTL_MIN_MS + 1000;
    expectError(await postJson(`${A}/web2/session/status`, signedBy(fresh, 0)), 401, 'SESSION_INACTIVE', 'Session inactive');
    expectError(await postJson(`${B}/web2/secret`, signedBy(fresh, 0)), 403, 'FORBIDDEN', 'No active session');
    const renewed = await postJson(`${B}/web2/session`, sessionRequest(fresh.principalId, fresh.key, fresh.wallet, { timestamp: now() }));
    expect(renewed.status, JSON.stringify(renewed.body)).toBe(201);
    expect((await postJson(`${A}/web2/session/status`, signedBy(fresh, 0))).status).toBe(200);
  });
});

// ---------------------------------------------------------------------------------------------
// Secrets

describe('POST /web2/secret', () => {
  it('400 BAD_REQUEST when the second part is not 0', async () => {
    expectError(await postJson(`${A}/web2/secret`, signedBy(alice, 5)), 400, 'BAD_REQUEST');
  });
});

describe('POST /web2/secrets', () => {
  it("403 FORBIDDEN with another principal's id in data", async () => {
    expectError(await postJson(`${B}/web2/secrets`, signedBy(bob, alice.principalId)), 403, 'FORBIDDEN');
  });

  it('403 FORBIDDEN with an unknown or malformed principal id in data', async () => {
    for (const subject of [randomUUID(), '0', 'abc']) expectError(await postJson(`${A}/web2/secrets`, signedBy(alice, subject)), 403, 'FORBIDDEN');
  });
});

describe('POST /web2/setDelegate', () => {
  const setDelegate = (url: string, p: Principal, secretId: string | number, delegate: string) => postJson(`${url}/web2/setDelegate`, signedBy(p, secretId, delegate));

  it('403 FORBIDDEN for a principal that is not the owner (also for the delegate itself)', async () => {
    const secretId = await createSecret(A, alice);
    expectError(await setDelegate(B, bob, secretId, bob.principalId), 403, 'FORBIDDEN');
    expect((await setDelegate(A, alice, secretId, bob.principalId)).status).toBe(200);
    // Being the delegate gives no right to move the delegation.
    expectError(await setDelegate(B, bob, secretId, carol.principalId), 403, 'FORBIDDEN');
    expectError(await setDelegate(B, bob, secretId, ''), 403, 'FORBIDDEN');
  });

  it('403 FORBIDDEN for the owner as its own delegate', async () => {
    expectError(await setDelegate(A, alice, aliceCaller.sealed.secretId, alice.principalId), 403, 'FORBIDDEN');
  });

  it('404 NOT_FOUND for an unknown secret', async () => {
    expectError(await setDelegate(B, alice, 987_654_321, bob.principalId), 404, 'NOT_FOUND');
  });

  it('404 NOT_FOUND for an unknown delegate principal, and for a deleted one', async () => {
    expectError(await setDelegate(A, alice, aliceCaller.sealed.secretId, randomUUID()), 404, 'NOT_FOUND');
    expectError(await setDelegate(B, alice, aliceCaller.sealed.secretId, doomed.principalId), 404, 'NOT_FOUND');
  });

  for (const delegate of ['not-a-principal', '12345', `${randomUUID()}x`, ' ']) {
    it(`400 BAD_REQUEST for the malformed delegate id ${JSON.stringify(delegate)}`, async () => {
      expectError(await setDelegate(A, alice, aliceCaller.sealed.secretId, delegate), 400, 'BAD_REQUEST');
    });
  }

  for (const secretId of ['0', 'abc', '-5', '', '1.5']) {
    it(`400 BAD_REQUEST for the secretId ${JSON.stringify(secretId)} in data`, async () => {
      expectError(await setDelegate(B, alice, secretId, bob.principalId), 400, 'BAD_REQUEST');
    });
  }
});

describe('operator endpoints: /web2/secret-failures', () => {
  const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

  it('GET: 401 UNAUTHORIZED without a token, with a wrong token, and with another scheme', async () => {
    expectError(await getJson(`${A}/web2/secret-failures`), 401, 'UNAUTHORIZED');
    expectError(await getJson(`${B}/web2/secret-failures`, bearer('wrong-token')), 401, 'UNAUTHORIZED');
    expectError(await getJson(`${A}/web2/secret-failures`, { authorization: `Basic ${cluster.adminToken}` }), 401, 'UNAUTHORIZED');
  });

  it('GET: 200 with the admin token; a healthy cluster lists no failures', async () => {
    const res = await getJson(`${A}/web2/secret-failures`, bearer(cluster.adminToken));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, failures: [] });
  });

  it('POST retry: 401 UNAUTHORIZED without the token (before the id is looked at)', async () => {
    expectError(await postJson(`${A}/web2/secret-failures/${aliceCaller.sealed.secretId}/retry`, {}), 401, 'UNAUTHORIZED');
    expectError(await postJson(`${B}/web2/secret-failures/abc/retry`, {}, bearer('wrong-token')), 401, 'UNAUTHORIZED');
  });

  for (const secretId of ['0', 'abc', '-5', '1.5', '00']) {
    it(`POST retry: 400 BAD_REQUEST for the secretId ${JSON.stringify(secretId)}`, async () => {
      expectError(await postJson(`${B}/web2/secret-failures/${secretId}/retry`, {}, bearer(cluster.adminToken)), 400, 'BAD_REQUEST');
    });
  }

  it('POST retry: 404 NOT_FOUND for an unknown secret, and for a secret whose shares are all delivered', async () => {
    expectError(await postJson(`${A}/web2/secret-failures/987654321/retry`, {}, bearer(cluster.adminToken)), 404, 'NOT_FOUND');
    expectError(await postJson(`${B}/web2/secret-failures/${aliceCaller.sealed.secretId}/retry`, {}, bearer(cluster.adminToken)), 404, 'NOT_FOUND');
  });
});

// ---------------------------------------------------------------------------------------------
// Public keys

describe('GET /secret-public-key/:chainId/:secretId', () => {
  const key = (url: string, chainId: string, secretId: string | number) => getJson(`${url}/secret-public-key/${chainId}/${secretId}`);

  for (const secretId of ['0', 'abc', '-5', '1.5', '0x10']) {
    it(`400 BAD_REQUEST for the secretId ${JSON.stringify(secretId)}`, async () => {
      expectError(await key(A, '-1', secretId), 400, 'BAD_REQUEST');
    });
  }

  it('400 BAD_REQUEST for the chain ids abc and -2, and "Chain 8453 is not supported"', async () => {
    const secretId = aliceCaller.sealed.secretId;
    expectError(await key(B, 'abc', secretId), 400, 'BAD_REQUEST');
    expectError(await key(A, '-2', secretId), 400, 'BAD_REQUEST', 'Chain -2 is not supported');
    expectError(await key(B, '8453', secretId), 400, 'BAD_REQUEST', 'Chain 8453 is not supported');
  });

  it('400 VALIDATION_FAILED for a param longer than any id', async () => {
    expectError(await key(A, '-1', '1'.repeat(64)), 400, 'VALIDATION_FAILED');
  });

  it('404 NOT_FOUND for an unknown secret', async () => {
    expectError(await key(B, '-1', 987_654_321), 404, 'NOT_FOUND');
  });
});

describe('POST /secret-public-key (deprecated signed form)', () => {
  const post = (url: string, body: Record<string, unknown>) => postJson(`${url}/secret-public-key`, body);
  const secretId = () => aliceCaller.sealed.secretId;

  it('400 VALIDATION_FAILED without chainId or secretId; errors carry the Deprecation header too', async () => {
    const res = await post(A, { ...signedBy(alice, secretId()), secretId: secretId() });
    expectError(res, 400, 'VALIDATION_FAILED');
    expect(res.headers.get('deprecation')).toBe('true');
    expectError(await post(B, { ...signedBy(alice, secretId()), chainId: -1 }), 400, 'VALIDATION_FAILED');
  });

  it('400 BAD_REQUEST when chainId or secretId differ from the signed data', async () => {
    const other = await createSecret(A, alice);
    expectError(await post(A, { ...signedBy(alice, secretId()), chainId: -1, secretId: other }), 400, 'BAD_REQUEST');
    expectError(await post(B, { ...signedBy(alice, other), chainId: -1, secretId: secretId() }), 400, 'BAD_REQUEST');
    expectError(await post(A, { ...signedBy(alice, secretId()), chainId: 8453, secretId: secretId() }), 400, 'BAD_REQUEST', 'Chain 8453 is not supported');
  });

  for (const raw of ['0', 'abc', '-5']) {
    it(`400 BAD_REQUEST for the secretId ${JSON.stringify(raw)}`, async () => {
      expectError(await post(B, { ...signedBy(alice, raw), chainId: -1, secretId: raw }), 400, 'BAD_REQUEST');
    });
  }

  it('404 NOT_FOUND for an unknown secret', async () => {
    expectError(await post(A, { ...signedBy(alice, 987_654_321), chainId: '-1', secretId: '987654321' }), 404, 'NOT_FOUND');
  });

  it('200 with Deprecation and a Link to the GET form', async () => {
    const res = await post(B, { ...signedBy(alice, secretId()), chainId: -1, secretId: String(secretId()) });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({ success: true, chainId: -1, secretId: secretId() });
    expect(res.headers.get('deprecation')).toBe('true');
    expect(res.headers.get('link')).toBe(`</secret-public-key/-1/${secretId()}>; rel="successor-version"`);
  });
});

// ---------------------------------------------------------------------------------------------
// Payload encryption

describe('POST /encrypt-payload', () => {
  const encrypt = (url: string, p: Principal, secretId: string | number, plaintext: string, outputFormat?: unknown) =>
    postJson<{ cifer: string; encryptedMessage: string }>(`${url}/encrypt-payload`, { ...signedBy(p, secretId, plaintext), ...(outputFormat === undefined ? {} : { outputFormat }) });

  it('404 NOT_FOUND for an unknown secret', async () => {
    expectError(await encrypt(A, alice, 987_654_321, 'nobody holds this key'), 404, 'NOT_FOUND');
  });

  for (const secretId of ['0', 'abc', '-5']) {
    it(`400 BAD_REQUEST for the secretId ${JSON.stringify(secretId)}`, async () => {
      expectError(await encrypt(B, alice, secretId, 'x'), 400, 'BAD_REQUEST');
    });
  }

  for (const outputFormat of ['HEX', 'utf8', '', 16, null]) {
    it(`400 VALIDATION_FAILED for the outputFormat ${JSON.stringify(outputFormat)}`, async () => {
      expectError(await encrypt(A, alice, aliceCaller.sealed.secretId, 'x', outputFormat), 400, 'VALIDATION_FAILED');
    });
  }

  it('`_` inside the plaintext (leading, trailing, doubled, alone) round-trips', async () => {
    const secretId = aliceCaller.sealed.secretId;
    for (const plaintext of ['_', '__', '_lead', 'trail_', 'a__b_c', '-1_2_0xabc_123']) {
      const enc = await encrypt(B, bob, secretId, plaintext);
      expect(enc.status, JSON.stringify(enc.body)).toBe(200);
      const dec = await postJson(`${A}/decrypt-payload`, { cifer: enc.body.cifer, ...signedBy(alice, secretId, enc.body.encryptedMessage) });
      expect(dec.status, JSON.stringify(dec.body)).toBe(200);
      expect(dec.body.decryptedMessage).toBe(plaintext);
    }
  });

  it('an empty plaintext (data ending in `_`: the shape of a "remove delegate" string) is 400 BAD_REQUEST; one byte round-trips', async () => {
    const secretId = aliceCaller.sealed.secretId;
    expectError(await encrypt(A, alice, secretId, ''), 400, 'BAD_REQUEST');
    const enc = await encrypt(A, alice, secretId, 'x');
    expect(enc.status, JSON.stringify(enc.body)).toBe(200);
    const dec = await postJson(`${B}/decrypt-payload`, { cifer: enc.body.cifer, ...signedBy(alice, secretId, enc.body.encryptedMessage) });
    expect(dec.status, JSON.stringify(dec.body)).toBe(200);
    expect(dec.body.decryptedMessage).toBe('x');
  });
});

describe('POST /decrypt-payload', () => {
  const decrypt = (url: string, p: Principal, secretId: string | number, cifer: unknown, encryptedMessage: string, inputFormat?: unknown) =>
    postJson(`${url}/decrypt-payload`, { cifer, ...signedBy(p, secretId, encryptedMessage), ...(inputFormat === undefined ? {} : { inputFormat }) });
  const sealed = () => aliceCaller.sealed;

  it('400 VALIDATION_FAILED without cifer, or with a cifer that is not a string', async () => {
    const { secretId, encryptedMessage } = sealed();
    expectError(await postJson(`${A}/decrypt-payload`, signedBy(alice, secretId, encryptedMessage)), 400, 'VALIDATION_FAILED');
    expectError(await decrypt(B, alice, secretId, 1104, encryptedMessage), 400, 'VALIDATION_FAILED');
  });

  it('400 DECRYPTION_FAILED "Decryption failed" for a cifer with one byte flipped (in the KEM ciphertext, in the tag)', async () => {
    const { secretId, cifer, encryptedMessage } = sealed();
    expectError(await decrypt(A, alice, secretId, flipByte(cifer, 0), encryptedMessage), 400, 'DECRYPTION_FAILED', 'Decryption failed');
    expectError(await decrypt(B, alice, secretId, flipByte(cifer, -1), encryptedMessage), 400, 'DECRYPTION_FAILED', 'Decryption failed');
  });

  it('400 DECRYPTION_FAILED "Decryption failed" for an encryptedMessage with one byte flipped', async () => {
    const { secretId, cifer, encryptedMessage } = sealed();
    expectError(await decrypt(B, alice, secretId, cifer, flipByte(encryptedMessage, 3)), 400, 'DECRYPTION_FAILED', 'Decryption failed');
  });

  it('400 DECRYPTION_FAILED "Decryption failed" for a payload sealed to another secret of the same owner (wrong key)', async () => {
    const other = await createSecret(B, alice);
    const { cifer, encryptedMessage } = await seal(A, alice, other, 'for the other secret');
    expectError(await decrypt(A, alice, sealed().secretId, cifer, encryptedMessage), 400, 'DECRYPTION_FAILED', 'Decryption failed');
  });

  it(`400 BAD_REQUEST for a cifer of ${CIFER_BYTES - 1}, ${CIFER_BYTES + 1} and 0 bytes`, async () => {
    const { secretId, cifer, encryptedMessage } = sealed();
    expectError(await decrypt(A, alice, secretId, cifer.slice(0, -2), encryptedMessage), 400, 'BAD_REQUEST');
    expectError(await decrypt(B, alice, secretId, `${cifer}00`, encryptedMessage), 400, 'BAD_REQUEST');
    expectError(await decrypt(A, alice, secretId, '0x', encryptedMessage), 400, 'BAD_REQUEST');
  });

  it('400 BAD_REQUEST for a cifer or encryptedMessage that is not in the input format', async () => {
    const { secretId, cifer, encryptedMessage } = sealed();
    const ciferBase64 = Buffer.from(cifer.slice(2), 'hex').toString('base64');
    expectError(await decrypt(A, alice, secretId, ciferBase64, encryptedMessage), 400, 'BAD_REQUEST');
    expectError(await decrypt(B, alice, secretId, cifer, encryptedMessage, 'base64'), 400, 'BAD_REQUEST');
    expectError(await decrypt(A, alice, secretId, cifer, `${encryptedMessage}0`), 400, 'BAD_REQUEST');
    expectError(await decrypt(B, alice, secretId, cifer, 'not hex at all'), 400, 'BAD_REQUEST');
  });

  it('400 BAD_REQUEST, as for a malformed one, for an empty encryptedMessage (the shape of a "remove delegate" string) in either format', async () => {
    const { secretId, cifer } = sealed();
    const ciferBase64 = Buffer.from(cifer.slice(2), 'hex').toString('base64');
    expectError(await decrypt(A, alice, secretId, cifer, ''), 400, 'BAD_REQUEST');
    expectError(await decrypt(B, alice, secretId, cifer, '0x'), 400, 'BAD_REQUEST');
    expectError(await decrypt(A, alice, secretId, ciferBase64, '', 'base64'), 400, 'BAD_REQUEST');
  });

  it('hex input without the 0x prefix is accepted', async () => {
    const { secretId, cifer, encryptedMessage, plaintext } = sealed();
    const res = await decrypt(A, alice, secretId, cifer.slice(2), encryptedMessage.slice(2));
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.decryptedMessage).toBe(plaintext);
  });

  for (const inputFormat of ['HEX', 'base32', '', 0]) {
    it(`400 VALIDATION_FAILED for the inputFormat ${JSON.stringify(inputFormat)}`, async () => {
      const { secretId, cifer, encryptedMessage } = sealed();
      expectError(await decrypt(B, alice, secretId, cifer, encryptedMessage, inputFormat), 400, 'VALIDATION_FAILED');
    });
  }

  it('403 FORBIDDEN for a principal that is neither owner nor delegate, through both coordinators', async () => {
    const { secretId, cifer, encryptedMessage } = sealed();
    expectError(await decrypt(A, carol, secretId, cifer, encryptedMessage), 403, 'FORBIDDEN');
    expectError(await decrypt(B, bob, secretId, cifer, encryptedMessage), 403, 'FORBIDDEN');
  });

  it('404 NOT_FOUND for an unknown secret', async () => {
    const { cifer, encryptedMessage } = sealed();
    expectError(await decrypt(A, alice, 987_654_321, cifer, encryptedMessage), 404, 'NOT_FOUND');
  });

  for (const secretId of ['0', 'abc', '-5']) {
    it(`400 BAD_REQUEST for the secretId ${JSON.stringify(secretId)}`, async () => {
      const { cifer, encryptedMessage } = sealed();
      expectError(await decrypt(B, alice, secretId, cifer, encryptedMessage), 400, 'BAD_REQUEST');
    });
  }
});
