/**
 * Usage routes (docs/http.md, Usage — POST /jobs/dataConsumption; the operator's plan assignment) through
 * the real app with a stub UsageService: the shared body-route suite, the report's fields in both
 * spellings and never a `wallet`, the route not shadowed by the jobs routes, and the admin token.
 */
import { describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, PRINCIPAL_ID, USAGE_REPORT, useTestServers } from './helpers.ts';
import { describeBodyRoutes, json, post, type BodyRoute } from './body-routes.ts';

const start = useTestServers();

const DATA = '-1_0_0x5e55105e55105e55105e55105e55105e55105e55_1700000000000';
const SIGNATURE = `0x${'ef'.repeat(65)}`;

const EXPECTED_REPORT = {
  success: true,
  userId: PRINCIPAL_ID,
  userType: 'web2',
  planId: 'free',
  cycleType: 'monthly',
  periodStart: '1698796800000',
  periodEnd: '1701388800000',
  encryption: USAGE_REPORT.encryption,
  decryption: USAGE_REPORT.decryption,
  user_id: PRINCIPAL_ID,
  user_type: 'web2',
  plan_id: 'free',
  cycle_type: 'monthly',
  period_start: '1698796800000',
  period_end: '1701388800000',
};

const ROUTES: BodyRoute[] = [
  {
    path: '/jobs/dataConsumption',
    service: 'usage',
    method: 'report',
    body: { data: DATA, signature: SIGNATURE },
    args: [{ data: DATA, signature: SIGNATURE }],
    status: 200,
    response: EXPECTED_REPORT,
    limits: { data: 4096, signature: 1024 },
  },
];

describeBodyRoutes(ROUTES, start);

describe('POST /jobs/dataConsumption', () => {
  it('answers both spellings, in order, and nothing else (no wallet)', async () => {
    const { url } = await start();
    const body = await json(await post(url, '/jobs/dataConsumption', { data: DATA, signature: SIGNATURE }));
    expect(Object.keys(body)).toEqual(Object.keys(EXPECTED_REPORT));
    expect(Object.keys(body.encryption as object)).toEqual(['limit', 'used', 'remaining', 'count', 'requestLimit', 'rateLimit', 'limitGB', 'usedGB', 'remainingGB']);
    expect(JSON.stringify(body)).not.toMatch(/wallet/i);
  });

  it('is its own route: not the job list, not a job id', async () => {
    const { url, usage } = await start();
    const res = await post(url, '/jobs/dataConsumption', { data: DATA, signature: SIGNATURE });
    expect(res.status).toBe(200);
    expect(usage.calls.map((c) => c.method)).toEqual(['report']);
    // Another method on the path is a 405 naming POST, not a job lookup.
    const get = await fetch(`${url}/jobs/dataConsumption`);
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toContain('POST');
  });
});

describe('plan assignment (admin)', () => {
  it('needs the admin token', async () => {
    const { url, usage } = await start();
    const res = await post(url, '/admin/usage/plan', { principalId: PRINCIPAL_ID, planId: 'gold' });
    expect(res.status).toBe(401);
    const read = await fetch(`${url}/admin/usage/plan/${PRINCIPAL_ID}`);
    expect(read.status).toBe(401);
    expect(usage.calls).toEqual([]);
  });

  it('assigns and reads a plan', async () => {
    const { url, usage } = await start();
    const auth = { Authorization: `Bearer ${ADMIN_TOKEN}` };
    const res = await post(url, '/admin/usage/plan', { principalId: PRINCIPAL_ID, planId: 'gold' }, auth);
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual({ principalId: PRINCIPAL_ID, planId: 'gold', assigned: true, assignedAt: '2023-11-14T22:13:20.000Z' });
    const read = await fetch(`${url}/admin/usage/plan/${PRINCIPAL_ID}`, { headers: auth });
    expect(await json(read)).toEqual({ principalId: PRINCIPAL_ID, planId: 'free', assigned: false, assignedAt: null });
    expect(usage.calls).toEqual([
      { method: 'assignPlan', args: [PRINCIPAL_ID, 'gold'] },
      { method: 'planOf', args: [PRINCIPAL_ID] },
    ]);
    const missing = await post(url, '/admin/usage/plan', { principalId: PRINCIPAL_ID }, auth);
    expect(await json(missing)).toEqual({ error: 'planId: Required', code: 'VALIDATION_FAILED' });
  });

  it('is not served without an admin token', async () => {
    const { url } = await start({ adminToken: '' });
    const res = await post(url, '/admin/usage/plan', { principalId: PRINCIPAL_ID, planId: 'gold' });
    expect(res.status).toBe(404);
  });
});
