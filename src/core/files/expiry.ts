/**
 * The end of a job's life on this coordinator (docs/http.md, Files and jobs): a sweeper expires jobs
 * past their TTL, removes their files, and forgets expired records after
 * EXPIRED_JOB_RETENTION_MS (./rules.ts, `sweepVerdict`); a job found `pending` or `processing` at
 * start was interrupted by a stop or crash and is marked `failed`.
 */
import type { Logger } from '../../log/index.ts';
import { runPeriodic, type Periodic, type Startable } from '../lifecycle.ts';
import { removeFile } from './archive.ts';
import type { JobRegistry } from './registry.ts';
import { sweepVerdict } from './rules.ts';
import type { JobRepo } from './types.ts';

/** Options of {@link createJobSweeper}. */
export interface JobSweeperOptions {
  /** Interval of the TTL sweep, ms. */
  sweepIntervalMs: number;
}

/** Dependencies of {@link createJobSweeper}. */
export interface JobSweeperDeps {
  /** Durable job metadata. */
  jobs: JobRepo;
  /** This coordinator's jobs (./registry.ts). */
  registry: JobRegistry;
  /** Wall clock, Unix ms (TTLs). */
  clock: () => number;
  /** The files module's logger. */
  logger: Logger;
  /** The node's lifetime: ends the sweep loop when aborted. */
  signal: AbortSignal;
}

/** Expiry of finished jobs and recovery of interrupted ones. */
export interface JobSweeper extends Startable {
  /** Expire every job past its TTL now, forget expired ones past their retention; returns how many expired. */
  sweep(): Promise<number>;
  /** Mark `failed` every stored job left `pending` or `processing` (run at start, before any job). */
  failInterrupted(): Promise<void>;
  /** Sweep every `sweepIntervalMs` from now on. */
  start(): void;
  /** Stop sweeping; resolves once a sweep under way has finished. Idempotent. */
  stop(): Promise<void>;
}

/** Create the sweeper of a files service. */
export function createJobSweeper(options: JobSweeperOptions, deps: JobSweeperDeps): JobSweeper {
  const { registry, logger: log } = deps;
  let sweeping: Periodic | undefined;

  async function sweep(): Promise<number> {
    const now = deps.clock();
    let expired = 0;
    let forgotten = 0;
    for await (const stored of deps.jobs.list()) {
      if (registry.isRunning(stored.id)) continue;
      const verdict = sweepVerdict(stored, now);
      if (verdict === 'forget') {
        await deps.jobs.delete(stored.id);
        forgotten += 1;
      } else if (verdict === 'expire') {
        await registry.removeResult(stored.id);
        await deps.jobs.put({ ...stored, status: 'expired', expiredAt: now });
        expired += 1;
      }
    }
    if (expired > 0 || forgotten > 0) log.info({ expired, forgotten }, 'file jobs expired');
    return expired;
  }

  return {
    sweep,

    async failInterrupted() {
      for await (const job of deps.jobs.list()) {
        if (job.status !== 'pending' && job.status !== 'processing') continue;
        await removeFile(`${registry.paths.resultPath(job.id)}.partial`);
        await registry.fail(job, 'Interrupted: the coordinator restarted');
        log.warn({ jobId: job.id }, 'interrupted file job marked failed');
      }
    },

    start() {
      const sweepOnce = async () => {
        await sweep();
      };
      sweeping ??= runPeriodic(sweepOnce, { intervalMs: options.sweepIntervalMs, signal: deps.signal, logger: log, name: 'file job sweep' });
    },

    async stop() {
      await sweeping?.stop();
    },
  };
}
