/**
 * A cluster of real `quorumkeep` processes: `cluster init` then one `start` child process per node,
 * so a test can `kill -9` one. Output of every process is kept for the failure message.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import { getFreePortRange, waitFor } from '../../src/testing/index.ts';
import { NODE_PROCESS_SETTINGS } from '../../src/node/v8-heap.ts';
import { postJson } from './http.ts';

const REPO = resolve(fileURLToPath(import.meta.url), '../../..');

/**
 * Node's on-disk compile cache for every process spawned here: without it each process compiles the
 * sources again (about 0.4 s of a node's start on a busy 2-core machine), and the process tests start
 * dozens. It changes nothing a process does.
 */
const COMPILE_CACHE_ENV = { NODE_COMPILE_CACHE: join(tmpdir(), 'quorumkeep-test-compile-cache') };

/** How a node process is started: as the shipped systemd unit does (its node flags and environment), or without them. */
function nodeProcess(settings: boolean): { flags: readonly string[]; env: NodeJS.ProcessEnv } {
  const env: NodeJS.ProcessEnv = { ...process.env, ...COMPILE_CACHE_ENV, ...(settings ? NODE_PROCESS_SETTINGS.env : {}) };
  if (!settings) for (const name of [...Object.keys(NODE_PROCESS_SETTINGS.env), 'NODE_OPTIONS']) delete env[name];
  return { flags: settings ? NODE_PROCESS_SETTINGS.nodeFlags : [], env };
}

/** A finished process: its exit code and what it wrote. */
export interface ProcessRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Run a command to completion in the repository (or `cwd`) with exactly `env` plus the compile cache;
 * `input`, when given, is its stdin (otherwise stdin is closed); `timeoutMs` SIGTERMs it after that long.
 */
export async function runProcess(
  command: string,
  args: string[],
  options: { env: Record<string, string | undefined>; input?: string; cwd?: string; timeoutMs?: number },
): Promise<ProcessRun> {
  const child = spawn(command, args, {
    cwd: options.cwd ?? REPO,
    env: { ...options.env, ...COMPILE_CACHE_ENV },
    stdio: [options.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    ...(options.timeoutMs !== undefined ? { timeout: options.timeoutMs } : {}),
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  child.stdin?.end(options.input);
  const code = await new Promise<number | null>((resolveCode, reject) => {
    child.on('error', reject);
    child.on('close', (c) => resolveCode(c));
  });
  return { code, stdout, stderr };
}

/** Options of {@link runCli}. */
export interface RunCliOptions {
  /** Added to this process's environment. */
  env?: Record<string, string>;
  /**
   * Run it as the shipped systemd unit runs a node (its node flags and environment), so `start` and
   * `local` print no warning about them. @default false: this process's environment as it is
   */
  processSettings?: boolean;
  /** SIGTERM the command after this long (one that should have failed may run on instead). @default none */
  timeoutMs?: number;
}

/** What a CLI run ended with. */
export type CliResult = ProcessRun;

/** Run the CLI to completion. */
export function runCli(args: string[], options: RunCliOptions = {}): Promise<CliResult> {
  const node = options.processSettings ? nodeProcess(true) : { flags: [], env: process.env };
  return runProcess(process.execPath, [...node.flags, 'src/main.ts', ...args], {
    env: { ...node.env, ...options.env },
    ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
  });
}

/** The failure's single stderr line; fails unless the CLI exited non-zero with exactly one line. */
export function failureLine(result: CliResult): string {
  expect(result.code).not.toBe(0);
  const lines = result.stderr.trimEnd().split('\n');
  expect(lines, result.stderr).toHaveLength(1);
  return lines[0] as string;
}

/** A process cluster. */
export interface ProcessCluster {
  dir: string;
  /** Members in all (the cluster file's `size`). */
  size: number;
  /** Members a quorum needs. */
  threshold: number;
  /**
   * API base URL of each coordinator: slots 0 up to {@link ProcessClusterOptions.coordinators}. A test
   * that moves a node to another address (docs/deployment.md, "Changing a node's address") rewrites
   * its entry here and in {@link operatorUrls}.
   */
  urls: string[];
  /** Admin bearer token of each node (cluster init gives every coordinator its own). */
  adminTokens: string[];
  /** Base URL of each node's operator port (health, metrics, backups, membership). */
  operatorUrls: string[];
  /** Start node `i` as the shipped systemd unit does; `processSettings: false` leaves out its node flags and environment. */
  start(i: number, options?: { processSettings?: boolean }): Promise<void>;
  /** True while node `i`'s process runs (started, and neither killed nor stopped since). */
  running(i: number): boolean;
  /** SIGKILL: no shutdown code runs. */
  kill9(i: number): Promise<void>;
  /** SIGTERM and wait for a clean exit; returns the exit code. */
  stop(i: number): Promise<number | null>;
  stopAll(): Promise<void>;
  output(i: number): string;
  /** Absolute path of node `i`'s config file (`node-<i>.json`). */
  configPath(i: number): string;
  /** Absolute data directory of node `i` (LevelDB, keys, `outbox/`, `files/`). */
  dataDir(i: number): string;
}

/** Options of {@link startProcessCluster}. */
export interface ProcessClusterOptions {
  size: number;
  threshold: number;
  /** Members from slot 0 up that serve the API (`cluster init --coordinators`); the others are members only. @default size */
  coordinators?: number;
  /**
   * Rewrite node `i`'s config (the parsed `node-<i>.json` that `cluster init` wrote) before any node
   * starts; the returned object is written back. Unset: the files are left as `cluster init` wrote them.
   */
  configure?: (i: number, config: Record<string, unknown>) => Record<string, unknown>;
}

/** `cluster init` into `dir` and start every node as a child process. */
export async function startProcessCluster(dir: string, options: ProcessClusterOptions): Promise<ProcessCluster> {
  // One free range for the libp2p, HTTP and operator ports (the operator default, 3110 + i, may be
  // taken on a shared machine); three separate ranges could overlap.
  const coordinators = options.coordinators ?? options.size;
  const basePort = await getFreePortRange(3 * options.size);
  const httpBasePort = basePort + options.size;
  const operatorBasePort = basePort + 2 * options.size;
  const init = await runCli([
    'cluster', 'init', '--size', String(options.size), '--threshold', String(options.threshold), '--out', dir,
    '--base-port', String(basePort), '--http-base-port', String(httpBasePort), '--operator-base-port', String(operatorBasePort), '--coordinators', String(coordinators),
  ]);
  if (init.code !== 0) throw new Error(`cluster init failed: ${init.stderr}`);
  const configPath = (i: number) => join(dir, `node-${i}.json`);
  const configs = await Promise.all(
    Array.from({ length: options.size }, async (_, i) => {
      const config = JSON.parse(await readFile(configPath(i), 'utf8')) as Record<string, unknown>;
      if (!options.configure) return config;
      const rewritten = options.configure(i, config);
      // writeFile keeps the mode `cluster init` gave the file (it holds the admin token).
      await writeFile(configPath(i), JSON.stringify(rewritten, null, 2) + '\n');
      return rewritten;
    }),
  );
  const adminTokens = configs.map((config) => (config as { admin: { token: string } }).admin.token);
  // A relative dataDir resolves against the config file's folder, as the loader does.
  const dataDirs = configs.map((config) => resolve(dir, (config as { dataDir: string }).dataDir));
  const urls = Array.from({ length: coordinators }, (_, i) => `http://127.0.0.1:${httpBasePort + i}`);
  const operatorUrls = configs.map((config) => `http://127.0.0.1:${(config as { operator: { port: number } }).operator.port}`);
  const procs: Array<ChildProcess | undefined> = [];
  const outputs: string[] = configs.map(() => '');

  // A coordinator's API comes up after its operator port (src/node/index.ts): wait for the API, which
  // a test calls next; a member serves only the operator port.
  const healthy = async (i: number) => {
    const res = await fetch(`${i < coordinators ? urls[i] : operatorUrls[i]}/healthz`);
    return res.status === 200;
  };

  const pc: ProcessCluster = {
    dir,
    size: options.size,
    threshold: options.threshold,
    urls,
    adminTokens,
    operatorUrls,
    async start(i, startOptions = {}) {
      // As the shipped systemd unit starts a node (its node flags and environment), unless told not to.
      const { flags, env } = nodeProcess(startOptions.processSettings ?? true);
      const child = spawn(process.execPath, [...flags, 'src/main.ts', 'start', '--config', configPath(i), '--log-level', 'warn'], {
        cwd: REPO,
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      procs[i] = child;
      child.stdout!.on('data', (d: Buffer) => (outputs[i] += d.toString()));
      child.stderr!.on('data', (d: Buffer) => (outputs[i] += d.toString()));
      // Generous: five node processes start at once, and other suites may run beside them on 2 cores.
      // A node that exits instead fails the start at once, with what it printed.
      const exited = new Promise<never>((_, reject) => child.once('exit', (code) => reject(new Error(`node-${i} exited with ${code} before serving /healthz:\n${outputs[i]!.slice(-2000)}`))));
      const ready = waitFor(() => healthy(i), { timeoutMs: 60_000, description: `node-${i} to serve /healthz` });
      // Whichever loses the race must not surface later as an unhandled rejection.
      exited.catch(() => undefined);
      ready.catch(() => undefined);
      await Promise.race([ready, exited]);
    },
    running: (i) => procs[i] !== undefined && procs[i].exitCode === null && procs[i].signalCode === null,
    async kill9(i) {
      const child = procs[i];
      if (!child || child.exitCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGKILL');
      await exited;
      procs[i] = undefined;
    },
    async stop(i) {
      const child = procs[i];
      if (!child || child.exitCode !== null) return child?.exitCode ?? null;
      const exited = new Promise<number | null>((r) => child.once('exit', (c) => r(c)));
      child.kill('SIGTERM');
      const code = await exited;
      procs[i] = undefined;
      return code;
    },
    async stopAll() {
      await Promise.all(procs.map((_, i) => pc.stop(i)));
    },
    output: (i) => outputs[i] ?? '',
    configPath,
    dataDir: (i) => dataDirs[i]!,
  };
  await Promise.all(configs.map((_, i) => pc.start(i)));
  // Every node holds its own writes until it has learnt its own log from its peers (docs/architecture.md,
  // "Failure model"), and slot 0 answers 503 NOT_READY meanwhile: a test's first write should not have
  // to wait for that (as startLocalCluster does).
  const ownLogKnown = async (i: number) => ((await (await fetch(`${operatorUrls[i]}/readyz`)).json()) as { checks: { ownLogKnown: boolean } }).checks.ownLogKnown;
  await waitFor(async () => (await Promise.all(configs.map((_, i) => ownLogKnown(i)))).every(Boolean), { timeoutMs: 30_000, description: 'every node to learn its own log' });
  return pc;
}

/** A probe a node acknowledged: its key, and the (origin, seq) it was written under. */
export interface AckedProbe {
  key: string;
  origin: string;
  seq: number;
}

/** Probe writes under way: see {@link writeProbes}. */
export interface ProbeWrites {
  /** The writes acknowledged (201), in order. */
  acked: AckedProbe[];
  /** Writes not acknowledged: another status, or no answer. */
  failures(): number;
  /** Resolves once the write in flight now has its answer: every later write goes where `via` then says. */
  settled(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Probe writes (`POST /admin/probe`, keys `<tag>-<n>`), one after another, through node `via` — or
 * the node `via()` names, read before each write — until stopped; every acknowledged one is kept.
 */
export function writeProbes(pc: ProcessCluster, via: number | (() => number), tag: string): ProbeWrites {
  const target = typeof via === 'number' ? () => via : via;
  const acked: AckedProbe[] = [];
  let failures = 0;
  let stopped = false;
  let n = 0;
  let inFlight: Promise<unknown> = Promise.resolve();
  const done = (async () => {
    while (!stopped) {
      const i = target();
      const key = `${tag}-${n++}`;
      const write = postJson<{ origin: string; seq: number }>(`${pc.urls[i]}/admin/probe`, { key }, { authorization: `Bearer ${pc.adminTokens[i]}` }).catch(() => undefined);
      inFlight = write;
      const res = await write;
      if (res?.status === 201) acked.push({ key, origin: res.body.origin, seq: res.body.seq });
      else failures++;
      // A stopped node refuses at once: do not spin on it.
      if (!res) await new Promise((r) => setTimeout(r, 20));
    }
  })();
  return {
    acked,
    failures: () => failures,
    settled: () => inFlight.then(() => undefined),
    async stop() {
      stopped = true;
      await done;
    },
  };
}
