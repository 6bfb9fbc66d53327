/**
 * Helpers for `npm run bench`: percentiles and aligned output, the run's headline figures, a bench
 * principal, the load worker.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';
import { PerformanceObserver, constants } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import type { Mailbox } from '../src/testing/index.ts';
import type { Figure } from './bench-report.ts';
import { addressOfPrivateKey, ed25519PublicKeyOf, generatePrivateKey, signEd25519, signPersonalMessage, toHex } from '../src/crypto/index.ts';

/** The in-process bounds yield to the event loop every this many operations (the members share it). */
export const BOUND_YIELD_EVERY = 64;

/** Percentile (0–100) of a sample, nearest-rank. */
export function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank]!;
}

/** Median. */
export const median = (values: number[]) => percentile(values, 50);

/** Format ms with sensible precision. */
export function ms(v: number): string {
  return v < 1 ? `${(v * 1000).toFixed(0)} µs` : v < 100 ? `${v.toFixed(2)} ms` : `${v.toFixed(0)} ms`;
}

/** Run `fn` `count` times with `concurrency` workers; returns per-call latencies (ms) and wall time. */
export async function runConcurrent(count: number, concurrency: number, fn: (i: number) => Promise<unknown>): Promise<{ latencies: number[]; wallMs: number }> {
  const latencies: number[] = [];
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        const i = next++;
        const s = performance.now();
        await fn(i);
        latencies.push(performance.now() - s);
      }
    }),
  );
  return { latencies, wallMs: performance.now() - t0 };
}

/** POST `body` as JSON; the status and the parsed JSON answer. */
export async function post(url: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** Extra environment for a spawned node, from a variable holding `NAME=value …` (empty when unset). */
export function envFromVariable(variable: string): Record<string, string> {
  const spec = process.env[variable] ?? '';
  return Object.fromEntries(spec.split(' ').filter(Boolean).map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));
}

/** The 1-, 5- and 15-minute load averages, as /proc/loadavg has them. */
export function loadAverages(): string {
  return readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
}

/** Print a two-column table. */
export function table(title: string, rows: Array<[string, string]>): void {
  const w = Math.max(...rows.map(([k]) => k.length));
  console.log(`\n${title}`);
  for (const [k, v] of rows) console.log(`  ${k.padEnd(w)}  ${v}`);
}

/** The headline figures recorded so far in this process (one bench run). */
const recorded: Figure[] = [];

/**
 * Record a headline figure of this run, next to the `table()` that prints it for humans: the
 * figures `npm run bench -- --markdown` lists, with their targets (scripts/bench-report.ts).
 */
export function figure(f: Figure): void {
  recorded.push(f);
}

/** The figures recorded in this run, in order. */
export function recordedFigures(): readonly Figure[] {
  return recorded;
}

/**
 * Run `fn`, profiled on request: with BENCH_CPU_PROFILE=<prefix> a V8 CPU profile of this thread
 * during it is written to `<prefix>.<tag>.cpuprofile` (Chrome DevTools, Performance panel); with
 * BENCH_ALLOC_PROFILE=<prefix> a sampled profile of what it allocated — objects the collector has
 * freed since included, so it shows the allocation that drives the scavenges — to
 * `<prefix>.<tag>.heapprofile` (DevTools, Memory panel). Either reads as text with
 * `scripts/cpuprofile-top.ts`.
 */
export async function withCpuProfile<T>(tag: string, fn: () => Promise<T>): Promise<T> {
  const cpuPrefix = process.env.BENCH_CPU_PROFILE;
  const allocPrefix = process.env.BENCH_ALLOC_PROFILE;
  if (!cpuPrefix && !allocPrefix) return fn();
  const session = new Session();
  session.connect();
  if (cpuPrefix) {
    await session.post('Profiler.enable');
    await session.post('Profiler.start');
  }
  if (allocPrefix) {
    await session.post('HeapProfiler.enable');
    // A sample every 4 KiB; the two flags (V8's, not yet in @types/node) keep what was collected.
    const sampling: { samplingInterval: number; includeObjectsCollectedByMajorGC: boolean; includeObjectsCollectedByMinorGC: boolean } = { samplingInterval: 4096, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true };
    await session.post('HeapProfiler.startSampling', sampling);
  }
  try {
    return await fn();
  } finally {
    if (cpuPrefix) {
      const { profile } = await session.post('Profiler.stop');
      await writeFile(`${cpuPrefix}.${tag}.cpuprofile`, JSON.stringify(profile));
    }
    if (allocPrefix) {
      const { profile } = await session.post('HeapProfiler.stopSampling');
      await writeFile(`${allocPrefix}.${tag}.heapprofile`, JSON.stringify(profile));
    }
    session.disconnect();
  }
}

/** This thread's garbage-collection pauses over a span: scavenges and mark-compacts apart, counts and ms. */
export interface GcPauses {
  scavenges: number;
  scavengeMs: number;
  /** Mark-compacts: the pause that finishes each (their marking runs on V8's helper threads meanwhile). */
  markCompacts: number;
  markCompactMs: number;
  /** Incremental marking steps and weak callbacks. */
  others: number;
  otherMs: number;
}

/**
 * Watch this thread's GC pauses (`gc` performance entries) from now: `take()` returns what was
 * delivered so far and starts counting afresh; `stop()` ends the watch and returns what it saw, once
 * the entries queued so far are delivered.
 */
export function watchGc(): { take(): GcPauses; stop(): Promise<GcPauses> } {
  const none = (): GcPauses => ({ scavenges: 0, scavengeMs: 0, markCompacts: 0, markCompactMs: 0, others: 0, otherMs: 0 });
  let seen = none();
  const observer = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      const kind = (e as { detail?: { kind?: number } }).detail?.kind;
      if (kind === constants.NODE_PERFORMANCE_GC_MINOR) {
        seen.scavenges++;
        seen.scavengeMs += e.duration;
      } else if (kind === constants.NODE_PERFORMANCE_GC_MAJOR) {
        seen.markCompacts++;
        seen.markCompactMs += e.duration;
      } else {
        seen.others++;
        seen.otherMs += e.duration;
      }
    }
  });
  observer.observe({ entryTypes: ['gc'] });
  const take = () => {
    const taken = seen;
    seen = none();
    return taken;
  };
  return {
    take,
    async stop() {
      // Entries are delivered after the turn they were queued in.
      await new Promise((resolve) => setImmediate(resolve));
      observer.disconnect();
      return take();
    },
  };
}

/** A span's GC pauses per operation, µs, as a table cell. */
export function gcPerOp(gc: GcPauses, ops: number): string {
  const us = (ms: number) => ((ms * 1000) / ops).toFixed(0);
  return `scavenges ${us(gc.scavengeMs)} µs (${gc.scavenges} in all), mark-compacts ${us(gc.markCompactMs)} µs (${gc.markCompacts}), other ${us(gc.otherMs)} µs`;
}

/**
 * A verified principal with a registered Ed25519 key, through the HTTP API (the OTP read from the
 * cluster's mailbox). `newSession(ttlMs?)`: a fresh session wallet and its POST /web2/session body.
 */
export async function benchPrincipal(cluster: { mailbox: Pick<Mailbox, 'waitFor'> }, url: string) {
  const email = `bench-secrets-${randomBytes(4).toString('hex')}@example.test`;
  const password = 'bench-password-secrets';
  const reg = await post(`${url}/web2/auth/register`, { email, password });
  const mail = await cluster.mailbox.waitFor((m) => m.to.includes(email));
  await post(`${url}/web2/auth/verify-email`, { email, otp: /\b(\d{6})\b/.exec(mail.text)![1] });
  const principalId = reg.body.principalId as string;
  const seed = new Uint8Array(randomBytes(32));
  const publicKey = toHex(ed25519PublicKeyOf(seed));
  const key = await post(`${url}/web2/auth/register-key`, { principalId, password, publicKey, signature: toHex(signEd25519(seed, `cifer_register:${publicKey}`)) });
  if (key.status !== 201) throw new Error(`register-key: ${key.status}`);
  return benchPrincipalOf(principalId, seed);
}

/** A bench principal already registered: its id and the Ed25519 seed of its registered key (see {@link benchPrincipal}). */
export function benchPrincipalOf(principalId: string, seed: Uint8Array) {
  const newSession = (ttlMs?: number) => {
    const wallet = generatePrivateKey();
    const address = addressOfPrivateKey(wallet);
    const timestamp = String(Date.now());
    const message = `cifer_session:${principalId}:${timestamp}:${address}` + (ttlMs === undefined ? '' : `:${ttlMs}`);
    const body = { principalId, timestamp, sessionAddress: address, signature: toHex(signEd25519(seed, message)), ...(ttlMs === undefined ? {} : { ttl: ttlMs }) };
    return { wallet, address, body };
  };
  return { principalId, seed, newSession };
}

/**
 * A bench principal's session, live (created through `POST /web2/session`), and `signed(subject, extra?)`:
 * a fresh string `-1_<subject>_<address>_<now>[_<extra>]` and the session key's signature of it.
 */
export async function benchSession(cluster: { mailbox: Pick<Mailbox, 'waitFor'> }, url: string) {
  const { newSession } = await benchPrincipal(cluster, url);
  const session = newSession();
  const created = await post(`${url}/web2/session`, session.body);
  if (created.status !== 201) throw new Error(`session: ${created.status} ${JSON.stringify(created.body)}`);
  const signed = (subject: string | number, extra?: string) => {
    const data = `-1_${subject}_${session.address}_${Date.now()}` + (extra === undefined ? '' : `_${extra}`);
    return { data, signature: signPersonalMessage(data, session.wallet) };
  };
  return { session, signed };
}

/** Limits far above anything one bench client sends (usage is still counted and flushed). */
const UNLIMITED = { bytesPerCycle: 2 ** 50, requestsPerCycle: 2 ** 50, requestsPerSecond: 1_000_000 };
/** The plan of every bench cluster: one principal sends thousands of requests a second. */
export const BENCH_PLAN = { id: 'bench', cycle: 'monthly', encryption: UNLIMITED, decryption: UNLIMITED };

/**
 * `count` `POST /decrypt-payload` bodies (JSON) of one encrypted message, signed by `session`: each
 * signed string decrypts once, so each has its own timestamp, all in the freshness window.
 */
export function decryptBodies(session: { address: string; wallet: Uint8Array }, secretId: number, encrypted: { cifer?: unknown; encryptedMessage?: unknown }, count: number): string[] {
  const signedAt = Date.now();
  return Array.from({ length: count }, (_, i) => {
    const data = `-1_${secretId}_${session.address}_${signedAt - i}_${encrypted.encryptedMessage as string}`;
    return JSON.stringify({ cifer: encrypted.cifer, data, signature: signPersonalMessage(data, session.wallet) });
  });
}

/** What the load worker reports. */
export interface LoadResult {
  latencies: number[];
  wallMs: number;
  failures: number;
  firstFailure?: string;
  /** Answers by status code. */
  statuses: Record<number, number>;
  /** CPU the load worker's thread used over the run, µs (it shares the machine's cores with the nodes). */
  cpuMicros: number;
}

/**
 * A session's `signed(0)`-style create bodies (`POST /web2/secret`), each string with its own
 * timestamp — `signedAt`, then one millisecond earlier each (all within the freshness window): every
 * create needs its own string, which is its idempotency key.
 */
export function createBodies(session: { address: string; wallet: Uint8Array }, count: number, signedAt = Date.now()): string[] {
  return Array.from({ length: count }, (_, i) => {
    const data = `-1_0_${session.address}_${signedAt - i}`;
    return JSON.stringify({ data, signature: signPersonalMessage(data, session.wallet) });
  });
}

/** Run the load worker against one route (`headers`: an extra header line per body). */
export function load(url: string, bodies: string[], concurrency: number, headers?: string[]): Promise<LoadResult> {
  return startLoad(url, bodies, concurrency, { headers }).done;
}

/**
 * Start the load worker (scripts/bench-load.ts, a worker thread): `started` resolves when its
 * connections are open and its first requests go out; with `untilStopped` it cycles through the
 * bodies until `stop()`; with `paths` it sends `GET <path>` to the url's host, one a path, instead;
 * with `expect`, a 2xx answer whose body lacks that string is a failure.
 */
export function startLoad(
  url: string,
  bodies: string[],
  concurrency: number,
  options: { headers?: string[] | undefined; untilStopped?: boolean; paths?: string[]; expect?: string } = {},
): { started: Promise<void>; done: Promise<LoadResult>; stop(): void } {
  const w = new Worker(new URL('./bench-load.ts', import.meta.url), { workerData: { url, bodies, concurrency, ...options } });
  let onStarted!: () => void;
  const started = new Promise<void>((resolve) => (onStarted = resolve));
  const done = new Promise<LoadResult>((resolve, reject) => {
    w.on('message', (message: LoadResult | { started: true }) => ('started' in message ? onStarted() : resolve(message)));
    w.once('error', reject);
  });
  return { started, done, stop: () => w.postMessage('stop') };
}

/** utime + stime of a `/proc/…/stat` line, µs (clock ticks of 10 ms). */
function statCpuUs(stat: string): number {
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // Fields 14 and 15 of stat(5), counted here from field 3.
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}

/** utime + stime of a process so far, µs (/proc/<pid>/stat). */
export function processCpuUs(pid: number): number {
  return statCpuUs(readFileSync(`/proc/${pid}/stat`, 'utf8'));
}

/** Where a node process's CPU goes, by its threads' names (/proc/<pid>/task/<tid>/comm). */
export const THREAD_GROUPS = [
  ['main', 'the event loop'],
  ['crypto', 'its crypto threads (request, verify, chunk pools: node `WorkerThread`s)'],
  ['v8', "V8's helper threads (concurrent and parallel GC, compilation)"],
  ['libuv', "libuv's pool (LevelDB, fs)"],
] as const;
export type ThreadGroup = (typeof THREAD_GROUPS)[number][0];

/** utime + stime of each of a process's thread groups so far, µs (threads that exited are not counted). */
export function threadGroupCpuUs(pid: number): Record<ThreadGroup, number> {
  const out: Record<ThreadGroup, number> = { main: 0, crypto: 0, v8: 0, libuv: 0 };
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    let comm: string;
    let stat: string;
    try {
      comm = readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim();
      stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    } catch {
      continue; // the thread exited meanwhile
    }
    const us = statCpuUs(stat);
    const group: ThreadGroup = tid === String(pid) ? 'main' : comm === 'WorkerThread' ? 'crypto' : comm.startsWith('libuv') ? 'libuv' : 'v8';
    out[group] += us;
  }
  return out;
}
