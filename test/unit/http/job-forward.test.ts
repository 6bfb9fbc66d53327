/**
 * File-job forwarding (src/http/job-forward.ts) against a peer coordinator played by a plain
 * node:http server: what the peer receives, what the client gets back, and the failures a real
 * cluster cannot stage on demand (a holder that breaks off mid-download, one that never answers, one
 * that answers garbage). The end-to-end behaviour is test/integration/files-any-coordinator.test.ts.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createHttpApp, listenHttp, type HttpServerHandle, type JobForwardingOptions } from '../../../src/http/index.ts';
import { createMetrics, type NodeMetrics } from '../../../src/metrics/index.ts';
import { DEFAULT_CHAINS } from '../../../src/config/schema.ts';
import { captureLogger } from '../../utils/log.ts';
import { getFreePorts } from '../../../src/testing/index.ts';
import { stubAccounts, stubFiles, stubHealth, stubPayloads, stubPermits, stubProbe, stubSecrets, stubSessions } from './helpers.ts';

const JOB_ID = '0b7f6c1e-5d4a-4e6f-9a7b-1c2d3e4f5a6b';
const SIGNATURE = '0x5167a7c1e5d4a4e6f9a7b1c2d3e4f5a6b0b7f6c1e5d4a4e6f9a7b1c2d3e4f5a6b';
const JOB = { id: JOB_ID, status: 'completed', createdAt: 2000 };

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

/** A peer coordinator: records every request and answers with `handle`. */
interface Peer {
  url: string;
  seen: Seen[];
  handle: (seen: Seen, res: ServerResponse) => void;
  server: Server;
}

const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (let c = cleanup.pop(); c; c = cleanup.pop()) await c();
});

async function startPeer(handle: Peer['handle']): Promise<Peer> {
  const peer: Peer = { url: '', seen: [], handle, server: createServer() };
  peer.server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const seen = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
      peer.seen.push(seen);
      peer.handle(seen, res);
    });
  });
  await new Promise<void>((resolve) => peer.server.listen(0, '127.0.0.1', resolve));
  peer.url = `http://127.0.0.1:${(peer.server.address() as AddressInfo).port}`;
  cleanup.push(async () => {
    peer.server.closeAllConnections();
    await new Promise<void>((resolve) => peer.server.close(() => resolve()));
  });
  return peer;
}

function json(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

/** The peer's status answer: it holds {@link JOB_ID}, nothing else. */
function statusOf(seen: Seen, res: ServerResponse): boolean {
  if (seen.method !== 'GET' || !seen.url.endsWith('/status')) return false;
  if (seen.url === `/jobs/${JOB_ID}/status`) json(res, 200, { success: true, job: JOB });
  else json(res, 404, { error: 'Job not found', code: 'NOT_FOUND' });
  return true;
}

/** The real app with stub services (no job is held here) and `peers` as the other coordinators. */
async function startCoordinator(peers: Array<{ name: string; httpUrl: string }>, jobForwarding: JobForwardingOptions = {}) {
  const log = captureLogger();
  const metrics: NodeMetrics = createMetrics({ processMetrics: false });
  const files = stubFiles();
  files.list = () => Promise.resolve([{ ...JOB, id: 'local-job', createdAt: 1000 } as never]);
  const app = createHttpApp(
    { corsOrigins: [], bodyLimitBytes: 1024, trustProxy: false, chains: DEFAULT_CHAINS, adminToken: '', jobForwarding },
    {
      logger: log.logger,
      metrics,
      clock: () => 1_700_000_000_000,
      health: stubHealth(),
      probe: stubProbe(),
      accounts: stubAccounts(),
      sessions: stubSessions(),
      secrets: stubSecrets(),
      payloads: stubPayloads(),
      permits: stubPermits(),
      files,
      jobPeers: () => peers,
    },
  );
  const server: HttpServerHandle = await listenHttp(app, { host: '127.0.0.1', port: 0, requestTimeoutMs: 10_000 }, { logger: log.logger });
  cleanup.push(() => server.close());
  const forwards = async (labels: string) => {
    const text = await metrics.render();
    const line = text.split('\n').find((l) => l.startsWith(`quorumkeep_job_forwards_total{${labels}}`));
    return line === undefined ? 0 : Number(line.split(' ').pop());
  };
  return { url: server.url, log, forwards };
}

const signed = { data: `-1_7_0xabc_1700000000000_${JOB_ID}_download`, signature: SIGNATURE };

describe('single-job routes', () => {
  it('forwards a download with its JSON body, request id and the forwarded mark; streams back status, headers and bytes', async () => {
    const zip = Buffer.alloc(300_000, 0x5a);
    const peer = await startPeer((seen, res) => {
      if (statusOf(seen, res)) return;
      res.writeHead(200, { 'Content-Type': 'application/zip', 'Content-Length': zip.length, 'Content-Disposition': 'attachment; filename="a.cifer"', 'X-Other': 'not relayed' });
      res.end(zip);
    });
    const local = await startCoordinator([{ name: 'node-1', httpUrl: peer.url }]);
    const res = await fetch(`${local.url}/jobs/${JOB_ID}/download`, { method: 'POST', headers: { 'Content-Type': 'application/json', 'X-Request-Id': 'req-42' }, body: JSON.stringify(signed) });
    expect(res.status).toBe(200);
    expect(Buffer.from(await res.arrayBuffer()).equals(zip)).toBe(true);
    expect(res.headers.get('content-type')).toBe('application/zip');
    expect(res.headers.get('content-length')).toBe(String(zip.length));
    expect(res.headers.get('content-disposition')).toBe('attachment; filename="a.cifer"');
    expect(res.headers.get('x-other')).toBeNull();
    expect(res.headers.get('x-request-id')).toBe('req-42');

    expect(peer.seen.map((s) => `${s.method} ${s.url}`)).toEqual([`GET /jobs/${JOB_ID}/status`, `POST /jobs/${JOB_ID}/download`]);
    for (const s of peer.seen) {
      expect(s.headers['x-quorumkeep-forwarded']).toBe('1');
      expect(s.headers['x-request-id']).toBe('req-42');
    }
    expect(JSON.parse(peer.seen[1]!.body)).toEqual(signed);
    expect(peer.seen[1]!.headers['content-type']).toBe('application/json');
    // The signed string is the holder's to check and nobody's to log.
    expect(local.log.raw()).not.toContain(SIGNATURE);
    expect(local.log.raw()).not.toContain(signed.data);

    // The holder is remembered: the next request goes straight to it.
    const again = await fetch(`${local.url}/jobs/${JOB_ID}/download`, { method: 'POST' });
    expect(again.status).toBe(200);
    await again.arrayBuffer();
    expect(peer.seen.map((s) => s.method)).toEqual(['GET', 'POST', 'POST']);
    expect(peer.seen[2]!.body).toBe('{}');
    expect(await local.forwards('route="download",outcome="forwarded"')).toBe(2);
  });

  it('answers status from the lookup itself, and relays the holder\'s errors as they are', async () => {
    const peer = await startPeer((seen, res) => {
      if (statusOf(seen, res)) return;
      res.writeHead(429, { 'Content-Type': 'application/json', 'Retry-After': '7' });
      res.end(JSON.stringify({ error: 'Too many', code: 'RATE_LIMITED', retryAfterSeconds: 7 }));
    });
    const local = await startCoordinator([{ name: 'node-1', httpUrl: peer.url }]);
    const status = await fetch(`${local.url}/jobs/${JOB_ID}/status`);
    expect(status.status).toBe(200);
    expect(await status.json()).toEqual({ success: true, job: JOB });
    expect(peer.seen).toHaveLength(1);

    const refused = await fetch(`${local.url}/jobs/${JOB_ID}/delete`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{"data":"d","signature":"s"}' });
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('7');
    expect(await refused.json()).toEqual({ error: 'Too many', code: 'RATE_LIMITED', retryAfterSeconds: 7 });
  });

  it('a holder that breaks off mid-download destroys the client\'s response', async () => {
    const peer = await startPeer((seen, res) => {
      if (statusOf(seen, res)) return;
      res.writeHead(200, { 'Content-Type': 'application/zip', 'Content-Length': 1_000_000 });
      res.write(Buffer.alloc(64 * 1024, 1), () => res.socket?.destroy());
    });
    const local = await startCoordinator([{ name: 'node-1', httpUrl: peer.url }]);
    const res = await fetch(`${local.url}/jobs/${JOB_ID}/download`, { method: 'POST' });
    expect(res.status).toBe(200);
    await expect(res.arrayBuffer()).rejects.toThrow();
    await expect.poll(() => local.forwards('route="download",outcome="aborted"')).toBe(1);
    expect(local.log.lines().some((l) => l.msg === 'forwarded job answer broke mid-stream' && l.module === 'job-forward')).toBe(true);
  });

  it('no coordinator holds the job: the local 404; a request already forwarded is never forwarded again', async () => {
    const peer = await startPeer((seen, res) => void statusOf(seen, res));
    const local = await startCoordinator([{ name: 'node-1', httpUrl: peer.url }]);
    const other = '11111111-2222-4333-8444-555555555555';
    const missing = await fetch(`${local.url}/jobs/${other}/status`);
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ code: 'NOT_FOUND' });
    expect(peer.seen).toHaveLength(1);

    const marked = await fetch(`${local.url}/jobs/${JOB_ID}/status`, { headers: { 'X-Quorumkeep-Forwarded': '1' } });
    expect(marked.status).toBe(404);
    expect(peer.seen).toHaveLength(1);
  });

  it('a coordinator that cannot be reached, or does not answer in time: 503 NOT_READY naming it, with Retry-After', async () => {
    const [closedPort] = await getFreePorts(1);
    const silent = await startPeer(() => undefined);
    const local = await startCoordinator(
      [
        { name: 'node-1', httpUrl: `http://127.0.0.1:${closedPort}` },
        { name: 'node-2', httpUrl: silent.url },
      ],
      { timeoutMs: 300 },
    );
    const started = performance.now();
    const res = await fetch(`${local.url}/jobs/${JOB_ID}/status`);
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toEqual(expect.stringMatching(/^\d+$/));
    const body = (await res.json()) as { code: string; unreachableCoordinators: string[] };
    expect(body.code).toBe('NOT_READY');
    expect(body.unreachableCoordinators.sort()).toEqual(['node-1', 'node-2']);
    expect(await local.forwards('route="status",outcome="unreachable"')).toBe(1);
  });
});

describe('POST /jobs (list)', () => {
  const listBody = JSON.stringify({ data: '-1_0_0xabc_1700000000000', signature: SIGNATURE });
  const post = (url: string, query = '', body = listBody) => fetch(`${url}/jobs${query}`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body });

  it('merges the local list with every other coordinator\'s by id, newest first; names those that could not list', async () => {
    const good = await startPeer((seen, res) =>
      json(res, 200, { success: true, jobs: [{ ...JOB, isSigner: true }, { id: 'local-job', createdAt: 1000 }, { id: 'older', createdAt: 500 }], count: 3, includeExpired: true }),
    );
    const failing = await startPeer((_seen, res) => json(res, 500, { error: 'Internal error', code: 'INTERNAL' }));
    const garbage = await startPeer((_seen, res) => json(res, 200, { jobs: 'nope' }));
    const local = await startCoordinator([
      { name: 'node-1', httpUrl: good.url },
      { name: 'node-2', httpUrl: failing.url },
      { name: 'node-3', httpUrl: garbage.url },
    ]);
    const res = await post(local.url, '?includeExpired=true');
    expect(res.status).toBe(200);
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toEqual({
      success: true,
      jobs: [{ ...JOB, isSigner: true }, { ...JOB, id: 'local-job', createdAt: 1000 }, { id: 'older', createdAt: 500 }],
      count: 3,
      includeExpired: true,
      unreachableCoordinators: ['node-2', 'node-3'],
    });
    expect(Object.keys(body)).toEqual(['success', 'jobs', 'count', 'includeExpired', 'unreachableCoordinators']);
    expect(good.seen[0]).toMatchObject({ method: 'POST', url: '/jobs?includeExpired=true', body: listBody });
    expect(good.seen[0]!.headers['x-quorumkeep-forwarded']).toBe('1');
    expect(await local.forwards('route="list",outcome="partial"')).toBe(1);
  });

  it('a local error goes back unchanged and the others are not asked', async () => {
    const peer = await startPeer((_seen, res) => json(res, 200, { success: true, jobs: [], count: 0, includeExpired: false }));
    const local = await startCoordinator([{ name: 'node-1', httpUrl: peer.url }]);
    const res = await post(local.url, '', '{}');
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ code: 'VALIDATION_FAILED' });
    expect(peer.seen).toHaveLength(0);
  });
});
