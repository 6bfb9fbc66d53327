import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalCluster, type LocalCluster } from 'quorumkeep/testing';
import { getJson, postJson } from '../utils/http.ts';
import { expectApiError } from '../utils/web2.ts';
import { principalWithSession, type Principal } from '../utils/session.ts';

let cluster: LocalCluster;
let A: string;
let B: string;
let alice: Principal;
let bob: Principal;
let carol: Principal;
beforeAll(async () => {
  cluster = await startLocalCluster({ size: 5, threshold: 3, coordinators: 2 });
  [A, B] = cluster.coordinators as [string, string];
  [alice, bob, carol] = await Promise.all([principalWithSession(cluster, A, 'alice'), principalWithSession(cluster, A, 'bob'), principalWithSession(cluster, B, 'carol')]);
}, 60_000);
afterAll(() => cluster?.stop());

async function createSecret(url: string, p: Principal) {
  const res = await postJson<{ success: boolean; secretId: number; clusterId: string; publicKeyCid: string; status: string }>(`${url}/web2/secret`, p.signed(0));
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body;
}

async function encrypt(url: string, p: Principal, secretId: number, plaintext: string, outputFormat?: 'hex' | 'base64') {
  return postJson<{ cifer: string; encryptedMessage: string; outputFormat: string; chainId: number; secretId: number }>(`${url}/encrypt-payload`, { ...p.signed(secretId, plaintext), ...(outputFormat ? { outputFormat } : {}) });
}

async function decrypt(url: string, p: Principal, secretId: number, cifer: string, encryptedMessage: string, inputFormat?: 'hex' | 'base64') {
  return postJson<{ decryptedMessage: string }>(`${url}/decrypt-payload`, { cifer, ...p.signed(secretId, encryptedMessage), ...(inputFormat ? { inputFormat } : {}) });
}

describe('sessions, secrets and payloads across coordinators', () => {
  it('session on A, secret on B, encrypt on A, decrypt on B; the public key is served unsigned', async () => {
    const status = await postJson(`${B}/web2/session/status`, alice.signed(0));
    expect(status.status).toBe(200);
    expect(status.body).toMatchObject({ active: true, principalId: alice.principalId, sessionAddress: alice.wallet.address });

    const secret = await createSecret(B, alice);
    expect(secret).toMatchObject({ success: true, status: 'complete' });
    expect(secret.secretId).toBeGreaterThan(0);
    expect(Buffer.from(secret.publicKeyCid, 'base64')).toHaveLength(1184);

    const pub = await getJson(`${A}/secret-public-key/-1/${secret.secretId}`);
    expect(pub.status).toBe(200);
    expect(pub.body).toEqual({ success: true, chainId: -1, secretId: secret.secretId, publicKey: secret.publicKeyCid });

    const plaintext = 'hello_world: ünïcødé _ with underscores_';
    const enc = await encrypt(A, alice, secret.secretId, plaintext);
    expect(enc.status, JSON.stringify(enc.body)).toBe(200);
    expect(enc.body.cifer).toMatch(/^0x[0-9a-f]{2208}$/);
    expect(enc.body.encryptedMessage.startsWith('0x')).toBe(true);

    const dec = await decrypt(B, alice, secret.secretId, enc.body.cifer, enc.body.encryptedMessage);
    expect(dec.status, JSON.stringify(dec.body)).toBe(200);
    expect(dec.body).toEqual({ success: true, decryptedMessage: plaintext });

    const enc64 = await encrypt(B, bob, secret.secretId, 'anyone may encrypt', 'base64');
    expect(enc64.status).toBe(200);
    expect(Buffer.from(enc64.body.cifer, 'base64')).toHaveLength(1104);
    const dec64 = await decrypt(A, alice, secret.secretId, enc64.body.cifer, enc64.body.encryptedMessage, 'base64');
    expect(dec64.body).toEqual({ success: true, decryptedMessage: 'anyone may encrypt' });
  });

  it('the delegate decrypts, a third principal gets 403, and after clearing the delegate it gets 403 too', async () => {
    const secret = await createSecret(A, alice);
    const enc = await encrypt(A, alice, secret.secretId, 'for bob');
    expect(enc.status).toBe(200);

    expectApiError(await decrypt(B, bob, secret.secretId, enc.body.cifer, enc.body.encryptedMessage), 403, 'FORBIDDEN');
    const set = await postJson(`${A}/web2/setDelegate`, alice.signed(secret.secretId, bob.principalId));
    expect(set.status, JSON.stringify(set.body)).toBe(200);
    expect(set.body).toEqual({ success: true, secretId: secret.secretId });

    const dec = await decrypt(B, bob, secret.secretId, enc.body.cifer, enc.body.encryptedMessage);
    expect(dec.status, JSON.stringify(dec.body)).toBe(200);
    expect(dec.body.decryptedMessage).toBe('for bob');
    expectApiError(await decrypt(B, carol, secret.secretId, enc.body.cifer, enc.body.encryptedMessage), 403, 'FORBIDDEN');

    const bobList = await postJson<{ secrets: Array<{ secretId: number; delegatePrincipalId: string | null; ownerPrincipalId: string }> }>(`${B}/web2/secrets`, bob.signed(bob.principalId));
    expect(bobList.status).toBe(200);
    expect(bobList.body.secrets.map((s) => s.secretId)).toContain(secret.secretId);

    const clear = await postJson(`${B}/web2/setDelegate`, alice.signed(secret.secretId, ''));
    expect(clear.status).toBe(200);
    expectApiError(await decrypt(A, bob, secret.secretId, enc.body.cifer, enc.body.encryptedMessage), 403, 'FORBIDDEN');
    const after = await postJson<{ secrets: Array<{ secretId: number }> }>(`${A}/web2/secrets`, bob.signed(bob.principalId));
    expect(after.body.secrets.map((s) => s.secretId)).not.toContain(secret.secretId);

    const aliceList = await postJson<{ secrets: Array<Record<string, unknown>> }>(`${A}/web2/secrets`, alice.signed(alice.principalId));
    const mine = aliceList.body.secrets.find((s) => s.secretId === secret.secretId);
    expect(mine).toMatchObject({ ownerPrincipalId: alice.principalId, delegatePrincipalId: null, isSyncing: false, secretType: 1, publicKeyCid: secret.publicKeyCid });
  });

  it('concurrent encrypts take one request-crypto operation each (signer and seal together), and each decrypts to its own message; a bad signature among them is still 403', async () => {
    const secret = await createSecret(A, alice);
    /** The coordinator's request crypto operations of kind `op`, wherever they ran. */
    const ops = async (filter: { op: string }) => {
      const text = await (await fetch(`${A}/metrics`, { headers: { Authorization: `Bearer ${cluster.adminToken}` } })).text();
      return [...text.matchAll(/^quorumkeep_request_crypto_ops_total\{([^}]*)\} (\d+)$/gm)]
        .filter((m) => m[1]!.includes(`op="${filter.op}"`))
        .reduce((sum, m) => sum + Number(m[2]), 0);
    };
    // Where they run (the thread, or inline when the loop sat idle between them: a slow client on
    // a busy machine) is the pool's rule, unit-tested in test/unit/crypto/request-pool.test.ts.
    const before = { fused: await ops({ op: 'recover-seal' }), seals: await ops({ op: 'seal' }) };
    const messages = Array.from({ length: 48 }, (_, i) => `message ${i} ${'x'.repeat(i * 7)}`);
    const forged = { ...alice.signed(secret.secretId, 'forged'), signature: bob.signed(secret.secretId, 'forged').signature };
    const [encs, refused] = await Promise.all([Promise.all(messages.map((m) => encrypt(A, alice, secret.secretId, m))), postJson(`${A}/encrypt-payload`, forged)]);
    expectApiError(refused, 403, 'FORBIDDEN');
    for (const e of encs) expect(e.status, JSON.stringify(e.body)).toBe(200);
    // Every encrypt, the forged one too, recovered its signer and sealed in one operation: no seal of its own.
    expect(await ops({ op: 'recover-seal' })).toBe(before.fused + messages.length + 1);
    expect(await ops({ op: 'seal' })).toBe(before.seals);
    for (const i of [0, 17, 47]) {
      const dec = await decrypt(B, alice, secret.secretId, encs[i]!.body.cifer, encs[i]!.body.encryptedMessage);
      expect(dec.body.decryptedMessage).toBe(messages[i]);
    }
  });

  it('decrypts spread their share releases over every member: each coordinator its own share, the others in turn', async () => {
    const secret = await createSecret(A, alice);
    const enc = await encrypt(A, alice, secret.secretId, 'spread me');
    expect(enc.status).toBe(200);
    /** Releases each member answered with its share (`quorumkeep_share_releases_total{outcome="released"}`). */
    const released = () => Promise.all(cluster.members.map(async (m) => (await m.metrics.shareReleases.get()).values.find((v) => v.labels.outcome === 'released')?.value ?? 0));
    const run = async (url: string, n: number) => {
      const before = await released();
      for (let i = 0; i < n; i++) {
        const dec = await decrypt(url, alice, secret.secretId, enc.body.cifer, enc.body.encryptedMessage);
        expect(dec.status, JSON.stringify(dec.body)).toBe(200);
      }
      return (await released()).map((v, slot) => v - before[slot]!);
    };
    // 12 decrypts through coordinator 0 (slot 0): its own share each time, two of slots 1–4 in turn.
    // Asked by slot order, slots 1 and 2 released for all 12 and slots 3 and 4 for none.
    // (6 each; a member the liveness check missed for a moment shifts a turn or two, never more.)
    const spread = (counts: number[], each: number) => {
      expect(counts.reduce((a, b) => a + b, 0)).toBe(4 * each);
      for (const c of counts) {
        expect(c).toBeGreaterThanOrEqual(each - 2);
        expect(c).toBeLessThanOrEqual(each + 2);
      }
    };
    const viaA = await run(A, 12);
    expect(viaA[0]).toBe(12);
    spread(viaA.slice(1), 6);
    // Through coordinator 1: its own slot, and the others in turn.
    const viaB = await run(B, 8);
    expect(viaB[1]).toBe(8);
    spread([viaB[0]!, ...viaB.slice(2)], 4);
  });
});
