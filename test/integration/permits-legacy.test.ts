/**
 * `permits.acceptLegacy` (docs/permits.md, "POST /web2/permit — request": accepted for migration only): with the switch on, the legacy
 * transfer/delegate request — 4-part data, payload as an object, no requestId — creates a permit that
 * confirms like any other; an exact retry is a replay. Everything else keeps the V2 rules.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalCluster, type LocalCluster } from 'quorumkeep/testing';
import { getJson, postJson } from '../utils/http.ts';
import { expectApiError } from '../utils/web2.ts';
import { principalWithSession, signData, type Principal } from '../utils/session.ts';
import { confirmLinkOf, ownerBody, rotateBody, secretOnEveryMember } from '../utils/permits.ts';

let cluster: LocalCluster;
let A: string;
let alice: Principal;
let bob: Principal;
let secretId: number;
beforeAll(async () => {
  cluster = await startLocalCluster({ size: 3, threshold: 2, coordinators: 1, nodeConfig: { permits: { acceptLegacy: true } } });
  A = cluster.coordinators[0]!;
  [alice, bob] = await Promise.all([principalWithSession(cluster, A, 'alice'), principalWithSession(cluster, A, 'bob')]);
  const created = await postJson<{ secretId: number }>(`${A}/web2/secret`, alice.signed(0));
  expect(created.status).toBe(201);
  secretId = created.body.secretId;
}, 60_000);
afterAll(() => cluster?.stop());

const legacyBody = (p: Principal, payload: Record<string, unknown>) => ({ action: 'delegate', payload, ...signData(p.wallet, `-1_${secretId}_${p.wallet.address}_${Date.now()}`) });

describe('permits.acceptLegacy on', () => {
  it('a legacy delegate request creates a permit; the exact retry is a replay; the link confirms it', async () => {
    const body = legacyBody(alice, { delegatePrincipalId: bob.principalId });
    const res = await postJson<{ permitId: string; expiresAt: string }>(`${A}/web2/permit`, body);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const replay = await postJson<{ permitId: string; expiresAt: string }>(`${A}/web2/permit`, body);
    expect(replay.status).toBe(200);
    expect(replay.body).toMatchObject({ permitId: res.body.permitId, expiresAt: res.body.expiresAt });
    const stored = (await cluster.members[1]!.state.get('permit', res.body.permitId))?.body as { payload: string; requestId: string } | undefined;
    expect(stored?.payload).toBe(`{"delegatePrincipalId":"${bob.principalId}"}`);

    const link = await confirmLinkOf(cluster, res.body.permitId);
    const confirmed = await getJson(`${A}${link.pathAndQuery}`);
    expect(confirmed.status, JSON.stringify(confirmed.body)).toBe(200);
    await secretOnEveryMember(cluster, secretId, (b) => b.delegatePrincipalId === bob.principalId);
  });

  it('the legacy form keeps the authorization rules; V2 requests are unchanged; rotate has no legacy form', async () => {
    expectApiError(await postJson(`${A}/web2/permit`, legacyBody(bob, { delegatePrincipalId: null })), 403, 'FORBIDDEN');
    expectApiError(await postJson(`${A}/web2/permit`, legacyBody(alice, { delegatePrincipalId: null, extra: 1 })), 400, 'BAD_REQUEST');
    expect((await postJson(`${A}/web2/permit`, ownerBody(alice, secretId, 'delegate', null))).status).toBe(201);
    const { requestId: _omitted, ...rotate } = rotateBody(alice);
    expectApiError(await postJson(`${A}/web2/permit`, rotate), 400, 'BAD_REQUEST');
    // A requestId with 4-part data is a malformed V2 request, not the legacy form.
    expectApiError(await postJson(`${A}/web2/permit`, { ...legacyBody(alice, { delegatePrincipalId: null }), requestId: randomUUID() }), 400, 'BAD_REQUEST');
  });
});
