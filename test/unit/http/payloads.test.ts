/**
 * Payload routes (docs/http.md, Payload encryption) through the real app with a stub PayloadsService: the
 * shared body-route suite (./body-routes.ts), then the binary format names and their default, and
 * the body limit binding before the 2,000,000-character `data` bound.
 */
import { describe, expect, it } from 'vitest';
import { CHAIN_ID, CIFER_HEX, SECRET_ID, useTestServers } from './helpers.ts';
import { describeBodyRoutes, json, post, type BodyRoute } from './body-routes.ts';

const start = useTestServers();
/** The default body limit (1 MiB): room for a `cifer` and a small message. */
const startServer = () => start({ bodyLimitBytes: 1024 * 1024 });

const SIGNER = '0x5e55105e55105e55105e55105e55105e55105e55';
const PREFIX = `${CHAIN_ID}_${SECRET_ID}_${SIGNER}_19000000`;
const SIGNATURE = `0x${'ef'.repeat(65)}`;
const ENCRYPT_DATA = `${PREFIX}_hello_world`;
const DECRYPT_DATA = `${PREFIX}_0x68656c6c6f`;

const ROUTES: BodyRoute[] = [
  {
    path: '/encrypt-payload',
    service: 'payloads',
    method: 'encrypt',
    body: { data: ENCRYPT_DATA, signature: SIGNATURE, outputFormat: 'base64' },
    args: [{ data: ENCRYPT_DATA, signature: SIGNATURE }, 'base64'],
    status: 200,
    response: { success: true, chainId: CHAIN_ID, secretId: SECRET_ID, outputFormat: 'base64', cifer: CIFER_HEX, encryptedMessage: '0x68656c6c6f' },
    limits: { data: 2_000_000, signature: 1024 },
  },
  {
    path: '/decrypt-payload',
    service: 'payloads',
    method: 'decrypt',
    body: { cifer: CIFER_HEX, data: DECRYPT_DATA, signature: SIGNATURE, inputFormat: 'hex' },
    args: [{ data: DECRYPT_DATA, signature: SIGNATURE }, CIFER_HEX, 'hex'],
    status: 200,
    response: { success: true, decryptedMessage: 'hello_world' },
    limits: { data: 2_000_000, signature: 1024, cifer: 8192 },
  },
];

describeBodyRoutes(ROUTES, start);

/** The format field of each route, with a valid body without it. */
const FORMAT_ROUTES = [
  { path: '/encrypt-payload', field: 'outputFormat', body: { data: ENCRYPT_DATA, signature: SIGNATURE }, formatArg: 1 },
  { path: '/decrypt-payload', field: 'inputFormat', body: { cifer: CIFER_HEX, data: DECRYPT_DATA, signature: SIGNATURE }, formatArg: 2 },
];

describe('binary format names', () => {
  it.each(FORMAT_ROUTES)('$path defaults $field to hex', async (route) => {
    const { url, payloads } = await startServer();
    const res = await post(url, route.path, route.body);
    expect(res.status).toBe(200);
    expect(payloads.calls[0]?.args[route.formatArg]).toBe('hex');
  });

  it.each(FORMAT_ROUTES)('$path passes base64 and hex on', async (route) => {
    const { url, payloads } = await startServer();
    for (const format of ['base64', 'hex']) await post(url, route.path, { ...route.body, [route.field]: format });
    expect(payloads.calls.map((call) => call.args[route.formatArg])).toEqual(['base64', 'hex']);
  });

  it.each(FORMAT_ROUTES)('$path answers 400 naming $field for any other name or type', async (route) => {
    const { url, payloads } = await startServer();
    for (const format of ['HEX', 'Base64', 'base58', 'utf8', '', ' hex', null, 1, true, ['hex'], {}]) {
      const res = await post(url, route.path, { ...route.body, [route.field]: format });
      expect(res.status).toBe(400);
      expect(await json(res)).toEqual({ error: `${route.field}: must be "hex" or "base64"`, code: 'VALIDATION_FAILED' });
    }
    expect(payloads.calls).toEqual([]);
  });
});

describe('POST /encrypt-payload', () => {
  it('passes data with underscores in the plaintext on unchanged', async () => {
    const { url, payloads } = await startServer();
    const data = `${PREFIX}_a_b__c_`;
    await post(url, '/encrypt-payload', { data, signature: SIGNATURE });
    expect(payloads.calls).toEqual([{ method: 'encrypt', args: [{ data, signature: SIGNATURE }, 'hex'] }]);
  });

  it('refuses a body over the default 1 MiB limit with 413 before any data bound', async () => {
    const { url, payloads } = await startServer();
    const res = await post(url, '/encrypt-payload', { data: `${PREFIX}_${'x'.repeat(1024 * 1024)}`, signature: SIGNATURE });
    expect(res.status).toBe(413);
    expect((await json(res))['code']).toBe('PAYLOAD_TOO_LARGE');
    expect(payloads.calls).toEqual([]);
  });

  it('answers only the documented fields, whatever else the service returns', async () => {
    const { url, payloads } = await startServer();
    payloads.encrypt = async () => ({ chainId: CHAIN_ID, secretId: SECRET_ID, outputFormat: 'hex', cifer: '0x00', encryptedMessage: '0x01', sharedSecret: 'never' }) as Awaited<ReturnType<typeof payloads.encrypt>>;
    const res = await post(url, '/encrypt-payload', { data: ENCRYPT_DATA, signature: SIGNATURE });
    expect(await json(res)).toEqual({ success: true, chainId: CHAIN_ID, secretId: SECRET_ID, outputFormat: 'hex', cifer: '0x00', encryptedMessage: '0x01' });
  });
});
