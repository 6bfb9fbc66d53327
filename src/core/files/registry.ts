/**
 * The jobs of one coordinator (docs/http.md, Files and jobs): the running ones with their live
 * progress, the limits a new job is admitted against (job slots, per-principal jobs, the disk budget
 * of verified uploads' spools and results — an upload whose sender is not verified yet is held by
 * the unverified budget instead, ./upload-budget.ts), a job's way from `pending` to its final state
 * with its metrics, and the result files on disk. The encrypt and decrypt flows (./encrypt.ts,
 * ./decrypt.ts) run their jobs through it; the sweep (./expiry.ts) and the callers' access
 * (./access.ts) read it.
 */
import { AppError } from '../../errors/index.ts';
import type { Logger } from '../../log/index.ts';
import type { ResolvedSecret } from '../secrets/types.ts';
import type { VerifiedCaller } from '../sessions/types.ts';
import { fileSizes, removeFile } from './archive.ts';
import { FAILED_JOB_TTL_MS, assertDiskRoom, assertJobSlot, assertPrincipalRoom, failureReason, isJobId, jobPaths, newJob, resultFileJobId, type JobPaths } from './rules.ts';
import type { SealedSpool } from './spool.ts';
import type { FileJobMetrics, JobRecord, JobRepo, JobType } from './types.ts';
import type { UnverifiedHold } from './upload-budget.ts';

/** Options of {@link createJobRegistry} (`files.*` of the config). */
export interface JobRegistryOptions {
  /** Folder of spools (`spool/`) and results (`results/`). */
  dir: string;
  /** Jobs pending or processing at once on this coordinator. */
  maxConcurrentJobs: number;
  /** Jobs pending or processing at once per signing principal (429 beyond). */
  maxJobsPerPrincipal: number;
  /** Bytes of spools and results this coordinator may hold. */
  maxDiskBytes: number;
}

/** Dependencies of {@link createJobRegistry}. */
export interface JobRegistryDeps {
  /** Durable job metadata. */
  jobs: JobRepo;
  /** Wall clock, Unix ms (job times). */
  clock: () => number;
  /** The files module's logger. */
  logger: Logger;
  /** New job ids. */
  newId: () => string;
  /** Job metrics; none when absent. */
  metrics?: FileJobMetrics | undefined;
  /** Aborted when the service stops: a job failing then was interrupted. */
  stopping: AbortSignal;
}

/** One job's way from `pending` to its final state, as its runner reports it. */
export interface JobRun {
  /** Record the job `processing` (durably) and move its gauge. */
  processing(): Promise<void>;
  /** The job reached its final state: its gauge drops and its duration is observed. Once. */
  end(outcome: 'completed' | 'failed'): void;
}

/** The jobs of this coordinator. */
export interface JobRegistry {
  readonly paths: JobPaths;
  /** A job of this coordinator, running or stored; undefined for an unknown id. */
  find(jobId: string): Promise<JobRecord | undefined>;
  /** Whether job `jobId` runs in this process now. */
  isRunning(jobId: string): boolean;
  /** A stored job as it is now: its running record when it runs here (live progress), else itself. */
  current(stored: JobRecord): JobRecord;
  /** A new `pending` job for a verified caller (not yet stored). */
  create(type: JobType, caller: VerifiedCaller, secret: ResolvedSecret, name: string, originalSize: number): JobRecord;
  /** Store a new job durably (before it is launched). */
  record(job: JobRecord): Promise<void>;
  /** Register a stored job as running (its slot is taken at once) and start `run` in the background. */
  launch(job: JobRecord, run: (lifecycle: JobRun) => Promise<void>): void;
  /** Resolves once every job running now has finished. */
  settled(): Promise<void>;
  /** 503 OVERLOADED when every job slot is taken. */
  assertJobSlot(): void;
  /** 503 OVERLOADED when every job slot is taken, or the disk budget cannot take `incomingBytes` more. */
  assertCapacity(incomingBytes?: number): void;
  /** 429 RATE_LIMITED when `principalId` already runs its maximum of jobs. */
  assertPrincipalLimit(principalId: string): void;
  /**
   * Count an upload's spool in the disk budget until it closes, and its bytes in the metrics once.
   * With `hold` (its sender is not verified yet) the spool's bytes are that hold's until
   * {@link claimSpool}, and the hold is released when the spool closes.
   */
  trackSpool(spool: SealedSpool, hold?: UnverifiedHold): void;
  /**
   * The upload's sender is verified: its spool leaves the unverified budget and counts in the disk
   * budget from now on — 503 OVERLOADED (nothing moved) when that cannot take it. Nothing to do for
   * a spool already counted there.
   */
  claimSpool(spool: SealedSpool): void;
  /** Learn the result files already on disk (their sizes count in the disk budget). */
  loadResults(): Promise<void>;
  /** Job `id`'s result is on disk: `diskBytes` in the budget, `resultBytes` counted in the metrics. */
  resultWritten(id: string, diskBytes: number, resultBytes: number): void;
  /** Remove job `id`'s result files, whichever exist. */
  removeResult(id: string): Promise<void>;
  /** Record a job's final state durably, then show it. */
  settle(job: JobRecord, changes: Partial<JobRecord>): Promise<void>;
  /** Record a job `completed` (progress 100) now. */
  complete(job: JobRecord): Promise<void>;
  /** Record a job `failed` for `reason` (kept {@link FAILED_JOB_TTL_MS}). */
  fail(job: JobRecord, reason: string): Promise<void>;
  /** A running job stopped on `err`: log an unexpected cause, record it `failed` (a failed write is logged). */
  abandon(job: JobRecord, err: unknown): Promise<void>;
}

/**
 * The hold of an upload whose sender is not verified yet, on its spool until
 * {@link JobRegistry.claimSpool}: a slot on the object, not a table that gains and loses an entry
 * with every upload (CONTRIBUTING.md, Anti-patterns).
 */
const UNVERIFIED_HOLD = Symbol('unverifiedHold');

type UploadSpool = SealedSpool & { [UNVERIFIED_HOLD]?: UnverifiedHold | undefined };

/** The log line of a job that failed on something unexpected, by type (constant messages, CONTRIBUTING.md rule 9). */
const FAILED_JOB_MESSAGE: Record<JobType, string> = { encrypt: 'encrypt job failed', decrypt: 'decrypt job failed' };

/** Create the job registry of one files service. */
export function createJobRegistry(options: JobRegistryOptions, deps: JobRegistryDeps): JobRegistry {
  const { clock, metrics, logger: log } = deps;
  const paths = jobPaths(options.dir);
  /** Jobs of this process not yet finished, with their live progress. */
  const live = new Map<string, { job: JobRecord; done: Promise<void> }>();
  /** Bytes of each result file on disk, by job id (the disk budget; filled at start, kept up to date). */
  const resultBytes = new Map<string, number>();
  /** Spools of verified uploads not yet removed (being read, or waiting for their job). */
  const openSpools = new Set<SealedSpool>();

  /**
   * Bytes of the disk budget in use: results on disk, verified uploads' spools (their plaintext
   * length; the seal adds 16 bytes a chunk), and for each running job its result to come (about its
   * original size).
   */
  function diskBytesUsed(): number {
    let used = 0;
    for (const bytes of resultBytes.values()) used += bytes;
    for (const spool of openSpools) used += spool.bytes;
    for (const { job } of live.values()) used += job.originalSize;
    return used;
  }

  /** The gauge and timer of one job, pending until it is processing. */
  function lifecycle(job: JobRecord): JobRun {
    const startedAt = performance.now();
    let state: 'pending' | 'processing' = 'pending';
    return {
      async processing() {
        job.status = 'processing';
        await deps.jobs.put(job);
        metrics?.jobs.dec({ type: job.type, state });
        state = 'processing';
        metrics?.jobs.inc({ type: job.type, state });
      },
      end(outcome) {
        metrics?.jobs.dec({ type: job.type, state });
        metrics?.duration.observe({ type: job.type, outcome }, (performance.now() - startedAt) / 1000);
      },
    };
  }

  const registry: JobRegistry = {
    paths,

    async find(jobId) {
      if (!isJobId(jobId)) return undefined;
      return live.get(jobId)?.job ?? (await deps.jobs.get(jobId));
    },

    isRunning: (jobId) => live.has(jobId),

    current: (stored) => live.get(stored.id)?.job ?? stored,

    create: (type, caller, secret, name, originalSize) => newJob(type, caller, secret, name, originalSize, { id: deps.newId(), now: clock() }),

    record: (job) => deps.jobs.put(job),

    launch(job, run) {
      const entry = { job, done: Promise.resolve() };
      live.set(job.id, entry);
      metrics?.jobs.inc({ type: job.type, state: 'pending' });
      entry.done = run(lifecycle(job)).finally(() => live.delete(job.id));
    },

    async settled() {
      await Promise.all([...live.values()].map((e) => e.done));
    },

    assertJobSlot() {
      assertJobSlot(live.size, options.maxConcurrentJobs);
    },

    assertCapacity(incomingBytes = 0) {
      registry.assertJobSlot();
      assertDiskRoom(diskBytesUsed(), incomingBytes, options.maxDiskBytes);
    },

    assertPrincipalLimit(principalId) {
      let running = 0;
      for (const { job } of live.values()) if (job.signerPrincipalId === principalId) running += 1;
      assertPrincipalRoom(running, options.maxJobsPerPrincipal);
    },

    trackSpool(spool, hold) {
      const upload = spool as UploadSpool;
      if (hold) upload[UNVERIFIED_HOLD] = hold;
      else openSpools.add(spool);
      // Counted once: when the upload has been read, or when it was cut short.
      let counted = false;
      const count = (): void => {
        if (counted) return;
        counted = true;
        metrics?.bytes.inc({ direction: 'upload' }, spool.bytes);
      };
      spool.once('finish', count);
      spool.once('close', () => {
        count();
        openSpools.delete(spool);
        upload[UNVERIFIED_HOLD]?.release();
        upload[UNVERIFIED_HOLD] = undefined;
      });
    },

    claimSpool(spool) {
      const upload = spool as UploadSpool;
      const hold = upload[UNVERIFIED_HOLD];
      if (hold === undefined) return;
      assertDiskRoom(diskBytesUsed(), spool.bytes, options.maxDiskBytes);
      upload[UNVERIFIED_HOLD] = undefined;
      hold.release();
      openSpools.add(spool);
    },

    async loadResults() {
      for (const [name, size] of await fileSizes(paths.resultDir)) {
        const id = resultFileJobId(name);
        if (id !== undefined) resultBytes.set(id, size);
      }
    },

    resultWritten(id, diskBytes, written) {
      resultBytes.set(id, diskBytes);
      metrics?.bytes.inc({ direction: 'result' }, written);
    },

    async removeResult(id) {
      await removeFile(paths.resultPath(id));
      await removeFile(paths.sealedResultPath(id));
      resultBytes.delete(id);
    },

    // The state is written before it is shown: a delete (allowed once a job is final, see
    // ./access.ts) never races a write of the state it replaces.
    async settle(job, changes) {
      await deps.jobs.put({ ...job, ...changes });
      Object.assign(job, changes);
    },

    async complete(job) {
      await registry.settle(job, { status: 'completed', progress: 100, completedAt: clock() });
    },

    async fail(job, reason) {
      await registry.settle(job, { status: 'failed', error: reason, completedAt: clock(), ttl: FAILED_JOB_TTL_MS });
    },

    async abandon(job, err) {
      const interrupted = deps.stopping.aborted;
      if (!interrupted && !(err instanceof AppError)) log.error({ jobId: job.id, err }, FAILED_JOB_MESSAGE[job.type]);
      await registry.fail(job, failureReason(job.type, err, interrupted)).catch((putErr: unknown) => log.error({ jobId: job.id, err: putErr }, 'could not record a failed job'));
    },
  };
  return registry;
}
