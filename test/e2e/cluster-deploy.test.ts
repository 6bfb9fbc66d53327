/**
 * One node per host, through the real CLI (issue 11): `cluster init --hosts` on three loopback
 * addresses (three "hosts" with the same ports), `cluster set-address` moving one node, then the
 * cluster started from the rewritten file connects; wildcard addresses stop `init` and `start` with
 * exit code 2 and one line; a peer that cannot be dialled is logged at warn.
 *
 * Issue 28: "Changing a node's address" (docs/deployment.md) on a running cluster of five processes,
 * as written — `set-address`, the node's own config, the rolling restart with the `status --json`
 * wait — with writes going on all along; the operator's view at each step, and afterwards every secret
 * decrypts with each of the ten 3-member subsets and no node recorded an equivocation.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { getFreePortRange, waitFor } from 'quorumkeep/testing';
import { runCli, startProcessCluster, writeProbes } from '../utils/process-cluster.ts';
import { outboxPrincipalWithSession, sealSecrets } from '../utils/process-web2.ts';
import {
  expectEveryThresholdSubsetDecrypts,
  expectNoEquivocation,
  expectProbesEverywhere,
  expectStatus,
  healthOf,
  metricsOf,
  quorumkeepStatus,
  readyzOf,
  sampleOf,
  waitForEveryNode,
} from '../utils/runbook.ts';
import { cleanupStack, tempDir } from '../utils/temp.ts';

const REPO = resolve(fileURLToPath(import.meta.url), '../../..');

const stack = cleanupStack();
afterEach(() => stack.run());

let dir: string;
beforeEach(async () => {
  dir = await tempDir(stack, 'qk-deploy-');
});

/** The failure's single stderr line; fails unless the CLI exited 2 with exactly one line. */
function failureLine(result: { code: number | null; stderr: string }): string {
  expect(result.code, result.stderr).toBe(2);
  const lines = result.stderr.trimEnd().split('\n');
  expect(lines, result.stderr).toHaveLength(1);
  return lines[0] as string;
}

interface Node {
  child: ChildProcess;
  output: () => string;
  stop(): Promise<number | null>;
}

function startNode(config: string): Node {
  const child = spawn(process.execPath, ['src/main.ts', 'start', '--config', config, '--log-level', 'warn'], { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  const node: Node = {
    child,
    output: () => output,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
  stack.push(() => node.stop());
  return node;
}

async function reachable(url: string): Promise<number | undefined> {
  try {
    const res = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(2000) });
    return ((await res.json()) as { cluster: { reachable: number } }).cluster.reachable;
  } catch {
    return undefined;
  }
}

describe('one node per host', () => {
  it('init --hosts, set-address, and the cluster started from the rewritten file connects', async () => {
    // One free range, used on every "host": each host gets the same three ports.
    const base = await getFreePortRange(3);
    const [p2p, http, operator] = [base, base + 1, base + 2];
    const hosts = ['127.0.0.1', '127.0.0.2', '127.0.0.3'];
    const init = await runCli([
      'cluster', 'init', '--size', '3', '--threshold', '2', '--coordinators', '1', '--out', dir, '--hosts', hosts.join(','),
      '--base-port', String(p2p), '--http-base-port', String(http), '--operator-base-port', String(operator),
    ]);
    expect(init.code, init.stderr).toBe(0);
    expect(init.stdout).toContain(`node-1  slot 1  libp2p /ip4/127.0.0.2/tcp/${p2p}  operator :${operator}`);
    const clusterFile = join(dir, 'cluster.json');

    // Move node-2 to another "host" (127.0.0.4): only the cluster file changes.
    const moved = `/ip4/127.0.0.4/tcp/${p2p}`;
    const set = await runCli(['cluster', 'set-address', '--cluster-file', clusterFile, '--node', 'node-2', '--multiaddr', moved]);
    expect(set.code, set.stderr).toBe(0);
    expect(set.stdout).toContain(`  multiaddrs: /ip4/127.0.0.3/tcp/${p2p} -> ${moved}`);
    expect(set.stdout).toMatch(/copy .*cluster\.json to every node .* restart the nodes one at a time/);
    const file = JSON.parse(await readFile(clusterFile, 'utf8')) as { nodes: Array<{ id: string; multiaddrs: string[] }> };
    expect(file.nodes.map((n) => n.multiaddrs[0])).toEqual([`/ip4/127.0.0.1/tcp/${p2p}`, `/ip4/127.0.0.2/tcp/${p2p}`, moved]);
    const invalid = await runCli(['cluster', 'set-address', '--cluster-file', clusterFile, '--node', 'node-2', '--multiaddr', `/ip4/0.0.0.0/tcp/${p2p}`]);
    expect(failureLine(invalid)).toMatch(/^quorumkeep: cluster set-address: multiaddr: "\/ip4\/0\.0\.0\.0\/tcp\/\d+": 0\.0\.0\.0 is a wildcard address/);

    const nodes = [0, 1, 2].map((i) => startNode(join(dir, `node-${i}.json`)));
    const operatorUrls = hosts.map((h) => `http://${h}:${operator}`);
    await waitFor(async () => (await Promise.all(operatorUrls.map(reachable))).every((n) => n === 3), {
      timeoutMs: 30_000,
      description: `every node to see 3 (outputs: ${nodes.map((n) => n.output()).join(' | ')})`,
    });
    // The member node-2 answers on its operator port, and `status` reads it like a coordinator: ok
    // (exit 0) once every member has reported its shares, a second or two after the start.
    let status = await runCli(['status', '--url', operatorUrls[2]!]);
    await waitFor(async () => (status = await runCli(['status', '--url', operatorUrls[2]!])).code === 0, { timeoutMs: 30_000, description: 'status to exit 0' });
    expect(status.stdout).toMatch(/reachable:\s+3\/3 members/);
    expect((await fetch(`http://127.0.0.1:${http}/healthz`)).status).toBe(200);

    // node-2 goes away: the others say so at warn, naming it and why.
    expect(await nodes[2]!.stop()).toBe(0);
    const dialLine = () => nodes[0]!.output().split('\n').find((l) => l.includes('"msg":"cannot dial peer"') && l.includes('"peer":"node-2"'));
    await waitFor(() => dialLine() !== undefined, { timeoutMs: 20_000, description: 'a warn line about node-2' });
    const line = dialLine()!;
    expect(JSON.parse(line)).toMatchObject({ level: 40, peer: 'node-2', multiaddrs: [moved], failures: expect.any(Number) as number });
    expect((JSON.parse(line) as { reason: string }).reason).toMatch(/ECONNREFUSED|timed out/);
    expect(await nodes[0]!.stop()).toBe(0);
    expect(await nodes[1]!.stop()).toBe(0);
    // Every node listened where the cluster file announced it.
    for (const node of nodes) expect(node.output()).not.toContain('node does not listen on its announced address');
  }, 90_000);

  it('wildcard addresses stop init and start with exit code 2 and one line naming the key', async () => {
    const init = await runCli(['cluster', 'init', '--size', '3', '--threshold', '2', '--out', join(dir, 'wild'), '--host', '0.0.0.0']);
    expect(failureLine(init)).toMatch(/^quorumkeep: cluster init: host: 0\.0\.0\.0 is a wildcard address .*--listen-host/);
    const count = await runCli(['cluster', 'init', '--size', '3', '--threshold', '2', '--out', join(dir, 'few'), '--hosts', '10.0.0.1,10.0.0.2']);
    expect(failureLine(count)).toBe('quorumkeep: cluster init: hosts: needs exactly one address per node (size 3, got 2)');

    const ok = await runCli(['cluster', 'init', '--size', '3', '--threshold', '2', '--out', dir, '--hosts', '10.0.0.1,10.0.0.2,10.0.0.3', '--listen-host', '0.0.0.0']);
    expect(ok.code, ok.stderr).toBe(0);
    const clusterFile = join(dir, 'cluster.json');
    const descriptor = JSON.parse(await readFile(clusterFile, 'utf8')) as { nodes: Array<{ multiaddrs: string[] }> };
    descriptor.nodes[1]!.multiaddrs = ['/ip4/0.0.0.0/tcp/4010'];
    await writeFile(clusterFile, JSON.stringify(descriptor));
    const start = await runCli(['start', '--config', join(dir, 'node-0.json')]);
    expect(failureLine(start)).toMatch(new RegExp(`^quorumkeep: cluster file: nodes\\.1\\.multiaddrs\\.0: "/ip4/0\\.0\\.0\\.0/tcp/4010": 0\\.0\\.0\\.0 is a wildcard address .*\\(in ${clusterFile}\\)$`));
  });

  it('a wildcard http.publicUrl stops start with exit code 2', async () => {
    const ok = await runCli(['cluster', 'init', '--size', '3', '--threshold', '2', '--out', dir]);
    expect(ok.code, ok.stderr).toBe(0);
    const start = await runCli(['start', '--config', join(dir, 'node-0.json'), '--set', 'http.publicUrl=http://0.0.0.0:3010']);
    expect(failureLine(start)).toMatch(/^quorumkeep: config: http\.publicUrl: "http:\/\/0\.0\.0\.0:3010": 0\.0\.0\.0 is a wildcard address/);
  });

  it("moves a running node to another host as docs/deployment.md writes it: writes never stop, every status is ok again, and every 3 members decrypt everything", async () => {
    const MOVED = 3;
    const NEW_HOST = '127.0.0.2';
    const pc = await startProcessCluster(dir, { size: 5, threshold: 3 });
    stack.push(() => pc.stopAll());
    const alice = await outboxPrincipalWithSession(pc, pc.urls[0]!, 'alice');
    const sealed = await sealSecrets(pc.urls[0]!, alice, 2);
    await waitForEveryNode(pc, (h) => h.status === 'ok', 'every node ok');

    // 1. Rewrite its entry: its libp2p address and, a coordinator, its API.
    const clusterFile = join(dir, 'cluster.json');
    type ClusterFile = { nodes: Array<{ id: string; multiaddrs: string[]; httpUrl?: string }> };
    const before = JSON.parse(await readFile(clusterFile, 'utf8')) as ClusterFile;
    const old = before.nodes[MOVED]!;
    const moved = { multiaddr: old.multiaddrs[0]!.replace('/ip4/127.0.0.1/', `/ip4/${NEW_HOST}/`), httpUrl: old.httpUrl!.replace('//127.0.0.1:', `//${NEW_HOST}:`) };
    const set = await runCli(['cluster', 'set-address', '--cluster-file', clusterFile, '--node', old.id, '--multiaddr', moved.multiaddr, '--http-url', moved.httpUrl]);
    expect(set.code, set.stderr).toBe(0);
    const after = JSON.parse(await readFile(clusterFile, 'utf8')) as ClusterFile;
    expect(after.nodes).toEqual(before.nodes.map((n, i) => (i === MOVED ? { ...n, multiaddrs: [moved.multiaddr], httpUrl: moved.httpUrl } : n)));

    // 2. Its own config names the old address: its API and operator port bind there.
    const config = JSON.parse(await readFile(pc.configPath(MOVED), 'utf8')) as { http: { host: string; publicUrl: string }; operator: { host: string; port: number } };
    config.http = { ...config.http, host: NEW_HOST, publicUrl: moved.httpUrl };
    config.operator = { ...config.operator, host: NEW_HOST };
    await writeFile(pc.configPath(MOVED), JSON.stringify(config, null, 2) + '\n');

    // 3. The nodes share one cluster file here; each reads it only at start, so nothing changes yet.
    await expectStatus(pc, 0, [], [0]);

    // 4. Restart node-3 first, on its new host, then each other node, and wait until the restarted
    // node sees all 5 members (`quorumkeep status --json`, `.cluster.reachable == 5`) before the next.
    // Probes are written all along through a coordinator that is not restarting.
    let via = 0;
    const writes = writeProbes(pc, () => via, 'move');
    stack.push(() => writes.stop());
    const restart = async (i: number) => {
      if (via === i) {
        via = (i + 1) % pc.size;
        await writes.settled();
      }
      const written = writes.acked.length;
      expect(await pc.stop(i)).toBe(0);
      if (i === MOVED) {
        pc.urls[i] = moved.httpUrl;
        pc.operatorUrls[i] = `http://${NEW_HOST}:${config.operator.port}`;
      }
      await pc.start(i);
      await waitFor(async () => (await quorumkeepStatus(pc.operatorUrls[i]!)).health?.cluster.reachable === 5, { timeoutMs: 30_000, intervalMs: 500, description: `node-${i} to see all 5 members` });
      await waitFor(() => writes.acked.length >= written + 5, { timeoutMs: 20_000, description: `writes while node-${i} restarted` });
    };
    await restart(MOVED);
    // node-3 dialled the others itself: it is back in the cluster before they restart.
    await waitForEveryNode(pc, (h) => h.cluster.reachable === 5, 'every node to reach node-3 at its new address', 10_000);
    // A member that restarted shows its shares unknown until its first complete inventory after
    // catching up reaches the others (docs/operations.md, "Data safety"): ok follows within seconds.
    await waitForEveryNode(pc, (h) => h.status === 'ok', 'every node ok with node-3 at its new address', 30_000);
    await expectStatus(pc, 0);
    for (const i of [0, 1, 2, 4]) await restart(i);
    await writes.stop();
    expect(writes.failures(), 'writes refused or unanswered while the nodes restarted one at a time').toBe(0);

    // Every node runs on the new file, ready, all members reachable, nothing else wrong.
    await waitForEveryNode(pc, (h) => h.status === 'ok', 'every node ok after the rolling restart', 30_000);
    await expectStatus(pc, 0);
    for (let i = 0; i < pc.size; i++) {
      expect((await readyzOf(pc.operatorUrls[i]!)).status, `node-${i} /readyz`).toBe(200);
      expect(sampleOf(await metricsOf(pc.operatorUrls[i]!), 'quorumkeep_cluster_reachable_members'), `node-${i}`).toBe(5);
      expect((await healthOf(pc.operatorUrls[i]!)).clusterMap[String(MOVED)]!.httpUrl, `node-${i}`).toBe(moved.httpUrl);
    }
    await expectNoEquivocation(pc);
    await expectProbesEverywhere(pc, writes.acked);
    // The moved coordinator serves its API at the new address.
    const sealedThere = await sealSecrets(moved.httpUrl, alice, 1);

    await expectEveryThresholdSubsetDecrypts(pc, alice, [...sealed, ...sealedThere]);
    await expectNoEquivocation(pc);
  }, 240_000);
});
