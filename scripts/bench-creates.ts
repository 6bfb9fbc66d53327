/**
 * `npm run bench -- creates` (issue 31, "Slot 0 claims in batches"): `POST /web2/secret` with many
 * clients at once against one coordinator, next to the sequential create latency of the same run, and
 * the CPU a create costs.
 *
 * Two clusters, one after the other:
 * - in-process (the default run's: 5 members, threshold 3, 2 coordinators, every node in the bench's
 *   process): sequential creates, then {@link CLIENTS} clients at once, in {@link ROUNDS} rounds;
 *   CPU per create of the main thread (every node runs on it) and of the whole process net of the
 *   load worker (the nodes' crypto threads, LevelDB's and libuv's included);
 * - one process per node (`cluster init`'s files, `quorumkeep start` from the build of src/, as `-- latency-procs`):
 *   the same phases once, with each node's CPU per create from /proc — where the cost falls:
 *   coordinator 0 deals the key, slot 0 (also coordinator 0 here) claims the id and writes the record,
 *   every member stores its share and the record.
 *
 * Every create needs its own signed string (the string is the create's idempotency key): the bodies
 * of a phase are signed before it starts, each with its own timestamp. The clients are the load
 * worker (scripts/bench-load.ts, another thread), each with one keep-alive connection and one request
 * in flight.
 */
import { readFileSync } from 'node:fs';
import { startLocalCluster } from '../src/testing/index.ts';
import { BENCH_PLAN, THREAD_GROUPS, benchSession, createBodies, figure, gcPerOp, load, loadAverages, median, ms, percentile, processCpuUs, table, threadGroupCpuUs, watchGc, withCpuProfile, type GcPauses, type LoadResult } from './bench-lib.ts';
import { withProcessCluster } from './bench-procs.ts';
import { metricOf } from './bench-scale-store.ts';

/** Creates of each concurrent phase. */
const CREATES = Number(process.env.BENCH_CREATES ?? 600);
/** Sequential creates (one client) measured before the concurrent phases. */
const SEQUENTIAL = Number(process.env.BENCH_CREATES_SEQ ?? 100);
/** Rounds of the in-process phases: the figures are the medians. */
const ROUNDS = Number(process.env.BENCH_CREATES_ROUNDS ?? 2);
/** Concurrent clients of the concurrent phases. */
const CLIENTS = (process.env.BENCH_CREATES_CLIENTS ?? '16,64').split(',').map(Number);
/** `BENCH_CREATES_PROCS=0`: the in-process cluster only. */
const PROCS = process.env.BENCH_CREATES_PROCS !== '0';
/** `BENCH_CREATES_INPROC=0`: the cluster of one process per node only (A/B runs of the deployed shape). */
const IN_PROCESS = process.env.BENCH_CREATES_INPROC !== '0';
/** `BENCH_CREATES_VIA=1`: with one process per node, send the creates to coordinator 1 (slot 1) instead of coordinator 0, which is slot 0. */
const VIA = Number(process.env.BENCH_CREATES_VIA ?? 0);
/** Issue 31's target for 16-64 clients, creates/s. */
const TARGET_RATE = 500;

/** What one phase measured. */
interface Phase {
  rate: number;
  p50: number;
  p99: number;
  /** CPU per create, µs: the main thread's, and the process's net of the load worker (in-process only). */
  mainUs: number;
  processUs: number;
  /** Share of the phase the main thread spent runnable but waiting for a core, % (in-process only). */
  waitingPct: number;
  /** The main thread's GC pauses over the phase (in-process: every node's heap is that thread's). */
  gc: GcPauses;
}

/** Run `bodies` through `url` with `clients` at once; throws on any answer but 201. */
async function run(url: string, bodies: string[], clients: number, tag: string): Promise<{ result: LoadResult; mainUs: number; processUs: number; waitingPct: number; gc: GcPauses }> {
  const gcWatch = watchGc();
  const t0 = process.threadCpuUsage();
  const p0 = process.cpuUsage();
  const s0 = mainThreadSchedstat();
  const w0 = performance.now();
  const result = await withCpuProfile(tag, () => load(`${url}/web2/secret`, bodies, clients));
  const waitingPct = (mainThreadSchedstat().waitingNs - s0.waitingNs) / 1e4 / (performance.now() - w0);
  const t = process.threadCpuUsage(t0);
  const p = process.cpuUsage(p0);
  const gc = await gcWatch.stop();
  if (result.failures > 0) throw new Error(`creates: ${result.failures} failures of ${bodies.length} at ${clients} clients, first: ${result.firstFailure}`);
  return { result, mainUs: (t.user + t.system) / bodies.length, processUs: (p.user + p.system - result.cpuMicros) / bodies.length, waitingPct, gc };
}

/**
 * The main thread's scheduler statistics (`/proc/<pid>/task/<tid>/schedstat`, ns): how long it has
 * waited runnable for a core so far — time its event loop had work and no core to do it on.
 */
function mainThreadSchedstat(): { waitingNs: number } {
  const fields = readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8').split(' ');
  return { waitingNs: Number(fields[1]) };
}

const phaseOf = ({ result, mainUs, processUs, waitingPct, gc }: Awaited<ReturnType<typeof run>>, count: number): Phase => ({
  rate: (count / result.wallMs) * 1000,
  p50: median(result.latencies),
  p99: percentile(result.latencies, 99),
  mainUs,
  processUs,
  waitingPct,
  gc,
});

/** Both clusters' figures, one after the other (see the module comment). */
export async function benchCreates(): Promise<void> {
  if (IN_PROCESS) await benchCreatesInProcess();
  if (PROCS) await benchCreatesProcs();
}

/** The in-process figures, on a fresh cluster shaped as the default run's. */
async function benchCreatesInProcess(): Promise<void> {
  const cluster = await startLocalCluster({
    size: 5,
    threshold: 3,
    coordinators: 2,
    logLevel: 'silent',
    nodeConfig: { http: { rateLimits: { perIpPerMinute: 0, perAccountPerMinute: 0 } }, usage: { plans: [BENCH_PLAN] } },
  });
  try {
    await measureInProcess(cluster.coordinators[0]!, cluster);
  } finally {
    await cluster.stop();
  }
}

/** Sequential creates, then every client count, {@link ROUNDS} times, against `url`. */
async function measureInProcess(url: string, cluster: Parameters<typeof benchSession>[0]): Promise<void> {
  const { session } = await benchSession(cluster, url);
  await load(`${url}/web2/secret`, createBodies(session, 100), Math.max(...CLIENTS)); // warm-up
  const sequential: Phase[] = [];
  const concurrent = new Map<number, Phase[]>(CLIENTS.map((c) => [c, []]));
  const loads: string[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    loads.push(loadAverages());
    sequential.push(phaseOf(await run(url, createBodies(session, SEQUENTIAL), 1, `creates-1-${round}`), SEQUENTIAL));
    for (const clients of CLIENTS) concurrent.get(clients)!.push(phaseOf(await run(url, createBodies(session, CREATES), clients, `creates-${clients}-${round}`), CREATES));
  }
  const where = `5 members, threshold 3, every node in the bench's process; clients on a worker thread; ${ROUNDS} rounds, medians`;
  const rows: Array<[string, string]> = [];
  const seqP50 = median(sequential.map((p) => p.p50));
  figure({ name: 'POST /web2/secret, sequential p50 (creates run, in-process)', value: seqP50, unit: 'ms', note: `${SEQUENTIAL} creates a round; ${where}` });
  rows.push([`1 client (${SEQUENTIAL} a round): p50 / p99`, `${ms(seqP50)} / ${ms(median(sequential.map((p) => p.p99)))}  (rounds' p50: ${sequential.map((p) => ms(p.p50)).join(', ')})`]);
  for (const [clients, phases] of concurrent) {
    const rates = phases.map((p) => p.rate);
    const name = (what: string) => `POST /web2/secret, ${clients} clients, ${what} (in-process)`;
    figure({ name: name('throughput'), value: median(rates), unit: '/s', target: { op: '>=', value: TARGET_RATE }, note: `${CREATES} creates a round; ${where}; rounds: ${rates.map((r) => r.toFixed(0)).join(', ')}` });
    figure({ name: name('p99'), value: median(phases.map((p) => p.p99)), unit: 'ms', note: where });
    figure({ name: name('process CPU per create'), value: median(phases.map((p) => p.processUs)), unit: 'µs', note: `all five nodes, the load worker's CPU taken out; ${where}` });
    rows.push(
      [`${clients} clients (${CREATES} a round): creates/s`, `${median(rates).toFixed(0)}  (rounds: ${rates.map((r) => r.toFixed(0)).join(', ')}; target ≥ ${TARGET_RATE})`],
      [`${clients} clients: p50 / p99`, `${ms(median(phases.map((p) => p.p50)))} / ${ms(median(phases.map((p) => p.p99)))}`],
      [`${clients} clients: CPU per create, main thread / process`, `${median(phases.map((p) => p.mainUs)).toFixed(0)} µs / ${median(phases.map((p) => p.processUs)).toFixed(0)} µs  (all five nodes; the load worker's CPU taken out)`],
      [`${clients} clients: main thread runnable, waiting for a core`, `${median(phases.map((p) => p.waitingPct)).toFixed(1)}% of the time  (its schedstat: the event loop had work and no core)`],
      // The five nodes share this thread's heap and its young generation, which a deployed node has to itself (docs/benchmarks.md, "As deployed").
      [`${clients} clients: GC pauses of the main thread a create`, phases.map((p) => gcPerOp(p.gc, CREATES)).join(' | ')],
    );
  }
  table(`POST /web2/secret under concurrent clients (${where}; load at each round ${loads.join(' | ')})`, rows);
}

/** The figures with one process per node: creates/s, latency, and each node's CPU per create. */
async function benchCreatesProcs(): Promise<void> {
  await withProcessCluster(async ({ summary, nodes, mailbox }) => {
    const url = summary.nodes[VIA]!.httpUrl!;
    const { session } = await benchSession({ mailbox }, url);
    await load(`${url}/web2/secret`, createBodies(session, 100), Math.max(...CLIENTS)); // warm-up
    const rows: Array<[string, string]> = [];
    const load1 = loadAverages();
    for (const clients of [1, ...CLIENTS]) {
      const count = clients === 1 ? SEQUENTIAL : CREATES;
      const bodies = createBodies(session, count);
      const cpu0 = nodes.map((n) => processCpuUs(n.child.pid!));
      const threads0 = nodes.map((n) => threadGroupCpuUs(n.child.pid!));
      // Members slot 0's writes did not hear back from in time (each such write is gossiped as well).
      const late0 = await metricOf(summary, 0, 'quorumkeep_replication_member_failures_total');
      const result = await load(`${url}/web2/secret`, bodies, clients);
      const perNode = nodes.map((n, i) => (processCpuUs(n.child.pid!) - cpu0[i]!) / count);
      const perThread = nodes.map((n, i) => {
        const now = threadGroupCpuUs(n.child.pid!);
        return THREAD_GROUPS.map(([g]) => `${g} ${((now[g] - threads0[i]![g]) / count).toFixed(0)}`).join(' / ');
      });
      const late = (await metricOf(summary, 0, 'quorumkeep_replication_member_failures_total')) - late0;
      if (result.failures > 0) throw new Error(`creates: ${result.failures} failures of ${count} at ${clients} clients (one process per node), first: ${result.firstFailure}`);
      const rate = (count / result.wallMs) * 1000;
      const name = (what: string) => `POST /web2/secret, ${clients === 1 ? 'sequential' : `${clients} clients`}, ${what} (one process per node${VIA === 0 ? '' : `, via coordinator ${VIA}`})`;
      figure({ name: name(clients === 1 ? 'p50' : 'throughput'), value: clients === 1 ? median(result.latencies) : rate, unit: clients === 1 ? 'ms' : '/s', ...(clients === 1 ? {} : { target: { op: '>=' as const, value: TARGET_RATE } }), note: `${count} creates, one run` });
      if (clients > 1) figure({ name: name("slot 0's CPU per create"), value: perNode[0]!, unit: 'µs', note: `${count} creates, one run; by thread: ${perThread[0]} µs; every node: ${perNode.map((us, slot) => `${slot}: ${us.toFixed(0)}`).join(', ')} µs` });
      rows.push(
        [`${clients} client${clients === 1 ? '' : 's'} (${count}): creates/s`, rate.toFixed(0)],
        [`${clients} client${clients === 1 ? '' : 's'}: p50 / p99`, `${ms(median(result.latencies))} / ${ms(percentile(result.latencies, 99))}`],
        [`${clients} client${clients === 1 ? '' : 's'}: CPU per create by node (slot 0 = coordinator 0, slot 1 = coordinator 1)`, `${perNode.map((us, slot) => `${slot}: ${us.toFixed(0)} µs`).join(', ')}; all: ${perNode.reduce((a, b) => a + b, 0).toFixed(0)} µs`],
        ...perThread.map((row, slot): [string, string] => [`  node ${slot} by thread, µs a create`, row]),
        [`${clients} client${clients === 1 ? '' : 's'}: slot 0's member acks missing after its quorum (each write with one also gossiped)`, `${late} (${(late / count).toFixed(2)} a create)`],
      );
    }
    table(`POST /web2/secret, one process per node (5 members, threshold 3, 2 coordinators; requests to coordinator ${VIA} from a client thread; load ${load1}; CPU from /proc, 10 ms ticks; by thread: ${THREAD_GROUPS.map(([g, what]) => `${g} = ${what}`).join(', ')})`, rows);
  });
}
