/**
 * Session routes (docs/http.md, Sessions) through the real app with a stub SessionsService: the shared
 * body-route suite (./body-routes.ts), then what is particular to these routes — the timestamp and
 * ttl forms deployed SDKs send, and the response carrying only the documented fields.
 */
import { describe, expect, it } from 'vitest';
import { EXPIRES_AT, NODE_ADDRESS, PRINCIPAL_ID, QUORUM_PROOF, SESSION_ADDRESS, SESSION_TOKEN, useTestServers } from './helpers.ts';
import { describeBodyRoutes, json, post, type BodyRoute } from './body-routes.ts';
import { AppError } from '../../../src/errors/index.ts';

const start = useTestServers();

const TIMESTAMP = '1700000000000';
const ED25519_SIGNATURE = 'cd'.repeat(64);
const DATA = `-1_0_${SESSION_ADDRESS}_${TIMESTAMP}`;
const EIP191_SIGNATURE = `0x${'ef'.repeat(65)}`;

const CREATE_BODY = { principalId: PRINCIPAL_ID, timestamp: TIMESTAMP, signature: ED25519_SIGNATURE, sessionAddress: SESSION_ADDRESS, ttl: 900000 };

const ROUTES: BodyRoute[] = [
  {
    path: '/web2/session',
    service: 'sessions',
    method: 'createSession',
    body: CREATE_BODY,
    args: [CREATE_BODY],
    status: 201,
    response: {
      sessionToken: SESSION_TOKEN,
      sessionAddress: SESSION_ADDRESS,
      quorumProof: QUORUM_PROOF,
      expiresAt: EXPIRES_AT,
    },
    limits: { principalId: 128, timestamp: 32, signature: 1024, sessionAddress: 128 },
    numeric: ['timestamp'],
  },
  {
    path: '/web2/session/status',
    service: 'sessions',
    method: 'sessionStatus',
    body: { data: DATA, signature: EIP191_SIGNATURE },
    args: [{ data: DATA, signature: EIP191_SIGNATURE }],
    status: 200,
    response: { active: true, principalId: PRINCIPAL_ID, sessionAddress: SESSION_ADDRESS, expiresAt: EXPIRES_AT },
    limits: { data: 4096, signature: 1024 },
  },
];

describeBodyRoutes(ROUTES, start);

describe('POST /web2/session', () => {
  const path = '/web2/session';

  it('passes a JSON-number timestamp on as its decimal string', async () => {
    const { url, sessions } = await start();
    const res = await post(url, path, { ...CREATE_BODY, timestamp: 1700000000000 });
    expect(res.status).toBe(201);
    expect(sessions.calls).toEqual([{ method: 'createSession', args: [CREATE_BODY] }]);
  });

  it('passes the timestamp string on as sent: its meaning is the service’s', async () => {
    const { url, sessions } = await start();
    for (const timestamp of ['', 'yesterday', '01700000000000', '-5']) {
      await post(url, path, { ...CREATE_BODY, timestamp });
    }
    expect(sessions.calls.map((call) => (call.args[0] as { timestamp: string }).timestamp)).toEqual(['', 'yesterday', '01700000000000', '-5']);
  });

  it('omits ttl when absent, so the service signs and defaults without it', async () => {
    const { url, sessions } = await start();
    const { ttl: _ttl, ...withoutTtl } = CREATE_BODY;
    const res = await post(url, path, withoutTtl);
    expect(res.status).toBe(201);
    expect(sessions.calls).toEqual([{ method: 'createSession', args: [withoutTtl] }]);
    expect(Object.keys(sessions.calls[0]?.args[0] as object)).not.toContain('ttl');
  });

  it('accepts ttl as a number or a decimal string and passes a number', async () => {
    const { url, sessions } = await start();
    for (const ttl of [60000, '60000', '2592000000', 0, '0', 1.5, -1]) {
      const res = await post(url, path, { ...CREATE_BODY, ttl });
      expect(res.status).toBe(201);
    }
    expect(sessions.calls.map((call) => (call.args[0] as { ttl: number }).ttl)).toEqual([60000, 60000, 2592000000, 0, 0, 1.5, -1]);
  });

  it('rejects a ttl that is neither a number nor a canonical decimal string with 400 naming it', async () => {
    const { url, sessions } = await start();
    for (const ttl of ['', 'abc', '1e5', '0x10', ' 60000', '060000', '-60000', '1.5', '9'.repeat(16), null, true, [], {}]) {
      const res = await post(url, path, { ...CREATE_BODY, ttl });
      expect(res.status).toBe(400);
      expect(await json(res)).toEqual({ error: 'ttl: Expected number or decimal string', code: 'VALIDATION_FAILED' });
    }
    expect(sessions.calls).toEqual([]);
  });

  it('answers only the documented fields, whatever else the service returns', async () => {
    const { url, sessions } = await start();
    sessions.createSession = async () => ({
      sessionToken: SESSION_TOKEN,
      sessionAddress: SESSION_ADDRESS,
      quorumProof: [{ nodeAddress: NODE_ADDRESS, signature: '0x11', share: 'secret' } as { nodeAddress: string; signature: string }],
      expiresAt: EXPIRES_AT,
      grant: { principalId: PRINCIPAL_ID },
    } as Awaited<ReturnType<typeof sessions.createSession>>);
    const res = await post(url, path, CREATE_BODY);
    expect(await json(res)).toEqual({ sessionToken: SESSION_TOKEN, sessionAddress: SESSION_ADDRESS, quorumProof: [{ nodeAddress: NODE_ADDRESS, signature: '0x11' }], expiresAt: EXPIRES_AT });
  });
});

describe('POST /web2/session/status', () => {
  it('answers the service’s 401 for an inactive session, not a 200', async () => {
    const { url, sessions } = await start();
    sessions.failure = new AppError('SESSION_INACTIVE', 'Session inactive');
    const res = await post(url, '/web2/session/status', { data: DATA, signature: EIP191_SIGNATURE });
    expect(res.status).toBe(401);
    expect(await json(res)).toEqual({ error: 'Session inactive', code: 'SESSION_INACTIVE' });
  });

  it('answers 405 to GET', async () => {
    const { url } = await start();
    const res = await fetch(`${url}/web2/session/status`);
    expect(res.status).toBe(405);
  });
});
