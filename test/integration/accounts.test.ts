import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalCluster, waitFor, type LocalCluster } from 'quorumkeep/testing';
import { getJson, postJson } from '../utils/http.ts';
import { newEmail, otpFrom, otpMails, verifiedAccount, registerKey, newEd25519 } from '../utils/web2.ts';

/** Cooldown between code mails to one email, shared by register, resend, forgot and deletion (60 s). */
const MAIL_COOLDOWN_MS = 60_000;

let cluster: LocalCluster;
let A: string;
let B: string;
/** Added to the wall clock of every node; only ever moves forward (past a mail cooldown, say). */
let offset = 0;
beforeAll(async () => {
  cluster = await startLocalCluster({ size: 5, threshold: 3, coordinators: 2, clock: () => Date.now() + offset });
  [A, B] = cluster.coordinators as [string, string];
});
afterAll(() => cluster?.stop());

const hex = (s: string) => Buffer.from(s, 'utf8').toString('hex');

describe('Web2 accounts: the happy path across coordinators', () => {
  it('register → OTP by SMTP → verify → verify-credentials → register-key → complete on both coordinators; lookup on the other', async () => {
    const email = newEmail('Happy');
    const password = 'correct horse battery';
    const reg = await postJson<{ principalId: string; message: string }>(`${A}/web2/auth/register`, { email: `  ${email.toUpperCase()} `, password });
    expect(reg.status).toBe(201);
    expect(reg.body.principalId).toMatch(/^[0-9a-f-]{36}$/);
    expect(typeof reg.body.message).toBe('string');

    const mail = await cluster.mailbox.waitFor((m) => m.to.includes(email.toLowerCase()));
    expect(mail.subject).toMatch(/verification code/i);
    expect(mail.text).toMatch(/\b\d{6}\b/);
    expect(mail.html).toMatch(/\b\d{6}\b/);
    const otp = await otpFrom(cluster, email, 'verify');

    const ver = await postJson(`${B}/web2/auth/verify-email`, { email, otp });
    expect(ver.status).toBe(200);
    expect(ver.body).toEqual({ principalId: reg.body.principalId, emailVerified: true });

    const cred = await postJson(`${A}/web2/auth/verify-credentials`, { email, password });
    expect(cred.status).toBe(200);
    expect(cred.body).toEqual({ valid: true, principalId: reg.body.principalId });
    expect(cred.body).not.toHaveProperty('sessionToken');

    const key = await registerKey(A, { principalId: reg.body.principalId, password });
    expect(key.status).toBe(201);
    expect(key.body).toMatchObject({ principalId: reg.body.principalId, emailHex: hex(email.toLowerCase()), nodeRegistrationStatus: 'complete', failedNodes: [], nodeErrors: {} });

    for (const url of [A, B]) {
      await waitFor(async () => {
        const s = await getJson<{ nodeRegistrationStatus: string; successNodes: string[]; failedNodes: string[] }>(`${url}/web2/auth/node-registration-status?principalId=${reg.body.principalId}`);
        return s.status === 200 && s.body.nodeRegistrationStatus === 'complete' && s.body.successNodes.length === 5 && s.body.failedNodes.length === 0;
      }, { timeoutMs: 5000, description: `status complete on ${url}` });
    }
    const look = await getJson(`${B}/web2/principal/byEmail?emailHex=${hex(email.toLowerCase())}`);
    expect(look.status).toBe(200);
    expect(look.body).toEqual({ principalId: reg.body.principalId, emailHex: hex(email.toLowerCase()) });
    const legacy = await getJson(`${B}/web2/principal/byEmail?email=${encodeURIComponent(email)}`);
    expect(legacy.body).toMatchObject({ principalId: reg.body.principalId });
  });

  it('re-registering an unverified email (after the mail cooldown) answers 200 with the same principal and a new OTP; a verified one 409', async () => {
    const email = newEmail('rereg');
    const first = await postJson<{ principalId: string }>(`${A}/web2/auth/register`, { email, password: 'same-password' });
    expect(first.status).toBe(201);
    const oldOtp = await otpFrom(cluster, email, 'verify');
    // Within the cooldown a re-register sends nothing (accounts-abuse.test.ts has the rest of it).
    expect((await postJson(`${B}/web2/auth/register`, { email, password: 'same-password' })).status).toBe(429);
    offset += MAIL_COOLDOWN_MS + 1000;
    const again = await postJson<{ principalId: string }>(`${B}/web2/auth/register`, { email, password: 'same-password' });
    expect(again.status).toBe(200);
    expect(again.body.principalId).toBe(first.body.principalId);
    const newOtp = await otpFrom(cluster, email, 'verify', 1);
    if (newOtp !== oldOtp) expect((await postJson(`${A}/web2/auth/verify-email`, { email, otp: oldOtp })).status).toBe(401);
    expect((await postJson(`${A}/web2/auth/verify-email`, { email, otp: newOtp })).status).toBe(200);
    // The same password both times: it is the account's password. (With another password the
    // account would need a reset first: accounts-abuse.test.ts, "registration hijack".)
    expect((await postJson(`${B}/web2/auth/verify-credentials`, { email, password: 'same-password' })).status).toBe(200);
    const verified = await postJson(`${A}/web2/auth/register`, { email, password: 'third-password' });
    expect(verified.status).toBe(409);
    expect(verified.body).toMatchObject({ code: 'CONFLICT' });
  });

  it('concurrent registration of one email through both coordinators: one registration, one principal, one mail; the rest 429', async () => {
    const email = newEmail('race');
    const results = await Promise.all([
      ...Array.from({ length: 4 }, () => postJson<{ principalId: string }>(`${A}/web2/auth/register`, { email, password: 'password-a' })),
      ...Array.from({ length: 4 }, () => postJson<{ principalId: string }>(`${B}/web2/auth/register`, { email, password: 'password-b' })),
    ]);
    expect(results.map((r) => r.status).sort()).toEqual([201, 429, 429, 429, 429, 429, 429, 429]);
    const id = results.find((r) => r.status === 201)!.body.principalId;
    for (const r of results.filter((x) => x.status === 429)) expect(r.body).toMatchObject({ code: 'RATE_LIMITED', retryAfterSeconds: expect.any(Number) });
    for (const url of [A, B]) {
      const look = await getJson(`${url}/web2/principal/byEmail?emailHex=${hex(email)}`);
      expect(look.body.principalId).toBe(id);
    }
    // A later mail marks that everything the eight requests sent has arrived: one code.
    offset += MAIL_COOLDOWN_MS + 1000;
    expect((await postJson(`${A}/web2/auth/resend-otp`, { email })).status).toBe(200);
    await otpFrom(cluster, email, 'verify', 1);
    expect(otpMails(cluster, email, 'verify')).toHaveLength(2);
  });
});

describe('account deletion', () => {
  it('request (generic) → OTP → confirm; credentials then 404 everywhere; the email registers again as a new principal', async () => {
    const acct = await verifiedAccount(cluster, A, 'delete');
    // The wrong password first: each request for the email takes its mail turn, sent or not.
    const wrongPw = await postJson(`${A}/web2/auth/request-deletion`, { email: acct.email, password: 'wrong-password', principalId: acct.principalId });
    offset += MAIL_COOLDOWN_MS + 1000;
    const generic = await postJson(`${A}/web2/auth/request-deletion`, { email: acct.email, password: acct.password, principalId: acct.principalId });
    const unknown = await postJson(`${A}/web2/auth/request-deletion`, { email: newEmail('nobody'), password: acct.password, principalId: acct.principalId });
    expect(generic.status).toBe(200);
    expect(unknown).toMatchObject({ status: generic.status, body: generic.body });
    expect(wrongPw).toMatchObject({ status: generic.status, body: generic.body });

    const otp = await otpFrom(cluster, acct.email, 'delete');
    expect(cluster.mailbox.to(acct.email).filter((m) => /deletion/i.test(m.subject))).toHaveLength(1);
    const conf = await postJson(`${B}/web2/auth/confirm-deletion`, { email: acct.email, otp });
    expect(conf.status).toBe(200);
    expect(conf.body).toMatchObject({ success: true });
    for (const url of cluster.coordinators) {
      await waitFor(async () => (await postJson(`${url}/web2/auth/verify-credentials`, { email: acct.email, password: acct.password })).status === 404, { timeoutMs: 3000 });
    }
    expect((await postJson(`${A}/web2/auth/confirm-deletion`, { email: acct.email, otp })).status).toBe(401);
    const again = await postJson<{ principalId: string }>(`${A}/web2/auth/register`, { email: acct.email, password: acct.password });
    expect(again.status).toBe(201);
    expect(again.body.principalId).not.toBe(acct.principalId);
  });
});

describe('key registration under failures', () => {
  it('2 members down: partial naming the 2; after they return, retry → complete', async () => {
    const acct = await verifiedAccount(cluster, A, 'partial');
    await cluster.stopMember(3);
    await cluster.stopMember(4);
    try {
      const res = await registerKey(A, acct);
      expect(res.status).toBe(201);
      expect(res.body.nodeRegistrationStatus, JSON.stringify(res.body)).toBe('partial');
      const down = [cluster.members[3]!.nodeAddress, cluster.members[4]!.nodeAddress].sort();
      expect([...res.body.failedNodes].sort()).toEqual(down);
      expect(Object.keys(res.body.nodeErrors).sort()).toEqual(down);
      // Members acknowledge a stored key with their own record, a few ms after storing it.
      await waitFor(async () => (await getJson<{ nodeRegistrationStatus: string }>(`${B}/web2/auth/node-registration-status?principalId=${acct.principalId}`)).body.nodeRegistrationStatus === 'partial', { timeoutMs: 3000 });
    } finally {
      await cluster.restartMember(3);
      await cluster.restartMember(4);
    }
    const retry = await postJson<{ nodeRegistrationStatus: string; failedNodes: string[] }>(`${B}/web2/auth/retry-node-registration`, { principalId: acct.principalId });
    expect(retry.status).toBe(200);
    expect(retry.body).toMatchObject({ principalId: acct.principalId, nodeRegistrationStatus: 'complete', failedNodes: [] });
  });
});

describe('key registration with a gateway coordinator', () => {
  let gw: LocalCluster;
  beforeAll(async () => {
    gw = await startLocalCluster({ size: 5, threshold: 3, coordinators: 1, gateways: 1 });
  });
  afterAll(() => gw?.stop());

  it('4 members down: pending; all down: 503 and nothing written; catch-up later completes it', async () => {
    const G = gw.coordinators[1]!;
    const acct = await verifiedAccount(gw, G, 'gw');
    const otherAcct = await verifiedAccount(gw, G, 'gw2');
    for (const i of [1, 2, 3, 4]) await gw.stopMember(i);
    const pending = await registerKey(G, acct);
    expect(pending.status).toBe(201);
    expect(pending.body.nodeRegistrationStatus).toBe('pending');
    expect(pending.body.failedNodes).toHaveLength(4);
    // With slot 0 down too, nothing can be written (slot 0 writes every principal's versions): a
    // 503 whose retry is safe, and the retry once it is back registers the key.
    await gw.stopMember(0);
    const failed = await registerKey(G, otherAcct);
    expect(failed.status).toBe(503);
    expect(failed.body).toMatchObject({ code: 'SLOT0_UNAVAILABLE' });
    for (const i of [0, 1, 2, 3, 4]) await gw.restartMember(i);
    await waitFor(async () => (await registerKey(G, otherAcct)).status === 201, { timeoutMs: 15_000, description: 'the retry to register the key' });
    // Catch-up brings the stragglers in, and the status reflects it without a retry.
    for (const a of [acct, otherAcct]) {
      let last: unknown;
      await waitFor(
        async () => {
          const s = await getJson<{ nodeRegistrationStatus: string }>(`${G}/web2/auth/node-registration-status?principalId=${a.principalId}`);
          last = { status: s.body, members: await Promise.all(gw.members.map(async (m) => [!!(await m.state.get('principal', a.principalId))?.body, m.membership.reachableCount()])) };
          return s.body.nodeRegistrationStatus === 'complete';
        },
        { timeoutMs: 15_000, description: 'registration to complete by catch-up' },
      ).catch((err: Error) => {
        throw new Error(`${err.message}: ${JSON.stringify(last)}`);
      });
    }
  });
});

describe('key registration errors', () => {
  it('400 malformed key or signature, 401 bad password or signature, 403 unverified, 404 unknown, 409 another key', async () => {
    const acct = await verifiedAccount(cluster, A, 'keyerr');
    const key = newEd25519();
    const good = { principalId: acct.principalId, password: acct.password, publicKey: key.publicKey, signature: key.sign(`cifer_register:${key.publicKey}`) };
    const post = (body: object) => postJson(`${A}/web2/auth/register-key`, body);
    expect((await post({ ...good, publicKey: key.publicKey.toUpperCase() })).status).toBe(400);
    expect((await post({ ...good, publicKey: 'ab' })).status).toBe(400);
    expect((await post({ ...good, signature: 'zz' })).status).toBe(400);
    expect((await post({ ...good, principalId: 'not-an-id' })).status).toBe(400);
    expect((await post({ principalId: acct.principalId })).status).toBe(400);
    expect((await post({ ...good, password: 'wrong-password' })).status).toBe(401);
    expect((await post({ ...good, signature: key.sign('cifer_register:something-else') })).status).toBe(401);
    expect((await post({ ...good, principalId: '00000000-0000-4000-8000-000000000000' })).status).toBe(404);
    const email = newEmail('unverified');
    const reg = await postJson<{ principalId: string }>(`${A}/web2/auth/register`, { email, password: 'unverified-pw' });
    expect((await post({ ...good, principalId: reg.body.principalId, password: 'unverified-pw' })).status).toBe(403);
    expect((await post(good)).status).toBe(201);
    expect((await post(good)).status).toBe(201); // the same key again is idempotent
    const other = newEd25519();
    const conflict = await post({ ...good, publicKey: other.publicKey, signature: other.sign(`cifer_register:${other.publicKey}`) });
    expect(conflict.status).toBe(409);
    expect((await getJson(`${A}/web2/auth/node-registration-status?principalId=00000000-0000-4000-8000-000000000000`)).status).toBe(404);
    expect((await getJson(`${A}/web2/auth/node-registration-status`)).status).toBe(400);
    expect((await postJson(`${A}/web2/auth/retry-node-registration`, { principalId: '00000000-0000-4000-8000-000000000000' })).status).toBe(404);
    expect((await postJson(`${A}/web2/auth/retry-node-registration`, {})).status).toBe(400);
  });
});
