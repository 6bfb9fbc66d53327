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
 * V8 reads this flag whenever it decides on a collection, so setting it at run time (before the
 * nodes start) takes effect for the process and every worker thread it starts.
 */
import { setFlagsFromString } from 'node:v8';

/** The flags {@link tuneHeapForNodes} sets. */
export const NODE_V8_FLAGS = ['--external-memory-accounted-in-global-limit'] as const;

/**
 * Apply {@link NODE_V8_FLAGS} to this process, except a flag the operator turned off on node's
 * command line (`node --no-external-memory-accounted-in-global-limit …`). Idempotent.
 */
export function tuneHeapForNodes(execArgv: readonly string[] = process.execArgv): void {
  for (const flag of NODE_V8_FLAGS) {
    const name = flag.slice(2);
    const off = execArgv.some((arg) => arg === `--no-${name}` || arg === `--no-${name.replaceAll('-', '_')}`);
    if (!off) setFlagsFromString(flag);
  }
}
