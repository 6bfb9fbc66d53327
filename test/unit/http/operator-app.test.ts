/**
 * The operator port's app (issue 11): `GET /healthz`, `/readyz` and `/metrics` — the discovery
 * routes, metrics without a token — and nothing else.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createOperatorApp, listenHttp, type HttpServerHandle } from '../../../src/http/index.ts';
import { createMetrics } from '../../../src/metrics/index.ts';
import { DEFAULT_CHAINS } from '../../../src/config/schema.ts';
import { captureLogger } from '../../utils/log.ts';
import { NODE_ADDRESS, healthyCluster, stubHealth } from './helpers.ts';

const servers: HttpServerHandle[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function start() {
  const health = stubHealth();
  const app = createOperatorApp({ chains: DEFAULT_CHAINS }, { logger: captureLogger().logger, clock: () => 1_700_000_000_000, health, metrics: createMetrics({ processMetrics: false }) });
  const server = await listenHttp(app, { host: '127.0.0.1', port: 0, requestTimeoutMs: 5000 });
  servers.push(server);
  return { url: server.url, health };
}

describe('operator app', () => {
  it('answers /healthz like the API does, with the cluster view', async () => {
    const { url } = await start();
    const res = await fetch(`${url}/healthz`);
    expect(res.status).toBe(200);
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    const cluster = healthyCluster();
    expect(await res.json()).toMatchObject({
      status: 'ok',
      version: '1.2.3',
      serverTime: 1_700_000_000_000,
      enclaveWalletAddress: NODE_ADDRESS,
      supportedChains: [8453],
      clusterMap: cluster.clusterMap,
      cluster: { clusterId: 'test-cluster', size: 3, threshold: 2, reachable: 3, slot0Reachable: true, equivocating: [] },
    });
  });

  it('answers /readyz 200 or 503 with the checks', async () => {
    const { url, health } = await start();
    expect(await (await fetch(`${url}/readyz`)).json()).toEqual({ ready: true, checks: { started: true, quorumReachable: true, caughtUp: true, ownLogKnown: true, sharesHeld: true } });
    health.ready = { ready: false, checks: { started: true, quorumReachable: false, caughtUp: true, ownLogKnown: true, sharesHeld: true } };
    const res = await fetch(`${url}/readyz`);
    expect(res.status).toBe(503);
    expect(await res.json()).toMatchObject({ code: 'NOT_READY' });
  });

  it('serves /metrics without a token', async () => {
    const { url } = await start();
    const res = await fetch(`${url}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(await res.text()).toContain('# HELP quorumkeep_records_applied_total');
  });

  it('serves nothing else: 404 and 405 in JSON', async () => {
    const { url } = await start();
    for (const path of ['/admin/probe/x', '/web2/secrets', '/']) {
      const res = await fetch(`${url}${path}`);
      expect(res.status, path).toBe(404);
      expect(await res.json()).toMatchObject({ code: 'NOT_FOUND' });
    }
    const post = await fetch(`${url}/healthz`, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } });
    expect(post.status).toBe(405);
    expect(await post.json()).toMatchObject({ code: 'METHOD_NOT_ALLOWED' });
  });

  it('answers 500 without details when the health source fails', async () => {
    const { url, health } = await start();
    health.failure = new Error('secret internals');
    const res = await fetch(`${url}/healthz`);
    expect(res.status).toBe(500);
    const text = await res.text();
    expect(JSON.parse(text)).toEqual({ error: 'Internal error', code: 'INTERNAL' });
    expect(text).not.toContain('secret internals');
  });
});
