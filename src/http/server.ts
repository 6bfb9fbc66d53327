/**
 * Binding an app to a port (node:http) with timeouts and a graceful, bounded shutdown. Kept apart
 * from the app factory (CONTRIBUTING.md rule 11) so tests and `src/node` decide where it listens.
 */
import { createServer, STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Logger } from '../log/index.ts';
import { InFlightResponses } from './in-flight.ts';

/** In-flight requests get this long to finish on close; then their connections are destroyed. */
export const SHUTDOWN_GRACE_MS = 5_000;
/** Deadline for a client to send the request headers (slowloris guard), capped by the request timeout. */
export const HEADERS_TIMEOUT_MS = 10_000;
/** Idle time before a keep-alive connection is closed (Node's default, made explicit). */
export const KEEP_ALIVE_TIMEOUT_MS = 5_000;

/** Anything with koa's `callback()`. */
export interface RequestHandlerFactory {
  callback(): (req: IncomingMessage, res: ServerResponse) => unknown;
}

/** Options of {@link listenHttp} (from `NodeConfig.http`). */
export interface ListenHttpOptions {
  /** Bind address, e.g. `127.0.0.1`. */
  host: string;
  /** Bind port; 0 picks a free one. */
  port: number;
  /** Deadline for receiving a whole request, ms. */
  requestTimeoutMs: number;
}

/** A bound HTTP server. */
export interface HttpServerHandle {
  /** Base URL, e.g. `http://127.0.0.1:3010` (IPv6 hosts in brackets). */
  readonly url: string;
  /** The bound port (the real one when 0 was asked). */
  readonly port: number;
  /**
   * Stop accepting, end idle keep-alive connections, give in-flight requests
   * {@link SHUTDOWN_GRACE_MS} to finish, then destroy what is left. Idempotent.
   */
  close(): Promise<void>;
}

/** Dependencies of {@link listenHttp}. */
export interface ListenHttpDeps {
  /** Where malformed requests and client aborts are noted (debug: they are the client's doing). */
  logger?: Logger;
}

/**
 * The answer to a request Node's parser refused before the app saw it (docs/http.md, "Errors": every error is JSON):
 * status and code by the parser's error. Undefined when there is nobody left to answer.
 */
export function clientErrorAnswer(err: NodeJS.ErrnoException): { status: number; code: string; message: string } | undefined {
  switch (err.code) {
    case 'ECONNRESET':
    case 'EPIPE':
    case 'ECONNABORTED':
      return undefined;
    case 'HPE_HEADER_OVERFLOW':
      return { status: 431, code: 'HEADERS_TOO_LARGE', message: 'Request headers are too large' };
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return { status: 408, code: 'REQUEST_TIMEOUT', message: 'The request was not received in time' };
    case 'HPE_INVALID_METHOD':
      return { status: 405, code: 'METHOD_NOT_ALLOWED', message: 'Unknown HTTP method' };
    default:
      return { status: 400, code: 'BAD_REQUEST', message: 'Malformed HTTP request' };
  }
}

/** Write a complete JSON answer on a raw socket and close it (the parser is out of step with it). */
function answerRaw(socket: Duplex, answer: { status: number; code: string; message: string }): void {
  const body = JSON.stringify({ error: answer.message, code: answer.code });
  socket.end(
    `HTTP/1.1 ${answer.status} ${STATUS_CODES[answer.status] ?? 'Error'}\r\n` +
      'Content-Type: application/json; charset=utf-8\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      'Cache-Control: no-store\r\nConnection: close\r\n\r\n' +
      body,
  );
}

/** Bind `app` on `host:port`; resolves once listening, rejects on a bind error (e.g. EADDRINUSE). */
export function listenHttp(app: RequestHandlerFactory, options: ListenHttpOptions, deps: ListenHttpDeps = {}): Promise<HttpServerHandle> {
  const handle = app.callback();
  const headersTimeout = Math.min(HEADERS_TIMEOUT_MS, options.requestTimeoutMs);
  // Node checks request and header deadlines on this interval (30 s by default, so a trickled
  // header could be answered long after its deadline): check often enough that a deadline is kept
  // to within a second.
  const server = createServer({ connectionsCheckingInterval: Math.max(100, Math.min(1000, Math.floor(headersTimeout / 2))) });
  const log = deps.logger?.child({ module: 'http' });

  // Requests Node's parser refuses (bare LF, two Content-Lengths, a bad chunk size, an unknown
  // method, oversized or trickled headers) never reach koa: answer them in JSON here, and note them
  // at debug level — they are the client's error, not the server's.
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    const answer = clientErrorAnswer(err);
    log?.debug({ code: err.code, answered: answer?.status }, 'malformed request or client abort');
    // A broken body arrives after its headers: the app already has a response for it, unsent; ours
    // goes first and closes the connection.
    const started = (socket as Duplex & { _httpMessage?: ServerResponse })._httpMessage?.headersSent === true;
    if (!answer || !socket.writable || started) {
      socket.destroy();
      return;
    }
    answerRaw(socket, answer);
  });
  // CONNECT (proxy tunnels) is not served: a JSON 405 instead of a dropped connection.
  server.on('connect', (_req: IncomingMessage, socket: Duplex) => {
    answerRaw(socket, { status: 405, code: 'METHOD_NOT_ALLOWED', message: 'CONNECT is not supported' });
  });
  server.requestTimeout = options.requestTimeoutMs;
  // Node requires headersTimeout <= requestTimeout.
  server.headersTimeout = headersTimeout;
  server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;

  // Node does not end a keep-alive connection after its in-flight response when the server is
  // closing: responses not yet started are told `Connection: close`, and every connection is
  // dropped as soon as its response is done.
  let closing = false;
  const inFlight = new InFlightResponses();
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    if (closing) res.setHeader('Connection', 'close');
    inFlight.add(res);
    res.once('close', () => {
      inFlight.delete(res);
      if (closing) server.closeIdleConnections();
    });
    handle(req, res);
  });

  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      const { address, family, port } = server.address() as AddressInfo;
      const host = family === 'IPv6' ? `[${address}]` : address;
      let closed: Promise<void> | undefined;
      resolve({
        url: `http://${host}:${port}`,
        port,
        close() {
          closed ??= shutDown();
          return closed;
        },
      });
    });
  });

  function shutDown(): Promise<void> {
    closing = true;
    for (const res of inFlight) if (!res.headersSent) res.setHeader('Connection', 'close');
    return new Promise<void>((resolve) => {
      const forceTimer = setTimeout(() => server.closeAllConnections(), SHUTDOWN_GRACE_MS);
      // close() stops accepting and calls back once every connection is gone.
      server.close(() => {
        clearTimeout(forceTimer);
        resolve();
      });
      server.closeIdleConnections();
    });
  }
}
