/**
 * Prompt collection of the short-lived buffers of a byte stream (file jobs: node:crypto's `update`
 * outputs on the chunk thread, socket reads of an upload on the main thread).
 *
 * Each such buffer is a few bytes of JavaScript heap holding up to a MiB of memory outside it, so
 * the young generation fills far too slowly for the scavenger to free them on its own: they wait
 * for a collection that V8 starts only when external memory crosses its global limit
 * (docs/deployment.md, "Sizing a host"). Meanwhile a thread streaming through `update` grows its RSS
 * by a large share of what it streamed; with a scavenge every few MiB it stays nearly flat
 * (test/unit/crypto/young-garbage.test.ts holds that bound). Freeing the buffers while their memory
 * is still hot in the allocator is also faster than letting them pile up.
 *
 * The scavenge is V8's own (`gc({ type: 'minor' })`), reached through a context created while
 * `--expose-gc` is set for that moment only: the node's own global never gets a `gc`.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

type Collect = (options: { type: 'minor' | 'major'; execution: 'sync' }) => void;

let collect: Collect | undefined;

/** Tries to get V8's `gc` from a fresh context before giving up for this call (see {@link collector}). */
const COLLECTOR_ATTEMPTS = 10;

/**
 * V8's `gc` function, from a fresh context (or the global one when node was started with
 * `--expose-gc`); undefined when none could be had this time.
 *
 * V8's flags are the process's, shared by every thread: another thread (a crypto or chunk thread
 * taking its own collector) may turn `--expose-gc` off between this thread's setting it and its
 * context being made, and that context then has no `gc`. So: try again, and if every attempt lost
 * that race, skip this scavenge — a later one tries again. A scavenge is a memory optimisation; it
 * must never fail the upload or job it runs inside.
 */
function collector(): Collect | undefined {
  if (collect) return collect;
  const exposed = (globalThis as { gc?: Collect }).gc;
  if (typeof exposed === 'function') return (collect = exposed);
  for (let attempt = 0; attempt < COLLECTOR_ATTEMPTS && !collect; attempt++) {
    setFlagsFromString('--expose-gc');
    try {
      collect = runInNewContext('gc') as Collect;
    } catch {
      // ReferenceError: another thread turned the flag off in between; try again.
    } finally {
      setFlagsFromString('--no-expose-gc');
    }
  }
  return collect;
}

/** Scavenge this thread's young generation now (frees the dead buffers that live only there). */
export function scavengeNow(): void {
  collector()?.({ type: 'minor', execution: 'sync' });
}

/** A full collection of this thread's heap now (the bench, before a measured phase). */
export function collectAllNow(): void {
  collector()?.({ type: 'major', execution: 'sync' });
}

/**
 * Counts the bytes of short-lived buffers a stream created on this thread and scavenges once every
 * `everyBytes` of them. One per thread is enough (a module-level default is {@link youngGarbage}).
 */
export class YoungGarbage {
  private readonly everyBytes: number;
  private pending = 0;
  /** Scavenges run so far (for tests). */
  scavenges = 0;

  constructor(everyBytes: number) {
    this.everyBytes = everyBytes;
  }

  /** `bytes` more of short-lived buffers were created (and are, or soon will be, dead). */
  add(bytes: number): void {
    this.pending += bytes;
    if (this.pending < this.everyBytes) return;
    this.pending = 0;
    this.scavenges += 1;
    scavengeNow();
  }
}

/**
 * This thread's counter: a scavenge every 4 MiB. A few MiB between scavenges keeps the freed memory
 * in the allocator for the next buffers, which was both the fastest and the smallest on the
 * reference host; much further apart, the allocator returns the freed memory to the kernel and takes
 * fresh pages again, which costs far more time.
 */
export const youngGarbage = new YoungGarbage(4 * 1024 * 1024);
