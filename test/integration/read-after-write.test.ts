/**
 * Reads after writes made through the other coordinator (issue 11: "Permit not found" and "Secret …
 * not found" from one coordinator milliseconds after the other answered 201 and mailed the link).
 * Coordinator B is cut off from coordinator A only, so A's writes are acknowledged by the other
 * members and not by B: B must catch up before it answers, and answer 404 only for what does not
 * exist. With too few members reachable to tell, it answers 503 with Retry-After, not 404.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { getJson, postJson } from '../utils/http.ts';
import { ownerBody, requestPermit } from '../utils/permits.ts';
import { aliceAndBob } from '../utils/scenario.ts';

// Catch-up on a timer only every minute: what B knows, it knows because it asked.
const scene = aliceAndBob({ nodeConfig: { replication: { syncIntervalMs: 60_000 } } });
beforeAll(async () => {
  await scene.cluster.waitForConvergence();
  await scene.cluster.partition([0], [1]);
}, 30_000);

describe('B answers for what A just wrote', () => {
  it('a secret A created is found on B at once (public key, encrypt), and an id never allocated is 404', async () => {
    const { cluster, A, B, alice } = scene;
    const created = await postJson<{ secretId: number; publicKeyCid: string }>(`${A}/web2/secret`, alice.signed(0));
    expect(created.status).toBe(201);
    const id = created.body.secretId;
    expect(await cluster.members[1]!.state.get('secret', String(id).padStart(12, '0'))).toBeUndefined();
    const key = await getJson<{ publicKey: string }>(`${B}/secret-public-key/-1/${id}`);
    expect(key.status, JSON.stringify(key.body)).toBe(200);
    expect(key.body.publicKey).toBe(created.body.publicKeyCid);
    const unknown = await getJson(`${B}/secret-public-key/-1/${id + 1000}`);
    expect(unknown.status).toBe(404);
  });

  it('a permit A created is found from its link on B (its consumption waits for slot 0)', async () => {
    const { cluster, A, B, alice, bob } = scene;
    const created = await postJson<{ secretId: number }>(`${A}/web2/secret`, alice.signed(0));
    const link = await requestPermit(cluster, A, ownerBody(alice, created.body.secretId, 'delegate', bob.principalId));
    // B finds the permit A created; consuming it is slot 0's write (A is slot 0, cut off from B):
    // a 503 whose retry is safe, never a 404.
    const res = await getJson<{ status: string; code: string }>(`${B}${link.pathAndQuery}`);
    expect(res.status, JSON.stringify(res.body)).toBe(503);
    expect(res.body.code).toBe('SLOT0_UNAVAILABLE');
    const unknown = await getJson(`${B}/web2/confirm?permitId=${randomUUID()}&token=${'x'.repeat(43)}`);
    expect(unknown.status).toBe(404);
  });

  it('with too few members reachable to tell, a miss is 503 with Retry-After, not 404', async () => {
    const { cluster, B } = scene;
    await cluster.partition([1], [2, 3, 4]);
    const res = await fetch(`${B}/secret-public-key/-1/987654`);
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('1');
    expect(((await res.json()) as { code: string }).code).toBe('NOT_READY');
    await cluster.heal();
  });
});
