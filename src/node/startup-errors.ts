/**
 * A node's start failures in the project's own words (docs/operations.md, "Startup errors"): a port or
 * the data directory held by another process becomes a {@link StartupError} naming the config key
 * that changes it, instead of the library's own message (libp2p's advice about a setting quorumkeep
 * does not have, Node's bare `EADDRINUSE`, LevelDB's lock file). Anything else is passed on as it was.
 */
import { createServer } from 'node:net';
import { hostPortOf, parseTcpMultiaddr } from '../config/index.ts';
import { StartupError } from '../errors/index.ts';
import { isStoreLocked } from '../store/index.ts';

/** The store of `dataDir` did not open: a {@link StartupError} when another process holds it. */
export function storeOpenFailure(err: unknown, where: { dataDir: string; nodeId: string }): unknown {
  if (!isStoreLocked(err)) return err;
  return new StartupError('DATA_DIR_IN_USE', `dataDir: the data directory ${where.dataDir} is in use by another quorumkeep process (its store is locked)`, { key: 'dataDir', nodeId: where.nodeId }, { cause: err });
}

/** Which HTTP port of a node: the API's (coordinators) or the operator port. */
export interface HttpPortRole {
  key: 'http.port' | 'operator.port';
  /** How the message names it. */
  name: 'API' | 'operator';
}

/** Binding an HTTP port failed: a {@link StartupError} when another process holds it. */
export function httpBindFailure(err: unknown, role: HttpPortRole, where: { host: string; port: number; nodeId: string }): unknown {
  if ((err as NodeJS.ErrnoException | undefined)?.code !== 'EADDRINUSE') return err;
  return new StartupError('ADDRESS_IN_USE', `${role.key}: the ${role.name} port ${hostPortOf(where.host, where.port)} is in use by another process`, { key: role.key, nodeId: where.nodeId }, { cause: err });
}

/**
 * The cluster did not start: when one of its TCP listen addresses is held by another process, a
 * {@link StartupError} naming it. libp2p says which addresses failed only in its message text, so the
 * addresses are tried again here, each bound for a moment (libp2p released its own listeners when its
 * start failed).
 */
export async function clusterStartFailure(err: unknown, where: { listen: readonly string[]; fromClusterFile: boolean; nodeId: string }): Promise<unknown> {
  for (const ma of where.listen) {
    const address = parseTcpMultiaddr(ma);
    if (!address || address.port === 0 || address.protocol.startsWith('dns')) continue;
    if ((await bindError(address.host, address.port)) !== 'EADDRINUSE') continue;
    const origin = where.fromClusterFile ? ` (${where.nodeId}'s multiaddrs in the cluster file)` : '';
    return new StartupError('ADDRESS_IN_USE', `listen: the libp2p address ${ma}${origin} is in use by another process`, { key: 'listen', nodeId: where.nodeId, fromClusterFile: where.fromClusterFile }, { cause: err });
  }
  return err;
}

/** The error code of binding `host:port` now (released at once), or undefined when it binds. */
function bindError(host: string, port: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? 'unknown'));
    server.listen({ host, port, exclusive: true }, () => server.close(() => resolve(undefined)));
  });
}
