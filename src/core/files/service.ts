/**
 * File jobs (docs/http.md, Files and jobs), on the coordinator that runs them: this file composes
 * the pieces and owns their lifecycle.
 *
 * - ./encrypt.ts: POST /encrypt-file — the spooled upload verified, recorded, sealed chunk by chunk
 *   into a `.cifer` ZIP in the background.
 * - ./decrypt.ts and ./decrypt-run.ts: POST /decrypt-file and /decrypt-existing-file — the archive
 *   checked before the job is accepted, the secret's shares gathered once per job, the plaintext
 *   result sealed on disk under a key kept sealed by the node's storage key.
 * - ./access.ts: download, delete and list.
 * - ./registry.ts: the running jobs, the job and disk limits, a job's way to its final state.
 * - ./upload-budget.ts: the bytes of uploads whose sender is not verified yet, per address and in
 *   all, apart from the disk budget.
 * - ./expiry.ts: the TTL sweep, and interrupted jobs failed at start.
 * - ./rules.ts: the plain rules all of these apply.
 *
 * Job metadata is durable (the `jobs` sublevel); results are files under `<dir>/results`; uploads
 * are spooled sealed under `<dir>/spool` (./spool.ts).
 */
import { AppError } from '../../errors/index.ts';
import type { Logger } from '../../log/index.ts';
import type { Startable } from '../lifecycle.ts';
import { createChunkCrypto, type ChunkCrypto } from '../../crypto/index.ts';
import type { SignedDataVerifier } from '../sessions/types.ts';
import type { SecretsCapability } from '../secrets/service.ts';
import type { NodeKeyring } from '../secrets/ports.ts';
import type { UsageAdmission } from '../usage/types.ts';
import { ensureDir } from './archive.ts';
import { createJobAccess } from './access.ts';
import { createDecryptJobs } from './decrypt.ts';
import { createDecryptRunner } from './decrypt-run.ts';
import { createEncryptJobs } from './encrypt.ts';
import { createJobSweeper } from './expiry.ts';
import { createJobRegistry } from './registry.ts';
import { archiveLimitsOf, maxDecryptUploadBytes, unverifiedAllowancesOf, viewOf } from './rules.ts';
import { createSealedSpool, sweepSpools, type SealedSpool } from './spool.ts';
import { createUploadBudget } from './upload-budget.ts';
import type { FileJobMetrics, FilesService, JobRepo } from './types.ts';

export { DECRYPT_RESULT_TTL_MS, ENCRYPT_RESULT_TTL_MS, EXPIRED_JOB_RETENTION_MS, FAILED_JOB_TTL_MS } from './rules.ts';
export type { FileJobMetrics } from './types.ts';


/** Options of {@link createFilesService} (`files.*` of the config). */
export interface FilesOptions {
  /** Folder of spools (`spool/`) and results (`results/`). */
  dir: string;
  /** Largest file, bytes. */
  maxFileBytes: number;
  /** Plaintext bytes per chunk. */
  chunkBytes: number;
  /** Jobs pending or processing at once on this coordinator. */
  maxConcurrentJobs: number;
  /** Encrypt jobs pending or processing at once per signing principal (429 beyond). */
  maxJobsPerPrincipal: number;
  /** Bytes of verified uploads' spools and results this coordinator may hold; uploads are refused (503) once it is used up. */
  maxDiskBytes: number;
  /**
   * Bytes the uploads of one source address may hold while their sender is not verified yet;
   * 0 = the largest upload (a `.cifer` of a `maxFileBytes` file).
   */
  maxUnverifiedBytesPerAddress: number;
  /** Bytes every address's unverified uploads may hold together; 0 = four per-address allowances. */
  maxUnverifiedBytes: number;
  /** Interval of the TTL sweep, ms. */
  sweepIntervalMs: number;
}

/** Dependencies of {@link createFilesService}. */
export interface FilesDeps {
  verifier: SignedDataVerifier;
  secrets: Pick<SecretsCapability, 'resolveSecret' | 'recoverSeed'>;
  /** Seals a decrypt result's key under the node's storage key (the result is never on disk in clear). */
  keyring: Pick<NodeKeyring, 'encryptAtRest' | 'decryptAtRest'>;
  jobs: JobRepo;
  /** Wall clock, Unix ms (job times, TTLs). */
  clock: () => number;
  logger: Logger;
  /** New job ids. @default crypto.randomUUID */
  newId?: () => string;
  /** Job metrics (src/metrics); none when absent. */
  metrics?: FileJobMetrics;
  /**
   * The chunk crypto of every job (AES of spools and chunks, hashing): buffers in shared memory, the
   * work on a worker thread. @default one of its own on a worker thread, stopped with the service
   */
  chunkCrypto?: ChunkCrypto;
  /**
   * Plan limits (docs/architecture.md, Usage and plan limits): every job is admitted for its plaintext
   * bytes (encrypt: the upload; decrypt: metadata's `originalSize`) before its work starts, kept when
   * it completes, taken back when it fails. None when usage limits are off.
   */
  usage?: UsageAdmission;
  /** The node's lifetime: ends the TTL sweep loop when aborted (running jobs end at {@link FilesCapability.stop}). @default only stop ends it */
  signal?: AbortSignal;
}

/** The service plus its lifecycle (the node starts and stops it). */
export interface FilesCapability extends FilesService, Startable {
  /** Create the folders, remove leftover spools, fail interrupted jobs, start the sweeper. */
  start(): Promise<void>;
  /** Stop the sweeper and wait for running jobs (they stop at their next chunk and fail). Idempotent. */
  stop(): Promise<void>;
  /** Expire every job past its TTL now; returns how many expired. */
  sweep(): Promise<number>;
}

/** Create the files service. */
export function createFilesService(options: FilesOptions, deps: FilesDeps): FilesCapability {
  const log = deps.logger.child({ module: 'files' });
  const { clock, metrics } = deps;
  const engine = deps.chunkCrypto ?? createChunkCrypto();
  const stopping = new AbortController();
  const registry = createJobRegistry(options, { jobs: deps.jobs, clock, logger: log, newId: deps.newId ?? (() => crypto.randomUUID()), metrics, stopping: stopping.signal });
  const unverified = createUploadBudget(unverifiedAllowancesOf(options), { logger: log, metrics });
  const { spoolDir, resultDir } = registry.paths;
  const encrypt = createEncryptJobs(options, { verifier: deps.verifier, secrets: deps.secrets, usage: deps.usage, registry, engine, logger: log, stopping: stopping.signal });
  const decrypt = createDecryptJobs(
    { archiveLimits: archiveLimitsOf(options.maxFileBytes, options.chunkBytes) },
    {
      verifier: deps.verifier,
      secrets: deps.secrets,
      usage: deps.usage,
      registry,
      run: createDecryptRunner(options, { keyring: deps.keyring, registry, engine, logger: log, stopping: stopping.signal }),
      logger: log,
    },
  );
  const access = createJobAccess({ verifier: deps.verifier, secrets: deps.secrets, keyring: deps.keyring, jobs: deps.jobs, registry, engine, clock, logger: log });
  const sweeper = createJobSweeper(options, { jobs: deps.jobs, registry, clock, logger: log, signal: deps.signal ?? new AbortController().signal });
  const decryptUploadBytes = maxDecryptUploadBytes(options.maxFileBytes, options.chunkBytes);
  let stopped: Promise<void> | undefined;

  const service: FilesCapability = {
    maxFileBytes: options.maxFileBytes,
    assertCapacity: (incomingBytes) => registry.assertCapacity(incomingBytes),

    maxUploadBytes(kind) {
      return kind === 'decrypt' ? decryptUploadBytes : options.maxFileBytes;
    },

    async createSpool(kind, origin) {
      const { signed } = origin;
      metrics?.uploads.inc({ order: signed ? 'fields_first' : 'file_first' });
      // The fields came first: the sender is known before a byte is written (the same check as the
      // job's start makes), so a forged upload ends here and a genuine one is counted as verified.
      if (signed) await deps.verifier.verify(signed.request, { parts: 4, at: signed.receivedAt, web3: true });
      const hold = signed ? undefined : unverified.hold(origin.address, origin.declaredBytes);
      let spool: SealedSpool;
      try {
        const admit = hold ? (bytes: number) => hold.take(bytes) : undefined;
        // Only an encrypt job reads the upload's SHA-256 (its originalHash).
        spool = await createSealedSpool(spoolDir, { chunkBytes: options.chunkBytes, maxBytes: service.maxUploadBytes(kind), sha256: kind === 'encrypt' }, { engine, admit });
      } catch (err) {
        hold?.release();
        throw err;
      }
      registry.trackSpool(spool, hold);
      return spool;
    },

    startEncrypt: (upload) => encrypt.start(upload),
    startDecrypt: (upload) => decrypt.start(upload),
    startDecryptExisting: (encryptJobId, request) => decrypt.startExisting(encryptJobId, request),

    async holds(jobId) {
      return (await registry.find(jobId)) !== undefined;
    },

    async status(jobId) {
      const job = await registry.find(jobId);
      if (!job) throw new AppError('NOT_FOUND', 'Job not found');
      return viewOf(job);
    },

    download: (jobId, request) => access.download(jobId, request),
    remove: (jobId, request) => access.remove(jobId, request),
    list: (request, includeExpired) => access.list(request, includeExpired),

    async start() {
      await ensureDir(spoolDir);
      await ensureDir(resultDir);
      // Before any job of this process runs, every spool file is a leftover of one that ended: its
      // key died with it (unreadable, only taking space). By age it would be a race: a file written
      // in the same millisecond as the sweep's clock reading has an mtime after it.
      await sweepSpools(spoolDir);
      await registry.loadResults();
      await sweeper.failInterrupted();
      sweeper.start();
    },

    stop() {
      stopped ??= (async () => {
        const swept = sweeper.stop();
        stopping.abort();
        await registry.settled();
        await swept;
        // Only the one it made: an engine passed in is its owner's to stop.
        if (!deps.chunkCrypto) await engine.close();
      })();
      return stopped;
    },

    sweep: () => sweeper.sweep(),
  };
  return service;
}
