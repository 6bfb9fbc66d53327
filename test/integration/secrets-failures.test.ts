/**
 * The failure model of sessions, secrets and payloads (docs/architecture.md, Failure model): with 2 of 5
 * members down everything works and a new secret is `propagating` until the background delivery
 * reaches the returning members; with 3 down, session create, secret create and decrypt answer 503.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalCluster, waitFor, type LocalCluster } from 'quorumkeep/testing';
import { getJson, postJson } from '../utils/http.ts';
import { expectApiError } from '../utils/web2.ts';
import { newSessionWallet, principalWithSession, sessionRequest, type Principal } from '../utils/session.ts';

let cluster: LocalCluster;
let A: string;
let B: string;
let alice: Principal;
let admin: Record<string, string>;
beforeAll(async () => {
  cluster = await startLocalCluster({ size: 5, threshold: 3, coordinators: 2, nodeConfig: { secrets: { retryIntervalMs: 200 } } });
  [A, B] = cluster.coordinators as [string, string];
  admin = { authorization: `Bearer ${cluster.adminToken}` };
  alice = await principalWithSession(cluster, A, 'alice');
}, 60_000);
afterAll(() => cluster?.stop());

const encryptDecrypt = async (url: string, secretId: number, text: string) => {
  const enc = await postJson<{ cifer: string; encryptedMessage: string }>(`${url}/encrypt-payload`, alice.signed(secretId, text));
  expect(enc.status, JSON.stringify(enc.body)).toBe(200);
  return postJson<{ decryptedMessage: string }>(`${url}/decrypt-payload`, { cifer: enc.body.cifer, ...alice.signed(secretId, enc.body.encryptedMessage) });
};

describe('2 of 5 members down', () => {
  it('session, secret (propagating), encrypt and decrypt work; the returning members get their shares', async () => {
    await Promise.all([cluster.stopMember(3), cluster.stopMember(4)]);
    const wallet = newSessionWallet();
    alice.wallet = wallet;
    const session = await postJson(`${A}/web2/session`, sessionRequest(alice.principalId, alice.key, wallet));
    expect(session.status, JSON.stringify(session.body)).toBe(201);
    expect((session.body.quorumProof as unknown[]).length).toBeGreaterThanOrEqual(3);

    const created = await postJson<{ secretId: number; status: string }>(`${B}/web2/secret`, alice.signed(0));
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body.status).toBe('propagating');
    const { secretId } = created.body;

    const failures = await getJson<{ failures: Array<{ secretId: number; failedNodeAddresses: string[]; stage: string }> }>(`${B}/web2/secret-failures`, admin);
    expect(failures.status).toBe(200);
    const mine = failures.body.failures.find((f) => f.secretId === secretId);
    expect(mine?.stage).toBe('share-delivery');
    expect(new Set(mine?.failedNodeAddresses)).toEqual(new Set([cluster.descriptor.nodes[3]!.nodeAddress, cluster.descriptor.nodes[4]!.nodeAddress]));

    const dec = await encryptDecrypt(A, secretId, 'works with two members down');
    expect(dec.status, JSON.stringify(dec.body)).toBe(200);
    expect(dec.body.decryptedMessage).toBe('works with two members down');

    // The members return; the background delivery completes the secret.
    await Promise.all([cluster.restartMember(3), cluster.restartMember(4)]);
    await waitFor(
      async () => {
        const f = await getJson<{ failures: Array<{ secretId: number }> }>(`${B}/web2/secret-failures`, admin);
        return !f.body.failures.some((x) => x.secretId === secretId);
      },
      { timeoutMs: 15_000, description: 'shares delivered to the returning members' },
    );
    const retry = await postJson(`${B}/web2/secret-failures/${secretId}/retry`, {}, admin);
    expectApiError(retry, 404, 'NOT_FOUND');

    // Proof the returning members hold their shares: decrypt with them and only one other member.
    await cluster.waitForConvergence();
    await Promise.all([cluster.stopMember(1), cluster.stopMember(2)]);
    try {
      const dec2 = await encryptDecrypt(A, secretId, 'decrypted with the shares of members 0, 3 and 4');
      expect(dec2.status, JSON.stringify(dec2.body)).toBe(200);
      expect(dec2.body.decryptedMessage).toBe('decrypted with the shares of members 0, 3 and 4');
    } finally {
      await Promise.all([cluster.restartMember(1), cluster.restartMember(2)]);
    }
  });
});

describe('3 of 5 members down', () => {
  it('session create, secret create and decrypt answer 503; encrypt (no quorum needed) still works', async () => {
    const url = cluster.coordinators[0]!;
    await cluster.waitForConvergence();
    const created = await postJson<{ secretId: number }>(`${url}/web2/secret`, alice.signed(0));
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const enc = await postJson<{ cifer: string; encryptedMessage: string }>(`${url}/encrypt-payload`, alice.signed(created.body.secretId, 'before'));
    expect(enc.status).toBe(200);

    await Promise.all([cluster.stopMember(2), cluster.stopMember(3), cluster.stopMember(4)]);
    try {
      expectApiError(await postJson(`${url}/web2/session`, sessionRequest(alice.principalId, alice.key, newSessionWallet())), 503, 'QUORUM_UNAVAILABLE');
      expectApiError(await postJson(`${url}/web2/secret`, alice.signed(0)), 503, 'QUORUM_UNAVAILABLE');
      expectApiError(await postJson(`${url}/decrypt-payload`, { cifer: enc.body.cifer, ...alice.signed(created.body.secretId, enc.body.encryptedMessage) }), 503, 'QUORUM_UNAVAILABLE');
      const enc2 = await postJson(`${url}/encrypt-payload`, alice.signed(created.body.secretId, 'still encrypts'));
      expect(enc2.status).toBe(200);
    } finally {
      await Promise.all([cluster.restartMember(2), cluster.restartMember(3), cluster.restartMember(4)]);
    }
  });
});
