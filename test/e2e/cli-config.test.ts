/**
 * The real CLI as a child process: config commands and start-up failures. None of these needs a
 * running node — every failure here happens while loading config, before a node is created.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { initCluster } from '../../src/node/cluster-init.ts';
import { cleanupStack, tempDir } from '../utils/temp.ts';
import { failureLine, type CliResult } from '../utils/process-cluster.ts';

const REPO_ROOT = join(import.meta.dirname, '../..');

const stack = cleanupStack();
afterEach(() => stack.run());

let dir: string;
beforeEach(async () => {
  dir = await tempDir(stack, 'qk-cli-');
});

/** Run `node src/main.ts …` (process.execPath is Node 24 under npm) with only the given QK_ variables. */
function cli(args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  const baseEnv = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('QK_')));
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['src/main.ts', ...args], { cwd: REPO_ROOT, env: { ...baseEnv, ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

async function generated(): Promise<string> {
  await initCluster({ out: dir, size: 3, threshold: 2 });
  return join(dir, 'node-0.json');
}

describe('quorumkeep CLI', () => {
  it('cluster init, then config print shows the admin token redacted', async () => {
    const init = await cli(['cluster', 'init', '--size', '3', '--threshold', '2', '--out', dir, '--cluster-id', 'qk-e2e']);
    expect(init.code, init.stderr).toBe(0);
    expect(init.stdout).toContain('cluster qk-e2e: 3 members, threshold 2');
    expect(init.stdout.split('\n').filter((line) => /^\s+node-\d\s/.test(line))).toHaveLength(3);

    const token = (JSON.parse(await readFile(join(dir, 'node-0.json'), 'utf8')) as { admin: { token: string } }).admin.token;
    const printed = await cli(['config', 'print', '--config', join(dir, 'node-0.json')], { QK_MAIL_SMTP_PASS: 'hunter2' });
    expect(printed.code, printed.stderr).toBe(0);
    const config = JSON.parse(printed.stdout) as { nodeId: string; dataDir: string; admin: { token: string }; mail: { smtp: { pass: string } } };
    expect(config.nodeId).toBe('node-0');
    expect(config.dataDir).toBe(join(dir, 'node-0'));
    expect(config.admin.token).toBe('[redacted]');
    expect(config.mail.smtp.pass).toBe('[redacted]');
    expect(printed.stdout).not.toContain(token);
    expect(printed.stdout).not.toContain('hunter2');

    const again = await cli(['cluster', 'init', '--size', '3', '--threshold', '2', '--out', dir]);
    expect(again.code).toBe(2);
    expect(failureLine(again)).toMatch(/^quorumkeep: cluster init: .*cluster\.json already exists/);
  });

  it('--version prints package.json\'s version, and QK_COMMIT is no config error', async () => {
    const { version } = JSON.parse(await readFile(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string };
    for (const flag of ['--version', '-V']) {
      const result = await cli([flag], { QK_COMMIT: 'abc123' });
      expect(result.code, result.stderr).toBe(0);
      expect(result.stdout).toBe(`${version}\n`);
    }
    const printed = await cli(['config', 'print', '--config', await generated()], { QK_COMMIT: 'abc123' });
    expect(printed.code, printed.stderr).toBe(0);
  });

  it('start with an unknown config key', async () => {
    const file = await generated();
    const config = JSON.parse(await readFile(file, 'utf8')) as Record<string, unknown>;
    await writeFile(file, JSON.stringify({ ...config, replication: { applyTimeoutMS: 100 } }));
    const result = await cli(['start', '--config', file]);
    expect(result.code).toBe(2);
    expect(failureLine(result)).toBe(`quorumkeep: config: unknown key "replication.applyTimeoutMS" (in ${file})`);
  });

  it('start with a wrong type via env', async () => {
    const result = await cli(['start', '--config', await generated()], { QK_HTTP_PORT: 'eighty' });
    expect(result.code).toBe(2);
    expect(failureLine(result)).toBe('quorumkeep: config: http.port: expected a number (from env QK_HTTP_PORT)');
  });

  it('start with threshold <= size/2 in the cluster file', async () => {
    const file = await generated();
    const clusterFile = join(dir, 'cluster.json');
    const cluster = JSON.parse(await readFile(clusterFile, 'utf8')) as { threshold: number };
    await writeFile(clusterFile, JSON.stringify({ ...cluster, threshold: 1 }));
    const result = await cli(['start', '--config', file]);
    expect(result.code).toBe(2);
    expect(failureLine(result)).toBe(
      `quorumkeep: cluster file: threshold: must be greater than size/2 and at most size (size 3, threshold 1) (in ${clusterFile})`,
    );
  });

  it('start with a missing cluster file', async () => {
    const file = await generated();
    const result = await cli(['start', '--config', file, '--set', 'clusterFile=nowhere.json']);
    expect(result.code).toBe(2);
    expect(failureLine(result)).toBe(`quorumkeep: config: clusterFile ${join(REPO_ROOT, 'nowhere.json')}: cannot read (ENOENT)`);
  });

  it('start with a missing config file, and usage errors', async () => {
    const missing = join(dir, 'absent.json');
    expect(failureLine(await cli(['start', '--config', missing]))).toBe(`quorumkeep: config: file ${missing}: cannot read (ENOENT)`);
    const usage = await cli(['cluster', 'init', '--size', 'five', '--threshold', '3', '--out', dir]);
    expect(usage.code).toBe(2);
    expect(failureLine(usage)).toMatch(/^quorumkeep: option '--size <n>' argument 'five' is invalid/);
  });
});

describe('quorumkeep status', () => {
  /** Serve `body` as GET /healthz on a free port; returns the base URL (the server is closed by the stack). */
  async function fakeCoordinator(body: unknown): Promise<string> {
    const server: Server = createServer((req, res) => {
      res.writeHead(req.url === '/healthz' ? 200 : 404, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    stack.push(() => closeServer(server));
    const address = server.address();
    if (address === null || typeof address === 'string') throw new Error('no port');
    return `http://127.0.0.1:${address.port}`;
  }

  function closeServer(server: Server): Promise<void> {
    return new Promise((resolve) => server.close(() => resolve()));
  }

  const member = (slot: number, reachable: boolean) => ({
    slot,
    nodeId: `node-${slot}`,
    nodeAddress: `0x${String(slot).repeat(40)}`,
    peerId: `peer-${slot}`,
    reachable,
    self: slot === 0,
  });

  function health(reachable: boolean[]) {
    const up = reachable.filter(Boolean).length;
    return {
      status: up < 2 ? 'unavailable' : up < reachable.length ? 'degraded' : 'ok',
      problems: [...(up < 2 ? ['quorum_unreachable'] : []), ...(reachable[0] ? [] : ['slot0_unreachable']), ...(up < reachable.length ? ['member_unreachable'] : [])],
      serverTime: Date.now(),
      clusterMap: Object.fromEntries(reachable.map((r, slot) => [String(slot), member(slot, r)])),
      cluster: { clusterId: 'qk-status', size: reachable.length, threshold: 2, reachable: up, slot0Reachable: reachable[0] },
    };
  }

  it('prints a summary and exits 0 when ok, 1 when degraded (a member down), 2 when unavailable (below quorum)', async () => {
    const ok = await cli(['status', '--url', await fakeCoordinator(health([true, true, true]))]);
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).toMatch(/status:\s+ok/);
    expect(ok.stdout).toContain('qk-status');
    expect(ok.stdout).toContain('3/3 members (threshold 2)');

    const degraded = await cli(['status', '--url', await fakeCoordinator(health([true, true, false]))]);
    expect(degraded.code, degraded.stderr).toBe(1);
    expect(degraded.stdout).toMatch(/status:\s+degraded \(member_unreachable\)/);
    expect(degraded.stdout).toMatch(/slot +2 +node-2 +0x2{40} +UNREACHABLE/);

    const unavailable = await cli(['status', '--url', await fakeCoordinator(health([true, false, false])), '--json']);
    expect(unavailable.code).toBe(2);
    expect((JSON.parse(unavailable.stdout) as { status: string }).status).toBe('unavailable');
  });

  it('reaches QK_URL without --url, and quorumkeep local\'s first coordinator without either', async () => {
    const fromEnv = await cli(['status'], { QK_URL: await fakeCoordinator(health([true, true, true])) });
    expect(fromEnv.code, fromEnv.stderr).toBe(0);
    expect(fromEnv.stdout).toMatch(/status:\s+ok/);
    // The flag wins over the environment.
    const flag = await cli(['status', '--url', await fakeCoordinator(health([true, true, false]))], { QK_URL: 'http://127.0.0.1:1' });
    expect(flag.code, flag.stderr).toBe(1);
    const neither = await cli(['status', '--help']);
    expect(neither.stdout).toContain('http://127.0.0.1:3010');
  });

  it('exits 2 when the coordinator is unreachable or its answer malformed', async () => {
    const malformed = await cli(['status', '--url', await fakeCoordinator({ status: 'ok' })]);
    expect(malformed.code).toBe(2);
    expect(failureLine(malformed)).toMatch(/^quorumkeep: status: malformed answer from http:\/\/127\.0\.0\.1:\d+\/healthz \(cluster: /);

    // A port that was just free: a server bound and closed again leaves nothing listening there.
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const { port } = closed.address() as { port: number };
    await closeServer(closed);
    const url = `http://127.0.0.1:${port}`;
    const unreachable = await cli(['status', '--url', url]);
    expect(unreachable.code).toBe(2);
    expect(failureLine(unreachable)).toBe(`quorumkeep: status: cannot reach ${url}/healthz (ECONNREFUSED)`);
  });
});
