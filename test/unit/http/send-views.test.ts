/**
 * A body sent from a buffer the producer reuses (src/http/send-views.ts), over real HTTP: the
 * producer may overwrite a view as soon as the next is asked for, so every byte the client gets
 * proves each write had finished first; a client that goes away stops the producer; a producer that
 * fails at once is an ordinary error answer, not an attachment.
 */
import { createHash } from 'node:crypto';
import { request, type Server } from 'node:http';
import Koa from 'koa';
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../../../src/testing/index.ts';
import { sendViews } from '../../../src/http/send-views.ts';
import type { HttpContext, HttpState } from '../../../src/http/types.ts';

const CHUNK = 256 * 1024;
const CHUNKS = 64;

let server: Server | undefined;
afterEach(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

/** One buffer, refilled with chunk `i`'s bytes each time the next chunk is asked for; zeroed at the end. */
function reusedBuffer(state: { finished: boolean; failFirst?: boolean }): AsyncIterableIterator<Uint8Array> {
  const buffer = Buffer.alloc(CHUNK);
  return (async function* () {
    try {
      if (state.failFirst) throw Object.assign(new Error('first chunk fails'), { status: 400 });
      for (let i = 0; i < CHUNKS; i++) {
        buffer.fill(i % 251);
        yield buffer;
      }
    } finally {
      buffer.fill(0);
      state.finished = true;
    }
  })();
}

function expected(): string {
  const hash = createHash('sha256');
  for (let i = 0; i < CHUNKS; i++) hash.update(Buffer.alloc(CHUNK, i % 251));
  return hash.digest('hex');
}

async function serve(state: { finished: boolean; failFirst?: boolean }): Promise<string> {
  const app = new Koa<HttpState, HttpContext>();
  // A client that hangs up is expected here (the node's app logs it at debug level).
  app.silent = true;
  app.use(async (ctx, next) => {
    try {
      await next();
    } catch (err) {
      ctx.status = (err as { status?: number }).status ?? 500;
      ctx.body = { error: (err as Error).message };
    }
  });
  app.use(async (ctx) => {
    ctx.type = 'application/octet-stream';
    ctx.set('Content-Disposition', 'attachment; filename="x"');
    ctx.length = CHUNK * CHUNKS;
    await sendViews(ctx, reusedBuffer(state));
  });
  server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server!.once('listening', resolve));
  const address = server.address() as { port: number };
  return `http://127.0.0.1:${address.port}/`;
}

describe('sendViews', () => {
  it('sends every view intact although the producer overwrites its one buffer for the next', async () => {
    const state = { finished: false };
    const res = await fetch(await serve(state));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-length')).toBe(String(CHUNK * CHUNKS));
    const body = Buffer.from(await res.arrayBuffer());
    expect(createHash('sha256').update(body).digest('hex')).toBe(expected());
    await waitFor(() => state.finished, { timeoutMs: 5000, description: 'the producer to finish' });
  });

  it('stops the producer when the client goes away mid-body, and serves the next request', async () => {
    const state = { finished: false };
    const url = await serve(state);
    await new Promise<void>((resolve, reject) => {
      const req = request(url, (res) => {
        res.once('data', () => {
          // One piece read, then gone: the server is still far from the end (16 MiB).
          req.destroy();
          resolve();
        });
      });
      req.on('error', () => undefined);
      req.once('error', reject);
      req.end();
    });
    await waitFor(() => state.finished, { timeoutMs: 5000, description: 'the producer to be stopped' });
    const body = Buffer.from(await (await fetch(url)).arrayBuffer());
    expect(createHash('sha256').update(body).digest('hex')).toBe(expected());
  });

  it('a producer that fails at once is the error answer, without the attachment header', async () => {
    const state = { finished: false, failFirst: true };
    const res = await fetch(await serve(state));
    expect(res.status).toBe(400);
    expect(res.headers.get('content-disposition')).toBeNull();
    expect(await res.json()).toEqual({ error: 'first chunk fails' });
    expect(state.finished).toBe(true);
  });
});
