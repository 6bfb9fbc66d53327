/**
 * The one lifecycle contract of the node's parts (CONTRIBUTING.md, "Lifecycle"): a part that owns
 * background work is `Startable`; `stop()` always returns a promise that settles once the part's own
 * work has finished, and is safe to call twice. Periodic work goes through {@link runPeriodic}, tied to
 * the node's one `AbortSignal`, so nothing keeps running after the node stops.
 */
import type { Logger } from '../log/index.ts';

/** A part of the node that owns background work (timers, in-flight runs, queues). */
export interface Startable {
  /** Begin background work. Optional: most parts begin when created. */
  start?(): void | Promise<void>;
  /** Stop background work and wait for the work in flight; idempotent. */
  stop(): Promise<void>;
}

/** Options of {@link runPeriodic}. */
export interface PeriodicOptions {
  /** Time between the end of one run and the start of the next, ms. */
  intervalMs: number;
  /** Stops the loop when aborted (the node's lifetime signal, or the part's own). */
  signal: AbortSignal;
  /** Logs a run that throws; the loop goes on. */
  logger: Logger;
  /** What the log line calls the work. */
  name: string;
  /** Run once at once, before the first interval. @default false */
  immediate?: boolean;
}

/** A running periodic loop. */
export interface Periodic extends Startable {
  /** Run now (unless a run is in flight: then resolve when it ends); the next interval counts from here. */
  kick(): Promise<void>;
}

/**
 * Run `work` every `intervalMs` until `signal` aborts or `stop()` is called. Runs never overlap (the
 * next is scheduled when one ends), a run that throws is logged and the loop continues, and `stop()`
 * resolves once the run in flight has ended. The timer is unref'd: it never keeps the process alive.
 */
export function runPeriodic(work: (signal: AbortSignal) => Promise<void> | void, options: PeriodicOptions): Periodic {
  const own = new AbortController();
  const signal = AbortSignal.any([options.signal, own.signal]);
  let timer: ReturnType<typeof setTimeout> | undefined;
  let running: Promise<void> | undefined;

  const schedule = (): void => {
    if (signal.aborted) return;
    clearTimeout(timer);
    timer = setTimeout(() => void run(), options.intervalMs);
    timer.unref();
  };

  const run = (): Promise<void> => {
    if (running) return running;
    if (signal.aborted) return Promise.resolve();
    clearTimeout(timer);
    running = (async () => {
      try {
        await work(signal);
      } catch (err) {
        if (!signal.aborted) options.logger.error({ err, work: options.name }, 'periodic work failed');
      } finally {
        running = undefined;
        schedule();
      }
    })();
    return running;
  };

  const onAbort = (): void => clearTimeout(timer);
  signal.addEventListener('abort', onAbort, { once: true });
  if (options.immediate) void run();
  else schedule();

  return {
    kick: run,
    async stop() {
      own.abort();
      clearTimeout(timer);
      await running;
    },
  };
}

/**
 * Stop parts in order, each one even if an earlier one failed; rethrows the first failure after all
 * have stopped.
 */
export async function stopAll(parts: ReadonlyArray<Startable | undefined>): Promise<void> {
  let first: unknown;
  for (const part of parts) {
    try {
      await part?.stop();
    } catch (err) {
      first ??= err;
    }
  }
  if (first !== undefined) throw first;
}

/**
 * Run `call` with a signal that aborts after `timeoutMs` (a `TimeoutError`, as `AbortSignal.timeout`'s)
 * or when `parent` does, whichever comes first; the timer and the link to `parent` end with the call.
 * On a request's hot path instead of `AbortSignal.timeout(ms)` (alone or in `AbortSignal.any`): that
 * timer fires at the deadline of every call, answered or not, aborting a signal still alive (a
 * DOMException, stack and all), and keeps its signal until then or until a full collection finds it
 * unreferenced, so every call's signals, listeners and registry entries outlived the call and
 * reached the old generation — a part of what filled it under load (src/node/v8-heap.ts).
 */
export async function withDeadline<T>(timeoutMs: number, parent: AbortSignal | undefined, call: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const own = new AbortController();
  const onParent = () => own.abort(parent!.reason);
  if (parent?.aborted) own.abort(parent.reason);
  else parent?.addEventListener('abort', onParent, { once: true });
  const timer = setTimeout(() => own.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError')), timeoutMs);
  try {
    return await call(own.signal);
  } finally {
    clearTimeout(timer);
    parent?.removeEventListener('abort', onParent);
  }
}
