/**
 * Permits V2 under member failures (docs/permits.md, "GET /web2/confirm — consumption"): with 2 of 5 members down a
 * confirmation is consumed (3 acks ≥ threshold) and the 2 apply it when they return; with 3 down it
 * is pending (202) and delivered in the background until every member has it. Each member applies a
 * permit exactly once, counted by its `permits applied` counter.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalCluster, waitFor, type LocalCluster } from 'quorumkeep/testing';
import { getJson, postJson } from '../utils/http.ts';
import { principalWithSession, type Principal } from '../utils/session.ts';
import { secretKey } from '../../src/core/secrets/records.ts';
import { appliedPermits, ownerBody, requestPermit, type ConfirmLink } from '../utils/permits.ts';

let cluster: LocalCluster;
let A: string;
let B: string;
let alice: Principal;
let bob: Principal;
beforeAll(async () => {
  cluster = await startLocalCluster({ size: 5, threshold: 3, coordinators: 2, nodeConfig: { permits: { redeliverIntervalMs: 200 } } });
  [A, B] = cluster.coordinators as [string, string];
  [alice, bob] = await Promise.all([principalWithSession(cluster, A, 'alice'), principalWithSession(cluster, B, 'bob')]);
}, 60_000);
afterAll(() => cluster?.stop());

const confirm = (url: string, link: ConfirmLink) =>
  getJson<{ success: boolean; status: string; successCount?: number; threshold?: number; result?: Record<string, unknown> }>(`${url}${link.pathAndQuery}`);

async function delegatePermit(secretId: number, delegate: string): Promise<ConfirmLink> {
  return requestPermit(cluster, A, ownerBody(alice, secretId, 'delegate', delegate));
}

async function createSecret(): Promise<number> {
  const res = await postJson<{ secretId: number }>(`${A}/web2/secret`, alice.signed(0));
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.secretId;
}

/** The member at `slot` holds the consumed permit and its effect; it applied the permit once. */
async function expectAppliedOnce(slot: number, link: ConfirmLink, secretId: number, delegate: string): Promise<void> {
  const m = cluster.members[slot]!;
  await waitFor(async () => ((await m.state.get('permit', link.permitId))?.body as { status?: string } | undefined)?.status === 'consumed', {
    timeoutMs: 15_000,
    description: `permit consumed on slot ${slot}`,
  });
  const secret = (await m.state.get('secret', secretKey(secretId)))!.body as { delegatePrincipalId: string | null };
  expect(secret.delegatePrincipalId).toBe(delegate);
  expect(await appliedPermits(m), `slot ${slot}`).toBe(1);
}

describe('confirmation while members are down', () => {
  it('2 of 5 down: 200 consumed; the 2 apply it after returning, once each', async () => {
    const secretId = await createSecret();
    const link = await delegatePermit(secretId, bob.principalId);
    await Promise.all([cluster.stopMember(3), cluster.stopMember(4)]);
    const res = await confirm(B, link);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({ success: true, status: 'consumed', result: { secretId, delegatePrincipalId: bob.principalId } });

    await Promise.all([cluster.restartMember(3), cluster.restartMember(4)]);
    for (const slot of [3, 4]) await expectAppliedOnce(slot, link, secretId, bob.principalId);
    // Redelivery and catch-up keep running; nothing is applied twice once every member has converged.
    await cluster.waitForConvergence();
    for (const slot of [3, 4]) expect(await appliedPermits(cluster.members[slot]!)).toBe(1);
  });

  it('3 of 5 down: 202 pending with the ack count; consumed everywhere once they return, applied once per member', async () => {
    const secretId = await createSecret();
    const link = await delegatePermit(secretId, bob.principalId);
    const before = await Promise.all(cluster.members.slice(0, 2).map((m) => appliedPermits(m)));
    await Promise.all([2, 3, 4].map((s) => cluster.stopMember(s)));

    const res = await confirm(A, link);
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    expect(res.body).toEqual({ success: false, permitId: link.permitId, status: 'pending', successCount: 2, threshold: 3 });
    expect((await confirm(A, link)).status).toBe(202);

    await Promise.all([2, 3, 4].map((s) => cluster.restartMember(s)));
    for (const slot of [2, 3, 4]) await expectAppliedOnce(slot, link, secretId, bob.principalId);
    // "Once they return" from A's side too: A counts acks only from members it sees reachable, and on
    // a loaded machine its reconnects can trail the members' own catch-up.
    await waitFor(() => [2, 3, 4].every((slot) => cluster.members[0]!.membership.isReachable(slot)), { description: 'A sees members 2-4 again' });
    const again = await confirm(A, link);
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    expect(again.body).toMatchObject({ status: 'consumed', result: { secretId, delegatePrincipalId: bob.principalId } });
    expect(await Promise.all(cluster.members.slice(0, 2).map((m) => appliedPermits(m)))).toEqual(before.map((n) => n + 1));
  });
});

describe('an answer is true when given (issue 11: 200 only at ≥ threshold members)', () => {
  it('a coordinator whose replica holds a consumption that fewer than threshold members hold answers 202, then 200 once it is durable', async () => {
    const secretId = await createSecret();
    const link = await delegatePermit(secretId, bob.principalId);
    const appliedBefore = await Promise.all(cluster.members.map((m) => appliedPermits(m)));
    // Coordinators 0 and 1 are cut off from members 2–4: A's consumption reaches B and itself only.
    await cluster.partition([0, 1], [2, 3, 4]);
    const first = await confirm(A, link);
    expect(first.status, JSON.stringify(first.body)).toBe(202);
    // B holds the consumption in its replica but did not write it: it must not say "consumed".
    await waitFor(async () => ((await cluster.members[1]!.state.get('permit', link.permitId))?.body as { status?: string } | undefined)?.status === 'consumed', {
      timeoutMs: 10_000,
      description: 'the consumption on B',
    });
    const onB = await confirm(B, link);
    expect(onB.status, JSON.stringify(onB.body)).toBe(202);
    expect(onB.body).toMatchObject({ status: 'pending', successCount: 2, threshold: 3 });

    await cluster.heal();
    await waitFor(async () => (await confirm(B, link)).status === 200, { timeoutMs: 15_000, description: 'B to answer 200 once the consumption is durable' });
    const done = await confirm(B, link);
    expect(done.body).toMatchObject({ status: 'consumed', result: { secretId, delegatePrincipalId: bob.principalId } });
    // Every member holds it and applied it once, whichever coordinator delivered it.
    await waitFor(async () => (await Promise.all(cluster.members.map((m) => appliedPermits(m)))).every((n, i) => n === appliedBefore[i]! + 1), {
      timeoutMs: 15_000,
      description: 'every member to apply the permit once',
    });
  });
});
