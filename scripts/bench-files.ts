/**
 * `npm run bench -- files` (not in the default run: it moves a few GiB): a {@link FILE_BYTES}
 * encrypt and its decrypts end to end through a coordinator, next to the same run's physical bound
 * for that work — disk (spool write + read + result write, fsync) and AES-256-GCM on one core.
 *
 * One process per node, as deployed: `quorumkeep cluster init`'s 5 members (threshold 3, 2
 * coordinators), each `quorumkeep start` from the build of src/ (./bench-scale-store.ts's `spawnNode`); the
 * coordinator measured has the probe preloaded (./bench-scale-probe.ts) for its GC pauses, event
 * loop, a full GC before each RSS baseline, and CPU profiles (`BENCH_FILES_PROFILE=<dir>`). Its RSS
 * is sampled from /proc every {@link RSS_SAMPLE_MS}, its CPU read by thread from /proc. The client
 * runs in a worker thread of this process (./bench-files-client.ts).
 *
 * Page cache: on the reference host (a VM whose balloon takes back freed memory within seconds),
 * writing into pages the guest has not touched lately costs several times the CPU of writing into
 * pages just freed. Every job here writes into such fresh pages,
 * so the bound is measured in the same state — after {@link PAGE_SETTLE_MS} without freeing
 * anything — and once more at once, over the pages the first pass just freed, for comparison.
 */
import { createCipheriv, randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, open, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { signPersonalMessage } from '../src/crypto/index.ts';
import { startMailbox } from '../src/testing/index.ts';
import { benchPrincipal, envFromVariable, figure, post, table } from './bench-lib.ts';
import type { FilesClientData, FilesClientOp, JobTimings } from './bench-files-client.ts';
import type { ProbeMemory, ProbeObserved } from './bench-scale-probe.ts';
import { initBenchCluster, spawnNode, spawnProbed, untilReady, type NodeProcess, type ProbedProcess } from './bench-scale-store.ts';

/** Bytes of the large file. */
const FILE_BYTES = Number(process.env.BENCH_FILE_BYTES ?? 1024 * 1024 * 1024);
/** Bytes of the small file the RSS peak is compared with. */
const SMALL_FILE_BYTES = 16 * 1024 * 1024;
/** Interval of the RSS samples, ms. */
const RSS_SAMPLE_MS = 50;
/** Size of each disk/AES step of the bound. */
const IO_PIECE_BYTES = 1024 * 1024;
/** Quiet time before the bound and before the large jobs, so both write into fresh pages (see the module comment). */
const PAGE_SETTLE_MS = Number(process.env.BENCH_PAGE_SETTLE_MS ?? 8000);
/** Directory for CPU profiles of the coordinator during the large jobs (`BENCH_FILES_PROFILE=dir`), none when unset. */
const PROFILE_DIR = process.env.BENCH_FILES_PROFILE;
/** Added to the coordinator's environment: `BENCH_FILES_COORDINATOR_ENV='NAME=value …'` (e.g. malloc settings). */
const COORDINATOR_ENV = envFromVariable('BENCH_FILES_COORDINATOR_ENV');
/** Target: end to end at least this share of the bound. */
const TARGET_SHARE = 0.4;

const MiB = 1024 * 1024;
const mbps = (bytes: number, msTaken: number): string => `${(bytes / MiB / (msTaken / 1000)).toFixed(0)} MB/s`;
const secs = (msTaken: number): string => `${(msTaken / 1000).toFixed(1)} s`;
const sleep = (msToWait: number) => new Promise((resolve) => setTimeout(resolve, msToWait));

/**
 * CPU time used so far by each kind of thread of process `pid`, ms, from /proc (Linux; an empty map
 * elsewhere): `MainThread` (the event loop), `V8Worker` (V8's platform threads: concurrent and
 * parallel GC, background compilation), `libuv-worker` (the threadpool: fs), `WorkerThread` (worker
 * threads: the coordinator's chunk and request crypto; the bench's client).
 */
function threadCpu(pid: number | 'self'): Map<string, number> {
  const byKind = new Map<string, number>();
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return byKind;
  }
  for (const task of tasks) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${task}/stat`, 'utf8');
      const kind = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')).replace(/[0-9]+$/, '');
      // utime and stime, fields 14 and 15, in clock ticks (100 a second on Linux).
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      byKind.set(kind, (byKind.get(kind) ?? 0) + (Number(fields[11]) + Number(fields[12])) * 10);
    } catch {
      // The thread ended meanwhile.
    }
  }
  return byKind;
}

/** CPU by thread kind used since `before`, ms. */
function cpuSince(pid: number | 'self', before: Map<string, number>): Map<string, number> {
  const now = threadCpu(pid);
  for (const [kind, msUsed] of before) now.set(kind, (now.get(kind) ?? 0) - msUsed);
  return now;
}

/** RSS of process `pid` now, bytes (VmRSS). */
function rssOf(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1] ?? 0) * 1024;
}

/** What {@link measured} records of a piece of work besides its result. */
interface Measured<T> extends ProbeObserved {
  result: T;
  /** Peak RSS of the coordinator, bytes, and the peak above its RSS after a full GC when the work started. */
  peak: number;
  peakAboveBaseline: number;
  /** CPU of the coordinator by kind of thread, ms (see {@link threadCpu}), and of the bench's client thread. */
  threads: Map<string, number>;
  clientMs: number;
}

/**
 * Run `work` with the coordinator's RSS sampled every {@link RSS_SAMPLE_MS}, its event loop and GC
 * pauses observed and its CPU counted; with {@link PROFILE_DIR} and a `profile` name, also a CPU
 * profile of its main thread.
 */
async function measured<T>(coordinator: ProbedProcess, work: () => Promise<T>, profile?: string): Promise<Measured<T>> {
  const pid = coordinator.child.pid!;
  const baseline = (await coordinator.probe<ProbeMemory>({ op: 'gc' })).rss;
  let peak = baseline;
  const timer = setInterval(() => (peak = Math.max(peak, rssOf(pid))), RSS_SAMPLE_MS);
  const profiling = PROFILE_DIR !== undefined && profile !== undefined;
  if (profiling) await coordinator.probe({ op: 'startProfile' });
  await coordinator.probe({ op: 'observeStart' });
  const cpu0 = threadCpu(pid);
  const client0 = threadCpu('self');
  try {
    const result = await work();
    const threads = cpuSince(pid, cpu0);
    const clientMs = cpuSince('self', client0).get('WorkerThread') ?? 0;
    const observed = await coordinator.probe<ProbeObserved>({ op: 'observeStop' });
    peak = Math.max(peak, rssOf(pid));
    if (profiling) await coordinator.probe({ op: 'stopProfile', path: join(PROFILE_DIR, `${profile}.cpuprofile`) });
    return { result, peak, peakAboveBaseline: peak - baseline, threads, clientMs, ...observed };
  } finally {
    clearInterval(timer);
  }
}

/** The physical bound's parts on this disk and core, for `bytes`: each job's bound is a sum of some. */
interface FilesBound {
  /** Write a spool (no fsync: a spool is not kept). */
  spoolWriteMs: number;
  /** Read it back. */
  readMs: number;
  /** Write a result and fsync it. */
  resultWriteMs: number;
  /** One AES-256-GCM pass over the bytes, one core. */
  aesMs: number;
}

/** Measure the parts of {@link FilesBound} for `bytes`, in 1 MiB steps. */
async function filesBound(bytes: number): Promise<FilesBound> {
  const dir = await mkdtemp(join(tmpdir(), 'quorumkeep-bench-files-'));
  const piece = randomBytes(IO_PIECE_BYTES);
  try {
    const t0 = performance.now();
    const spool = await open(join(dir, 'spool'), 'w');
    for (let at = 0; at < bytes; at += IO_PIECE_BYTES) await spool.write(piece, 0, Math.min(IO_PIECE_BYTES, bytes - at));
    await spool.close();
    const t1 = performance.now();
    const reader = await open(join(dir, 'spool'), 'r');
    const back = Buffer.alloc(IO_PIECE_BYTES);
    for (let at = 0; at < bytes; at += IO_PIECE_BYTES) await reader.read(back, 0, Math.min(IO_PIECE_BYTES, bytes - at), at);
    await reader.close();
    const t2 = performance.now();
    const result = await open(join(dir, 'result'), 'w');
    for (let at = 0; at < bytes; at += IO_PIECE_BYTES) await result.write(piece, 0, Math.min(IO_PIECE_BYTES, bytes - at));
    await result.sync();
    await result.close();
    const t3 = performance.now();

    const key = randomBytes(32);
    for (let at = 0, i = 0; at < bytes; at += IO_PIECE_BYTES, i++) {
      const iv = Buffer.alloc(12);
      iv.writeUInt32BE(i, 8);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      cipher.update(piece.subarray(0, Math.min(IO_PIECE_BYTES, bytes - at)));
      cipher.final();
      cipher.getAuthTag();
    }
    return { spoolWriteMs: t1 - t0, readMs: t2 - t1, resultWriteMs: t3 - t2, aesMs: performance.now() - t3 };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** The bench's file client, in a worker thread (./bench-files-client.ts). */
function startFilesClient(data: FilesClientData): { call<T>(op: FilesClientOp): Promise<T>; stop(): Promise<number> } {
  const worker = new Worker(new URL('./bench-files-client.ts', import.meta.url), { workerData: data });
  const waiting = new Map<number, { resolve(value: unknown): void; reject(err: Error): void }>();
  let nextId = 0;
  worker.on('message', (message: { id: number; result?: unknown; error?: string }) => {
    const call = waiting.get(message.id);
    waiting.delete(message.id);
    if (message.error !== undefined) call?.reject(new Error(message.error));
    else call?.resolve(message.result);
  });
  worker.on('error', (err) => {
    for (const call of waiting.values()) call.reject(err);
    waiting.clear();
  });
  return {
    call<T>(op: FilesClientOp): Promise<T> {
      const id = nextId++;
      return new Promise<T>((resolve, reject) => {
        waiting.set(id, { resolve: resolve as (value: unknown) => void, reject });
        worker.postMessage({ id, ...op });
      });
    },
    stop: () => worker.terminate(),
  };
}

/** One size's figures: an encrypt, a decrypt of its result on the coordinator, a decrypt of its `.cifer` uploaded. */
interface FileRound {
  encrypt: Measured<JobTimings>;
  decryptExisting: Measured<JobTimings>;
  decryptFile: Measured<JobTimings>;
  ciferBytes: number;
}

/**
 * Encrypt `bytes` end to end, then decrypt its result twice (`/decrypt-existing-file`, and
 * `/decrypt-file` with the downloaded `.cifer` streamed back up from a temporary file), each
 * {@link measured} on its own; every plaintext downloaded is checked against the upload's SHA-256.
 * The results are deleted afterwards (not measured) to free the disk.
 */
async function fileRound(coordinator: ProbedProcess, client: ReturnType<typeof startFilesClient>, bytes: number, dir: string, profile = false): Promise<FileRound> {
  const name = (job: string) => (profile ? job : undefined);
  const encrypt = await measured(coordinator, () => client.call<JobTimings>({ op: 'encrypt', bytes }), name('encrypt'));
  const ciferPath = join(dir, `bench-${bytes}.cifer`);
  const ciferBytes = await client.call<number>({ op: 'save', jobId: encrypt.result.jobId, path: ciferPath });
  const sha256 = encrypt.result.sha256;
  const decryptExisting = await measured(coordinator, () => client.call<JobTimings>({ op: 'decryptExisting', encryptJobId: encrypt.result.jobId, sha256 }), name('decrypt-existing'));
  await client.call({ op: 'delete', jobId: decryptExisting.result.jobId });
  const decryptFile = await measured(coordinator, () => client.call<JobTimings>({ op: 'decryptFile', path: ciferPath, sha256 }), name('decrypt-file'));
  await client.call({ op: 'delete', jobId: decryptFile.result.jobId });
  await client.call({ op: 'delete', jobId: encrypt.result.jobId });
  await rm(ciferPath, { force: true });
  return { encrypt, decryptExisting, decryptFile, ciferBytes };
}

/** Run the figures (see the module comment). */
export async function benchFiles(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'quorumkeep-bench-files-'));
  const mailbox = await startMailbox();
  const nodes: NodeProcess[] = [];
  let client: ReturnType<typeof startFilesClient> | undefined;
  try {
    const summary = await initBenchCluster(dir, mailbox);
    for (const node of summary.nodes) {
      const config = JSON.parse(await readFile(node.configFile, 'utf8')) as Record<string, unknown> & { files?: Record<string, unknown> };
      config.files = { ...config.files, maxFileBytes: Math.max(FILE_BYTES, SMALL_FILE_BYTES) };
      await writeFile(node.configFile, JSON.stringify(config, null, 2) + '\n');
    }
    const coordinator = spawnProbed(summary, 0, { logLevel: 'warn', env: COORDINATOR_ENV });
    nodes.push(coordinator);
    for (const node of summary.nodes.slice(1)) nodes.push(spawnNode(summary, node.slot, { logLevel: 'warn' }));
    for (const node of summary.nodes) await untilReady(nodes[node.slot]!, node.operatorPort!, 120_000);

    const url = summary.nodes[0]!.httpUrl!;
    const owner = await benchPrincipal({ mailbox }, url);
    const session = owner.newSession();
    if ((await post(`${url}/web2/session`, session.body)).status !== 201) throw new Error('session failed');
    const secretData = `-1_0_${session.address}_${Date.now()}`;
    const secret = await post(`${url}/web2/secret`, { data: secretData, signature: signPersonalMessage(secretData, session.wallet) });
    if (secret.status !== 201) throw new Error(`secret: ${secret.status}`);
    client = startFilesClient({ url, secretId: secret.body.secretId as number, wallet: session.wallet, address: session.address });

    await fileRound(coordinator, client, SMALL_FILE_BYTES, dir); // warm-up
    const small = await fileRound(coordinator, client, SMALL_FILE_BYTES, dir);
    await sleep(PAGE_SETTLE_MS);
    const fresh = await filesBound(FILE_BYTES);
    const recycled = await filesBound(FILE_BYTES);
    // AES on one core is a CPU figure: the faster pass (`update` returns a new buffer per piece, whose
    // pages cost like the disk's; the jobs encrypt into buffers they reuse).
    const aesMs = Math.min(fresh.aesMs, recycled.aesMs);
    const bound = { ...fresh, aesMs };
    await sleep(PAGE_SETTLE_MS);
    const large = await fileRound(coordinator, client, FILE_BYTES, dir, true);

    const gib = (FILE_BYTES / (1024 * MiB)).toFixed(2);
    const rss = (figure: 'encrypt' | 'decryptExisting' | 'decryptFile'): [string, string][] => [
      [`coordinator RSS peak above baseline, ${SMALL_FILE_BYTES / MiB} MiB file`, `${(small[figure].peakAboveBaseline / MiB).toFixed(0)} MiB  (peak ${(small[figure].peak / MiB).toFixed(0)} MiB)`],
      [`coordinator RSS peak above baseline, ${gib} GiB file`, `${(large[figure].peakAboveBaseline / MiB).toFixed(0)} MiB  (peak ${(large[figure].peak / MiB).toFixed(0)} MiB; target ≤ 256 MiB)`],
    ];
    const boundRows = (parts: Array<keyof Omit<FilesBound, 'aesMs'>>, e2eMs: number): [string, string][] => {
      const labels: Record<keyof Omit<FilesBound, 'aesMs'>, string> = { spoolWriteMs: 'spool write', readMs: 'read', resultWriteMs: 'result write, fsync' };
      const diskMs = (b: FilesBound) => parts.reduce((sum, part) => sum + b[part], 0);
      const boundMs = diskMs(bound) + bound.aesMs;
      const recycledMs = diskMs(recycled) + aesMs;
      return [
        [`bound: disk (${parts.map((p) => labels[p]).join(' + ')}), fresh pages`, `${secs(diskMs(bound))}  ${mbps(FILE_BYTES, diskMs(bound))}`],
        ['bound: AES-256-GCM, one core (the faster of two passes)', `${secs(bound.aesMs)}  ${mbps(FILE_BYTES, bound.aesMs)}`],
        ['bound: disk + AES', `${secs(boundMs)}  ${mbps(FILE_BYTES, boundMs)}`],
        ['end to end / bound', `${((boundMs / e2eMs) * 100).toFixed(0)}% of the bound  (target ≥ ${TARGET_SHARE * 100}%)`],
        ['  (the bound over pages just freed, for comparison)', `${secs(recycledMs)}: ${((recycledMs / e2eMs) * 100).toFixed(0)}%`],
      ];
    };
    const cpuRow = (threads: Map<string, number>): string => {
      const kinds: Array<[string, string]> = [['MainThread', 'main'], ['V8Worker', 'V8 (GC)'], ['libuv-worker', 'threadpool'], ['WorkerThread', 'crypto threads']];
      return kinds.map(([kind, label]) => `${label} ${secs(threads.get(kind) ?? 0)}`).join(', ');
    };
    const phases = (m: Measured<JobTimings>, start: string, job: string, download: string): [string, string][] => {
      const t = m.result;
      const coordinatorMs = [...m.threads.values()].reduce((sum, v) => sum + v, 0);
      return [
        ['end to end', `${secs(t.totalMs)}  ${mbps(FILE_BYTES, t.totalMs)}`],
        ['  coordinator main thread busy; its GC pauses', `${(m.busy * 100).toFixed(0)}%; ${m.gcCount} taking ${secs(m.gcMs)}`],
        ['  coordinator CPU (by thread)', `${secs(coordinatorMs)}${m.threads.size > 0 ? `  (${cpuRow(m.threads)})` : ''}`],
        ['  client CPU (bench thread)', secs(m.clientMs)],
        [`  ${start}`, `${secs(t.startMs)}${t.uploaded > 0 ? `  ${mbps(t.uploaded, t.startMs)}` : ''}`],
        [`  ${job} + polling`, `${secs(t.processMs)}  ${mbps(FILE_BYTES, t.processMs)}`],
        [`  ${download}`, `${secs(t.downloadMs)}  ${mbps(t.downloaded, t.downloadMs)}  (${(t.downloaded / MiB).toFixed(0)} MiB)`],
      ];
    };
    // The size names the rows (BENCH_FILE_BYTES changes it): a smaller file's figures are other rows.
    const size = FILE_BYTES % (1024 * MiB) === 0 ? `${FILE_BYTES / (1024 * MiB)} GiB` : `${(FILE_BYTES / MiB).toFixed(0)} MiB`;
    const jobs = [
      ['encrypt', large.encrypt, ['spoolWriteMs', 'readMs', 'resultWriteMs']],
      ['decrypt-existing', large.decryptExisting, ['readMs', 'resultWriteMs']],
      ['decrypt-file', large.decryptFile, ['spoolWriteMs', 'readMs', 'resultWriteMs']],
    ] as const;
    for (const [job, m, parts] of jobs) {
      const boundMs = parts.reduce((sum, part) => sum + bound[part], 0) + bound.aesMs;
      figure({ name: `files: ${job} ${size}, end to end`, value: m.result.totalMs / 1000, unit: 's', note: 'one process per node' });
      figure({ name: `files: ${job} ${size} / its disk + AES bound`, value: (boundMs / m.result.totalMs) * 100, unit: '%', target: { op: '>=', value: TARGET_SHARE * 100 }, note: 'bound over fresh pages, as the jobs write' });
    }
    const peaks = (r: FileRound) => Math.max(r.encrypt.peak, r.decryptExisting.peak, r.decryptFile.peak) / MiB;
    figure({ name: `files: coordinator RSS peak over the ${size} jobs`, value: peaks(large), unit: 'MiB', target: { op: '<=', value: 256 }, note: 'highest of the three jobs' });
    figure({ name: 'files: coordinator RSS peak over the 16 MiB jobs', value: peaks(small), unit: 'MiB', note: 'highest of the three jobs' });
    const load = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
    const setup = `5 members, one process each; load ${load}`;
    table(`POST /encrypt-file ${gib} GiB end to end (upload streamed → completed → download streamed; ${setup})`, [
      ...phases(large.encrypt, 'upload (spooled, sealed)', 'job (spool read, ML-KEM + AES per chunk, ZIP, fsync)', 'download'),
      ...boundRows(['spoolWriteMs', 'readMs', 'resultWriteMs'], large.encrypt.result.totalMs),
      ...rss('encrypt'),
    ]);
    table(`POST /decrypt-existing-file ${gib} GiB end to end (start → completed → plaintext streamed, SHA-256 checked; ${setup})`, [
      ...phases(large.decryptExisting, 'start (archive checked, shares gathered)', 'job (ZIP read, ML-KEM + AES per chunk, sealed result, fsync)', 'download (sealed result opened, hashed by the client)'),
      ...boundRows(['readMs', 'resultWriteMs'], large.decryptExisting.result.totalMs),
      ...rss('decryptExisting'),
    ]);
    table(`POST /decrypt-file ${gib} GiB end to end (${(large.ciferBytes / MiB).toFixed(0)} MiB .cifer upload streamed → completed → plaintext streamed, SHA-256 checked; ${setup})`, [
      ...phases(large.decryptFile, 'upload (spooled, sealed; archive checked, shares gathered)', 'job (spool read, ML-KEM + AES per chunk, sealed result, fsync)', 'download (sealed result opened, hashed by the client)'),
      ...boundRows(['spoolWriteMs', 'readMs', 'resultWriteMs'], large.decryptFile.result.totalMs),
      ...rss('decryptFile'),
    ]);
  } finally {
    await client?.stop();
    await Promise.allSettled(nodes.map((n) => n.stop()));
    await mailbox.close();
    await rm(dir, { recursive: true, force: true });
  }
}
