/**
 * Discovery endpoints (docs/http.md, Discovery): GET /healthz, /readyz, /metrics.
 */
import { describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, NODE_ADDRESS, healthyCluster, useTestServers } from './helpers.ts';
import { DEFAULT_CHAINS } from '../../../src/config/schema.ts';

const start = useTestServers();

describe('GET /healthz', () => {
  it('reports the node, its chains and the cluster', async () => {
    const { url } = await start();
    const res = await fetch(`${url}/healthz`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    const body = (await res.json()) as Record<string, unknown>;
    const cluster = healthyCluster();
    expect(body).toEqual({
      status: 'ok',
      problems: [],
      version: '1.2.3',
      commit: 'a'.repeat(40),
      serverTime: expect.any(Number),
      enclaveWalletAddress: NODE_ADDRESS,
      supportedChains: [8453],
      configurations: {
        chains: [{ chainId: 8453, name: 'Base', rpcUrl: 'https://mainnet.base.org', secretsControllerAddress: DEFAULT_CHAINS[0]?.secretsControllerAddress, blockTimeMs: 2000 }],
      },
      clusterMap: cluster.clusterMap,
      cluster: { clusterId: 'test-cluster', size: 3, threshold: 2, reachable: 3, slot0Reachable: true, equivocating: [] },
      dataSafety: cluster.dataSafety,
      chainStatus: [],
    });
    expect(body).not.toHaveProperty('ipfsGatewayUrl');
  });

  it('takes serverTime fresh per request', async () => {
    const { url } = await start();
    const first = (await (await fetch(`${url}/healthz`)).json()) as { serverTime: number };
    const second = (await (await fetch(`${url}/healthz`)).json()) as { serverTime: number };
    expect(second.serverTime).toBeGreaterThan(first.serverTime);
  });

  it('still answers 200 when degraded', async () => {
    const app = await start();
    app.health.cluster = { ...healthyCluster(), reachable: 1, slot0Reachable: false, status: 'degraded' };
    const res = await fetch(`${app.url}/healthz`);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ status: 'degraded', cluster: { reachable: 1, threshold: 2, slot0Reachable: false } });
  });

  it('lists every configured EVM chain but never the Web2 chain -1', async () => {
    const base = DEFAULT_CHAINS[0];
    if (!base) throw new Error('schema has no default chain');
    const web2 = { ...base, chainId: -1, name: 'web2' };
    const sepolia = { ...base, chainId: 84532, name: 'Base Sepolia', rpcUrl: 'https://sepolia.base.org' };
    const { url } = await start({ chains: [base, web2, sepolia] });
    const body = (await (await fetch(`${url}/healthz`)).json()) as { supportedChains: number[]; configurations: { chains: Array<{ chainId: number }> } };
    expect(body.supportedChains).toEqual([8453, 84532]);
    expect(body.configurations.chains.map((c) => c.chainId)).toEqual([8453, 84532]);
  });
});

describe('GET /readyz', () => {
  it('answers 200 with the checks when ready', async () => {
    const { url } = await start();
    const res = await fetch(`${url}/readyz`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ ready: true, checks: { started: true, quorumReachable: true, caughtUp: true, ownLogKnown: true, sharesHeld: true } });
  });

  it('answers 503 NOT_READY with the checks when not ready', async () => {
    const app = await start();
    const checks = { started: true, quorumReachable: false, caughtUp: false, ownLogKnown: true, sharesHeld: true };
    app.health.ready = { ready: false, checks };
    const res = await fetch(`${app.url}/readyz`);
    expect(res.status).toBe(503);
    expect(await res.json()).toEqual({ error: 'Not ready', code: 'NOT_READY', checks });
  });
});

describe('GET /metrics', () => {
  const bearer = { Authorization: `Bearer ${ADMIN_TOKEN}` };

  it('renders the registry in Prometheus text format for the admin token', async () => {
    const { url } = await start();
    const res = await fetch(`${url}/metrics`, { headers: bearer });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    const text = await res.text();
    expect(text).toContain('# HELP quorumkeep_http_request_duration_seconds');
    expect(text).toContain('# HELP quorumkeep_argon2_jobs_shed_total');
    expect(text).toContain('# HELP quorumkeep_http_rate_limited_total');
  });

  it('is 401 without the token or with another one, and shows nothing', async () => {
    const { url } = await start();
    for (const headers of [{}, { Authorization: 'Bearer wrong-token' }, { Authorization: `Basic ${ADMIN_TOKEN}` }]) {
      const res = await fetch(`${url}/metrics`, { headers });
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toMatch(/^Bearer/);
      const text = await res.text();
      expect(JSON.parse(text)).toEqual({ error: 'Missing or invalid admin token', code: 'UNAUTHORIZED' });
      expect(text).not.toContain('quorumkeep_');
    }
  });

  it('is not served (404) when no admin token is configured', async () => {
    const { url } = await start({ adminToken: '' });
    const res = await fetch(`${url}/metrics`);
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ code: 'NOT_FOUND' });
  });

  it('is public with metricsPublic, token or not', async () => {
    for (const adminToken of [ADMIN_TOKEN, '']) {
      const { url } = await start({ adminToken, metricsPublic: true });
      const res = await fetch(`${url}/metrics`);
      expect(res.status).toBe(200);
      expect(await res.text()).toContain('# HELP quorumkeep_http_request_duration_seconds');
    }
  });
});
