/**
 * Replacing a member's identity at process level (issue 15 acceptance; docs/operations.md, "Replace a
 * member's identity"): five real node processes, 3-of-5. Member 4 is killed with SIGKILL and its whole
 * data dir, keys included, is gone. `quorumkeep member replace` gives it a new identity as epoch 1,
 * approved by members 0-3 over their operator ports; every node restarts on the new cluster file; the
 * old identity — its key kept by the test as a thief would — can no longer connect to any node. Then
 * member 3 also loses its disk, members 3 and 4 both recover their shares, members 0 and 1 stop, and
 * every secret still decrypts with members 2, 3 and 4.
 */
import { cp, readFile, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { multiaddr } from '@multiformats/multiaddr';
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from 'quorumkeep/testing';
import { loadOrCreateNodeKeys } from '../../src/cluster/index.ts';
import { createLibp2pNode } from '../../src/cluster/libp2p-node.ts';
import type { ClusterDescriptor } from '../../src/core/replication/ports.ts';
import { cleanupStack, tempDir } from '../utils/temp.ts';
import { runCli, startProcessCluster, type ProcessCluster } from '../utils/process-cluster.ts';
import { openSealed, outboxPrincipalWithSession, sealSecrets } from '../utils/process-web2.ts';
import { getJson } from '../utils/http.ts';

const stack = cleanupStack();
afterEach(() => stack.run());

const REPLACED = 4;
const WIPED = 3;
const SECRETS = 4;

async function readCluster(dir: string): Promise<ClusterDescriptor> {
  return JSON.parse(await readFile(join(dir, 'cluster.json'), 'utf8')) as ClusterDescriptor;
}

/** Each node's count of refused stranger connections (`quorumkeep_peer_connections_refused_total`). */
async function refusedCounts(pc: ProcessCluster): Promise<number[]> {
  return Promise.all(
    pc.operatorUrls.map(async (url) => {
      const text = await (await fetch(`${url}/metrics`)).text();
      return Number(/^quorumkeep_peer_connections_refused_total (\d+)/m.exec(text)?.[1] ?? 'NaN');
    }),
  );
}

/**
 * Dial every node of `descriptor` with the libp2p identity in `keysDir` and try a protocol exchange
 * (identify: the dial itself may look open for a moment before the remote's gater closes it); whether
 * each exchange worked.
 */
async function identifyEachWith(keysDir: string, descriptor: ClusterDescriptor): Promise<boolean[]> {
  const { keys } = await loadOrCreateNodeKeys(keysDir);
  const node = await createLibp2pNode({ privateKey: keys.identity, listen: ['/ip4/127.0.0.1/tcp/0'], allowedPeers: new Set(descriptor.nodes.map((n) => n.peerId)), blockedPeers: new Set() });
  await node.start();
  try {
    const outcomes: boolean[] = [];
    for (const n of descriptor.nodes) {
      const address = multiaddr(`${n.multiaddrs[0]!}/p2p/${n.peerId}`);
      outcomes.push(
        await node
          .dial(address, { signal: AbortSignal.timeout(10_000) })
          .then((c) => node.services.identify.identify(c, { signal: AbortSignal.timeout(10_000) }))
          .then(() => true, () => false),
      );
      await node.hangUp(address).catch(() => undefined);
    }
    return outcomes;
  } finally {
    await node.stop();
  }
}

describe('a member process whose keys are lost (real CLI, kill -9)', () => {
  it('gets a new identity approved by threshold members; the old one is refused; with members 3 and 4 recovered, 2, 3 and 4 decrypt everything', async () => {
    const dir = await tempDir(stack);
    const pc = await startProcessCluster(dir, { size: 5, threshold: 3 });
    stack.push(() => pc.stopAll());
    const A = pc.urls[0]!;
    const reachableAll = async (url: string) => (await getJson<{ cluster: { reachable: number } }>(`${url}/healthz`)).body.cluster.reachable === 5;
    await waitFor(() => reachableAll(A), { timeoutMs: 20_000 });
    const alice = await outboxPrincipalWithSession(pc, A, 'alice');
    const sealed = await sealSecrets(A, alice, SECRETS);
    const epoch0 = await readCluster(dir);

    // Member 4's machine is lost, keys and all; the test keeps a copy of its keys, as a thief would.
    await pc.kill9(REPLACED);
    const stolen = join(await tempDir(stack), 'keys');
    await cp(join(pc.dataDir(REPLACED), 'keys'), stolen, { recursive: true });
    await rm(pc.dataDir(REPLACED), { recursive: true, force: true });

    const approvers = join(dir, 'approvers.json');
    await writeFile(approvers, JSON.stringify([0, 1, 2, 3].map((i) => ({ url: pc.operatorUrls[i], token: pc.adminTokens[i] }))));
    const next = join(dir, 'cluster-epoch-1.json');
    const replace = await runCli(['member', 'replace', '--cluster', join(dir, 'cluster.json'), '--node', `node-${REPLACED}`, '--keys-dir', join(pc.dataDir(REPLACED), 'keys'), '--approvers', approvers, '--out', next]);
    expect(replace.code, replace.stderr + replace.stdout).toBe(0);

    // Roll the new epoch out: every node restarts on it, one at a time; then member 4 starts on its new keys.
    await rename(next, join(dir, 'cluster.json'));
    const epoch1 = await readCluster(dir);
    expect(epoch1.epoch).toBe(1);
    expect(epoch1.retired?.[0]?.nodeAddress).toBe(epoch0.nodes[REPLACED]!.nodeAddress);
    for (const i of [0, 1, 2, 3]) {
      expect(await pc.stop(i)).toBe(0);
      await pc.start(i);
    }
    await pc.start(REPLACED);
    for (let i = 0; i < 5; i++) {
      const report = await getJson<{ epoch: number }>(`${pc.operatorUrls[i]}/admin/cluster`, { authorization: `Bearer ${pc.adminTokens[i]}` });
      expect(report.body.epoch).toBe(1);
    }
    await waitFor(() => reachableAll(A), { timeoutMs: 30_000, description: 'all five members reachable at epoch 1' });

    // The old identity is refused by every node, the new member 4 included: no protocol exchange
    // works, and each node counts the refused connection.
    const before = await refusedCounts(pc);
    expect(await identifyEachWith(stolen, epoch1)).toEqual([false, false, false, false, false]);
    await waitFor(async () => (await refusedCounts(pc)).every((n, i) => n > before[i]!), { timeoutMs: 10_000, description: 'every node to count the refused connection' });

    // Member 3 loses its disk too (keys kept); members 3 and 4 rebuild their shares.
    await pc.kill9(WIPED);
    for (const name of await readdir(pc.dataDir(WIPED))) if (name !== 'keys') await rm(join(pc.dataDir(WIPED), name), { recursive: true, force: true });
    await pc.start(WIPED);
    const token = ['--url', A, '--token', pc.adminTokens[0]!];
    for (const slot of [WIPED, REPLACED]) {
      const recover = await runCli(['member', 'recover', '--slot', String(slot), ...token]);
      expect(recover.code, recover.stderr).toBe(0);
    }
    await waitFor(async () => (await runCli(['member', 'status', ...token])).code === 0, { timeoutMs: 90_000, intervalMs: 500, description: 'members 3 and 4 to hold every share again' });

    await pc.stop(0);
    await pc.stop(1);
    const C = pc.urls[2]!;
    expect(await openSealed(C, alice, sealed)).toEqual(sealed.map((s) => ({ status: 200, plaintext: s.plaintext })));
  }, 300_000);
});
