/**
 * A TCP proxy on 127.0.0.1 that a test can cut and restore: an RPC outage as a node sees it (every
 * connection reset, new and open ones alike), without stopping the real server behind it.
 */
import { createConnection, createServer, type Socket } from 'node:net';

/** A running proxy. */
export interface TcpProxy {
  /** `http://127.0.0.1:<port>` */
  url: string;
  /** Reset every open connection and every new one until {@link TcpProxy.restore}. */
  cut(): void;
  /** Forward again. */
  restore(): void;
  close(): Promise<void>;
}

/** Forward 127.0.0.1:<free port> to `target` (`http://host:port`). */
export async function startTcpProxy(target: string): Promise<TcpProxy> {
  const { hostname, port } = new URL(target);
  const open = new Set<Socket>();
  let down = false;
  const server = createServer((client) => {
    if (down) {
      client.resetAndDestroy();
      return;
    }
    const upstream = createConnection({ host: hostname, port: Number(port) });
    open.add(client);
    open.add(upstream);
    const drop = () => {
      client.destroy();
      upstream.destroy();
      open.delete(client);
      open.delete(upstream);
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (!address || typeof address === 'string') throw new Error('proxy has no port');
  return {
    url: `http://127.0.0.1:${address.port}`,
    cut() {
      down = true;
      for (const socket of open) socket.resetAndDestroy();
      open.clear();
    },
    restore() {
      down = false;
    },
    close() {
      for (const socket of open) socket.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
