/**
 * Permits V2, the request half (docs/permits.md, "POST /web2/permit — request", "Authorization", "Idempotency and
 * expiry", "Where a permit lives"): every create rule against a real 5-member cluster with SMTP-caught
 * mail. Confirmation is tested in permits-confirm.test.ts and permits-delivery.test.ts.
 */
import { createHash, randomUUID } from 'node:crypto';
import { digestOf, ownerBody as ownerBodyFor, rotateBody as rotateBodyFor, type OwnerAction, type OwnerBodyOverrides } from '../utils/permits.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalCluster, waitFor, type LocalCluster } from 'quorumkeep/testing';
import { getJson, postJson } from '../utils/http.ts';
import { expectApiError, newEd25519 } from '../utils/web2.ts';
import { newSessionWallet, openSession, principalWithSession, signData, type Principal } from '../utils/session.ts';

/** Added to every node's wall clock (only moves forward): permits expire without waiting. */
let offsetMs = 0;
const now = () => Date.now() + offsetMs;

let cluster: LocalCluster;
let A: string;
let B: string;
let alice: Principal;
let bob: Principal;
let secretId: number;
beforeAll(async () => {
  cluster = await startLocalCluster({ size: 5, threshold: 3, coordinators: 2, clock: now });
  [A, B] = cluster.coordinators as [string, string];
  [alice, bob] = await Promise.all([principalWithSession(cluster, A, 'alice'), principalWithSession(cluster, B, 'bob')]);
  const created = await postJson<{ secretId: number }>(`${A}/web2/secret`, alice.signed(0, undefined, now()));
  expect(created.status).toBe(201);
  secretId = created.body.secretId;
}, 60_000);
afterAll(() => cluster?.stop());

const permitMails = (email: string) => cluster.mailbox.to(email).filter((m) => /confirm the/i.test(m.subject));

const rotateBody = (p: Principal, overrides: Record<string, unknown> = {}) => rotateBodyFor(p, newEd25519(), overrides);

/** A transfer/delegate body for the test's secret (or `secret`), signed now by the principal's session. */
const ownerBody = (p: Principal, action: OwnerAction, value: string | null, overrides: OwnerBodyOverrides & { secret?: number } = {}) =>
  ownerBodyFor(p, overrides.secret ?? secretId, action, value, { at: now(), ...overrides });

describe('POST /web2/permit', () => {
  it('rotate: 201, one email with a one-time link, the permit on every member; an exact replay is 200 with the same permit and no second email', async () => {
    const body = rotateBody(alice);
    const res = await postJson<{ permitId: string; expiresAt: string; action: string; clusterId: string; success: boolean }>(`${A}/web2/permit`, body);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body).toMatchObject({ success: true, action: 'rotate', clusterId: cluster.descriptor.clusterId });
    expect(new Date(res.body.expiresAt).getTime()).toBeGreaterThan(now() + 14 * 60_000);

    const mail = await cluster.mailbox.waitFor((m) => m.to.includes(alice.email.toLowerCase()) && m.text.includes(res.body.permitId));
    const link = new URL(/https?:\/\/\S+\/web2\/confirm\?\S+/.exec(mail.text)![0]);
    expect(link.searchParams.get('permitId')).toBe(res.body.permitId);
    const token = link.searchParams.get('token')!;
    expect(Buffer.from(token, 'base64url').length).toBeGreaterThanOrEqual(16);
    expect(mail.html).toContain(res.body.permitId);

    await waitFor(async () => (await Promise.all(cluster.members.map((m) => m.state.get('permit', res.body.permitId)))).every(Boolean), { timeoutMs: 5000 });
    const stored = (await cluster.members[3]!.state.get('permit', res.body.permitId))!.body as Record<string, unknown>;
    expect(stored).toMatchObject({ status: 'pending', action: 'rotate', principalId: alice.principalId, secretId: 0, payload: body.payload });
    expect(JSON.stringify(stored)).not.toContain(token);
    expect(stored.tokenHash).toBe(createHash('sha256').update(token).digest('hex'));

    const mailsBefore = permitMails(alice.email).length;
    const replay = await postJson<{ permitId: string; expiresAt: string }>(`${B}/web2/permit`, body);
    expect(replay.status).toBe(200);
    expect(replay.body).toMatchObject({ permitId: res.body.permitId, expiresAt: res.body.expiresAt });
    const after = await postJson(`${A}/web2/permit`, body);
    expect(after.body.permitId).toBe(res.body.permitId);
    // A fresh permit mailed afterwards arrives; the replays' would have arrived before it.
    const marker = await postJson<{ permitId: string }>(`${A}/web2/permit`, rotateBody(alice));
    await cluster.mailbox.waitFor((m) => m.text.includes(marker.body.permitId));
    expect(permitMails(alice.email).length).toBe(mailsBefore + 1);
  });

  it('50 concurrent identical requests through both coordinators make one permit and one email', async () => {
    const body = ownerBody(alice, 'delegate', bob.principalId);
    const before = permitMails(alice.email).length;
    const results = await Promise.all(Array.from({ length: 50 }, (_, i) => postJson<{ permitId: string }>(`${i % 2 ? A : B}/web2/permit`, body)));
    expect(results.filter((r) => r.status === 201)).toHaveLength(1);
    expect(results.filter((r) => r.status === 200)).toHaveLength(49);
    expect(new Set(results.map((r) => r.body.permitId)).size).toBe(1);
    await cluster.mailbox.waitFor((m) => m.text.includes(results[0]!.body.permitId));
    const marker = await postJson<{ permitId: string }>(`${A}/web2/permit`, rotateBody(alice));
    await cluster.mailbox.waitFor((m) => m.text.includes(marker.body.permitId));
    expect(permitMails(alice.email).length).toBe(before + 2);
  });

  it('the same requestId with another context is 409; after the permit expired, even the identical request is 409', async () => {
    const body = rotateBody(alice);
    expect((await postJson(`${A}/web2/permit`, body)).status).toBe(201);
    expectApiError(await postJson(`${A}/web2/permit`, { ...body, payload: JSON.stringify({ newPublicKey: newEd25519().publicKey }) }), 409, 'CONFLICT');
    expectApiError(await postJson(`${B}/web2/permit`, ownerBody(alice, 'delegate', null, { requestId: body.requestId })), 409, 'CONFLICT');
    offsetMs += 15 * 60_000 + 1000;
    expectApiError(await postJson(`${A}/web2/permit`, body), 409, 'CONFLICT');
    // Sessions are ±10 min fresh: later tests open new ones.
    alice = await principalWithSessionAgain(alice);
    bob = await principalWithSessionAgain(bob);
  });

  it('transfer and delegate: 201 for the owner; every authorization rule', async () => {
    expect((await postJson(`${A}/web2/permit`, ownerBody(alice, 'transfer', bob.principalId))).status).toBe(201);
    expect((await postJson(`${B}/web2/permit`, ownerBody(alice, 'delegate', null))).status).toBe(201);
    expectApiError(await postJson(`${A}/web2/permit`, ownerBody(bob, 'transfer', bob.principalId)), 403, 'FORBIDDEN');
    expectApiError(await postJson(`${A}/web2/permit`, ownerBody(alice, 'transfer', alice.principalId)), 403, 'FORBIDDEN');
    expectApiError(await postJson(`${A}/web2/permit`, ownerBody(alice, 'delegate', alice.principalId)), 403, 'FORBIDDEN');
    expectApiError(await postJson(`${A}/web2/permit`, ownerBody(alice, 'transfer', randomUUID())), 404, 'NOT_FOUND');
    expectApiError(await postJson(`${A}/web2/permit`, ownerBody(alice, 'transfer', bob.principalId, { secret: 999_999 })), 404, 'NOT_FOUND');
    expectApiError(await postJson(`${A}/web2/permit`, rotateBody(alice, { password: 'not the password' })), 403, 'FORBIDDEN');
    const forged = ownerBody(alice, 'transfer', bob.principalId);
    expectApiError(await postJson(`${A}/web2/permit`, { ...forged, signature: ownerBody(bob, 'transfer', bob.principalId).signature }), 403, 'FORBIDDEN');
  });

  it('malformed requests are 400: requestId, payload, 8-part data and the legacy form', async () => {
    const cases: Array<[string, Record<string, unknown>]> = [
      ['uppercase requestId', rotateBody(alice, { requestId: randomUUID().toUpperCase() })],
      ['v1 UUID', rotateBody(alice, { requestId: '6fa459ea-ee8a-11ca-80a1-00a0c91e6bf6' })],
      ['unknown action', rotateBody(alice, { action: 'promote' })],
      ['payload with a space', rotateBody(alice, { payload: `{"newPublicKey": "${newEd25519().publicKey}"}` })],
      ['payload with two keys', rotateBody(alice, { payload: JSON.stringify({ newPublicKey: newEd25519().publicKey, x: 1 }) })],
      ['payload with the wrong key', rotateBody(alice, { payload: JSON.stringify({ newOwnerPrincipalId: bob.principalId }) })],
      ['payload as an object', rotateBody(alice, { payload: { newPublicKey: newEd25519().publicKey } })],
      ['newPublicKey not a key', rotateBody(alice, { payload: JSON.stringify({ newPublicKey: 'zz' }) })],
      ['newPublicKey too long', rotateBody(alice, { payload: JSON.stringify({ newPublicKey: 'a'.repeat(4097) }) })],
      ['digest mismatch', ownerBody(alice, 'delegate', bob.principalId, { digest: digestOf('{"delegatePrincipalId":null}') })],
      ['requestId in data differs', ownerBody(alice, 'delegate', bob.principalId, { dataRequestId: randomUUID() })],
      ['transfer to a malformed principal id', ownerBody(alice, 'transfer', 'not-a-principal')],
    ];
    for (const [name, body] of cases) {
      const res = await postJson(`${A}/web2/permit`, body);
      expect(res.status, `${name}: ${JSON.stringify(res.body)}`).toBe(400);
      expect(res.body.code, name).toMatch(/BAD_REQUEST|VALIDATION_FAILED/);
    }
    // The legacy 4-part form (payload as an object, no requestId in data).
    const legacy = signData(alice.wallet, `-1_${secretId}_${alice.wallet.address}_${now()}`);
    const res = await postJson(`${A}/web2/permit`, { requestId: randomUUID(), action: 'delegate', payload: JSON.stringify({ delegatePrincipalId: null }), ...legacy });
    expectApiError(res, 400, 'BAD_REQUEST');
    // …as a legacy client sends it, with `permits.acceptLegacy` off (the default).
    expectApiError(await postJson(`${A}/web2/permit`, { action: 'delegate', payload: { delegatePrincipalId: null }, ...legacy }), 400, 'BAD_REQUEST');
  });

  it('slot 0 down: 503 and nothing created; back up, the same requestId succeeds', async () => {
    const body = rotateBody(alice);
    await cluster.stopMember(0);
    try {
      expectApiError(await postJson(`${B}/web2/permit`, body), 503, 'SLOT0_UNAVAILABLE');
    } finally {
      await cluster.restartMember(0);
    }
    await waitFor(async () => (await getJson<{ cluster: { slot0Reachable: boolean } }>(`${B}/healthz`).catch(() => undefined))?.body.cluster?.slot0Reachable === true, { timeoutMs: 10_000, description: 'slot 0 back' });
    const res = await postJson(`${B}/web2/permit`, body);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
  });
});

/** A new session wallet for a principal (after time travel), through coordinator A. */
async function principalWithSessionAgain(p: Principal): Promise<Principal> {
  p.wallet = newSessionWallet();
  await openSession(A, p, { timestamp: now() });
  return p;
}
