/**
 * Usage reporting and plan limits across a real cluster (docs/http.md, Usage; docs/architecture.md, "Usage
 * and plan limits"): 5 members, 2 coordinators, real HTTP, one injectable clock for every node.
 *
 * - usage counted on both coordinators adds up on either one, and survives a coordinator's restart;
 * - the six limit types of the payload routes answer their exact 429, and a refused request counts
 *   nothing; under a limit nothing is refused;
 * - 200 requests split over both coordinators against a request limit of 100 are admitted 100 to
 *   100 + the documented margin, (coordinators − 1) × the counter's cap, where the cap is
 *   max(usage.maxUnflushedRequests, ⌊usage.maxOvershootFraction × the limit⌋) — here the scaled part;
 * - a cycle rollover (the clock moved past 00:00 UTC) starts from zero and reports the new period;
 * - genuine but rogue nodes cannot write another coordinator's counter or lower one
 *   (docs/security.md, "Who may write what").
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalCluster, waitFor, type LocalCluster } from 'quorumkeep/testing';
import type { Cluster } from '../../src/cluster/index.ts';
import { signRecord, type ReplicatedRecord } from '../../src/core/replication/record.ts';
import { usageKey, type UsageCounts } from '../../src/core/usage/records.ts';
import { cycleOf } from '../../src/core/usage/cycles.ts';
import type { Plan } from '../../src/core/usage/types.ts';
import { postJson, getJson, type JsonResponse } from '../utils/http.ts';
import { newPrincipal, openSession, type Principal } from '../utils/session.ts';
import { startImpostor } from '../utils/impostor.ts';
import { cleanupStack } from '../utils/temp.ts';

/** The least cap of unacknowledged requests per counter, and the fraction of the limit that scales it. */
const MAX_UNFLUSHED_REQUESTS = 2;
const MAX_OVERSHOOT_FRACTION = 0.05;
const COORDINATORS = 2;
/** The request limit of the concurrency test (plan `hundred`). */
const HUNDRED = 100;
/** Its cap: max(2, ⌊0.05 × 100⌋) = 5, the scaled part. */
const CAP = Math.max(MAX_UNFLUSHED_REQUESTS, Math.floor(MAX_OVERSHOOT_FRACTION * HUNDRED));
/** The margin this cluster documents: (coordinators − 1) × cap. */
const MARGIN = (COORDINATORS - 1) * CAP;
const FLUSH_INTERVAL_MS = 200;
/** Max session ttl (docs/http.md, Sessions): the rollover moves the clock by up to a day. */
const LONG_TTL_MS = 2_592_000_000;

const limits = (bytesPerCycle: number, requestsPerCycle: number, requestsPerSecond: number) => ({ bytesPerCycle, requestsPerCycle, requestsPerSecond });
const ROOMY = limits(1e12, 1e9, 100_000);
const PLANS: Plan[] = [
  { id: 'roomy', cycle: 'monthly', encryption: ROOMY, decryption: ROOMY },
  { id: 'enc-data', cycle: 'monthly', encryption: limits(10, 1e9, 100_000), decryption: ROOMY },
  { id: 'dec-data', cycle: 'monthly', encryption: ROOMY, decryption: limits(10, 1e9, 100_000) },
  { id: 'requests', cycle: 'monthly', encryption: limits(1e12, 3, 100_000), decryption: limits(1e12, 3, 100_000) },
  { id: 'rate', cycle: 'monthly', encryption: limits(1e12, 1e9, 0.01), decryption: limits(1e12, 1e9, 0.01) },
  { id: 'hundred', cycle: 'monthly', encryption: limits(1e12, HUNDRED, 100_000), decryption: ROOMY },
  { id: 'daily', cycle: 'daily', encryption: ROOMY, decryption: ROOMY },
];

const stack = cleanupStack();
let cluster: LocalCluster;
let A: string;
let B: string;
/** Every node's clock: moved forward by the rollover test. */
let offset = 0;
const clock = () => Date.now() + offset;

beforeAll(async () => {
  cluster = await startLocalCluster({
    size: 5,
    threshold: 3,
    coordinators: COORDINATORS,
    clock,
    nodeConfig: {
      usage: { plans: PLANS, defaultPlan: 'roomy', flushIntervalMs: FLUSH_INTERVAL_MS, maxUnflushedRequests: MAX_UNFLUSHED_REQUESTS, maxOvershootFraction: MAX_OVERSHOOT_FRACTION },
    },
  });
  stack.push(() => cluster.stop());
  [A, B] = cluster.coordinators as [string, string];
}, 60_000);
afterAll(() => stack.run());

// ---------------------------------------------------------------------------------------------
// Client helpers: every signed string is stamped with the cluster's clock.

const signedNow = (p: Principal, subject: string | number, extra?: string) => p.signed(subject, extra, clock());

interface Report {
  success: boolean;
  userId: string;
  userType: string;
  planId: string;
  cycleType: string;
  periodStart: string;
  periodEnd: string;
  encryption: Record<string, number>;
  decryption: Record<string, number>;
  [snake: string]: unknown;
}

async function report(url: string, p: Principal): Promise<JsonResponse<Report>> {
  return postJson<Report>(`${url}/jobs/dataConsumption`, signedNow(p, 0));
}

async function assignPlan(p: Principal, planId: string): Promise<void> {
  const res = await postJson(`${A}/admin/usage/plan`, { principalId: p.principalId, planId }, { Authorization: `Bearer ${cluster.adminToken}` });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  // Both coordinators hold the assignment before the test relies on it.
  await waitFor(async () => (await getJson<{ planId: string }>(`${B}/admin/usage/plan/${p.principalId}`, { Authorization: `Bearer ${cluster.adminToken}` })).body.planId === planId, { description: 'plan on B' });
}

async function createSecret(p: Principal): Promise<number> {
  const res = await postJson<{ secretId: number }>(`${A}/web2/secret`, signedNow(p, 0));
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.secretId;
}

const encrypt = (url: string, p: Principal, secretId: number, text: string) =>
  postJson<{ cifer: string; encryptedMessage: string } & Record<string, unknown>>(`${url}/encrypt-payload`, signedNow(p, secretId, text));

const decrypt = (url: string, p: Principal, secretId: number, sealed: { cifer: string; encryptedMessage: string }) =>
  postJson<{ decryptedMessage: string }>(`${url}/decrypt-payload`, { cifer: sealed.cifer, ...signedNow(p, secretId, sealed.encryptedMessage) });

/** A principal with a session (on the cluster's clock, outliving the rollover's jump), a secret, and a plan. */
async function user(tag: string, planId: string): Promise<{ p: Principal; secretId: number }> {
  const p = await newPrincipal(cluster, A, tag);
  await openSession(A, p, { timestamp: clock(), ttl: LONG_TTL_MS });
  if (planId !== 'roomy') await assignPlan(p, planId);
  return { p, secretId: await createSecret(p) };
}

/** The exact 429 of a plan limit (docs/http.md, Usage). */
function expectLimit(res: JsonResponse, limitType: string): void {
  expect(res.status, JSON.stringify(res.body)).toBe(429);
  expect(Object.keys(res.body)).toEqual(['error', 'code', 'detail', 'limitType', 'retryAfterSeconds']);
  expect(res.body).toMatchObject({ error: 'Limit exceeded', code: 'LIMIT_EXCEEDED', limitType });
  expect(typeof res.body.detail).toBe('string');
  const retry = res.body.retryAfterSeconds as number;
  expect(Number.isInteger(retry) && retry >= 1).toBe(true);
  expect(res.headers.get('retry-after')).toBe(String(retry));
}

/** Both coordinators report these counts. */
async function bothReport(p: Principal, expected: { encryption: [number, number]; decryption: [number, number] }): Promise<void> {
  for (const url of [A, B]) {
    await waitFor(
      async () => {
        const { body } = await report(url, p);
        return body.encryption.used === expected.encryption[0] && body.encryption.count === expected.encryption[1] && body.decryption.used === expected.decryption[0] && body.decryption.count === expected.decryption[1];
      },
      { timeoutMs: 10_000, description: `usage ${JSON.stringify(expected)} on ${url}` },
    );
  }
}

// ---------------------------------------------------------------------------------------------

describe('usage across coordinators', () => {
  it('usage counted on both coordinators adds up on either one; the report has both spellings and no wallet', async () => {
    const { p, secretId } = await user('adds-up', 'roomy');
    for (let i = 0; i < 3; i++) expect((await encrypt(A, p, secretId, 'hello')).status).toBe(200);
    const sealed = (await encrypt(B, p, secretId, 'hi!')).body;
    expect((await encrypt(B, p, secretId, 'hi!')).status).toBe(200);
    expect((await decrypt(B, p, secretId, sealed)).status).toBe(200);
    // Plaintext bytes: 3 × 5 + 2 × 3 encrypted, 3 decrypted.
    await bothReport(p, { encryption: [21, 5], decryption: [3, 1] });

    const res = await report(A, p);
    expect(res.status).toBe(200);
    const cycle = cycleOf('monthly', clock());
    const body = res.body;
    expect(body).toMatchObject({
      success: true,
      userId: p.principalId,
      userType: 'web2',
      planId: 'roomy',
      cycleType: 'monthly',
      periodStart: String(cycle.start),
      periodEnd: String(cycle.end),
      user_id: p.principalId,
      user_type: 'web2',
      plan_id: 'roomy',
      cycle_type: 'monthly',
      period_start: String(cycle.start),
      period_end: String(cycle.end),
    });
    expect(body.encryption).toEqual({
      limit: 1e12,
      used: 21,
      remaining: 1e12 - 21,
      count: 5,
      requestLimit: 1e9,
      rateLimit: 100_000,
      limitGB: 1e12 / 2 ** 30,
      usedGB: 21 / 2 ** 30,
      remainingGB: (1e12 - 21) / 2 ** 30,
    });
    expect(body.encryption.remainingGB).toBe(body.encryption.limitGB! - body.encryption.usedGB!);
    expect(JSON.stringify(body)).not.toMatch(/wallet/i);
  });

  it('usage survives a coordinator restart (it flushes on stop and resumes from its own record)', async () => {
    const { p, secretId } = await user('restart', 'roomy');
    for (let i = 0; i < 4; i++) expect((await encrypt(B, p, secretId, 'abcd')).status).toBe(200);
    await cluster.stopMember(1);
    await cluster.restartMember(1);
    // B answers at once from its own record; A has it too.
    const after = await report(B, p);
    expect(after.body.encryption).toMatchObject({ used: 16, count: 4 });
    // Counting continues from there, not from zero.
    expect((await encrypt(B, p, secretId, 'abcd')).status).toBe(200);
    expect((await encrypt(A, p, secretId, 'ab')).status).toBe(200);
    await bothReport(p, { encryption: [22, 6], decryption: [0, 0] });
  });
});

describe('plan limits on the payload routes', () => {
  it('encryption_data_limit and decryption_data_limit: 429 with its fields; a refused request counts nothing', async () => {
    const enc = await user('enc-data', 'enc-data');
    expect((await encrypt(A, enc.p, enc.secretId, 'hello')).status).toBe(200);
    expect((await encrypt(A, enc.p, enc.secretId, 'world')).status).toBe(200);
    const refused = await encrypt(A, enc.p, enc.secretId, '!');
    expectLimit(refused, 'encryption_data_limit');
    expect(refused.body.detail).toMatch(/10 bytes/);
    // The data-limit wait is the rest of the cycle.
    expect(refused.body.retryAfterSeconds).toBe(Math.ceil((cycleOf('monthly', clock()).end - clock()) / 1000));
    expect((await report(A, enc.p)).body.encryption).toMatchObject({ used: 10, count: 2, remaining: 0 });

    const dec = await user('dec-data', 'dec-data');
    const sealed = (await encrypt(A, dec.p, dec.secretId, 'sixsix')).body;
    expect((await decrypt(A, dec.p, dec.secretId, sealed)).status).toBe(200);
    expectLimit(await decrypt(A, dec.p, dec.secretId, sealed), 'decryption_data_limit');
    expect((await report(A, dec.p)).body.decryption).toMatchObject({ used: 6, count: 1 });
  });

  it('encryption_request_limit and decryption_request_limit: exactly the limit passes, then 429', async () => {
    const { p, secretId } = await user('requests', 'requests');
    let sealed = { cifer: '', encryptedMessage: '' };
    for (let i = 0; i < 3; i++) {
      const res = await encrypt(A, p, secretId, `m${i}`);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      sealed = res.body;
    }
    expectLimit(await encrypt(A, p, secretId, 'm3'), 'encryption_request_limit');
    for (let i = 0; i < 3; i++) expect((await decrypt(A, p, secretId, sealed)).status).toBe(200);
    expectLimit(await decrypt(A, p, secretId, sealed), 'decryption_request_limit');
    await bothReport(p, { encryption: [6, 3], decryption: [6, 3] });
  });

  it('encryption_rate_limit and decryption_rate_limit: the per-second bucket, with the time to its next token', async () => {
    const { p, secretId } = await user('rate', 'rate');
    const sealed = (await encrypt(A, p, secretId, 'once')).body;
    const refused = await encrypt(A, p, secretId, 'twice');
    expectLimit(refused, 'encryption_rate_limit');
    expect(refused.body.retryAfterSeconds).toBeLessThanOrEqual(100);
    // Each coordinator has its own bucket (docs/architecture.md).
    expect((await decrypt(B, p, secretId, sealed)).status).toBe(200);
    expectLimit(await decrypt(B, p, secretId, sealed), 'decryption_rate_limit');
  });

  it('under the limits nothing is refused, on either coordinator', async () => {
    const { p, secretId } = await user('under', 'roomy');
    const results = await Promise.all(Array.from({ length: 40 }, (_, i) => encrypt(i % 2 ? A : B, p, secretId, `message ${i}`)));
    expect(results.map((r) => r.status)).toEqual(Array(40).fill(200));
  });

  it('200 requests over both coordinators against a request limit of 100: 100 to 100 + the margin pass, and the count is exact', async () => {
    expect(MARGIN).toBe(5);
    const { p, secretId } = await user('hundred', 'hundred');
    const results = await Promise.all(Array.from({ length: 2 * HUNDRED }, (_, i) => encrypt(i % 2 ? A : B, p, secretId, 'x')));
    const passed = results.filter((r) => r.status === 200).length;
    for (const r of results.filter((x) => x.status !== 200)) expectLimit(r, 'encryption_request_limit');
    expect(passed).toBeGreaterThanOrEqual(HUNDRED);
    expect(passed).toBeLessThanOrEqual(HUNDRED + MARGIN);
    // Every admitted request is counted once, on both coordinators.
    await bothReport(p, { encryption: [passed, passed], decryption: [0, 0] });
  });

  it('refusals are counted by limit type, and flushes timed', async () => {
    const text = await cluster.members[0]!.metrics.render();
    for (const type of ['encryption_data_limit', 'decryption_data_limit', 'encryption_request_limit', 'decryption_request_limit', 'encryption_rate_limit']) {
      expect(text).toMatch(new RegExp(`quorumkeep_usage_limit_refusals_total\\{[^}]*limit_type="${type}"[^}]*\\} [1-9]`));
    }
    expect(text).toMatch(/quorumkeep_usage_flush_duration_seconds_count\{[^}]*outcome="ok"[^}]*\} [1-9]/);
  });
});

describe('cycles', () => {
  it('a rollover (the clock past 00:00 UTC) starts from zero and reports the new period', async () => {
    const { p, secretId } = await user('daily', 'daily');
    expect((await encrypt(A, p, secretId, 'today')).status).toBe(200);
    expect((await encrypt(B, p, secretId, 'today')).status).toBe(200);
    await bothReport(p, { encryption: [10, 2], decryption: [0, 0] });
    const today = cycleOf('daily', clock());
    expect((await report(A, p)).body).toMatchObject({ cycleType: 'daily', periodStart: String(today.start), periodEnd: String(today.end) });

    // Every node's clock moves to one second past the next 00:00 UTC.
    offset += today.end - clock() + 1000;
    for (const url of [A, B]) {
      const res = await report(url, p);
      expect(res.body).toMatchObject({ periodStart: String(today.end), periodEnd: String(today.end + 86_400_000), period_start: String(today.end) });
      expect(res.body.encryption).toMatchObject({ used: 0, count: 0 });
    }
    expect((await encrypt(B, p, secretId, 'tomorrow')).status).toBe(200);
    await bothReport(p, { encryption: [8, 1], decryption: [0, 0] });
  });
});

// ---------------------------------------------------------------------------------------------
// Last: rogue nodes (coordinator 1 is stopped and impersonated).

describe('rogue nodes cannot forge usage', () => {
  const LIVING = [0, 2, 3];
  let seq = 2_000_000;
  let victim: Principal;
  let ownKey: string;
  let held: UsageCounts;
  const rogues: Record<'coordinator' | 'member', { peer: Cluster; signingKey: Uint8Array; address: string }> = {} as never;

  beforeAll(async () => {
    const { p, secretId } = await user('victim', 'roomy');
    victim = p;
    for (let i = 0; i < 3; i++) expect((await encrypt(B, p, secretId, 'payload')).status).toBe(200);
    expect((await encrypt(A, p, secretId, 'payload')).status).toBe(200);
    await bothReport(p, { encryption: [28, 4], decryption: [0, 0] });
    const cycle = cycleOf('monthly', clock());
    ownKey = usageKey(p.principalId, 'monthly', cycle.start, 'encryption', cluster.descriptor.nodes[1]!.nodeAddress);
    held = (await cluster.members[0]!.state.get('usage', ownKey))!.body as UsageCounts;
    expect(held).toMatchObject({ bytes: 21, requests: 3 });
    for (const [slot, role] of [[1, 'coordinator'], [4, 'member']] as const) {
      const { peer, signingKey } = await startImpostor(cluster, slot);
      stack.push(() => peer.stop());
      rogues[role] = { peer, signingKey, address: cluster.descriptor.nodes[slot]!.nodeAddress };
      await waitFor(() => LIVING.every((s) => peer.membership.isReachable(s)), { timeoutMs: 10_000, description: `rogue ${slot} to reach the living members` });
    }
  }, 60_000);

  const forge = (rogue: { signingKey: Uint8Array; address: string }, kind: string, key: string, body: unknown): ReplicatedRecord =>
    signRecord(cluster.descriptor.clusterId, { kind, key, origin: rogue.address, seq: seq++, hlc: [clock(), 0], body: body as never }, rogue.signingKey);

  const statesOf = (key: string) => Promise.all(LIVING.map(async (s) => (await cluster.members[s]!.state.get('usage', key))?.body));

  async function refusedEverywhere(rogue: { peer: Cluster }, record: ReplicatedRecord, reason: RegExp): Promise<void> {
    const before = await statesOf(record.key);
    for (const slot of LIVING) await expect(rogue.peer.sendApply(slot, [record], { signal: AbortSignal.timeout(5000) }), `member ${slot}`).rejects.toThrow(reason);
    expect(await statesOf(record.key)).toEqual(before);
  }

  it('a coordinator cannot write a counter keyed to another coordinator', async () => {
    const aKey = ownKey.replace(cluster.descriptor.nodes[1]!.nodeAddress, cluster.descriptor.nodes[0]!.nodeAddress);
    await refusedEverywhere(rogues.coordinator, forge(rogues.coordinator, 'usage', aKey, { bytes: 1e9, requests: 1e6, refundedBytes: 0, refundedRequests: 0 }), /another_coordinator/);
  });

  it('a coordinator’s own records are taken in any order, and the state is their highest count; refunds never above the counts', async () => {
    // Lower in every count, with a newer clock: stored, and the state keeps the higher count.
    const lower = forge(rogues.coordinator, 'usage', ownKey, { bytes: 0, requests: 0, refundedBytes: 0, refundedRequests: 0 });
    for (const slot of LIVING) await rogues.coordinator.peer.sendApply(slot, [lower], { signal: AbortSignal.timeout(5000) });
    expect(await statesOf(ownKey)).toEqual(LIVING.map(() => held));
    // More bytes but fewer requests: accepted by every member whatever it held before (the merge
    // takes the highest sum; a coordinator's own column is its word, docs/security.md "Usage counters").
    const mixed = forge(rogues.coordinator, 'usage', ownKey, { ...held, bytes: held.bytes + 1000, requests: 0 });
    for (const slot of LIVING) await rogues.coordinator.peer.sendApply(slot, [mixed], { signal: AbortSignal.timeout(5000) });
    const after = await statesOf(ownKey);
    expect(new Set(after.map((a) => JSON.stringify(a))).size).toBe(1);
    // Refunds above the counts are refused.
    await refusedEverywhere(rogues.coordinator, forge(rogues.coordinator, 'usage', ownKey, { ...held, bytes: held.bytes + 1, refundedBytes: held.bytes + 2 }), /refund_exceeds_count/);
  });

  it('a member that is not a coordinator writes no usage and assigns no plan', async () => {
    const mKey = ownKey.replace(cluster.descriptor.nodes[1]!.nodeAddress, rogues.member.address);
    await refusedEverywhere(rogues.member, forge(rogues.member, 'usage', mKey, { bytes: 1, requests: 1, refundedBytes: 0, refundedRequests: 0 }), /writer_not_allowed/);
    const plan = forge(rogues.member, 'plan', victim.principalId, { planId: 'requests', assignedAt: clock() });
    for (const slot of LIVING) await expect(rogues.member.peer.sendApply(slot, [plan], { signal: AbortSignal.timeout(5000) })).rejects.toThrow(/writer_not_allowed/);
    expect((await report(A, victim)).body.planId).toBe('roomy');
  });
});
