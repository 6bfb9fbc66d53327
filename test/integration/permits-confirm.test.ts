/**
 * Permits V2, consumption (docs/permits.md, "GET /web2/confirm — consumption"): each action end to end on a 5-member
 * cluster with two coordinators and SMTP-caught mail — request on A, confirm with the emailed link on
 * B, the effect visible on every member — and every confirmation rule.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalCluster, type LocalCluster } from 'quorumkeep/testing';
import { getJson, postJson, type JsonResponse } from '../utils/http.ts';
import { expectApiError, newEd25519 } from '../utils/web2.ts';
import { newSessionWallet, openSession, principalWithSession, sessionRequest, type Principal } from '../utils/session.ts';
import { appliedOnMembers, onEveryMember, ownerBody, requestPermit, rotateBody, secretOnEveryMember, type ConfirmLink } from '../utils/permits.ts';
import { secretKey } from '../../src/core/secrets/records.ts';

/** Added to every node's wall clock (only moves forward): permits expire without waiting. */
let offsetMs = 0;
const now = () => Date.now() + offsetMs;

let cluster: LocalCluster;
let A: string;
let B: string;
let alice: Principal;
let bob: Principal;
let carol: Principal;
beforeAll(async () => {
  // Usage limits off: their periodic counter flushes would add records to the logs this file counts.
  cluster = await startLocalCluster({ size: 5, threshold: 3, coordinators: 2, clock: now, nodeConfig: { usage: { enabled: false } } });
  [A, B] = cluster.coordinators as [string, string];
  [alice, bob, carol] = await Promise.all([principalWithSession(cluster, A, 'alice'), principalWithSession(cluster, B, 'bob'), principalWithSession(cluster, A, 'carol')]);
}, 60_000);
afterAll(() => cluster?.stop());

type Confirmed = {
  success: boolean;
  permitId: string;
  status: string;
  action: string;
  result: Record<string, unknown>;
  successCount?: number;
  threshold?: number;
};

const confirm = (url: string, link: ConfirmLink) => getJson<Confirmed>(`${url}${link.pathAndQuery}`);
const signedAt = (p: Principal, subject: string | number, extra?: string) => p.signed(subject, extra, now());

async function createSecret(url: string, p: Principal): Promise<number> {
  const res = await postJson<{ secretId: number }>(`${url}/web2/secret`, signedAt(p, 0));
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.secretId;
}

async function encryptFor(url: string, p: Principal, secretId: number, text: string) {
  const res = await postJson<{ cifer: string; encryptedMessage: string }>(`${url}/encrypt-payload`, signedAt(p, secretId, text));
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
}

const decrypt = (url: string, p: Principal, secretId: number, sealed: { cifer: string; encryptedMessage: string }) =>
  postJson<{ decryptedMessage: string }>(`${url}/decrypt-payload`, { cifer: sealed.cifer, ...signedAt(p, secretId, sealed.encryptedMessage) });

const listed = async (url: string, p: Principal) =>
  (await postJson<{ secrets: Array<{ secretId: number }> }>(`${url}/web2/secrets`, signedAt(p, p.principalId))).body.secrets.map((s) => s.secretId);

function expectConsumed(res: JsonResponse<Confirmed>, action: string, result: Record<string, unknown>): void {
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  expect(res.body).toEqual({ success: true, permitId: res.body.permitId, status: 'consumed', action, result });
}

describe('GET /web2/confirm', () => {
  it('rotate: requested on A, confirmed on B; the new key on every member, old sessions end, only the new key opens sessions', async () => {
    const before = await appliedOnMembers(cluster);
    const oldKey = alice.key;
    const newKey = newEd25519();
    const link = await requestPermit(cluster, A, rotateBody(alice, newKey));
    expect((await postJson(`${A}/web2/session/status`, signedAt(alice, 0))).body).toMatchObject({ active: true });

    const res = await confirm(B, link);
    expectConsumed(res, 'rotate', { principalId: alice.principalId, newPublicKey: newKey.publicKey });
    await onEveryMember(cluster, 'principal', alice.principalId, (b) => b.ed25519PublicKey === newKey.publicKey && b.keyPermitId === link.permitId);
    await onEveryMember(cluster, 'permit', link.permitId, (b) => b.status === 'consumed');
    expect(await appliedOnMembers(cluster)).toEqual(before.map((n) => n + 1));

    // The old session is over on every coordinator; the old key opens none; the new one does.
    for (const url of [A, B]) expectApiError(await postJson(`${url}/web2/session/status`, signedAt(alice, 0)), 401, 'SESSION_INACTIVE');
    const stale = await postJson(`${A}/web2/session`, sessionRequest(alice.principalId, oldKey, newSessionWallet(), { timestamp: now() }));
    expect(stale.status, JSON.stringify(stale.body)).toBeGreaterThanOrEqual(400);
    expect(stale.status).toBeLessThan(500);
    // `signed` reads the principal's current wallet: switch it in place.
    Object.assign(alice, { key: newKey, wallet: newSessionWallet() });
    await openSession(B, alice, { timestamp: now() });
    expect((await postJson(`${A}/web2/session/status`, signedAt(alice, 0))).body).toMatchObject({ active: true, principalId: alice.principalId });

    // Confirming again answers the same result and applies nothing.
    expectConsumed(await confirm(A, link), 'rotate', res.body.result);
    expect(await appliedOnMembers(cluster)).toEqual(before.map((n) => n + 1));
  });

  it('transfer: the new owner decrypts and lists the secret, the old owner gets 403; a delegate equal to the new owner is cleared', async () => {
    const secretId = await createSecret(A, alice);
    const sealed = await encryptFor(A, alice, secretId, 'moving house');
    expect((await postJson(`${A}/web2/setDelegate`, signedAt(alice, secretId, bob.principalId))).status).toBe(200);

    const link = await requestPermit(cluster, A, ownerBody(alice, secretId, 'transfer', bob.principalId, { at: now() }));
    const overtaken = await requestPermit(cluster, A, ownerBody(alice, secretId, 'delegate', carol.principalId, { at: now() }));
    const res = await confirm(B, link);
    expectConsumed(res, 'transfer', { secretId, newOwnerPrincipalId: bob.principalId, delegatePrincipalId: null });
    await secretOnEveryMember(cluster, secretId, (b) => b.ownerPrincipalId === bob.principalId && b.delegatePrincipalId === null);

    const dec = await decrypt(B, bob, secretId, sealed);
    expect(dec.status, JSON.stringify(dec.body)).toBe(200);
    expect(dec.body.decryptedMessage).toBe('moving house');
    expect(await listed(A, bob)).toContain(secretId);
    expectApiError(await decrypt(A, alice, secretId, sealed), 403, 'FORBIDDEN');
    expect(await listed(B, alice)).not.toContain(secretId);
    // The old owner's permits for it are refused now, and one requested before the transfer no longer applies.
    expectApiError(await postJson(`${A}/web2/permit`, ownerBody(alice, secretId, 'delegate', carol.principalId, { at: now() })), 403, 'FORBIDDEN');
    expectApiError(await confirm(A, overtaken), 409, 'CONFLICT');
    expect(((await cluster.members[3]!.state.get('secret', secretKey(secretId)))!.body as { delegatePrincipalId: string | null }).delegatePrincipalId).toBeNull();
  });

  it('delegate: set, then removed with null; the delegate decrypts only in between', async () => {
    const secretId = await createSecret(B, alice);
    const sealed = await encryptFor(B, alice, secretId, 'for carol, for a while');
    expectApiError(await decrypt(A, carol, secretId, sealed), 403, 'FORBIDDEN');

    const set = await requestPermit(cluster, A, ownerBody(alice, secretId, 'delegate', carol.principalId, { at: now() }));
    expectConsumed(await confirm(B, set), 'delegate', { secretId, delegatePrincipalId: carol.principalId });
    await secretOnEveryMember(cluster, secretId, (b) => b.delegatePrincipalId === carol.principalId);
    expect((await decrypt(A, carol, secretId, sealed)).body.decryptedMessage).toBe('for carol, for a while');

    const clear = await requestPermit(cluster, B, ownerBody(alice, secretId, 'delegate', null, { at: now() }));
    expectConsumed(await confirm(A, clear), 'delegate', { secretId, delegatePrincipalId: null });
    await secretOnEveryMember(cluster, secretId, (b) => b.delegatePrincipalId === null);
    expectApiError(await decrypt(B, carol, secretId, sealed), 403, 'FORBIDDEN');
    // The first permit, confirmed again, re-applies nothing: the delegate stays removed.
    expectConsumed(await confirm(B, set), 'delegate', { secretId, delegatePrincipalId: carol.principalId });
    // Whatever that confirmation wrote has reached every member once they converge.
    await cluster.waitForConvergence();
    await secretOnEveryMember(cluster, secretId, (b) => b.delegatePrincipalId === null);
  });

  it('20 concurrent clicks of one link, on both coordinators, apply it exactly once on every member', async () => {
    const secretId = await createSecret(A, bob);
    const before = await appliedOnMembers(cluster);
    const link = await requestPermit(cluster, B, ownerBody(bob, secretId, 'delegate', carol.principalId, { at: now() }));
    await onEveryMember(cluster, 'permit', link.permitId, (b) => b.status === 'pending');
    const logged = await Promise.all(cluster.members.map((m) => m.countRecords()));
    // Each answer is true when given (issue 11: the second coordinator used to say "consumed" from its
    // replica during the first one's quorum wait): at the moment of each 200, ≥ threshold hold it.
    const holders = async () =>
      (await Promise.all(cluster.members.map(async (m) => ((await m.state.get('permit', link.permitId))?.body as { status?: string } | undefined)?.status === 'consumed'))).filter(Boolean).length;
    const heldAtAnswer: number[] = [];
    const results = await Promise.all(
      Array.from({ length: 20 }, async (_, i) => {
        const r = await confirm(i % 2 ? A : B, link);
        if (r.status === 200) heldAtAnswer.push(await holders());
        return r;
      }),
    );
    for (const r of results) expectConsumed(r, 'delegate', { secretId, delegatePrincipalId: carol.principalId });
    expect(Math.min(...heldAtAnswer)).toBeGreaterThanOrEqual(3);
    await onEveryMember(cluster, 'permit', link.permitId, (b) => b.status === 'consumed');
    // Every record any of the 20 clicks wrote has reached every member once they converge.
    await cluster.waitForConvergence();
    expect(await appliedOnMembers(cluster)).toEqual(before.map((n) => n + 1));
    // One consumption was written, not one per coordinator: two records (the permit and the secret) in every log.
    expect(await Promise.all(cluster.members.map((m) => m.countRecords()))).toEqual(logged.map((n) => n + 2));
  });

  it('a click on a coordinator whose replica has not yet caught the consumption up answers consumed, not pending', async () => {
    const secretId = await createSecret(A, carol);
    const link = await requestPermit(cluster, A, ownerBody(carol, secretId, 'delegate', alice.principalId, { at: now() }));
    await onEveryMember(cluster, 'permit', link.permitId, (b) => b.status === 'pending');
    // B (slot 1) hears nothing while A consumes the permit: slot 0 and members 2-4 hold it consumed.
    await cluster.silence(1, [0, 2, 3, 4]);
    try {
      expectConsumed(await confirm(A, link), 'delegate', { secretId, delegatePrincipalId: alice.principalId });
    } finally {
      await cluster.heal();
    }
    // Slot 0 tells B the permit is consumed before B's replica has the record: B's answer is the
    // consumption, once its replica holds it, not "pending" with no member counted.
    const res = await confirm(B, link);
    expectConsumed(res, 'delegate', { secretId, delegatePrincipalId: alice.principalId });
  });

  it('unknown permit 404, wrong token 403, malformed permitId 400, missing parameters 400', async () => {
    const secretId = await createSecret(A, carol);
    const link = await requestPermit(cluster, A, ownerBody(carol, secretId, 'delegate', bob.principalId, { at: now() }));
    expectApiError(await getJson(`${B}/web2/confirm?permitId=${'0'.repeat(8)}-0000-4000-8000-${'0'.repeat(12)}&token=${link.token}`), 404, 'NOT_FOUND');
    const wrong = link.token.slice(0, -2) + (link.token.endsWith('AA') ? 'BB' : 'AA');
    expectApiError(await getJson(`${B}/web2/confirm?permitId=${link.permitId}&token=${wrong}`), 403, 'FORBIDDEN');
    expectApiError(await getJson(`${B}/web2/confirm?permitId=${link.permitId}&token=`), 403, 'FORBIDDEN');
    expect((await getJson(`${B}/web2/confirm?permitId=${link.permitId.toUpperCase()}&token=${link.token}`)).status).toBe(400);
    expect((await getJson(`${B}/web2/confirm?permitId=${link.permitId}`)).status).toBe(400);
    expect((await getJson(`${B}/web2/confirm?token=${link.token}`)).status).toBe(400);
    // None of those consumed it.
    expect(((await cluster.members[2]!.state.get('permit', link.permitId))!.body as { status: string }).status).toBe('pending');
    expectConsumed(await confirm(A, link), 'delegate', { secretId, delegatePrincipalId: bob.principalId });
  });

  it('a browser gets a readable page, not cached, with no referrer', async () => {
    const secretId = await createSecret(A, carol);
    const link = await requestPermit(cluster, A, ownerBody(carol, secretId, 'delegate', null, { at: now() }));
    const res = await fetch(`${B}${link.pathAndQuery}`, { headers: { Accept: 'text/html,application/xhtml+xml,*/*;q=0.8' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.headers.get('referrer-policy')).toBe('no-referrer');
    const html = await res.text();
    expect(html).toContain(link.permitId);
    expect(html).not.toContain(link.token);
    const bad = await fetch(`${B}/web2/confirm?permitId=${link.permitId}&token=nope`, { headers: { Accept: 'text/html' } });
    expect(bad.status).toBe(403);
    expect(bad.headers.get('content-type')).toMatch(/^text\/html/);
  });

  it('after expiry a confirmation is 409 and applies nothing; a consumed permit still answers its result', async () => {
    const secretId = await createSecret(B, carol);
    const late = await requestPermit(cluster, A, ownerBody(carol, secretId, 'delegate', bob.principalId, { at: now() }));
    const early = await requestPermit(cluster, A, ownerBody(carol, secretId, 'delegate', alice.principalId, { at: now() }));
    expectConsumed(await confirm(A, early), 'delegate', { secretId, delegatePrincipalId: alice.principalId });
    // The answer means a quorum holds it; the count is taken once every member does.
    await onEveryMember(cluster, 'permit', early.permitId, (b) => b.status === 'consumed');
    const before = await appliedOnMembers(cluster);
    offsetMs += 15 * 60_000 + 1000;
    expectApiError(await confirm(B, late), 409, 'CONFLICT');
    expectConsumed(await confirm(B, early), 'delegate', { secretId, delegatePrincipalId: alice.principalId });
    expect(await appliedOnMembers(cluster)).toEqual(before);
    expect(((await cluster.members[4]!.state.get('secret', secretKey(secretId)))!.body as { delegatePrincipalId: string }).delegatePrincipalId).toBe(alice.principalId);
  });
});
