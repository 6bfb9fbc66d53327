/**
 * Requests Node's HTTP parser refuses before the app sees them (issue 11: ~250 non-JSON answers per
 * held-out fuzz run) get a JSON error like every other (docs/http.md, Conventions), over raw sockets; none
 * is logged as a server error, and a client that hangs up mid-request is noted at debug level only.
 */
import { describe, expect, it } from 'vitest';
import { connect } from 'node:net';
import { listenHttp } from '../../../src/http/index.ts';
import { captureLogger } from '../../utils/log.ts';
import { useTestServers } from './helpers.ts';

const start = useTestServers();

interface RawAnswer {
  status: number;
  headers: string;
  body: string;
}

/** Write `bytes` on a fresh connection (optionally in pieces) and read until the server closes it. */
function exchange(url: string, pieces: string[], gapMs = 0): Promise<RawAnswer> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    let data = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (data += chunk));
    socket.on('error', reject);
    socket.on('close', () => {
      const [head = '', body = ''] = data.split('\r\n\r\n', 2);
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0);
      resolve({ status, headers: head, body });
    });
    socket.on('connect', async () => {
      for (const piece of pieces) {
        if (socket.destroyed) return;
        socket.write(piece);
        if (gapMs) await new Promise((r) => setTimeout(r, gapMs));
      }
    });
  });
}

function expectJsonError(answer: RawAnswer, status: number, code: string): void {
  expect(answer.status, answer.headers).toBe(status);
  expect(answer.headers).toMatch(/content-type: application\/json/i);
  expect(JSON.parse(answer.body)).toMatchObject({ code, error: expect.any(String) });
}

const errorLines = (lines: Array<Record<string, unknown>>) => lines.filter((l) => (l.level as number) >= 50);

describe('malformed framing gets JSON', () => {
  it('bare-LF lines, two Content-Lengths, a bad chunk size, an unknown method, a 20 KiB header, CONNECT', async () => {
    const server = await start();
    const cases: Array<[string, string, number, string]> = [
      ['bare LF', 'GET /healthz HTTP/1.1\nHost: x\n\n', 400, 'BAD_REQUEST'],
      ['two Content-Lengths', 'POST /web2/auth/register HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}', 400, 'BAD_REQUEST'],
      ['bad chunk size', 'POST /web2/auth/register HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n', 400, 'BAD_REQUEST'],
      ['unknown method', 'FROB /healthz HTTP/1.1\r\nHost: x\r\n\r\n', 405, 'METHOD_NOT_ALLOWED'],
      ['20 KiB header', `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20 * 1024)}\r\n\r\n`, 431, 'HEADERS_TOO_LARGE'],
      ['CONNECT', 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n', 405, 'METHOD_NOT_ALLOWED'],
    ];
    for (const [name, bytes, status, code] of cases) {
      const answer = await exchange(server.url, [bytes]);
      expect.soft(answer.status, name).toBe(status);
      expectJsonError(answer, status, code);
    }
    expect(errorLines(server.logLines())).toEqual([]);
  });

  it('a trickled header gets a JSON 408 at the deadline', async () => {
    const server = await start();
    const log = captureLogger();
    const slow = await listenHttp(server.app, { host: '127.0.0.1', port: 0, requestTimeoutMs: 300 }, { logger: log.logger });
    try {
      const answer = await exchange(slow.url, ['GET /healthz HTTP/1.1\r\n', 'Host: x\r\n', 'X-A: 1\r\n', 'X-B: 2\r\n', 'X-C: 3\r\n', 'X-D: 4\r\n'], 150);
      expectJsonError(answer, 408, 'REQUEST_TIMEOUT');
      expect(errorLines(log.lines())).toEqual([]);
    } finally {
      await slow.close();
    }
  });

  it('a client that hangs up mid-body is not a server error', async () => {
    const server = await start();
    const { hostname, port } = new URL(server.url);
    await new Promise<void>((resolve) => {
      const socket = connect(Number(port), hostname, () => {
        socket.write('POST /web2/auth/register HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"email":');
        setImmediate(() => {
          socket.destroy();
          resolve();
        });
      });
    });
    // The server is still fine, and logged nothing at error level.
    const res = await fetch(`${server.url}/healthz`);
    expect(res.status).toBe(200);
    expect(errorLines(server.logLines())).toEqual([]);
  });
});
