/**
 * Abuse limits against a real cluster (docs/http.md, "Abuse limits"): 400 concurrent
 * verify-credentials for unknown emails flood one coordinator while a real, verified account logs
 * in. Before the limits, such a flood queued every argon2 hash behind it, and the login waited for
 * all of them.
 *
 * Every request comes from 127.0.0.1, so the coordinators run with `http.trustProxy` and the tests
 * say who is who with X-Forwarded-For (its last entry is the client, as behind a real proxy):
 * - a flood from one address is refused by that address's bucket (429) beyond its burst, and what
 *   got through is shed by the bounded argon2 queue (503);
 * - a flood from 400 addresses (no per-address limit bites) is shed by the queue alone.
 * Either way the flood is answered only with 404 (unknown account), 429 or 503 JSON — never another
 * 5xx or a reset — and the login gets its 200, retrying after Retry-After as a client should. What
 * holds at any speed is asserted here; how fast the flood is answered and the login gets through is
 * the bench's (`npm run bench -- flood`, docs/benchmarks.md), not a wall-clock budget on a shared
 * machine.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalCluster, type LocalCluster } from 'quorumkeep/testing';
import { getJson, postJson, type JsonResponse } from '../utils/http.ts';
import { newEmail, verifiedAccount } from '../utils/web2.ts';

/** Concurrent flood requests (the review's figure). */
const FLOOD = 400;
/**
 * A login gives up after this, retries included: it only bounds the wait, far above what a login
 * needs on any machine (the bench measures that), and within the tests' own timeout.
 */
const LOGIN_GIVE_UP_MS = 25_000;
/** Room for the flood and a login that waits until it gives up. */
const TEST_TIMEOUT_MS = 60_000;

let cluster: LocalCluster;
let A: string;
let account: { email: string; password: string; principalId: string };

beforeAll(async () => {
  cluster = await startLocalCluster({ size: 3, threshold: 2, coordinators: 1, nodeConfig: { http: { trustProxy: true } } });
  A = cluster.coordinators[0]!;
  account = await verifiedAccount(cluster, A, 'flooded');
});
afterAll(() => cluster?.stop());

function verifyCredentials(body: { email: string; password: string }, from: string): Promise<JsonResponse> {
  return postJson(`${A}/web2/auth/verify-credentials`, body, { 'X-Forwarded-For': from });
}

/** Log in as a client does: on 429/503, wait Retry-After and try again (giving up only after {@link LOGIN_GIVE_UP_MS}). */
async function login(from: string): Promise<{ status: number; attempts: number }> {
  const giveUpAt = Date.now() + LOGIN_GIVE_UP_MS;
  for (let attempts = 1; ; attempts++) {
    const res = await verifyCredentials({ email: account.email, password: account.password }, from);
    const retryAfterMs = Number(res.headers.get('retry-after') ?? NaN) * 1000;
    if ((res.status !== 429 && res.status !== 503) || !(retryAfterMs > 0) || Date.now() + retryAfterMs > giveUpAt) {
      return { status: res.status, attempts };
    }
    await new Promise((resolve) => setTimeout(resolve, retryAfterMs));
  }
}

/** Every flood answer is a JSON 404, 429 or 503 with its code; 429 and 503 carry Retry-After. */
function checkFlood(answers: JsonResponse[]): Record<number, number> {
  const counts: Record<number, number> = {};
  for (const res of answers) {
    const shown = `${res.status} ${JSON.stringify(res.body)}`;
    counts[res.status] = (counts[res.status] ?? 0) + 1;
    expect([404, 429, 503], shown).toContain(res.status);
    expect(res.headers.get('content-type'), shown).toMatch(/^application\/json/);
    expect(res.body.code, shown).toBe({ 404: 'NOT_FOUND', 429: 'RATE_LIMITED', 503: 'OVERLOADED' }[res.status]);
    if (res.status !== 404) {
      expect(res.body.retryAfterSeconds, shown).toBeGreaterThanOrEqual(1);
      expect(res.headers.get('retry-after'), shown).toBe(String(res.body.retryAfterSeconds));
    }
  }
  return counts;
}

async function metric(name: string): Promise<number> {
  const res = await fetch(`${A}/metrics`, { headers: { Authorization: `Bearer ${cluster.adminToken}` } });
  expect(res.status).toBe(200);
  const text = await res.text();
  return [...text.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\d+)$`, 'gm'))].reduce((sum, m) => sum + Number(m[1]), 0);
}

describe('a flood of unknown-email verify-credentials on one coordinator', () => {
  it('from one address: 429 past its burst, 503 past the queue; a login from elsewhere gets 200', async () => {
    const unflooded = await login('198.51.100.1');
    expect(unflooded.status).toBe(200);

    const flood = Array.from({ length: FLOOD }, () => verifyCredentials({ email: newEmail('flood'), password: 'not-a-real-password' }, '203.0.113.66'));
    const legit = await login('198.51.100.2');
    const counts = checkFlood(await Promise.all(flood));

    expect(legit.status, JSON.stringify({ legit, unflooded, counts })).toBe(200);
    // Default burst 300 per address (then 2 a second): the last ~100 never reached the argon2 queue.
    expect(counts[429] ?? 0).toBeGreaterThanOrEqual(FLOOD - 300 - 20);
    expect(counts[503] ?? 0).toBeGreaterThan(0);
    expect(await metric('quorumkeep_http_rate_limited_total')).toBeGreaterThanOrEqual(counts[429]!);
  }, TEST_TIMEOUT_MS);

  it('from 400 addresses: the bounded queue sheds it (503 OVERLOADED); a login gets 200; the node stays healthy', async () => {
    const shedBefore = await metric('quorumkeep_argon2_jobs_shed_total');
    const flood = Array.from({ length: FLOOD }, (_, i) =>
      verifyCredentials({ email: newEmail('spread'), password: 'not-a-real-password' }, `10.77.${Math.floor(i / 250)}.${i % 250}`),
    );
    const legit = await login('198.51.100.3');
    const counts = checkFlood(await Promise.all(flood));

    expect(legit.status, JSON.stringify({ legit, counts })).toBe(200);
    expect(counts[429] ?? 0).toBe(0);
    // 2 hashing + 16 waiting at a time (the defaults): most of a burst of 400 is shed at once.
    expect(counts[503] ?? 0).toBeGreaterThan(FLOOD / 2);
    // Every shed job is counted: the flood's, and the legitimate login's own tries before it got in.
    expect(await metric('quorumkeep_argon2_jobs_shed_total')).toBe(shedBefore + counts[503]! + (legit.attempts - 1));

    // Nothing was left behind: the node is healthy and a login gets in at its first try again.
    const health = await getJson<{ status: string }>(`${A}/healthz`);
    expect(health.body.status).toBe('ok');
    const after = await login('198.51.100.4');
    expect(after).toMatchObject({ status: 200, attempts: 1 });
  }, TEST_TIMEOUT_MS);
});
