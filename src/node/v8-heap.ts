/**
 * V8 heap tuning of a process that runs nodes (`quorumkeep start`, `quorumkeep local`; the bench,
 * which runs nodes as the daemon does). See docs/deployment.md, "Sizing a host".
 *
 * Every read from a socket or a file is a new ArrayBuffer outside the JavaScript heap. By default
 * V8 starts a full mark-compact each time such external memory grows by a fixed step (~64 MiB)
 * since the last one, whether or not those buffers are still alive: a 1 GiB upload set off about a
 * dozen full collections, each marking the node's whole heap, although the read buffers die young
 * and the scavenger frees them. With `--external-memory-accounted-in-global-limit`, external memory
 * counts towards the heap's global limit instead (which grows with the heap), so short-lived
 * buffers no longer trigger full collections of their own; memory still bounds the heap as before.
 *
 * Measured (`npm run bench -- files`, a coordinator process on the 2-core reference host, 1 GiB
 * jobs, one run each way): V8's GC threads used 3.0 s of CPU instead of 6.2 s for an encrypt, 1.2
 * instead of 2.7 s for a decrypt-existing; end to end 14.0 s instead of 15.7 s, 8.7 instead of 11.0
 * and 13.1 instead of 17.0 s. The price is memory: dead buffers wait longer for a collection, and
 * the coordinator's RSS peak over those jobs was 530–585 MiB instead of 484–519 MiB.
 *
 * `--heap-growing-percent=20`: after each full collection V8 lets the old generation grow to
 * (1 + 20%) × what survived before the next, instead of its own factor (up to 4× for a heap that
 * allocates fast). A member serving reads moves decoded states through its state cache, and the
 * ones it evicts die old: with V8's factor a member holding 100,000 secrets had 193 MB of JS heap
 * after 30,000 distinct reads, 85 MB of it alive; with 20%, 86 MB (`npm run bench -- scale-store`,
 * one run each way, reads 3,114/s against 2,960/s). Requests did not notice: `npm run bench --
 * latency-procs`, three alternating runs each way, decrypt p50 median 3.98 ms with it and 4.07 ms
 * without, session 10.8 and 10.6 ms; `npm run bench -- encrypt`, HTTP at 46% of its bound both ways.
 * A heuristic, not a limit: a heap with more alive still grows to hold it.
 *
 * `--no-allocation-site-pretenuring`: V8 watches how long the objects of each allocation site live,
 * and once most of a site's survive it allocates that site's objects in the old generation from then
 * on. A node's sockets and streams keep an EventEmitter listener array for their whole life, so V8
 * learns to allocate every such array old — including the one each HTTP response gets for its
 * `finish` listeners (Node's own and koa's). That array, dead as soon as the response is answered,
 * still keeps the response and everything it reaches (request, context, body, answer) alive through
 * every scavenge until the next full collection: under the encrypt load about 5–10 KB of each
 * request reached the old generation that way, with two or three full collections a second. Measured
 * (`npm run bench -- encrypt`, V8's `--trace-gc-nvp`, five rounds of 4,000 requests each way):
 * 52–55 MB promoted a round and three full collections with pretenuring, 6–8 MB and none without;
 * HTTP/bound 39–52% against 44–74%. See docs/http.md, "Request path cost".
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
 *   threads, V8's) an arena of its own, and each arena keeps what it once held. Two arenas cut a
 *   file-job coordinator's RSS peak by 70–120 MiB at the same job speed.
 * - `--max-semi-space-size=8` (MiB): V8 grows the young generation to 2 × 32 MiB while a node loads
 *   its modules and keeps it; 2 × 8 MiB is 32 MiB less RSS from the start. Measured: the same file
 *   job speed and the same request latencies (docs/deployment.md, "Sizing a host").
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
