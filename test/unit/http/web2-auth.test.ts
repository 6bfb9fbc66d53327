/**
 * Web2 account routes (API.md, Web2 accounts and GET /web2/principal/byEmail) through the real app,
 * with a stub AccountsService: argument passing, status codes, response shapes, input shape checks,
 * error mapping, and a property that no body can make the HTTP layer answer 5xx.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { EMAIL_HEX, NODE_ADDRESS, PRINCIPAL_ID, useTestServers, type TestServer } from './helpers.ts';
import { AppError, QuorumError } from '../../../src/errors/index.ts';
import type { AccountsService } from '../../../src/core/accounts/types.ts';

const start = useTestServers();
/** Large enough for the longest valid field (publicKey, 4096 chars) and the 200 KB fuzz strings. */
const BODY_LIMIT_BYTES = 1024 * 1024;
const startServer = () => start({ bodyLimitBytes: BODY_LIMIT_BYTES });

const EMAIL = 'Alice@Example.com';
const PASSWORD = 'correct horse battery';
const OTP = '123456';
const PUBLIC_KEY = 'ab'.repeat(32);
const SIGNATURE = 'cd'.repeat(64);

type Json = Record<string, unknown>;

function post(url: string, path: string, body: unknown): Promise<Response> {
  return postRaw(url, path, JSON.stringify(body));
}

function postRaw(url: string, path: string, text: string): Promise<Response> {
  return fetch(`${url}${path}`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: text });
}

async function json(res: Response): Promise<Json> {
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  return (await res.json()) as Json;
}

/** One body route: a valid body, the call it must make, and its answer with the stub's defaults. */
interface PostRoute {
  path: string;
  method: keyof AccountsService;
  body: Record<string, string>;
  args: string[];
  status: number;
  response: Json;
  /** Max length of each body field. */
  limits: Record<string, number>;
}

const POST_ROUTES: PostRoute[] = [
  {
    path: '/web2/auth/register',
    method: 'register',
    body: { email: EMAIL, password: PASSWORD },
    args: [EMAIL, PASSWORD],
    status: 201,
    response: { principalId: PRINCIPAL_ID, message: 'Check your email for a code' },
    limits: { email: 320, password: 1024 },
  },
  {
    path: '/web2/auth/verify-email',
    method: 'verifyEmail',
    body: { email: EMAIL, otp: OTP },
    args: [EMAIL, OTP],
    status: 200,
    response: { principalId: PRINCIPAL_ID, emailVerified: true },
    limits: { email: 320, otp: 16 },
  },
  {
    path: '/web2/auth/resend-otp',
    method: 'resendOtp',
    body: { email: EMAIL },
    args: [EMAIL],
    status: 200,
    response: { message: 'If the account exists, a code was sent' },
    limits: { email: 320 },
  },
  {
    path: '/web2/auth/forgot-password',
    method: 'forgotPassword',
    body: { email: EMAIL },
    args: [EMAIL],
    status: 200,
    response: { message: 'If the account exists, a reset code was sent' },
    limits: { email: 320 },
  },
  {
    path: '/web2/auth/reset-password',
    method: 'resetPassword',
    body: { email: EMAIL, otp: OTP, newPassword: 'new password 123' },
    args: [EMAIL, OTP, 'new password 123'],
    status: 200,
    response: { message: 'Password updated' },
    limits: { email: 320, otp: 16, newPassword: 1024 },
  },
  {
    path: '/web2/auth/verify-credentials',
    method: 'verifyCredentials',
    body: { email: EMAIL, password: PASSWORD },
    args: [EMAIL, PASSWORD],
    status: 200,
    response: { valid: true, principalId: PRINCIPAL_ID },
    limits: { email: 320, password: 1024 },
  },
  {
    path: '/web2/auth/register-key',
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
    method: 'retryNodeRegistration',
    body: { principalId: PRINCIPAL_ID },
    args: [PRINCIPAL_ID],
    status: 200,
    response: { principalId: PRINCIPAL_ID, nodeRegistrationStatus: 'complete', failedNodes: [], message: 'Key stored on every member' },
    limits: { principalId: 128 },
  },
  {
    path: '/web2/auth/request-deletion',
    method: 'requestDeletion',
    body: { email: EMAIL, password: PASSWORD, principalId: PRINCIPAL_ID },
    args: [EMAIL, PASSWORD, PRINCIPAL_ID],
    status: 200,
    response: { message: 'If the details match, a code was sent' },
    limits: { email: 320, password: 1024, principalId: 128 },
  },
  {
    path: '/web2/auth/confirm-deletion',
    method: 'confirmDeletion',
    body: { email: EMAIL, otp: OTP },
    args: [EMAIL, OTP],
    status: 200,
    response: { success: true, message: 'Account deleted' },
    limits: { email: 320, otp: 16 },
  },
];

/** Values of every JSON type but string. */
const NON_STRINGS: unknown[] = [1, 0, true, false, null, [], ['a'], {}, { a: 'b' }];

/** Errors the service may throw, and the exact response each must become. */
const SERVICE_ERRORS: Array<{ error: Error; status: number; body: Json }> = [
  { error: new AppError('BAD_REQUEST', 'Invalid email'), status: 400, body: { error: 'Invalid email', code: 'BAD_REQUEST' } },
  { error: new AppError('UNAUTHORIZED', 'Invalid or expired code'), status: 401, body: { error: 'Invalid or expired code', code: 'UNAUTHORIZED' } },
  { error: new AppError('FORBIDDEN', 'Email not verified'), status: 403, body: { error: 'Email not verified', code: 'FORBIDDEN' } },
  { error: new AppError('NOT_FOUND', 'Account not found'), status: 404, body: { error: 'Account not found', code: 'NOT_FOUND' } },
  {
    error: new AppError('CONFLICT', 'Key registration failed', { nodeRegistrationStatus: 'failed', failedNodes: ['0x2222222222222222222222222222222222222222'] }),
    status: 409,
    body: { error: 'Key registration failed', code: 'CONFLICT', nodeRegistrationStatus: 'failed', failedNodes: ['0x2222222222222222222222222222222222222222'] },
  },
  {
    error: new AppError('RATE_LIMITED', 'Please wait before requesting another code', { retryAfterSeconds: 42 }),
    status: 429,
    body: { error: 'Please wait before requesting another code', code: 'RATE_LIMITED', retryAfterSeconds: 42 },
  },
  {
    error: new QuorumError('Quorum not reached (1 of 2 acks)', [NODE_ADDRESS], [{ nodeAddress: '0x3333333333333333333333333333333333333333', slot: 2, error: 'timeout' }]),
    status: 503,
    body: { error: 'Quorum not reached (1 of 2 acks)', code: 'QUORUM_UNAVAILABLE', failedNodes: ['0x3333333333333333333333333333333333333333'] },
  },
  { error: new AppError('SLOT0_UNAVAILABLE', 'Creator unreachable'), status: 503, body: { error: 'Creator unreachable', code: 'SLOT0_UNAVAILABLE' } },
  // A bug in the service: generic 500, nothing of the error exposed.
  { error: new Error('db exploded: /var/lib/secret'), status: 500, body: { error: 'Internal error', code: 'INTERNAL' } },
];

/** Every route as one request with a valid input, for the tables that apply to all of them. */
const ALL_ROUTES: Array<{ name: string; send: (url: string) => Promise<Response> }> = [
  ...POST_ROUTES.map((route) => ({ name: `POST ${route.path}`, send: (url: string) => post(url, route.path, route.body) })),
  { name: 'GET /web2/auth/node-registration-status', send: (url: string) => fetch(`${url}/web2/auth/node-registration-status?principalId=${PRINCIPAL_ID}`) },
  { name: 'GET /web2/principal/byEmail', send: (url: string) => fetch(`${url}/web2/principal/byEmail?emailHex=${EMAIL_HEX}`) },
];

describe('POST routes: success', () => {
  it.each(POST_ROUTES)('$path calls $method with the parsed fields and answers $status', async (route) => {
    const { url, accounts } = await startServer();
    const res = await post(url, route.path, route.body);
    expect(res.status).toBe(route.status);
    expect(await json(res)).toEqual(route.response);
    expect(accounts.calls).toEqual([{ method: route.method, args: route.args }]);
  });

  it.each(POST_ROUTES)('$path ignores unknown fields and passes no object on', async (route) => {
    const { url, accounts } = await startServer();
    const text = JSON.stringify({ ...route.body, sdkVersion: '0.5.6', nested: { deep: [1] } }).replace(/}$/, ',"__proto__":{"polluted":true},"constructor":{"prototype":{"polluted":true}}}');
    const res = await postRaw(url, route.path, text);
    expect(res.status).toBe(route.status);
    expect(accounts.calls).toEqual([{ method: route.method, args: route.args }]);
    expect(({} as Json)['polluted']).toBeUndefined();
  });

  it.each(POST_ROUTES)('$path accepts every field at its maximum length', async (route) => {
    const { url, accounts } = await startServer();
    const body = Object.fromEntries(Object.entries(route.limits).map(([field, max]) => [field, 'x'.repeat(max)]));
    const res = await post(url, route.path, body);
    expect(res.status).toBe(route.status);
    expect(accounts.calls[0]?.args).toEqual(route.args.map(() => expect.stringMatching(/^x+$/)));
  });

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

  it('answers only the documented fields, whatever else the service returns', async () => {
    const { url, accounts } = await startServer();
    const leaky = { created: true, principalId: PRINCIPAL_ID, message: 'ok', passwordHash: 'argon2id$…', otp: '123456' };
    accounts.register = async () => leaky;
    const res = await post(url, '/web2/auth/register', { email: EMAIL, password: PASSWORD });
    expect(await json(res)).toEqual({ principalId: PRINCIPAL_ID, message: 'ok' });
  });
});

describe('POST routes: input shapes', () => {
  it.each(POST_ROUTES)('$path: a missing field is 400 "<field>: Required"', async (route) => {
    const { url, accounts } = await startServer();
    for (const field of Object.keys(route.limits)) {
      const body: Json = { ...route.body };
      delete body[field];
      const res = await post(url, route.path, body);
      expect(res.status).toBe(400);
      expect(await json(res)).toEqual({ error: `${field}: Required`, code: 'VALIDATION_FAILED' });
    }
    // An empty body is `{}`: the first field is named.
    const empty = await postRaw(url, route.path, '');
    expect(empty.status).toBe(400);
    expect(await json(empty)).toEqual({ error: `${Object.keys(route.limits)[0]}: Required`, code: 'VALIDATION_FAILED' });
    expect(accounts.calls).toEqual([]);
  });

  it.each(POST_ROUTES)('$path: a field of another type is 400 "<field>: Expected string"', async (route) => {
    const { url, accounts } = await startServer();
    for (const field of Object.keys(route.limits)) {
      for (const value of NON_STRINGS) {
        const res = await post(url, route.path, { ...route.body, [field]: value });
        expect(res.status).toBe(400);
        expect(await json(res)).toEqual({ error: `${field}: Expected string`, code: 'VALIDATION_FAILED' });
      }
    }
    expect(accounts.calls).toEqual([]);
  });

  it.each(POST_ROUTES)('$path: a field over its limit is 400 naming the field', async (route) => {
    const { url, accounts } = await startServer();
    for (const [field, max] of Object.entries(route.limits)) {
      const res = await post(url, route.path, { ...route.body, [field]: 'x'.repeat(max + 1) });
      expect(res.status).toBe(400);
      const body = await json(res);
      expect(body['code']).toBe('VALIDATION_FAILED');
      expect(body['error']).toBe(`${field}: Too big: expected string to have <=${max} characters`);
    }
    expect(accounts.calls).toEqual([]);
  });

  it.each(POST_ROUTES)('$path: a __proto__ key cannot supply the fields', async (route) => {
    const { url, accounts } = await startServer();
    const res = await postRaw(url, route.path, `{"__proto__":${JSON.stringify(route.body)}}`);
    expect(res.status).toBe(400);
    expect(await json(res)).toEqual({ error: `${Object.keys(route.limits)[0]}: Required`, code: 'VALIDATION_FAILED' });
    expect(accounts.calls).toEqual([]);
  });

  it.each(POST_ROUTES)('$path: a body that is not a JSON object is 400', async (route) => {
    const { url, accounts } = await startServer();
    for (const text of ['[]', '"x"', '1', 'null', '{"email":']) {
      const res = await postRaw(url, route.path, text);
      expect(res.status).toBe(400);
      expect((await json(res))['code']).toMatch(/^(VALIDATION_FAILED|INVALID_JSON)$/);
    }
    expect(accounts.calls).toEqual([]);
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
  it.each(ALL_ROUTES)('$name maps every AppError to its status and body', async (route) => {
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
  const FIELD_NAMES = ['email', 'password', 'otp', 'newPassword', 'principalId', 'publicKey', 'signature'];
  const key = fc.oneof(
    fc.constantFrom(...FIELD_NAMES, '__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', '__defineGetter__', ''),
    fc.string({ maxLength: 20 }),
  );
  /** Strings up to 200 KB, built by repetition (generating them char by char is slow). */
  const hugeString = fc
    .tuple(fc.string({ unit: 'binary', minLength: 1, maxLength: 8 }), fc.integer({ min: 1, max: 200_000 }))
    .map(([unit, length]) => unit.repeat(Math.ceil(length / unit.length)).slice(0, length));
  /** JSON text nested `depth` levels deep, arrays and objects mixed. */
  const deepJson = fc.tuple(fc.integer({ min: 1, max: 5_000 }), fc.boolean()).map(([depth, objects]) =>
    objects ? '{"a":'.repeat(depth) + '1' + '}'.repeat(depth) : '['.repeat(depth) + ']'.repeat(depth),
  );
  const valueText = fc.oneof(
    fc.jsonValue().map((value) => JSON.stringify(value)),
    fc.string().map((value) => JSON.stringify(value)),
    hugeString.map((value) => JSON.stringify(value)),
    deepJson,
  );
  // Objects are written as text so `__proto__` arrives as a literal key, as an attacker would send it.
  const objectText = fc
    .array(fc.tuple(key, valueText), { maxLength: 8 })
    .map((entries) => `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(',')}}`);
  const bodyText = fc.oneof(
    { weight: 4, arbitrary: objectText },
    { weight: 1, arbitrary: fc.jsonValue().map((value) => JSON.stringify(value)) },
    { weight: 1, arbitrary: deepJson },
  );

  it('never answers 5xx to a POST body, and every error is JSON with error and code', async () => {
    // Room for 8 fields of 200 K escaped characters: the property is about parsing, not the 413.
    const { url, accounts } = await start({ bodyLimitBytes: 16 * 1024 * 1024 });
    // The property is about the HTTP layer: whatever reaches the service is refused as bad input.
    accounts.failure = new AppError('BAD_REQUEST', 'Refused by stub');
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...POST_ROUTES), bodyText, async (route, text) => {
        const before = accounts.calls.length;
        const res = await postRaw(url, route.path, text);
        expect(res.status).toBeGreaterThanOrEqual(400);
        expect(res.status).toBeLessThan(500);
        const body = await json(res);
        expect(typeof body['error']).toBe('string');
        expect(typeof body['code']).toBe('string');
        // Anything that reached the service was exactly the route's fields, as strings.
        for (const call of accounts.calls.slice(before)) {
          expect(call.method).toBe(route.method);
          expect(call.args).toHaveLength(route.args.length);
          for (const arg of call.args) expect(typeof arg).toBe('string');
        }
        expect(({} as Json)['polluted']).toBeUndefined();
      }),
      { numRuns: 300 },
    );
  });

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
