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
 * `--heap-growing-percent=20`: after each full collection V8 lets the old generation grow to
 * (1 + 20%) × what survived before the next, instead of its own factor (up to 4× for a heap that
 * allocates fast). A member serving reads moves decoded states through its state cache, and the
 * ones it evicts die old: with V8's factor a member holding many secrets let its JS heap grow far
 * past what was alive after many distinct reads; with 20% it stays close to what is
 * alive (`npm run bench -- scale-store`, the member's RSS against its target in docs/benchmarks.md).
 * Requests did not notice: alternating runs of `latency-procs` and `encrypt` with and without it
 * gave the same figures within their noise. A heuristic, not a limit: a heap with more alive still
 * grows to hold it.
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
 * scavenge's feedback), so setting them at run time (before the nodes start) takes effect for the
 * process and every worker thread it starts.
 */
import { setFlagsFromString } from 'node:v8';

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
export const NODE_V8_FLAGS = ['--external-memory-accounted-in-global-limit', '--heap-growing-percent=20', '--no-allocation-site-pretenuring'] as const;

/**
 * Apply {@link NODE_V8_FLAGS} to this process, except a flag the operator set on node's command line
 * (`node --no-external-memory-accounted-in-global-limit …`, `node --heap-growing-percent=0 …` for
 * V8's own factor): theirs stands. Idempotent.
 */
export function tuneHeapForNodes(execArgv: readonly string[] = process.execArgv): void {
  for (const flag of v8FlagsToSet(execArgv)) setFlagsFromString(flag);
}

/** The flags of {@link NODE_V8_FLAGS} that node's command line `execArgv` leaves to {@link tuneHeapForNodes}. */
export function v8FlagsToSet(execArgv: readonly string[]): string[] {
  return NODE_V8_FLAGS.filter((flag) => !flagGiven(execArgv, flag));
}
