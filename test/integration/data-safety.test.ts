/**
 * Data safety (docs/operations.md, "Data safety"): a member that lost its shares finds out by itself,
 * is not ready and makes the cluster `degraded` until it holds them again, and recovers with no
 * operator command; secrets held by only `threshold` members are named as at risk before any loss;
 * secrets held by fewer are lost — a decrypt answers 410 SECRET_LOST, not a retry code — until an
 * operator acknowledges the loss, after which the members return to `active` and the alarms clear.
 * 5 members, threshold 3, 2 coordinators, in one process.
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalCluster, waitFor, type LocalCluster } from 'quorumkeep/testing';
import { getJson, postJson } from '../utils/http.ts';
import { principalWithSession, type Principal } from '../utils/session.ts';
import { runCli } from '../utils/process-cluster.ts';
import { parseMetrics, sampleOf } from '../utils/runbook.ts';

const SECRETS = 6;

let cluster: LocalCluster;
let A: string;
let alice: Principal;
const secretIds: number[] = [];
const sealed = new Map<number, { cifer: string; encryptedMessage: string }>();

const admin = () => ({ authorization: `Bearer ${cluster.adminToken}` });

interface Health {
  status: string;
  problems: string[];
  dataSafety: {
    members: Array<{ slot: number; status: string; shares: { expected: number; held: number; missing: number } | null }>;
    secretsAtRisk: number;
    secretsLost: number;
    secretsLostAcknowledged: number;
    atRisk: Array<{ chainId: number; secretId: number }>;
    lost: Array<{ chainId: number; secretId: number }>;
  };
}

let lastHealth: Health | undefined;
const health = async () => (lastHealth = (await getJson<Health>(`${A}/healthz`)).body);
/** Wait until coordinator 0's health satisfies `ok`; the failure names the last answer. */
async function healthUntil(ok: (h: Health) => boolean, description: string, timeoutMs = 20_000): Promise<void> {
  try {
    await waitFor(async () => ok(await health()), { timeoutMs, intervalMs: 200, description });
  } catch (err) {
    throw new Error(`${(err as Error).message}; last answer: ${JSON.stringify(lastHealth && { status: lastHealth.status, problems: lastHealth.problems, ...lastHealth.dataSafety })}`);
  }
}

/** Member `slot`'s `/readyz` on its operator port. */
async function readyz(slot: number): Promise<{ status: number; sharesHeld: boolean | undefined }> {
  const res = await getJson<{ checks?: { sharesHeld?: boolean } }>(`${cluster.members[slot]!.operatorUrl}/readyz`);
  return { status: res.status, sharesHeld: res.body.checks?.sharesHeld };
}

/** One sample of a gauge on coordinator 0's `/metrics` (its labels including `labels`), or undefined when absent. */
async function gauge(name: string, labels: Record<string, string> = {}): Promise<number | undefined> {
  return sampleOf(parseMetrics(await (await fetch(`${A}/metrics`, { headers: admin() })).text()), name, labels);
}

/** Stop member `slot`, remove its store (keys kept), and start it again. */
async function wipe(slot: number): Promise<void> {
  await cluster.stopMember(slot);
  await rm(join(cluster.members[slot]!.config.dataDir, 'db'), { recursive: true, force: true });
  await cluster.restartMember(slot);
}

const decrypt = (id: number) => postJson<{ decryptedMessage?: string; code?: string }>(`${A}/decrypt-payload`, { cifer: sealed.get(id)!.cifer, ...alice.signed(id, sealed.get(id)!.encryptedMessage) });

beforeAll(async () => {
  cluster = await startLocalCluster({ size: 5, threshold: 3, coordinators: 2, operator: true });
  A = cluster.coordinators[0]!;
  alice = await principalWithSession(cluster, A, 'alice');
  for (let i = 0; i < SECRETS; i++) {
    const res = await postJson<{ secretId: number; status: string }>(`${A}/web2/secret`, alice.signed(0, undefined, Date.now() + i));
    expect(res.body.status).toBe('complete');
    secretIds.push(res.body.secretId);
    const enc = await postJson<{ cifer: string; encryptedMessage: string }>(`${A}/encrypt-payload`, alice.signed(res.body.secretId, `secret ${i}`));
    expect(enc.status).toBe(200);
    sealed.set(res.body.secretId, enc.body);
  }
  await cluster.waitForConvergence({ timeoutMs: 10_000 });
  await healthUntil((h) => h.status === 'ok', 'the cluster to report ok');
}, 90_000);
afterAll(() => cluster?.stop());

describe('a member that lost its data directory', () => {
  it('is never ready while it lacks shares, makes the cluster degraded, and recovers them with no operator command', async () => {
    // Readiness from the restart on: not ready until recovered, then ready for good; and what
    // coordinator 0 says meanwhile.
    const samples: Array<{ at: number; ready: boolean; status: string }> = [];
    let sampling = true;
    const before = cluster.members[3];
    const sampler = (async () => {
      while (sampling) {
        const node = cluster.members[3];
        if (node !== before && cluster.isRunning(3) && node) samples.push({ at: performance.now(), ready: node.health.readiness().ready, status: cluster.members[0]!.health.clusterHealth().status });
        await new Promise((r) => setTimeout(r, 5));
      }
    })();
    await wipe(3);
    await waitFor(async () => (await readyz(3)).status === 200, { timeoutMs: 30_000, intervalMs: 100, description: 'member 3 to recover and be ready' });
    sampling = false;
    await sampler;
    // One last sample now that /readyz said 200: on a busy machine the flip can fall between the
    // sampler's last turn and that answer, and the samples would then hold no `true` at all.
    samples.push({ at: performance.now(), ready: cluster.members[3]!.health.readiness().ready, status: cluster.members[0]!.health.clusterHealth().status });
    const ready = samples.map((x) => x.ready);
    expect(ready[0]).toBe(false);
    expect(ready.at(-1)).toBe(true);
    expect(ready.slice(ready.indexOf(true))).not.toContain(false);
    // Coordinator 0 asks every second while a member's shares are unknown: from 2 s after the
    // restart, it never says ok while member 3 is not ready.
    const t0 = samples[0]!.at;
    const allClear = samples.filter((x) => !x.ready && x.at - t0 >= 2_000 && x.status === 'ok');
    expect(allClear).toEqual([]);
    // Nobody marked it: its status is its own record (recovering, then active). Ready means that
    // record is durable on a quorum, which member 0 need not be part of: it may apply it a moment later.
    await waitFor(async () => ((await cluster.members[0]!.state.get('memberStatus', '3'))?.body as { status?: string } | undefined)?.status === 'active', { timeoutMs: 10_000, description: "member 3's active status on member 0" });
    const status = await cluster.members[0]!.state.get('memberStatus', '3');
    expect(status?.origin).toBe(cluster.members[3]!.nodeAddress);
    expect(status?.body).toMatchObject({ status: 'active' });
    await healthUntil((h) => h.dataSafety.members.find((m) => m.slot === 3)?.shares?.held === SECRETS, 'coordinator 0 to see member 3 whole');
    await healthUntil((h) => h.status === 'ok', 'the cluster to report ok again');
    for (const id of secretIds) expect((await decrypt(id)).status).toBe(200);
  }, 90_000);

  it('while it cannot recover (its helpers cut off): readyz 503, status degraded (exit 1) with the shares missing, gauges say so', async () => {
    // Member 3 reaches only members 0 and 4: fewer than threshold helpers, so it cannot rebuild (nor
    // learn its own log from size − threshold + 1 others: it writes nothing, not even its status).
    await cluster.stopMember(3);
    await rm(join(cluster.members[3]!.config.dataDir, 'db'), { recursive: true, force: true });
    await cluster.partition(3, [1, 2]);
    await cluster.restartMember(3);
    await waitFor(async () => (await readyz(3)).sharesHeld === false, { timeoutMs: 20_000, intervalMs: 100, description: 'member 3 to find its shares missing' });
    expect((await readyz(3)).status).toBe(503);
    await healthUntil((h) => h.dataSafety.members.find((m) => m.slot === 3)?.shares?.missing === SECRETS, 'coordinator 0 to see the shares missing');
    const h = await health();
    expect(h.status).toBe('degraded');
    expect(h.problems).toContain('shares_missing');
    expect(h.dataSafety.members.find((m) => m.slot === 3)?.shares).toMatchObject({ expected: SECRETS, held: 0, missing: SECRETS });
    expect(await gauge('quorumkeep_member_shares_held', { slot: '3' })).toBe(0);
    expect(await gauge('quorumkeep_member_shares_expected', { slot: '3' })).toBe(SECRETS);
    const status = await runCli(['status', '--url', A]);
    expect(status.code, status.stderr).toBe(1);
    expect(status.stdout).toMatch(/slot +3 .* shares 0\/6 \(6 MISSING\)/);
    const members = await runCli(['member', 'status', '--url', A, '--token', cluster.adminToken]);
    expect(members.code).toBe(1);
  }, 90_000);

  it('a second member wiped before the first recovered: the secrets at risk are named before any loss', async () => {
    await cluster.stopMember(4);
    await rm(join(cluster.members[4]!.config.dataDir, 'db'), { recursive: true, force: true });
    await cluster.partition(4, [1, 2]);
    await cluster.restartMember(4);
    await healthUntil((h) => h.dataSafety.secretsAtRisk === SECRETS, 'every secret to be reported at risk');
    const h = await health();
    expect(h.problems).toContain('secrets_at_risk');
    expect(h.dataSafety.secretsLost).toBe(0);
    expect(h.dataSafety.atRisk.map((s) => s.secretId).sort((a, b) => a - b)).toEqual([...secretIds].sort((a, b) => a - b));
    expect(await gauge('quorumkeep_secrets_at_risk')).toBe(SECRETS);
    const status = await runCli(['status', '--url', A]);
    expect(status.code).toBe(1);
    expect(status.stdout).toMatch(/at risk \(chainId:secretId\): .*-1:/);
    // Still decryptable: members 0, 1 and 2 hold their shares.
    for (const id of secretIds) expect((await decrypt(id)).status).toBe(200);
  }, 90_000);

  it('a third member wiped: the secrets are lost — decrypts answer 410 SECRET_LOST — until the loss is acknowledged; then the members are active and the alarms clear', async () => {
    await wipe(2);
    await cluster.heal();
    await healthUntil((h) => h.dataSafety.secretsLost === SECRETS, 'every secret to be reported lost', 30_000);
    expect((await health()).problems).toContain('secrets_lost');
    expect(await gauge('quorumkeep_secrets_lost')).toBe(SECRETS);
    const lost = await decrypt(secretIds[0]!);
    expect(lost.status).toBe(410);
    expect(lost.body.code).toBe('SECRET_LOST');

    // An unknown secret is refused: nobody states it lacks a share of a secret that has none.
    const refused = await postJson<{ acknowledged: unknown[]; notLost: unknown[] }>(`${A}/admin/secrets/acknowledge-loss`, { secrets: [{ chainId: -1, secretId: 999_999 }] }, admin());
    expect(refused.status).toBe(200);
    expect(refused.body).toMatchObject({ acknowledged: [], notLost: [{ chainId: -1, secretId: 999_999 }] });

    const ack = await runCli(['member', 'acknowledge-loss', '--url', A, '--token', cluster.adminToken]);
    expect(ack.code, ack.stderr).toBe(0);
    expect(ack.stdout).toMatch(new RegExp(`acknowledged lost: ${SECRETS}`));
    await healthUntil((h) => h.status === 'ok' && h.dataSafety.secretsLostAcknowledged === SECRETS && h.dataSafety.members.every((m) => m.status === 'active'), 'the members to be active and the cluster ok', 30_000);
    for (const slot of [2, 3, 4]) expect((await readyz(slot)).status).toBe(200);
    expect(await gauge('quorumkeep_secrets_lost')).toBe(0);
    expect(await gauge('quorumkeep_secrets_lost_acknowledged')).toBe(SECRETS);
    expect((await decrypt(secretIds[1]!)).body.code).toBe('SECRET_LOST');

    // The cluster works: a secret created now decrypts.
    const created = await postJson<{ secretId: number; status: string }>(`${A}/web2/secret`, alice.signed(0, undefined, Date.now()));
    expect(created.body.status).toBe('complete');
    const enc = await postJson<{ cifer: string; encryptedMessage: string }>(`${A}/encrypt-payload`, alice.signed(created.body.secretId, 'fresh'));
    const dec = await postJson<{ decryptedMessage: string }>(`${A}/decrypt-payload`, { cifer: enc.body.cifer, ...alice.signed(created.body.secretId, enc.body.encryptedMessage) });
    expect(dec.status).toBe(200);
    expect(dec.body.decryptedMessage).toBe('fresh');
  }, 120_000);
});
