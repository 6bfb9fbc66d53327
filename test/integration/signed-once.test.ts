/**
 * One signed string, one effect, cluster-wide (docs/security.md, "Single use"): a client that retries
 * a create after a lost answer gets its secret back, not a second one — through either coordinator,
 * and whatever spelling of the signature it replays — and a replayed setDelegate string changes
 * nothing, even after a later change.
 */
import { describe, expect, it } from 'vitest';
import { waitFor } from 'quorumkeep/testing';
import { postJson } from '../utils/http.ts';
import { highSTwin, type Principal } from '../utils/session.ts';
import { secretOnEveryMember } from '../utils/permits.ts';
import { aliceAndBob } from '../utils/scenario.ts';

const scene = aliceAndBob({}, 'B');

const listOf = async (p: Principal) => (await postJson<{ secrets: Array<{ secretId: number }> }>(`${scene.A}/web2/secrets`, p.signed(p.principalId))).body.secrets.map((s) => s.secretId);

describe('a signed string takes effect once', () => {
  it('a create replayed (same coordinator, the other one, the high-s twin) answers the one secret it made', async () => {
    const { cluster, A, B, alice } = scene;
    const signed = alice.signed(0);
    const first = await postJson<{ secretId: number; publicKeyCid: string }>(`${A}/web2/secret`, signed);
    expect(first.status).toBe(201);
    await cluster.waitForConvergence();
    for (const [url, body] of [
      [A, signed],
      [B, signed],
      [B, { data: signed.data, signature: highSTwin(signed.signature) }],
    ] as const) {
      const again = await postJson<{ secretId: number; publicKeyCid: string }>(`${url}/web2/secret`, body);
      expect(again.status).toBe(201);
      expect(again.body).toMatchObject({ secretId: first.body.secretId, publicKeyCid: first.body.publicKeyCid });
    }
    expect(await listOf(alice)).toEqual([first.body.secretId]);
    // A new string is a new secret.
    const second = await postJson<{ secretId: number }>(`${B}/web2/secret`, alice.signed(0, undefined, Date.now() + 1));
    expect(second.body.secretId).not.toBe(first.body.secretId);
  });

  it('a setDelegate string replayed after a later change changes nothing', async () => {
    const { cluster, A, B, alice, bob } = scene;
    const { body } = await postJson<{ secretId: number }>(`${A}/web2/secret`, alice.signed(0));
    const id = body.secretId;
    const setBob = alice.signed(id, bob.principalId);
    expect((await postJson(`${A}/web2/setDelegate`, setBob)).status).toBe(200);
    expect((await postJson(`${A}/web2/setDelegate`, alice.signed(id, '', Date.now() + 1))).status).toBe(200);
    await secretOnEveryMember(cluster, id, (s) => s.delegatePrincipalId === null);
    // The first string again, on either coordinator: the original answer, and the delegate stays cleared.
    for (const url of [A, B]) {
      const replay = await postJson<{ secretId: number }>(`${url}/web2/setDelegate`, setBob);
      expect(replay.status).toBe(200);
      expect(replay.body.secretId).toBe(id);
    }
    await cluster.waitForConvergence();
    for (const m of cluster.members) expect(((await m.state.get('secret', String(id).padStart(12, '0')))?.body as { delegatePrincipalId: string | null }).delegatePrincipalId).toBeNull();
  });
});

describe('a create whose first answer was a 503', () => {
  it('the same string through both coordinators at once makes one secret; a 503 is NOT_READY and its retry returns that secret', async () => {
    const { A, B, alice } = scene;
    const signed = alice.signed(0, undefined, Date.now() + 7);
    const answers = await Promise.all([A, B, A, B].map((url) => postJson<{ secretId?: number; code?: string }>(`${url}/web2/secret`, signed)));
    const ok = answers.filter((a) => a.status === 201);
    expect(ok.length).toBeGreaterThan(0);
    const id = ok[0]!.body.secretId!;
    for (const a of answers) {
      if (a.status === 201) expect(a.body.secretId).toBe(id);
      else {
        expect(a.status, JSON.stringify(a.body)).toBe(503);
        expect(a.body.code).toBe('NOT_READY');
      }
    }
    // Retrying until it is not 503 gives the one secret.
    for (const url of [A, B]) {
      let res = await postJson<{ secretId: number }>(`${url}/web2/secret`, signed);
      await waitFor(async () => res.status !== 503 || (res = await postJson<{ secretId: number }>(`${url}/web2/secret`, signed)).status !== 503, { timeoutMs: 10_000, intervalMs: 100, description: 'the retried create to be answered' });
      expect(res.status).toBe(201);
      expect(res.body.secretId).toBe(id);
    }
    expect((await listOf(alice)).filter((s) => s === id)).toHaveLength(1);
  });
});
