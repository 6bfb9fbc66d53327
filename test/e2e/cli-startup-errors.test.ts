/**
 * A start refused by another process, through the real CLI (docs/operations.md, "Startup errors"): a
 * running node holds its data directory and its libp2p, operator and API ports; a second `start` on
 * each exits 2 with one line that begins with the config key and names the flag that changes it —
 * never the libraries' own words. `local` says the same with its own flags.
 */
import { createServer, type Server } from 'node:net';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { getFreePortRange } from 'quorumkeep/testing';
import { failureLine, runCli, startProcessCluster, type CliResult, type ProcessCluster } from '../utils/process-cluster.ts';
import { cleanupStack, tempDir } from '../utils/temp.ts';

const stack = cleanupStack();
afterEach(() => stack.run());

/** A command that should fail at once is stopped after this long, so that one that runs on fails the test instead of hanging it. */
const FAILING_START_TIMEOUT_MS = 40_000;
const TEST_TIMEOUT_MS = 60_000;

/** The words of the libraries under the ones quorumkeep prints: libp2p's advice, Node's errno, LevelDB's lock file. */
const LIBRARY_WORDS = /faultTolerance|EADDRINUSE|LOCK|Resource temporarily unavailable/;

/** Exit 2 with one line, in quorumkeep's words; the line. */
function refusal(result: CliResult): string {
  expect(result.code, result.stderr).toBe(2);
  const line = failureLine(result);
  expect(line).not.toMatch(LIBRARY_WORDS);
  return line;
}

/** Hold `port` on 127.0.0.1 until the test ends. */
async function occupy(port: number): Promise<void> {
  const server: Server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
  stack.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
}

describe('quorumkeep start, on what a running node holds', () => {
  const suite = cleanupStack();
  let pc: ProcessCluster;
  let dir: string;

  // One running node for every case: it holds the data directory and the three ports.
  beforeAll(async () => {
    dir = await tempDir(suite, 'qk-startup-errors-');
    pc = await startProcessCluster(dir, { size: 1, threshold: 1 });
    suite.push(() => pc.stopAll());
  }, TEST_TIMEOUT_MS);
  afterAll(() => suite.run());

  /** `start` with node-0's config again, as the systemd unit runs it (so nothing else goes to stderr). */
  function startAgain(...flags: string[]): Promise<CliResult> {
    return runCli(['start', '--config', pc.configPath(0), '--log-level', 'warn', ...flags], { processSettings: true, timeoutMs: FAILING_START_TIMEOUT_MS });
  }
  /** Flags for a data directory of its own (with node-0's keys, which only it may use). */
  const ownDataDir = (name: string) => ['--data-dir', join(dir, name), '--set', `keysDir=${join(pc.dataDir(0), 'keys')}`];
  const FREE_LISTEN = ['--set', 'listen=/ip4/127.0.0.1/tcp/0'];
  const FREE_OPERATOR = ['--set', 'operator.port=0'];
  const FREE_HTTP = ['--http-port', '0'];

  it('the same data directory: dataDir and --data-dir', async () => {
    const line = refusal(await startAgain(...FREE_LISTEN, ...FREE_OPERATOR, ...FREE_HTTP));
    expect(line).toMatch(/^quorumkeep: dataDir: /);
    expect(line).toContain(pc.dataDir(0));
    expect(line).toContain('--data-dir');
    // The node that holds it goes on.
    expect(pc.running(0)).toBe(true);
    expect((await fetch(`${pc.urls[0]}/healthz`)).status).toBe(200);
  }, TEST_TIMEOUT_MS);

  it("its libp2p port (the cluster file's address): listen, --set listen= and cluster set-address", async () => {
    const cluster = JSON.parse(await readFile(join(dir, 'cluster.json'), 'utf8')) as { nodes: Array<{ multiaddrs: string[] }> };
    const announced = cluster.nodes[0]!.multiaddrs[0]!;
    const line = refusal(await startAgain(...ownDataDir('second-libp2p'), ...FREE_OPERATOR, ...FREE_HTTP));
    expect(line).toMatch(/^quorumkeep: listen: /);
    expect(line).toContain(announced);
    expect(line).toContain('--set listen=');
    expect(line).toContain('cluster set-address');
  }, TEST_TIMEOUT_MS);

  // The operator port is bound before the API port: each case frees the other ports.
  it.each([
    { port: 'operator', key: 'operator.port', flag: '--set operator.port=', url: () => pc.operatorUrls[0]!, free: [...FREE_LISTEN, ...FREE_HTTP] },
    { port: 'API', key: 'http.port', flag: '--http-port', url: () => pc.urls[0]!, free: [...FREE_LISTEN, ...FREE_OPERATOR] },
  ])('its $port port: $key and $flag', async ({ port, key, flag, url, free }) => {
    const line = refusal(await startAgain(...ownDataDir(`second-${port}`), ...free));
    expect(line.startsWith(`quorumkeep: ${key}: `), line).toBe(true);
    expect(line).toContain(new URL(url()).host);
    expect(line).toContain(flag);
  }, TEST_TIMEOUT_MS);
});

describe('quorumkeep local, on a port another process holds', () => {
  it("names the node, http.port and local's --http-base-port", async () => {
    const dir = await tempDir(stack, 'qk-startup-errors-local-');
    // Three members, two coordinators: libp2p, HTTP and operator ports from one free range.
    const base = await getFreePortRange(8);
    const ports = { libp2p: base, http: base + 3, operator: base + 5 };
    await occupy(ports.http + 1);
    const result = await runCli(
      ['local', '--dir', join(dir, 'data'), '--no-chain', '--size', '3', '--threshold', '2', '--base-port', String(ports.libp2p), '--http-base-port', String(ports.http), '--operator-base-port', String(ports.operator), '--log-level', 'warn'],
      { processSettings: true, timeoutMs: FAILING_START_TIMEOUT_MS },
    );
    const line = refusal(result);
    expect(line).toMatch(/^quorumkeep: local: node-1: http\.port: /);
    expect(line).toContain(`127.0.0.1:${ports.http + 1}`);
    expect(line).toContain('--http-base-port');
  }, TEST_TIMEOUT_MS);
});
