/**
 * The crypto pools' worker threads, started and stopped safely. V8 aborts the whole process (a failed
 * CHECK in `AsyncModuleExecutionFulfilled`) when a worker is terminated while its modules are still
 * being evaluated — and ./hash.ts awaits its Keccak at the top level, so every crypto worker's module
 * graph is evaluated asynchronously. A node stopped right after a burst of writes first put its verify
 * thread to work did exactly that. So each worker says when its modules are evaluated
 * ({@link announceReady}), and {@link stopWorker} terminates it only after that.
 */
import { parentPort, Worker, type WorkerOptions } from 'node:worker_threads';

/** What a worker posts once its modules are evaluated. */
const WORKER_READY = 'quorumkeep:worker-ready';

/** A worker and whether it has evaluated its modules. */
export interface CryptoWorker {
  worker: Worker;
  /** Resolves once the worker's modules are evaluated, or it stopped. */
  ready: Promise<void>;
}

/** Start a worker (unref'd: idle, it must not keep the process alive). */
export function startWorker(url: URL, options?: WorkerOptions): CryptoWorker {
  const worker = new Worker(url, options);
  worker.unref();
  const ready = new Promise<void>((resolve) => {
    const done = () => resolve();
    worker.on('message', (m: unknown) => {
      if (m === WORKER_READY) done();
    });
    worker.once('exit', done);
    worker.once('error', done);
  });
  return { worker, ready };
}

/**
 * Whether the event loop sat idle at least `ms` since the previous call (the first call: yes); each
 * call starts the next span. Idle time, not elapsed time: how the pools tell a lone operation at
 * light load, which they run inline, from one among many.
 */
export function loopIdleSinceLastCall(ms: number): () => boolean {
  let idleAtLast: number | undefined;
  return () => {
    const idleNow = performance.eventLoopUtilization().idle;
    const quiet = idleAtLast === undefined || idleNow - idleAtLast >= ms;
    idleAtLast = idleNow;
    return quiet;
  };
}

/** Whether a message from a worker is its ready notice (a pool's handler skips it). */
export function isReadyNotice(message: unknown): boolean {
  return message === WORKER_READY;
}

/**
 * Terminate a worker once its modules are evaluated. `graceMs` bounds the wait for a worker that
 * never gets there (it is then terminated anyway).
 */
export async function stopWorker(w: CryptoWorker, graceMs = 10_000): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([w.ready, new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs)))]);
  clearTimeout(timer);
  await w.worker.terminate();
}

/**
 * In a worker: say that its modules are evaluated. Posted from the next turn of its event loop, once
 * the evaluation of the module graph has settled, not from the module body itself.
 */
export function announceReady(): void {
  setImmediate(() => parentPort?.postMessage(WORKER_READY));
}
