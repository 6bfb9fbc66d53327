/**
 * One node per host, through the real CLI (issue 11): `cluster init --hosts` on three loopback
 * addresses (three "hosts" with the same ports), `cluster set-address` moving one node, then the
 * cluster started from the rewritten file connects; wildcard addresses stop `init` and `start` with
 * exit code 2 and one line; a peer that cannot be dialled is logged at warn.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { getFreePortRange, waitFor } from 'quorumkeep/testing';
import { runCli } from '../utils/process-cluster.ts';
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
    // The member node-2 answers on its operator port, and `status` reads it like a coordinator.
    const status = await runCli(['status', '--url', operatorUrls[2]!]);
    expect(status.code, status.stderr).toBe(0);
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
});
