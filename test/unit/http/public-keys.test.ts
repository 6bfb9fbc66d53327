/**
 * Public-key routes (docs/http.md, Public keys) through the real app with a stub SecretsService: the GET
 * form with its raw path parameters, and the deprecated signed POST form — the shared body-route
 * suite (./body-routes.ts), ids as numbers or strings, and the Deprecation and Link headers.
 */
import { describe, expect, it } from 'vitest';
import { CHAIN_ID, PUBLIC_KEY_B64, PUBLIC_KEY_VIEW, SECRET_ID, useTestServers } from './helpers.ts';
import { describeBodyRoutes, json, post, SERVICE_ERRORS, type BodyRoute } from './body-routes.ts';
import { AppError } from '../../../src/errors/index.ts';

const start = useTestServers();

const SIGNER = '0x5e55105e55105e55105e55105e55105e55105e55';
const DATA = `${CHAIN_ID}_${SECRET_ID}_${SIGNER}_19000000`;
const SIGNATURE = `0x${'ef'.repeat(65)}`;
const SIGNED_BODY = { data: DATA, signature: SIGNATURE, chainId: String(CHAIN_ID), secretId: String(SECRET_ID) };
const KEY_BODY = { success: true, chainId: CHAIN_ID, secretId: SECRET_ID, publicKey: PUBLIC_KEY_B64 };
const SUCCESSOR_LINK = `</secret-public-key/${CHAIN_ID}/${SECRET_ID}>; rel="successor-version"`;

const ROUTES: BodyRoute[] = [
  {
    path: '/secret-public-key',
    service: 'secrets',
    method: 'publicKeySigned',
    body: SIGNED_BODY,
    args: [{ data: DATA, signature: SIGNATURE }, String(CHAIN_ID), String(SECRET_ID)],
    status: 200,
    response: KEY_BODY,
    limits: { data: 4096, signature: 1024, chainId: 32, secretId: 32 },
    numeric: ['chainId', 'secretId'],
  },
];

describeBodyRoutes(ROUTES, start);

describe('GET /secret-public-key/:chainId/:secretId', () => {
  it('passes the raw path parameters and answers the key', async () => {
    const { url, secrets } = await start();
    const res = await fetch(`${url}/secret-public-key/${CHAIN_ID}/${SECRET_ID}`);
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual(KEY_BODY);
    expect(res.headers.get('deprecation')).toBeNull();
    expect(secrets.calls).toEqual([{ method: 'publicKey', args: [String(CHAIN_ID), String(SECRET_ID)] }]);
  });

  it('passes odd parameters on for the service to refuse, decoded', async () => {
    const { url, secrets } = await start();
    await fetch(`${url}/secret-public-key/-1/abc`);
    await fetch(`${url}/secret-public-key/0x2105/%37`);
    expect(secrets.calls.map((call) => call.args)).toEqual([
      ['-1', 'abc'],
      ['0x2105', '7'],
    ]);
  });

  it('answers 400 naming a parameter over 32 characters, and 404 for a missing one', async () => {
    const { url, secrets } = await start();
    const long = await fetch(`${url}/secret-public-key/${'1'.repeat(33)}/${SECRET_ID}`);
    expect(long.status).toBe(400);
    expect(await json(long)).toEqual({ error: 'chainId: Too big: expected string to have <=32 characters', code: 'VALIDATION_FAILED' });
    const missing = await fetch(`${url}/secret-public-key/${CHAIN_ID}`);
    expect(missing.status).toBe(404);
    expect(secrets.calls).toEqual([]);
  });

  it('maps every AppError to its status and body', async () => {
    const { url, secrets } = await start();
    for (const { error, status, body } of SERVICE_ERRORS) {
      secrets.failure = error;
      const res = await fetch(`${url}/secret-public-key/${CHAIN_ID}/${SECRET_ID}`);
      expect(res.status).toBe(status);
      expect(await json(res)).toEqual(body);
    }
  });
});

describe('POST /secret-public-key (deprecated)', () => {
  it('marks the answer deprecated and links the GET form', async () => {
    const { url } = await start();
    const res = await post(url, '/secret-public-key', SIGNED_BODY);
    expect(res.status).toBe(200);
    expect(res.headers.get('deprecation')).toBe('true');
    expect(res.headers.get('link')).toBe(SUCCESSOR_LINK);
  });

  it('takes the ids as JSON numbers and passes them as strings', async () => {
    const { url, secrets } = await start();
    const res = await post(url, '/secret-public-key', { ...SIGNED_BODY, chainId: -1, secretId: SECRET_ID });
    expect(res.status).toBe(200);
    expect(secrets.calls).toEqual([{ method: 'publicKeySigned', args: [{ data: DATA, signature: SIGNATURE }, '-1', String(SECRET_ID)] }]);
  });

  it('builds the Link from the service’s ids, never from the input', async () => {
    const { url, secrets } = await start();
    secrets.publicKeySigned = async () => ({ ...PUBLIC_KEY_VIEW, chainId: -1, secretId: 42 });
    const res = await post(url, '/secret-public-key', { ...SIGNED_BODY, chainId: '-1>; rel="x"', secretId: '042' });
    expect(res.headers.get('link')).toBe('</secret-public-key/-1/42>; rel="successor-version"');
  });

  it('marks errors deprecated too', async () => {
    const { url, secrets } = await start();
    const invalid = await post(url, '/secret-public-key', { ...SIGNED_BODY, chainId: null });
    expect(invalid.status).toBe(400);
    expect(invalid.headers.get('deprecation')).toBe('true');
    secrets.failure = new AppError('FORBIDDEN', 'Signer does not match');
    const refused = await post(url, '/secret-public-key', SIGNED_BODY);
    expect(refused.status).toBe(403);
    expect(refused.headers.get('deprecation')).toBe('true');
    expect(await json(refused)).toEqual({ error: 'Signer does not match', code: 'FORBIDDEN' });
  });
});
