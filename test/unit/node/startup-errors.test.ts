/**
 * src/node/startup-errors.ts: which start failures become a StartupError, with which key — and that
 * every other failure passes through untouched. Real sockets and a real LevelDB lock.
 */
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { StartupError } from '../../../src/errors/index.ts';
import { clusterStartFailure, httpBindFailure, storeOpenFailure } from '../../../src/node/startup-errors.ts';
import { openStore } from '../../../src/store/index.ts';
import { cleanupStack, tempDir } from '../../utils/temp.ts';

const stack = cleanupStack();
afterEach(() => stack.run());

/** A port held on 127.0.0.1 until the test ends. */
async function heldPort(): Promise<number> {
  const server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  stack.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return (server.address() as { port: number }).port;
}

const LIBP2P_FAILURE = new Error('libp2p could not listen');

describe('startup errors', () => {
  it('a held libp2p port: ADDRESS_IN_USE on listen, the held address named, the cause kept', async () => {
    const port = await heldPort();
    const listen = ['/ip4/127.0.0.1/tcp/0', `/ip4/127.0.0.1/tcp/${port}`];
    const err = await clusterStartFailure(LIBP2P_FAILURE, { listen, fromClusterFile: true, nodeId: 'node-3' });
    expect(err).toBeInstanceOf(StartupError);
    expect(err).toMatchObject({ code: 'ADDRESS_IN_USE', key: 'listen', nodeId: 'node-3', fromClusterFile: true, cause: LIBP2P_FAILURE });
    expect((err as StartupError).message).toContain(listen[1]);
  });

  it('a libp2p failure with no listen address held is passed on as it was', async () => {
    // Any free port, a name (libp2p resolves it, not this check) and no TCP address at all.
    const listen = ['/ip4/127.0.0.1/tcp/0', '/dns4/localhost/tcp/4010', '/ip4/127.0.0.1/udp/4010'];
    expect(await clusterStartFailure(LIBP2P_FAILURE, { listen, fromClusterFile: false, nodeId: 'node-0' })).toBe(LIBP2P_FAILURE);
  });

  it('an HTTP bind: ADDRESS_IN_USE for EADDRINUSE only, with the key of the port', () => {
    const inUse = Object.assign(new Error('listen EADDRINUSE'), { code: 'EADDRINUSE' });
    const err = httpBindFailure(inUse, { key: 'operator.port', name: 'operator' }, { host: '::1', port: 3110, nodeId: 'node-0' });
    expect(err).toMatchObject({ code: 'ADDRESS_IN_USE', key: 'operator.port', cause: inUse });
    expect((err as StartupError).message).toMatch(/^operator\.port: .*\[::1\]:3110/);
    const denied = Object.assign(new Error('listen EACCES'), { code: 'EACCES' });
    expect(httpBindFailure(denied, { key: 'http.port', name: 'API' }, { host: '127.0.0.1', port: 80, nodeId: 'node-0' })).toBe(denied);
  });

  it('a store another holder has open: DATA_DIR_IN_USE on dataDir; other open failures pass', async () => {
    const dataDir = await tempDir(stack, 'qk-startup-errors-');
    const location = join(dataDir, 'db');
    const first = await openStore({ location });
    stack.push(() => first.close());
    const locked = await openStore({ location }).then(
      () => undefined,
      (e: unknown) => e,
    );
    const err = storeOpenFailure(locked, { dataDir, nodeId: 'node-1' });
    expect(err).toMatchObject({ code: 'DATA_DIR_IN_USE', key: 'dataDir', nodeId: 'node-1', cause: locked });
    expect((err as StartupError).message).toContain(dataDir);
    const other = new Error('Corruption: bad block');
    expect(storeOpenFailure(other, { dataDir, nodeId: 'node-1' })).toBe(other);
  });
});
