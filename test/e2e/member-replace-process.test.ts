/**
 * "Replace a member's identity" as docs/operations.md writes it (issues 15 and 28): five real node
 * processes, 3-of-5, coordinators on slots 0-2. Member 4 is killed with SIGKILL and its whole data
 * dir, keys included, is gone (1). The approvers file names members 0-3 by their operator ports (2);
 * `quorumkeep member replace` gives it a new identity as epoch 1 (3); every node restarts on the new
 * cluster file, one at a time (4); member 4 starts on its new keys with an empty data dir and — no
 * operator command — finds its shares missing and recovers them: `quorumkeep status` exits 0 on every
 * node (5). The old identity — its key kept by the test as a thief would — can no longer connect to
 * any node. At each step the test asserts what the operator sees (`quorumkeep status`, `/readyz`,
 * `GET /admin/cluster`, metrics); afterwards every secret decrypts with each of the ten 3-member
 * subsets and no node recorded an equivocation.
 */
import { cp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { multiaddr } from '@multiformats/multiaddr';
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from 'quorumkeep/testing';
import { loadOrCreateNodeKeys } from '../../src/cluster/index.ts';
import { createLibp2pNode } from '../../src/cluster/libp2p-node.ts';
import type { ClusterDescriptor } from '../../src/core/replication/ports.ts';
import { cleanupStack, tempDir } from '../utils/temp.ts';
import { runCli, startProcessCluster, type ProcessCluster } from '../utils/process-cluster.ts';
import { outboxPrincipalWithSession, sealSecrets } from '../utils/process-web2.ts';
import { getJson } from '../utils/http.ts';
import { expectEveryThresholdSubsetDecrypts, expectNoEquivocation, expectStatus, healthOf, type HealthAnswer, memberSharesOf, metricsOf, readyzOf, runningSlots, sampleOf, waitForEveryNode } from '../utils/runbook.ts';

const stack = cleanupStack();
afterEach(() => stack.run());

const REPLACED = 4;
const SECRETS = 3;

async function readCluster(dir: string): Promise<ClusterDescriptor> {
  return JSON.parse(await readFile(join(dir, 'cluster.json'), 'utf8')) as ClusterDescriptor;
}

/** Each node's count of refused stranger connections (`quorumkeep_peer_connections_refused_total`). */
async function refusedCounts(pc: ProcessCluster): Promise<number[]> {
  return Promise.all(pc.operatorUrls.map(async (url) => sampleOf(await metricsOf(url), 'quorumkeep_peer_connections_refused_total') ?? Number.NaN));
}

/** The epoch node `i` runs on (`GET /admin/cluster` on its operator port). */
async function epochOf(pc: ProcessCluster, i: number): Promise<number> {
  return (await getJson<{ epoch: number }>(`${pc.operatorUrls[i]}/admin/cluster`, { authorization: `Bearer ${pc.adminTokens[i]}` })).body.epoch;
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
  it('gets a new identity approved by threshold members, recovers its shares by itself, the old identity is refused; every 3 members decrypt everything', async () => {
    const dir = await tempDir(stack);
    const pc = await startProcessCluster(dir, { size: 5, threshold: 3, coordinators: 3 });
    stack.push(() => pc.stopAll());
    const A = pc.urls[0]!;
    const alice = await outboxPrincipalWithSession(pc, A, 'alice');
    const sealed = await sealSecrets(A, alice, SECRETS);
    await waitForEveryNode(pc, (h) => h.status === 'ok' && h.dataSafety.members.every((m) => m.shares?.held === SECRETS), 'every node to see every member hold every share');
    const epoch0 = await readCluster(dir);

    // 1. Member 4's machine is lost, keys and all; the test keeps a copy of its keys, as a thief would.
    await pc.kill9(REPLACED);
    const stolen = join(await tempDir(stack), 'keys');
    await cp(join(pc.dataDir(REPLACED), 'keys'), stolen, { recursive: true });
    await rm(pc.dataDir(REPLACED), { recursive: true, force: true });
    await waitForEveryNode(pc, (h) => !h.clusterMap[String(REPLACED)]!.reachable, 'every node to miss member 4');
    await expectStatus(pc, 1, ['member_unreachable'], [0]);

    // 2. The approvers file; 3. `member replace`.
    const approvers = join(dir, 'approvers.json');
    await writeFile(approvers, JSON.stringify([0, 1, 2, 3].map((i) => ({ url: pc.operatorUrls[i], token: pc.adminTokens[i] }))));
    const next = join(dir, 'cluster-epoch-1.json');
    const replace = await runCli(['member', 'replace', '--cluster', join(dir, 'cluster.json'), '--node', `node-${REPLACED}`, '--keys-dir', join(pc.dataDir(REPLACED), 'keys'), '--approvers', approvers, '--out', next]);
    expect(replace.code, replace.stderr + replace.stdout).toBe(0);

    // 4. The new cluster file in place on every node (they share one here); each restarts in turn.
    await rename(next, join(dir, 'cluster.json'));
    const epoch1 = await readCluster(dir);
    expect(epoch1.epoch).toBe(1);
    expect(epoch1.retired?.[0]?.nodeAddress).toBe(epoch0.nodes[REPLACED]!.nodeAddress);
    for (const i of [0, 1, 2, 3]) {
      expect(await epochOf(pc, i), `node-${i} before its restart`).toBe(0);
      expect(await pc.stop(i)).toBe(0);
      await pc.start(i);
      expect(await epochOf(pc, i), `node-${i} after its restart`).toBe(1);
      await waitFor(async () => (await healthOf(pc.operatorUrls[i]!)).cluster.reachable === 4, { timeoutMs: 30_000, description: `node-${i} to reach the four members left` });
    }
    await expectStatus(pc, 1, ['member_unreachable'], [0]);
    await expectNoEquivocation(pc);

    // 5. Member 4 starts on its new keys with an empty data dir and recovers by itself. The runbook
    // says to wait for `quorumkeep status` to exit 0, but that exits 0 from the start: no node counts
    // the new member's shares missing before its first inventory (`shares: null`), nor while they are
    // `pending` (3 s), and it rebuilds three of them within a few ms after that, `recovering` too
    // briefly for any node to see. The wait that holds is the member's `/readyz`, then every node
    // seeing its shares held.
    await pc.start(REPLACED);
    expect(await epochOf(pc, REPLACED)).toBe(1);
    await waitFor(async () => (await readyzOf(pc.operatorUrls[REPLACED]!)).status === 200, { timeoutMs: 60_000, description: 'member 4 ready' });
    const held = (h: HealthAnswer) => h.dataSafety.members.find((m) => m.slot === REPLACED)?.shares;
    await waitForEveryNode(pc, (h) => h.status === 'ok' && held(h)?.held === SECRETS && held(h)?.expected === SECRETS, 'every node to see member 4 hold every share', 60_000);
    await expectStatus(pc, 0);
    expect((await healthOf(pc.operatorUrls[REPLACED]!)).recovery).toMatchObject({ state: 'done', total: SECRETS, recovered: SECRETS, failed: 0 });
    for (const i of runningSlots(pc)) expect(await memberSharesOf(pc.operatorUrls[i]!, REPLACED), `node-${i}`).toEqual({ held: SECRETS, expected: SECRETS, recovering: 0 });
    await expectNoEquivocation(pc);

    // The old identity is refused by every node, the new member 4 included: no protocol exchange
    // works, and each node counts the refused connection.
    const before = await refusedCounts(pc);
    expect(await identifyEachWith(stolen, epoch1)).toEqual([false, false, false, false, false]);
    await waitFor(async () => (await refusedCounts(pc)).every((n, i) => n > before[i]!), { timeoutMs: 10_000, description: 'every node to count the refused connection' });

    await expectEveryThresholdSubsetDecrypts(pc, alice, sealed);
    await expectNoEquivocation(pc);
  }, 240_000);
});
