/**
 * `GET /admin/backup` on the operator port (src/http/routes/backup.ts): served only with an admin
 * token, refused without the right bearer, and streamed as taken — here a real store's snapshot,
 * decoded back from the HTTP body.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { decodeArchive, snapshotArchive, type ArchiveItem } from '../../../src/backup/index.ts';
import { DEFAULT_CHAINS } from '../../../src/config/schema.ts';
import { createOperatorApp, listenHttp, type HttpServerHandle } from '../../../src/http/index.ts';
import { createMetrics } from '../../../src/metrics/index.ts';
import { openStore } from '../../../src/store/index.ts';
import { captureLogger } from '../../utils/log.ts';
import { cleanupStack, tempDir } from '../../utils/temp.ts';
import { stubHealth } from './helpers.ts';

const stack = cleanupStack();
afterEach(() => stack.run());

const TOKEN = 'b'.repeat(64);
const identity = { clusterId: 'test-cluster', nodeId: 'node-1', nodeAddress: '0x' + '11'.repeat(20), slot: 1, storageKeyCheck: '00'.repeat(16) };

async function start(adminToken: string) {
  const store = await openStore({ location: await tempDir(stack) });
  stack.push(() => store.close());
  await store.claims.put('email:aa', 'p-1');
  let snapshots = 0;
  const backup = {
    snapshot() {
      snapshots++;
      return { nodeId: identity.nodeId, createdAt: 5, chunks: snapshotArchive(store, identity, { source: 'node', now: 5 }) };
    },
  };
  const log = captureLogger();
  const app = createOperatorApp({ chains: DEFAULT_CHAINS, adminToken }, { logger: log.logger, clock: () => 5, health: stubHealth(), metrics: createMetrics({ processMetrics: false }), backup });
  const server: HttpServerHandle = await listenHttp(app, { host: '127.0.0.1', port: 0, requestTimeoutMs: 5000 });
  stack.push(() => server.close());
  return { url: server.url, snapshots: () => snapshots, log };
}

describe('GET /admin/backup on the operator port', () => {
  it('streams a whole archive of the store to the bearer of the admin token, and logs no content', async () => {
    const { url, log } = await start(TOKEN);
    const res = await fetch(`${url}/admin/backup`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/vnd\.quorumkeep\.backup/);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.headers.get('content-disposition')).toBe('attachment; filename="node-1-5.qkbackup"');
    const items: ArchiveItem[] = [];
    for await (const item of decodeArchive(res.body!)) items.push(item);
    expect(items[0]).toMatchObject({ type: 'header', header: { nodeId: 'node-1', source: 'node', includesKeys: false } });
    expect(items.at(-1)).toMatchObject({ type: 'summary', summary: { counts: { claims: 1, meta: 1 } } });
    expect(log.raw()).toMatch(/backup snapshot started/);
    expect(log.raw()).not.toMatch(/email:aa|p-1/);
  });

  it('401 without the token or with another; nothing is snapshotted', async () => {
    const { url, snapshots } = await start(TOKEN);
    for (const headers of [{}, { authorization: `Bearer ${'c'.repeat(64)}` }, { authorization: TOKEN }]) {
      const res = await fetch(`${url}/admin/backup`, { headers });
      expect(res.status).toBe(401);
      expect(await res.json()).toMatchObject({ code: 'UNAUTHORIZED' });
    }
    expect(snapshots()).toBe(0);
  });

  it('is not served (404) when the node has no admin token', async () => {
    const { url, snapshots } = await start('');
    const res = await fetch(`${url}/admin/backup`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(res.status).toBe(404);
    expect(snapshots()).toBe(0);
  });
});
