/**
 * Secret routes (docs/http.md, Secrets) through the real app with a stub SecretsService: the shared
 * body-route suite for the session-signed routes (./body-routes.ts), then the operator endpoints
 * under /web2/secret-failures — admin token, 404 when admin is disabled, params and bodies.
 */
import { describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, PRINCIPAL_ID, PUBLIC_KEY_B64, SECRET_FAILURE, SECRET_ID, SECRET_VIEW, SESSION_ADDRESS, useTestServers } from './helpers.ts';
import { describeBodyRoutes, json, post, SERVICE_ERRORS, type BodyRoute } from './body-routes.ts';

const start = useTestServers();

const TS = '1700000000000';
const SIGNATURE = `0x${'ef'.repeat(65)}`;
const signed = (data: string) => ({ data, signature: SIGNATURE });

const ROUTES: BodyRoute[] = [
  {
    path: '/web2/secret',
    service: 'secrets',
    method: 'createSecret',
    body: signed(`-1_0_${SESSION_ADDRESS}_${TS}`),
    args: [signed(`-1_0_${SESSION_ADDRESS}_${TS}`)],
    status: 201,
    response: { success: true, secretId: SECRET_ID, clusterId: 'test-cluster', publicKeyCid: PUBLIC_KEY_B64, status: 'propagating' },
    limits: { data: 4096, signature: 1024 },
  },
  {
    path: '/web2/secrets',
    service: 'secrets',
    method: 'listSecrets',
    body: signed(`-1_${PRINCIPAL_ID}_${SESSION_ADDRESS}_${TS}`),
    args: [signed(`-1_${PRINCIPAL_ID}_${SESSION_ADDRESS}_${TS}`)],
    status: 200,
    response: { success: true, secrets: [SECRET_VIEW] },
    limits: { data: 4096, signature: 1024 },
  },
  {
    path: '/web2/setDelegate',
    service: 'secrets',
    method: 'setDelegate',
    body: signed(`-1_${SECRET_ID}_${SESSION_ADDRESS}_${TS}_principal-0002`),
    args: [signed(`-1_${SECRET_ID}_${SESSION_ADDRESS}_${TS}_principal-0002`)],
    status: 200,
    response: { success: true, secretId: SECRET_ID },
    limits: { data: 4096, signature: 1024 },
  },
];

describeBodyRoutes(ROUTES, start);

describe('session-signed secret routes: specifics', () => {
  it('passes data with an empty delegate part on unchanged', async () => {
    const { url, secrets } = await start();
    const body = signed(`-1_${SECRET_ID}_${SESSION_ADDRESS}_${TS}_`);
    const res = await post(url, '/web2/setDelegate', body);
    expect(res.status).toBe(200);
    expect(secrets.calls).toEqual([{ method: 'setDelegate', args: [body] }]);
  });

  it('lists only the documented fields of each secret', async () => {
    const { url, secrets } = await start();
    secrets.listSecrets = async () => [{ ...SECRET_VIEW, shares: ['s0'], privateKey: 'never' } as typeof SECRET_VIEW];
    const res = await post(url, '/web2/secrets', signed(`-1_${PRINCIPAL_ID}_${SESSION_ADDRESS}_${TS}`));
    expect(await json(res)).toEqual({ success: true, secrets: [SECRET_VIEW] });
  });

  it('answers an empty list as an empty array', async () => {
    const { url, secrets } = await start();
    secrets.listSecrets = async () => [];
    const res = await post(url, '/web2/secrets', signed(`-1_${PRINCIPAL_ID}_${SESSION_ADDRESS}_${TS}`));
    expect(await json(res)).toEqual({ success: true, secrets: [] });
  });
});

const auth = { Authorization: `Bearer ${ADMIN_TOKEN}` };
const FAILURES_PATH = '/web2/secret-failures';
const retryPath = (secretId: string | number) => `${FAILURES_PATH}/${secretId}/retry`;
/** Both operator routes, as one request each with the given headers. */
const OPERATOR_ROUTES: Array<{ name: string; send: (url: string, headers: Record<string, string>) => Promise<Response> }> = [
  { name: `GET ${FAILURES_PATH}`, send: (url, headers) => fetch(`${url}${FAILURES_PATH}`, { headers }) },
  { name: `POST ${retryPath(':secretId')}`, send: (url, headers) => post(url, retryPath(SECRET_ID), {}, headers) },
];

describe('operator endpoints: auth', () => {
  it.each(OPERATOR_ROUTES)('$name answers 404 like any unknown route when no admin token is configured', async (route) => {
    const { url, secrets } = await start({ adminToken: '' });
    const res = await route.send(url, auth);
    expect(res.status).toBe(404);
    expect(await json(res)).toEqual({ error: 'Not found', code: 'NOT_FOUND' });
    expect(secrets.calls).toEqual([]);
  });

  it.each(OPERATOR_ROUTES)('$name answers 401 without the token or with a wrong one', async (route) => {
    const { url, secrets } = await start();
    const wrong: Array<Record<string, string>> = [{}, { Authorization: 'Bearer wrong-token' }, { Authorization: `Basic ${ADMIN_TOKEN}` }, { Authorization: `Bearer ${ADMIN_TOKEN}x` }];
    for (const headers of wrong) {
      const res = await route.send(url, headers);
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toMatch(/^Bearer/);
      expect(await json(res)).toEqual({ error: 'Missing or invalid admin token', code: 'UNAUTHORIZED' });
    }
    expect(secrets.calls).toEqual([]);
  });

  it.each(OPERATOR_ROUTES)('$name maps every AppError to its status and body', async (route) => {
    const { url, secrets } = await start();
    for (const { error, status, body } of SERVICE_ERRORS) {
      secrets.failure = error;
      const res = await route.send(url, auth);
      expect(res.status).toBe(status);
      expect(await json(res)).toEqual(body);
    }
  });
});

describe('GET /web2/secret-failures', () => {
  it('lists the failures with the admin token', async () => {
    const { url, secrets } = await start();
    const res = await fetch(`${url}${FAILURES_PATH}`, { headers: auth });
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual({ success: true, failures: [SECRET_FAILURE] });
    expect(secrets.calls).toEqual([{ method: 'listFailures', args: [] }]);
  });

  it('omits lastAttemptAt before the first retry and answers only the documented fields', async () => {
    const { url, secrets } = await start();
    const { lastAttemptAt: _last, ...fresh } = SECRET_FAILURE;
    secrets.listFailures = async () => [{ ...fresh, shares: ['s1'] } as typeof fresh];
    const res = await fetch(`${url}${FAILURES_PATH}`, { headers: auth });
    expect(await json(res)).toEqual({ success: true, failures: [fresh] });
  });
});

describe('POST /web2/secret-failures/:secretId/retry', () => {
  it('retries the secret named in the path, as the raw string', async () => {
    const { url, secrets } = await start();
    const res = await post(url, retryPath(SECRET_ID), { secretId: 99 }, auth);
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual({ success: true, message: 'Share delivered to every member', stage: 'share-delivery', failedNodeAddresses: [], retryCount: 2 });
    expect(secrets.calls).toEqual([{ method: 'retryFailure', args: [String(SECRET_ID), undefined] }]);
  });

  it('passes a Web3 secret\'s chain from the query on', async () => {
    const { url, secrets } = await start();
    expect((await post(url, `${retryPath(SECRET_ID)}?chainId=8453`, {}, auth)).status).toBe(200);
    expect(secrets.calls).toEqual([{ method: 'retryFailure', args: [String(SECRET_ID), '8453'] }]);
  });

  it('passes odd ids on for the service to refuse, and bounds their length', async () => {
    const { url, secrets } = await start();
    for (const id of ['abc', '-1', '0x07', '%20']) {
      await post(url, retryPath(id), {}, auth);
    }
    expect(secrets.calls.map((call) => call.args[0])).toEqual(['abc', '-1', '0x07', ' ']);
    const long = await post(url, retryPath('9'.repeat(33)), {}, auth);
    expect(long.status).toBe(400);
    expect(await json(long)).toEqual({ error: 'secretId: Too big: expected string to have <=32 characters', code: 'VALIDATION_FAILED' });
    expect(secrets.calls).toHaveLength(4);
  });

  it('answers 405 to GET', async () => {
    const { url } = await start();
    const res = await fetch(`${url}${retryPath(SECRET_ID)}`, { headers: auth });
    expect(res.status).toBe(405);
  });
});
