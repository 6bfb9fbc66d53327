/**
 * Binding an app to a port (node:http) with timeouts and a graceful, bounded shutdown. Kept apart
 * from the app factory (STYLE.md rule 11) so tests and `src/node` decide where it listens.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

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

/** Bind `app` on `host:port`; resolves once listening, rejects on a bind error (e.g. EADDRINUSE). */
export function listenHttp(app: RequestHandlerFactory, options: ListenHttpOptions): Promise<HttpServerHandle> {
  const handle = app.callback();
  const server = createServer();
  server.requestTimeout = options.requestTimeoutMs;
  // Node requires headersTimeout <= requestTimeout.
  server.headersTimeout = Math.min(HEADERS_TIMEOUT_MS, options.requestTimeoutMs);
  server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;

  // Node does not end a keep-alive connection after its in-flight response when the server is
  // closing: responses not yet started are told `Connection: close`, and every connection is
  // dropped as soon as its response is done.
  let closing = false;
  const inFlight = new Set<ServerResponse>();
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
