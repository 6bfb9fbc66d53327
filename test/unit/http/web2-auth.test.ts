/**
 * Web2 account routes (docs/http.md, Web2 accounts, GET /web2/principal/byEmail included) through the real app,
 * with a stub AccountsService: argument passing, status codes, response shapes, input shape checks,
 * error mapping, and a property that no body or query can make the HTTP layer answer 5xx. The POST
 * routes run the shared body-route suite (./body-routes.ts); the route specifics and the GET routes
 * are here.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { EMAIL_HEX, NODE_ADDRESS, PRINCIPAL_ID, useTestServers, type TestServer } from './helpers.ts';
import { describeBodyRoutes, json, post, SERVICE_ERRORS, type BodyRoute } from './body-routes.ts';
import { AppError } from '../../../src/errors/index.ts';

const start = useTestServers();
/** Large enough for the longest valid field (publicKey, 4096 chars). */
const BODY_LIMIT_BYTES = 1024 * 1024;
const startServer = () => start({ bodyLimitBytes: BODY_LIMIT_BYTES });

const EMAIL = 'Alice@Example.com';
const PASSWORD = 'correct horse battery';
const OTP = '123456';
const PUBLIC_KEY = 'ab'.repeat(32);
const SIGNATURE = 'cd'.repeat(64);

const POST_ROUTES: BodyRoute[] = [
  {
    path: '/web2/auth/register',
    service: 'accounts',
    method: 'register',
    body: { email: EMAIL, password: PASSWORD },
    args: [EMAIL, PASSWORD],
    status: 201,
    response: { principalId: PRINCIPAL_ID, message: 'Check your email for a code' },
    limits: { email: 320, password: 1024 },
  },
  {
    path: '/web2/auth/verify-email',
    service: 'accounts',
    method: 'verifyEmail',
    body: { email: EMAIL, otp: OTP },
    args: [EMAIL, OTP],
    status: 200,
    response: { principalId: PRINCIPAL_ID, emailVerified: true },
    limits: { email: 320, otp: 16 },
  },
  {
    path: '/web2/auth/resend-otp',
    service: 'accounts',
    method: 'resendOtp',
    body: { email: EMAIL },
    args: [EMAIL],
    status: 200,
    response: { message: 'If the account exists, a code was sent' },
    limits: { email: 320 },
  },
  {
    path: '/web2/auth/forgot-password',
    service: 'accounts',
    method: 'forgotPassword',
    body: { email: EMAIL },
    args: [EMAIL],
    status: 200,
    response: { message: 'If the account exists, a reset code was sent' },
    limits: { email: 320 },
  },
  {
    path: '/web2/auth/reset-password',
    service: 'accounts',
    method: 'resetPassword',
    body: { email: EMAIL, otp: OTP, newPassword: 'new password 123' },
    args: [EMAIL, OTP, 'new password 123'],
    status: 200,
    response: { message: 'Password updated' },
    limits: { email: 320, otp: 16, newPassword: 1024 },
  },
  {
    path: '/web2/auth/verify-credentials',
    service: 'accounts',
    method: 'verifyCredentials',
    body: { email: EMAIL, password: PASSWORD },
    args: [EMAIL, PASSWORD],
    status: 200,
    response: { valid: true, principalId: PRINCIPAL_ID },
    limits: { email: 320, password: 1024 },
  },
  {
    path: '/web2/auth/register-key',
    service: 'accounts',
    method: 'registerKey',
    body: { principalId: PRINCIPAL_ID, password: PASSWORD, publicKey: PUBLIC_KEY, signature: SIGNATURE },
    args: [PRINCIPAL_ID, PASSWORD, PUBLIC_KEY, SIGNATURE],
    status: 201,
    response: {
      principalId: PRINCIPAL_ID,
      emailHex: EMAIL_HEX,
      nodeRegistrationStatus: 'partial',
      failedNodes: ['0x3333333333333333333333333333333333333333'],
      nodeErrors: { '0x3333333333333333333333333333333333333333': 'timeout' },
    },
    limits: { principalId: 128, password: 1024, publicKey: 4096, signature: 1024 },
  },
  {
    path: '/web2/auth/retry-node-registration',
    service: 'accounts',
    method: 'retryNodeRegistration',
    body: { principalId: PRINCIPAL_ID },
    args: [PRINCIPAL_ID],
    status: 200,
    response: { principalId: PRINCIPAL_ID, nodeRegistrationStatus: 'complete', failedNodes: [], message: 'Key stored on every member' },
    limits: { principalId: 128 },
  },
  {
    path: '/web2/auth/request-deletion',
    service: 'accounts',
    method: 'requestDeletion',
    body: { email: EMAIL, password: PASSWORD, principalId: PRINCIPAL_ID },
    args: [EMAIL, PASSWORD, PRINCIPAL_ID],
    status: 200,
    response: { message: 'If the details match, a code was sent' },
    limits: { email: 320, password: 1024, principalId: 128 },
  },
  {
    path: '/web2/auth/confirm-deletion',
    service: 'accounts',
    method: 'confirmDeletion',
    body: { email: EMAIL, otp: OTP },
    args: [EMAIL, OTP],
    status: 200,
    response: { success: true, message: 'Account deleted' },
    limits: { email: 320, otp: 16 },
  },
];

/** The GET routes as one request with a valid input (the POST routes are in POST_ROUTES). */
const GET_ROUTES: Array<{ name: string; send: (url: string) => Promise<Response> }> = [
  { name: 'GET /web2/auth/node-registration-status', send: (url: string) => fetch(`${url}/web2/auth/node-registration-status?principalId=${PRINCIPAL_ID}`) },
  { name: 'GET /web2/principal/byEmail', send: (url: string) => fetch(`${url}/web2/principal/byEmail?emailHex=${EMAIL_HEX}`) },
];

describeBodyRoutes(POST_ROUTES, start);

describe('POST routes: route specifics', () => {
  it('register answers 200 when the service renewed an unverified registration', async () => {
    const { url, accounts } = await startServer();
    accounts.created = false;
    const res = await post(url, '/web2/auth/register', { email: EMAIL, password: PASSWORD });
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual({ principalId: PRINCIPAL_ID, message: 'Check your email for a code' });
  });

  it('register passes short passwords and odd emails on: those rules are the service’s', async () => {
    const { url, accounts } = await startServer();
    const res = await post(url, '/web2/auth/register', { email: '  no-at-sign ', password: '' });
    expect(res.status).toBe(201);
    expect(accounts.calls).toEqual([{ method: 'register', args: ['  no-at-sign ', ''] }]);
  });

  it('retry-node-registration omits message when the service gives none', async () => {
    const { url, accounts } = await startServer();
    accounts.retryNodeRegistration = async (principalId) => {
      accounts.calls.push({ method: 'retryNodeRegistration', args: [principalId] });
      return { principalId, nodeRegistrationStatus: 'pending', failedNodes: ['0x2222222222222222222222222222222222222222'] };
    };
    const res = await post(url, '/web2/auth/retry-node-registration', { principalId: PRINCIPAL_ID });
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual({ principalId: PRINCIPAL_ID, nodeRegistrationStatus: 'pending', failedNodes: ['0x2222222222222222222222222222222222222222'] });
  });

  it('verify-credentials passes PASSWORD_RESET_REQUIRED on as 403 with its code', async () => {
    const { url, accounts } = await startServer();
    accounts.verifyCredentials = async () => {
      throw new AppError('PASSWORD_RESET_REQUIRED', 'A password reset is required');
    };
    const res = await post(url, '/web2/auth/verify-credentials', { email: EMAIL, password: PASSWORD });
    expect(res.status).toBe(403);
    expect(await json(res)).toEqual({ error: 'A password reset is required', code: 'PASSWORD_RESET_REQUIRED' });
  });

  it('answers only the documented fields, whatever else the service returns', async () => {
    const { url, accounts } = await startServer();
    const leaky = { created: true, principalId: PRINCIPAL_ID, message: 'ok', passwordHash: 'argon2id$…', otp: '123456' };
    accounts.register = async () => leaky;
    const res = await post(url, '/web2/auth/register', { email: EMAIL, password: PASSWORD });
    expect(await json(res)).toEqual({ principalId: PRINCIPAL_ID, message: 'ok' });
  });
});

describe('GET /web2/auth/node-registration-status', () => {
  const path = '/web2/auth/node-registration-status';

  it('calls nodeRegistrationStatus with the principal id and answers the view', async () => {
    const { url, accounts } = await startServer();
    const res = await fetch(`${url}${path}?principalId=${PRINCIPAL_ID}&extra=1`);
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual({
      principalId: PRINCIPAL_ID,
      nodeRegistrationStatus: 'partial',
      successNodes: [NODE_ADDRESS, '0x2222222222222222222222222222222222222222'],
      failedNodes: ['0x3333333333333333333333333333333333333333'],
    });
    expect(accounts.calls).toEqual([{ method: 'nodeRegistrationStatus', args: [PRINCIPAL_ID] }]);
  });

  it('rejects a missing, repeated or too long principalId with 400 naming it', async () => {
    const { url, accounts } = await startServer();
    const cases: Array<[string, string]> = [
      ['', 'principalId: Required'],
      ['?principalid=x', 'principalId: Required'],
      ['?principalId=a&principalId=b', 'principalId: Expected string'],
      [`?principalId=${'p'.repeat(129)}`, 'principalId: Too big: expected string to have <=128 characters'],
    ];
    for (const [query, error] of cases) {
      const res = await fetch(`${url}${path}${query}`);
      expect(res.status).toBe(400);
      expect(await json(res)).toEqual({ error, code: 'VALIDATION_FAILED' });
    }
    expect(accounts.calls).toEqual([]);
    const longest = await fetch(`${url}${path}?principalId=${'p'.repeat(128)}`);
    expect(longest.status).toBe(200);
  });

  it('answers 405 to POST', async () => {
    const { url } = await startServer();
    const res = await post(url, path, { principalId: PRINCIPAL_ID });
    expect(res.status).toBe(405);
    expect((await json(res))['code']).toBe('METHOD_NOT_ALLOWED');
  });
});

describe('GET /web2/principal/byEmail', () => {
  const path = '/web2/principal/byEmail';

  it('looks up by emailHex, either case', async () => {
    const { url, accounts } = await startServer();
    for (const hex of [EMAIL_HEX, EMAIL_HEX.toUpperCase()]) {
      const res = await fetch(`${url}${path}?emailHex=${hex}`);
      expect(res.status).toBe(200);
      expect(await json(res)).toEqual({ principalId: PRINCIPAL_ID, emailHex: EMAIL_HEX });
    }
    expect(accounts.calls).toEqual([
      { method: 'findByEmail', args: [{ emailHex: EMAIL_HEX }] },
      { method: 'findByEmail', args: [{ emailHex: EMAIL_HEX.toUpperCase() }] },
    ]);
  });

  it('looks up by plain email (SDK 0.5.x), passed on as given', async () => {
    const { url, accounts } = await startServer();
    const res = await fetch(`${url}${path}?email=${encodeURIComponent(' Alice+x@Example.com ')}`);
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual({ principalId: PRINCIPAL_ID, emailHex: EMAIL_HEX });
    expect(accounts.calls).toEqual([{ method: 'findByEmail', args: [{ email: ' Alice+x@Example.com ' }] }]);
  });

  it('passes both forms on when both are given', async () => {
    const { url, accounts } = await startServer();
    const res = await fetch(`${url}${path}?email=alice%40example.com&emailHex=${EMAIL_HEX}`);
    expect(res.status).toBe(200);
    expect(accounts.calls).toEqual([{ method: 'findByEmail', args: [{ emailHex: EMAIL_HEX, email: 'alice@example.com' }] }]);
  });

  it('answers 400 when neither is given', async () => {
    const { url, accounts } = await startServer();
    for (const query of ['', '?', '?mail=a%40b.c', '?emailhex=00']) {
      const res = await fetch(`${url}${path}${query}`);
      expect(res.status).toBe(400);
      expect(await json(res)).toEqual({ error: 'emailHex or email is required', code: 'VALIDATION_FAILED' });
    }
    expect(accounts.calls).toEqual([]);
  });

  it('answers 400 naming emailHex when it is not whole bytes of hex or too long', async () => {
    const { url, accounts } = await startServer();
    for (const hex of ['', 'a', 'abc', 'zz', '0x61', '61 62', 'g1', '６１']) {
      const res = await fetch(`${url}${path}?emailHex=${encodeURIComponent(hex)}`);
      expect(res.status).toBe(400);
      expect(await json(res)).toEqual({ error: 'emailHex: must be an even number of hex characters', code: 'VALIDATION_FAILED' });
    }
    const long = await fetch(`${url}${path}?emailHex=${'61'.repeat(513)}`);
    expect(long.status).toBe(400);
    expect((await json(long))['error']).toMatch(/^emailHex: Too big/);
    const repeated = await fetch(`${url}${path}?emailHex=61&emailHex=62`);
    expect(await json(repeated)).toEqual({ error: 'emailHex: Expected string', code: 'VALIDATION_FAILED' });
    const longEmail = await fetch(`${url}${path}?email=${'e'.repeat(321)}`);
    expect((await json(longEmail))['error']).toMatch(/^email: Too big/);
    expect(accounts.calls).toEqual([]);
    const longest = await fetch(`${url}${path}?emailHex=${'61'.repeat(512)}`);
    expect(longest.status).toBe(200);
  });
});

describe('service errors', () => {
  it.each(GET_ROUTES)('$name maps every AppError to its status and body', async (route) => {
    const { url, accounts } = await startServer();
    for (const { error, status, body } of SERVICE_ERRORS) {
      accounts.failure = error;
      const res = await route.send(url);
      expect(res.status).toBe(status);
      expect(res.headers.get('x-request-id')).toMatch(/^[0-9a-f]{32}$/);
      expect(await json(res)).toEqual(body);
    }
    expect(accounts.calls).toHaveLength(SERVICE_ERRORS.length);
  });

  it('logs an unexpected error once and never logs the submitted password', async () => {
    const server: TestServer = await startServer();
    server.accounts.failure = new Error('boom');
    const res = await post(server.url, '/web2/auth/verify-credentials', { email: EMAIL, password: 'hunter2-very-secret' });
    expect(res.status).toBe(500);
    const errors = server.logLines().filter((line) => line['msg'] === 'unhandled error');
    expect(errors).toHaveLength(1);
    expect(server.logText()).not.toContain('hunter2-very-secret');
  });
});

describe('arbitrary input', () => {
  it('never answers 5xx to a GET query string', async () => {
    const { url, accounts } = await startServer();
    accounts.failure = new AppError('BAD_REQUEST', 'Refused by stub');
    const paths = ['/web2/auth/node-registration-status', '/web2/principal/byEmail'];
    const params = fc.array(fc.tuple(fc.oneof(fc.constantFrom('principalId', 'emailHex', 'email', '__proto__', 'constructor'), fc.string()), fc.string({ maxLength: 2000 })), {
      maxLength: 6,
    });
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...paths), params, async (path, entries) => {
        const res = await fetch(`${url}${path}?${new URLSearchParams(entries).toString()}`);
        expect(res.status).toBeGreaterThanOrEqual(400);
        expect(res.status).toBeLessThan(500);
        const body = await json(res);
        expect(typeof body['error']).toBe('string');
        expect(typeof body['code']).toBe('string');
      }),
      { numRuns: 200 },
    );
  });
});
