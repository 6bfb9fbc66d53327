/**
 * V8 heap tuning of a process that runs nodes (`quorumkeep start`, `quorumkeep local`; the bench,
 * which runs nodes as the daemon does). See docs/deployment.md, "Sizing a host".
 *
 * Every read from a socket or a file is a new ArrayBuffer outside the JavaScript heap. By default
 * V8 starts a full mark-compact each time such external memory grows by a fixed step since the
 * last one, whether or not those buffers are still alive: a large upload sets off one full
 * collection per step, each marking the node's whole heap, although the read buffers die young and
 * the scavenger frees them. With `--external-memory-accounted-in-global-limit`, external memory
 * counts towards the heap's global limit instead (which grows with the heap), so short-lived
 * buffers no longer trigger full collections of their own; memory still bounds the heap as before.
 *
 * A file job's coordinator then spends less of the GC threads' CPU and finishes sooner
 * (`npm run bench -- files`; docs/benchmarks.md). The price is memory: dead buffers wait longer for
 * a collection, so the RSS peak over a large job is higher — which the process settings below and
 * the jobs' own scavenges (src/crypto/young-garbage.ts) take back.
 *
 * How far the old generation grows before the next full collection is governed, not left to V8:
 * after each full collection V8 lets it grow by `--heap-growing-percent` of what survived (its own
 * factor when the flag is 0: up to 4× for a heap that allocates fast). A member serving reads moves
 * decoded states through its state cache, and the ones it evicts die old: with V8's factor a member
 * holding 100,000 secrets let its JS heap grow to 193 MB after 30,000 distinct reads, against 92 MB
 * at 20% (`npm run bench -- scale-store`, the member's RSS against its target in
 * docs/benchmarks.md). But 20% of a small heap is a few megabytes, and a node under load promotes
 * that much in a fraction of a second — the requests in flight outlive two scavenges — so at a
 * fixed 20% the bench's five nodes serving decrypts ran a full collection about once a second, each
 * one stalling every request in flight at that moment (most of the decrypt p99 under 16 clients:
 * docs/benchmarks.md). So the percent is set after each full collection from what survived it
 * ({@link heapGrowingPercent}): at least {@link HEAP_SLACK_PER_NODE_MB} MiB per node the process
 * runs, never less than 20% nor more than 100%. A heap of up to 16 MiB a node doubles; one past
 * 80 MiB a node grows by 20%, as before. A `--heap-growing-percent` on node's command line stands
 * instead.
 *
 * `--no-allocation-site-pretenuring`: V8 watches how long the objects of each allocation site live,
 * and once most of a site's survive it allocates that site's objects in the old generation from then
 * on. A node's sockets and streams keep an EventEmitter listener array for their whole life, so V8
 * learns to allocate every such array old — including the one each HTTP response gets for its
 * `finish` listeners (Node's own and koa's). That array, dead as soon as the response is answered,
 * still keeps the response and everything it reaches (request, context, body, answer) alive through
 * every scavenge until the next full collection: under the encrypt load a few kilobytes of every
 * request reached the old generation that way, and clearing it took full collections several times
 * a second. Without pretenuring (V8's `--trace-gc-nvp` under `npm run bench -- encrypt`) a fraction
 * of that is promoted, no full collection runs during the load, and encrypt over HTTP comes closer
 * to its bound. See docs/http.md, "Request path cost", and docs/benchmarks.md.
 *
 * V8 reads these flags whenever it decides on a collection (or, for pretenuring, digests a
 * scavenge's feedback), so setting them at run time (before the nodes start, and the growing percent
 * again after each full collection) takes effect for the process and every worker thread it starts;
 * test/unit/node/v8-heap.test.ts holds each to its effect.
 */
import { PerformanceObserver, constants, type PerformanceEntry } from 'node:perf_hooks';
import { getHeapStatistics, setFlagsFromString } from 'node:v8';

/**
 * What a node's process should be started with, beyond what it can set for itself once running: the
 * shipped systemd unit carries both (docs/deployment.md, "Run each node under systemd"), and the
 * bench spawns its node processes with them (scripts/bench-scale-store.ts, `spawnNode`).
 *
 * - `MALLOC_ARENA_MAX=2`: glibc gives every thread that allocates (the threadpool, the crypto
 *   threads, V8's) an arena of its own, and each arena keeps what it once held. Two arenas keep a
 *   file-job coordinator's RSS peak under its target at the same job speed (docs/benchmarks.md).
 * - `--max-semi-space-size=8` (MiB): V8 grows the young generation to 2 × 32 MiB while a node loads
 *   its modules and keeps it; 2 × 8 MiB is 32 MiB less RSS from the start, and the file jobs and
 *   request latencies stayed as fast (docs/deployment.md, "Sizing a host").
 *
 * Neither can be set from inside: glibc reads the variable when the process starts, and V8 sizes the
 * main heap before any JavaScript runs.
 */
export const NODE_PROCESS_SETTINGS = {
  env: { MALLOC_ARENA_MAX: '2' },
  nodeFlags: ['--max-semi-space-size=8'],
} as const;

/**
 * Which of {@link NODE_PROCESS_SETTINGS} this process was not started with (each as written there),
 * for the warning `quorumkeep start` prints. A node flag counts from node's command line or
 * `NODE_OPTIONS`; any value the operator chose counts as set.
 */
export function missingProcessSettings(env: Readonly<Record<string, string | undefined>>, execArgv: readonly string[] = process.execArgv): string[] {
  const missing: string[] = [];
  for (const [name, value] of Object.entries(NODE_PROCESS_SETTINGS.env)) if (env[name] === undefined) missing.push(`${name}=${value}`);
  const given = [...execArgv, ...(env.NODE_OPTIONS ?? '').split(/\s+/)];
  for (const flag of NODE_PROCESS_SETTINGS.nodeFlags) if (!flagGiven(given, flag)) missing.push(flag);
  return missing;
}

/** Whether `args` set the flag of `flag` (`--name`, `--name=…` or `--no-name`, in V8's `-` or `_` spelling), whatever its value. */
function flagGiven(args: readonly string[], flag: string): boolean {
  // A `--no-…` flag is the same flag as its `--…` form.
  const name = flag.slice(2).split('=')[0]!.replace(/^no-/, '');
  return args.some((arg) => {
    const spelled = arg.replaceAll('_', '-');
    return spelled === `--${name}` || spelled === `--no-${name}` || spelled.startsWith(`--${name}=`);
  });
}

/** The flags {@link tuneHeapForNodes} sets. */
export const NODE_V8_FLAGS = ['--external-memory-accounted-in-global-limit', '--no-allocation-site-pretenuring'] as const;

/** The V8 flag whose value {@link tuneHeapForNodes} governs, unless node's command line sets it. */
const GROWING_FLAG = '--heap-growing-percent';

/** The least the old generation may grow by after a full collection, per node the process runs, MiB. */
export const HEAP_SLACK_PER_NODE_MB = 16;

/** Bounds of the governed `--heap-growing-percent`: 20% (a large heap, as before), 100% (a small one doubles). */
export const HEAP_GROWING_PERCENT = { min: 20, max: 100 } as const;

/**
 * The `--heap-growing-percent` for a heap of which `liveBytes` survived the last full collection, in a
 * process running `nodes` nodes: {@link HEAP_SLACK_PER_NODE_MB} MiB a node of growth, within
 * {@link HEAP_GROWING_PERCENT}.
 */
export function heapGrowingPercent(liveBytes: number, nodes: number): number {
  const slack = HEAP_SLACK_PER_NODE_MB * 1024 * 1024 * Math.max(1, nodes);
  const percent = Math.ceil((100 * slack) / Math.max(1, liveBytes));
  return Math.min(HEAP_GROWING_PERCENT.max, Math.max(HEAP_GROWING_PERCENT.min, percent));
}

/** What {@link tuneHeapForNodes} left running: the governor of the heap's growth, when it runs one. */
export interface HeapTuning {
  /** The `--heap-growing-percent` set last; undefined when node's command line set its own. */
  growingPercent(): number | undefined;
  /** Stop governing (the percent set last stays). Idempotent. */
  stop(): void;
}

let tuning: HeapTuning | undefined;

/**
 * Apply {@link NODE_V8_FLAGS} to this process, except a flag the operator set on node's command line
 * (`node --no-external-memory-accounted-in-global-limit …`): theirs stands; and govern
 * `--heap-growing-percent` for a process running `nodes` nodes (the module's comment), unless node's
 * command line sets it (`--heap-growing-percent=0`: V8's own factor). Once per process: a later
 * call returns the first one's tuning.
 */
export function tuneHeapForNodes(options: { nodes?: number; execArgv?: readonly string[] } = {}): HeapTuning {
  if (tuning) return tuning;
  const execArgv = options.execArgv ?? process.execArgv;
  for (const flag of v8FlagsToSet(execArgv)) setFlagsFromString(flag);
  if (flagGiven(execArgv, GROWING_FLAG)) return (tuning = { growingPercent: () => undefined, stop: () => undefined });
  const nodes = options.nodes ?? 1;
  let percent = 0;
  const govern = () => {
    // Read once the collection's entry arrives: what survived it, plus what was allocated since
    // (at most the young generation) — near enough to size the next growth.
    const next = heapGrowingPercent(getHeapStatistics().used_heap_size, nodes);
    if (next !== percent) setFlagsFromString(`${GROWING_FLAG}=${(percent = next)}`);
  };
  govern();
  const observer = new PerformanceObserver((list) => {
    if (list.getEntries().some(isFullCollection)) govern();
  });
  observer.observe({ entryTypes: ['gc'] });
  return (tuning = { growingPercent: () => percent, stop: () => observer.disconnect() });
}

/** A GC entry of a full (mark-compact) collection. */
function isFullCollection(entry: PerformanceEntry): boolean {
  return (entry as PerformanceEntry & { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR;
}

/** The flags of {@link NODE_V8_FLAGS} that node's command line `execArgv` leaves to {@link tuneHeapForNodes}. */
export function v8FlagsToSet(execArgv: readonly string[]): string[] {
  return NODE_V8_FLAGS.filter((flag) => !flagGiven(execArgv, flag));
}
