/**
 * listenHttp: binding, timeouts and graceful, bounded, idempotent close.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Agent, request, type IncomingMessage, type ServerResponse } from 'node:http';
import { listenHttp, SHUTDOWN_GRACE_MS, type HttpServerHandle } from '../../../src/http/index.ts';

const handles: HttpServerHandle[] = [];
const agents: Agent[] = [];
afterEach(async () => {
  for (let h = handles.pop(); h; h = handles.pop()) await h.close();
  for (let a = agents.pop(); a; a = agents.pop()) a.destroy();
});

/** A bare handler: the server is independent of koa. */
function handlerApp(handler: (req: IncomingMessage, res: ServerResponse) => void) {
  return { callback: () => handler };
}

async function listen(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<HttpServerHandle> {
  const handle = await listenHttp(handlerApp(handler), { host: '127.0.0.1', port: 0, requestTimeoutMs: 10_000 });
  handles.push(handle);
  return handle;
}

/** GET over a keep-alive agent; resolves with status, Connection header and body. */
function get(url: string, agent: Agent): Promise<{ status: number; connection: string | undefined; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { agent }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, connection: res.headers.connection, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

function keepAliveAgent(): Agent {
  const agent = new Agent({ keepAlive: true });
  agents.push(agent);
  return agent;
}

describe('listenHttp', () => {
  it('binds a free port and reports its URL', async () => {
    const handle = await listen((_req, res) => res.end('hi'));
    expect(handle.port).toBeGreaterThan(0);
    expect(handle.url).toBe(`http://127.0.0.1:${handle.port}`);
    expect(await (await fetch(handle.url)).text()).toBe('hi');
  });

  it('rejects when the port is taken', async () => {
    const first = await listen((_req, res) => res.end());
    await expect(listenHttp(handlerApp((_req, res) => res.end()), { host: '127.0.0.1', port: first.port, requestTimeoutMs: 1000 })).rejects.toMatchObject({
      code: 'EADDRINUSE',
    });
  });

  it('close() ends idle keep-alive connections at once and is idempotent', async () => {
    const handle = await listen((_req, res) => res.end('ok'));
    const agent = keepAliveAgent();
    expect((await get(handle.url, agent)).status).toBe(200);

    const startedAt = Date.now();
    const first = handle.close();
    const second = handle.close();
    await Promise.all([first, second]);
    expect(Date.now() - startedAt).toBeLessThan(SHUTDOWN_GRACE_MS);
    await expect(fetch(handle.url)).rejects.toThrow();
    await handle.close();
  });

  it('close() lets an in-flight request finish and then drops its keep-alive connection', async () => {
    let release: () => void = () => {};
    let arrived: () => void = () => {};
    const requestArrived = new Promise<void>((resolve) => (arrived = resolve));
    const handle = await listen((_req, res) => {
      release = () => res.end('finished');
      arrived();
    });
    const agent = keepAliveAgent();
    const response = get(handle.url, agent);
    await requestArrived;

    let closed = false;
    const startedAt = Date.now();
    const closing = handle.close().then(() => (closed = true));
    // The server stopped accepting but the request is still being served.
    await expect(fetch(handle.url)).rejects.toThrow();
    expect(closed).toBe(false);

    release();
    expect(await response).toEqual({ status: 200, connection: 'close', body: 'finished' });
    await closing;
    expect(Date.now() - startedAt).toBeLessThan(SHUTDOWN_GRACE_MS);
  });

  it('close() also drops a keep-alive connection whose response had already started', async () => {
    let release: () => void = () => {};
    let started: () => void = () => {};
    const responseStarted = new Promise<void>((resolve) => (started = resolve));
    const handle = await listen((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/plain' });
      res.write('part-');
      release = () => res.end('end');
      started();
    });
    const response = get(handle.url, keepAliveAgent());
    await responseStarted;

    const startedAt = Date.now();
    const closing = handle.close();
    release();
    expect(await response).toMatchObject({ status: 200, body: 'part-end' });
    await closing;
    expect(Date.now() - startedAt).toBeLessThan(SHUTDOWN_GRACE_MS);
  });

  it('close() destroys requests still running after the grace period', async () => {
    let arrived: () => void = () => {};
    const requestArrived = new Promise<void>((resolve) => (arrived = resolve));
    // A handler that never answers.
    const handle = await listen(() => arrived());
    const response = get(handle.url, keepAliveAgent());
    await requestArrived;

    const startedAt = Date.now();
    await handle.close();
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(SHUTDOWN_GRACE_MS - 50);
    await expect(response).rejects.toThrow();
  });
});
