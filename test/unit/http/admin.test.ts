/**
 * Operator endpoints: bearer auth, POST /admin/probe, GET /admin/probe/:key, and 404 when disabled.
 */
import { describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, NODE_ADDRESS, useTestServers } from './helpers.ts';
import { QuorumError } from '../../../src/errors/index.ts';

const start = useTestServers();

const auth = { Authorization: `Bearer ${ADMIN_TOKEN}` };
const writeProbe = (url: string, body: unknown, headers: Record<string, string> = auth) =>
  fetch(`${url}/admin/probe`, { method: 'POST', headers: { ...headers, 'Content-Type': 'application/json' }, body: JSON.stringify(body) });

describe('admin auth', () => {
  it('answers 404 like any unknown route when no token is configured', async () => {
    const { url, probe } = await start({ adminToken: '' });
    const post = await writeProbe(url, { note: 'x' });
    expect(post.status).toBe(404);
    expect(await post.json()).toEqual({ error: 'Not found', code: 'NOT_FOUND' });
    const get = await fetch(`${url}/admin/probe/k`, { headers: auth });
    expect(get.status).toBe(404);
    expect(probe.writes).toHaveLength(0);
  });

  it('answers 401 for a missing, wrong or malformed token', async () => {
    const { url, probe } = await start();
    const cases: Array<Record<string, string>> = [
      {},
      { Authorization: 'Bearer wrong-token' },
      { Authorization: `Basic ${ADMIN_TOKEN}` },
      { Authorization: ADMIN_TOKEN },
      { Authorization: `Bearer ${ADMIN_TOKEN}x` },
      { Authorization: 'Bearer ' },
    ];
    for (const headers of cases) {
      const res = await writeProbe(url, { note: 'x' }, headers);
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toMatch(/^Bearer/);
      expect(await res.json()).toEqual({ error: 'Missing or invalid admin token', code: 'UNAUTHORIZED' });
      const get = await fetch(`${url}/admin/probe/k`, { headers });
      expect(get.status).toBe(401);
    }
    expect(probe.writes).toHaveLength(0);
  });

  it('accepts the scheme in any case', async () => {
    const { url } = await start();
    const res = await writeProbe(url, {}, { Authorization: `bearer ${ADMIN_TOKEN}` });
    expect(res.status).toBe(201);
  });
});

describe('POST /admin/probe', () => {
  it('writes the probe and reports acks and failures with 201', async () => {
    const { url, probe } = await start();
    const res = await writeProbe(url, { key: 'probe-1', note: 'hello' });
    expect(res.status).toBe(201);
    expect(await res.json()).toEqual({
      key: 'probe-1',
      origin: NODE_ADDRESS,
      seq: 1,
      acked: [NODE_ADDRESS, '0x2222222222222222222222222222222222222222'],
      failed: [{ nodeAddress: '0x3333333333333333333333333333333333333333', slot: 2, error: 'timeout' }],
    });
    expect(probe.writes).toEqual([{ key: 'probe-1', note: 'hello' }]);
  });

  it('defaults to a random key and an empty note', async () => {
    const { url, probe } = await start();
    const first = (await (await writeProbe(url, {})).json()) as { key: string };
    const second = (await (await writeProbe(url, {})).json()) as { key: string };
    expect(first.key).toMatch(/^probe-[0-9a-f]{16}$/);
    expect(second.key).not.toBe(first.key);
    expect(probe.writes[0]?.note).toBe('');
  });

  it('rejects bad input with 400 VALIDATION_FAILED naming the field', async () => {
    const { url, probe } = await start({ bodyLimitBytes: 1024 * 1024 });
    const tooLong = await writeProbe(url, { note: 'x'.repeat(1025) });
    expect(tooLong.status).toBe(400);
    const body = (await tooLong.json()) as { error: string; code: string };
    expect(body.code).toBe('VALIDATION_FAILED');
    expect(body.error).toMatch(/^note: /);

    for (const input of [{ key: 'has space' }, { key: '' }, { key: 'k'.repeat(129) }, { key: 5 }, { note: 1 }, { extra: true }]) {
      const res = await writeProbe(url, input);
      expect(res.status).toBe(400);
      expect(await res.json()).toMatchObject({ code: 'VALIDATION_FAILED' });
    }
    expect(probe.writes).toHaveLength(0);
  });

  it('answers 503 with failedNodes when the quorum write fails', async () => {
    const { url, probe } = await start();
    probe.writeError = new QuorumError('Quorum not reached (1 of 2 acks)', [NODE_ADDRESS], [
      { nodeAddress: '0x2222222222222222222222222222222222222222', slot: 1, error: 'unreachable' },
      { nodeAddress: '0x3333333333333333333333333333333333333333', slot: 2, error: 'timeout' },
    ]);
    const res = await writeProbe(url, { key: 'probe-q' });
    expect(res.status).toBe(503);
    expect(await res.json()).toEqual({
      error: 'Quorum not reached (1 of 2 acks)',
      code: 'QUORUM_UNAVAILABLE',
      failedNodes: ['0x2222222222222222222222222222222222222222', '0x3333333333333333333333333333333333333333'],
    });
  });
});

describe('GET /admin/probe/:key', () => {
  it('reads back a written probe', async () => {
    const { url } = await start();
    await writeProbe(url, { key: 'probe-r', note: 'read me' });
    const res = await fetch(`${url}/admin/probe/probe-r`, { headers: auth });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ key: 'probe-r', note: 'read me', writtenAt: 1_700_000_000_000, origin: NODE_ADDRESS, seq: 1 });
  });

  it('answers 404 for an unknown key', async () => {
    const { url } = await start();
    const res = await fetch(`${url}/admin/probe/never-written`, { headers: auth });
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ error: 'Probe not found', code: 'NOT_FOUND' });
  });

  it('answers 400 for a malformed key', async () => {
    const { url } = await start();
    const res = await fetch(`${url}/admin/probe/bad%20key`, { headers: auth });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ code: 'VALIDATION_FAILED' });
  });
});
