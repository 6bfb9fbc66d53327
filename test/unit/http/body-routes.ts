/**
 * The checks every JSON-body route shares, as one table-driven suite: the right service call with
 * the right named values, the status and body, shape errors naming the field (missing, another
 * JSON type, too long), unknown and `__proto__` keys reaching nothing, bodies that are not objects,
 * AppErrors mapped to their status, and a property that no body makes the HTTP layer answer 5xx.
 * Each route test file describes its routes once and calls {@link describeBodyRoutes}.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { HttpAppOptions } from '../../../src/http/index.ts';
import { AppError, QuorumError } from '../../../src/errors/index.ts';
import { NODE_ADDRESS, type TestServer } from './helpers.ts';

export type Json = Record<string, unknown>;

export function post(url: string, path: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return postRaw(url, path, JSON.stringify(body), headers);
}

export function postRaw(url: string, path: string, text: string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${url}${path}`, { method: 'POST', headers: { ...headers, 'Content-Type': 'application/json' }, body: text });
}

/** The response body, after checking it is JSON. */
export async function json(res: Response): Promise<Json> {
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  return (await res.json()) as Json;
}

/** Values of every JSON type but string. */
export const NON_STRINGS: unknown[] = [1, 0, true, false, null, [], ['a'], {}, { a: 'b' }];

/** Errors a service may throw, and the exact response each must become (and its Retry-After, if any). */
export const SERVICE_ERRORS: Array<{ error: Error; status: number; body: Json; retryAfter?: string }> = [
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
    retryAfter: '42',
  },
  {
    error: new AppError('LIMIT_EXCEEDED', 'Limit exceeded', { detail: 'Encryption request limit of 3 requests per monthly cycle reached', limitType: 'encryption_request_limit', retryAfterSeconds: 3600 }),
    status: 429,
    body: { error: 'Limit exceeded', code: 'LIMIT_EXCEEDED', detail: 'Encryption request limit of 3 requests per monthly cycle reached', limitType: 'encryption_request_limit', retryAfterSeconds: 3600 },
    retryAfter: '3600',
  },
  {
    error: new AppError('OVERLOADED', 'Server busy; retry shortly', { retryAfterSeconds: 1 }),
    status: 503,
    body: { error: 'Server busy; retry shortly', code: 'OVERLOADED', retryAfterSeconds: 1 },
    retryAfter: '1',
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

/** The stub services of a {@link TestServer}, by deps name. */
export type ServiceName = 'accounts' | 'sessions' | 'secrets' | 'payloads' | 'usage';

/** The call log of one stub service of a test server. */
export function callsOf(server: TestServer, service: ServiceName): ReadonlyArray<{ method: PropertyKey; args: unknown[] }> {
  return server[service].calls;
}

/** One body route: a valid body, the call it must make, and its answer with the stub's defaults. */
export interface BodyRoute {
  path: string;
  service: ServiceName;
  method: string;
  /** A valid body. */
  body: Json;
  /** The arguments the service must get for `body`. */
  args: unknown[];
  status: number;
  response: Json;
  /** Every required string field, in schema order, with its max length. */
  limits: Record<string, number>;
  /** Fields of `limits` that also take a JSON number (passed on as its decimal string). */
  numeric?: string[];
}

/** Start a test server (`useTestServers()`). */
export type StartServer = (overrides?: Partial<HttpAppOptions>) => Promise<TestServer>;

/** Body limit of the suite's servers: room for the longest valid field (2,000,000 characters of payload `data`). */
const BODY_LIMIT_BYTES = 4 * 1024 * 1024;

/** The shared suite over `routes`; `startServer` is the file's `useTestServers()`. */
export function describeBodyRoutes(routes: BodyRoute[], startServer: StartServer): void {
  const start = () => startServer({ bodyLimitBytes: BODY_LIMIT_BYTES });

  describe('body routes: success', () => {
    it.each(routes)('$path calls $method with the parsed fields and answers $status', async (route) => {
      const server = await start();
      const res = await post(server.url, route.path, route.body);
      expect(res.status).toBe(route.status);
      expect(await json(res)).toEqual(route.response);
      expect(callsOf(server, route.service)).toEqual([{ method: route.method, args: route.args }]);
    });

    it.each(routes)('$path ignores unknown fields and __proto__ keys', async (route) => {
      const server = await start();
      const text = JSON.stringify({ ...route.body, sdkVersion: '0.5.6', nested: { deep: [1] } }).replace(/}$/, ',"__proto__":{"polluted":true},"constructor":{"prototype":{"polluted":true}}}');
      const res = await postRaw(server.url, route.path, text);
      expect(res.status).toBe(route.status);
      expect(callsOf(server, route.service)).toEqual([{ method: route.method, args: route.args }]);
      expect(({} as Json)['polluted']).toBeUndefined();
    });

    it.each(routes)('$path accepts every field at its maximum length', async (route) => {
      const server = await start();
      const longest = Object.fromEntries(Object.entries(route.limits).map(([field, max]) => [field, 'x'.repeat(max)]));
      const res = await post(server.url, route.path, { ...route.body, ...longest });
      expect(res.status).toBe(route.status);
      expect(callsOf(server, route.service)).toHaveLength(1);
    });
  });

  describe('body routes: input shapes', () => {
    it.each(routes)('$path: a missing field is 400 "<field>: Required"', async (route) => {
      const server = await start();
      for (const field of Object.keys(route.limits)) {
        const body: Json = { ...route.body };
        delete body[field];
        const res = await post(server.url, route.path, body);
        expect(res.status).toBe(400);
        expect(await json(res)).toEqual({ error: `${field}: Required`, code: 'VALIDATION_FAILED' });
      }
      // An empty body is `{}`: the first field is named.
      const empty = await postRaw(server.url, route.path, '');
      expect(empty.status).toBe(400);
      expect(await json(empty)).toEqual({ error: `${Object.keys(route.limits)[0]}: Required`, code: 'VALIDATION_FAILED' });
      expect(callsOf(server, route.service)).toEqual([]);
    });

    it.each(routes)('$path: a field of another type is 400 naming the field', async (route) => {
      const server = await start();
      for (const field of Object.keys(route.limits)) {
        const numeric = route.numeric?.includes(field) === true;
        for (const value of NON_STRINGS.filter((v) => !numeric || typeof v !== 'number')) {
          const res = await post(server.url, route.path, { ...route.body, [field]: value });
          expect(res.status).toBe(400);
          expect(await json(res)).toEqual({ error: `${field}: ${numeric ? 'Expected string or number' : 'Expected string'}`, code: 'VALIDATION_FAILED' });
        }
      }
      expect(callsOf(server, route.service)).toEqual([]);
    });

    it.each(routes)('$path: a field over its limit is 400 naming the field', async (route) => {
      const server = await start();
      for (const [field, max] of Object.entries(route.limits)) {
        const res = await post(server.url, route.path, { ...route.body, [field]: 'x'.repeat(max + 1) });
        expect(res.status).toBe(400);
        expect(await json(res)).toEqual({ error: `${field}: Too big: expected string to have <=${max} characters`, code: 'VALIDATION_FAILED' });
      }
      expect(callsOf(server, route.service)).toEqual([]);
    });

    it.each(routes)('$path: a __proto__ key cannot supply the fields', async (route) => {
      const server = await start();
      const res = await postRaw(server.url, route.path, `{"__proto__":${JSON.stringify(route.body)}}`);
      expect(res.status).toBe(400);
      expect(await json(res)).toEqual({ error: `${Object.keys(route.limits)[0]}: Required`, code: 'VALIDATION_FAILED' });
      expect(callsOf(server, route.service)).toEqual([]);
    });

    it.each(routes)('$path: a body that is not a JSON object is 400', async (route) => {
      const server = await start();
      for (const text of ['[]', '"x"', '1', 'null', '{"data":']) {
        const res = await postRaw(server.url, route.path, text);
        expect(res.status).toBe(400);
        expect((await json(res))['code']).toMatch(/^(VALIDATION_FAILED|INVALID_JSON)$/);
      }
      expect(callsOf(server, route.service)).toEqual([]);
    });
  });

  describe('body routes: service errors', () => {
    it.each(routes)('$path maps every AppError to its status and body', async (route) => {
      const server = await start();
      for (const { error, status, body, retryAfter } of SERVICE_ERRORS) {
        server[route.service].failure = error;
        const res = await post(server.url, route.path, route.body);
        expect(res.status).toBe(status);
        expect(res.headers.get('x-request-id')).toMatch(/^[0-9a-f]{32}$/);
        expect(res.headers.get('retry-after')).toBe(retryAfter ?? null);
        expect(await json(res)).toEqual(body);
      }
      expect(callsOf(server, route.service)).toHaveLength(SERVICE_ERRORS.length);
    });
  });

  describe('body routes: arbitrary input', () => {
    it('never answers 5xx to a POST body, and every error is JSON with error and code', async () => {
      // Room for 8 fields of 200 K escaped characters: the property is about parsing, not the 413.
      const server = await startServer({ bodyLimitBytes: 16 * 1024 * 1024 });
      // The property is about the HTTP layer: whatever reaches a service is refused as bad input.
      for (const service of new Set(routes.map((route) => route.service))) server[service].failure = new AppError('BAD_REQUEST', 'Refused by stub');
      const fieldNames = [...new Set(routes.flatMap((route) => Object.keys(route.body)))];
      await fc.assert(
        fc.asyncProperty(fc.constantFrom(...routes), bodyText(fieldNames), async (route, text) => {
          const before = callsOf(server, route.service).length;
          const res = await postRaw(server.url, route.path, text);
          expect(res.status).toBeGreaterThanOrEqual(400);
          expect(res.status).toBeLessThan(500);
          const body = await json(res);
          expect(typeof body['error']).toBe('string');
          expect(typeof body['code']).toBe('string');
          // Anything that reached the service was the route's call, built of named strings and numbers.
          for (const call of callsOf(server, route.service).slice(before)) {
            expect(call.method).toBe(route.method);
            expect(call.args.map(argShape)).toEqual(route.args.map(argShape));
          }
          expect(({} as Json)['polluted']).toBeUndefined();
        }),
        { numRuns: 300 },
      );
    });
  });
}

/** An argument's shape: `typeof`, after checking an object is plain and holds only strings and numbers. */
function argShape(arg: unknown): string {
  if (typeof arg === 'object' && arg !== null) {
    expect(Object.getPrototypeOf(arg)).toBe(Object.prototype);
    for (const value of Object.values(arg)) expect(['string', 'number']).toContain(typeof value);
  }
  return typeof arg;
}

/** JSON object text with the given field names, `__proto__` and friends as literal keys, huge strings and deep nesting. */
export function bodyText(fieldNames: string[]): fc.Arbitrary<string> {
  const key = fc.oneof(
    fc.constantFrom(...fieldNames, '__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', '__defineGetter__', ''),
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
  return fc.oneof(
    { weight: 4, arbitrary: objectText },
    { weight: 1, arbitrary: fc.jsonValue().map((value) => JSON.stringify(value)) },
    { weight: 1, arbitrary: deepJson },
  );
}
