/**
 * File encryption jobs (API.md, Files and jobs), on one coordinator.
 *
 * POST /encrypt-file spools the upload sealed (./spool.ts) before anything is known of the caller;
 * {@link FilesService.startEncrypt} then verifies the signed data (freshness against the request's
 * start), records a `pending` job durably, answers, and runs the job in the background: the spool is
 * read chunk by chunk, each chunk sealed like a payload (its own ML-KEM encapsulation to the secret's
 * public key) and written straight into the `.cifer` ZIP (./archive.ts). The spool is disposed of when
 * the job ends, whatever happens.
 *
 * Job metadata is durable (the `jobs` sublevel); results are files under `<dir>/results`. A job found
 * `pending` or `processing` at start was interrupted by a stop or crash: it is marked `failed`. A
 * sweeper expires jobs past their TTL and removes their files.
 *
 * Delete expires a finished job early (its result removed at once); the list reads every job and
 * keeps those the caller signed or whose secret it owns or delegates.
 *
 * This slice serves jobs on the coordinator that ran them; any-coordinator access is a later slice.
 */
import { join } from 'node:path';
import { AppError } from '../../errors/index.ts';
import type { Logger } from '../../log/index.ts';
import { fromBase64, sealPayload, toBase64, toHex } from '../../crypto/index.ts';
import type { SignedDataVerifier, SignedRequest } from '../sessions/types.ts';
import { assertUsable, parseSecretId, type SecretsCapability } from '../secrets/service.ts';
import { createSealedSpool, sweepSpools, type SealedSpool } from './spool.ts';
import { ensureDir, fileSizes, openResultFile, removeFile, writeZipFile, type ZipEntrySource } from './archive.ts';
import type { EncryptUpload, FilesService, JobDownload, JobRecord, JobRepo, JobType, JobView, ListedJob } from './types.ts';

/** How long an encrypt result is kept after it completes (API.md: 2 days). */
export const ENCRYPT_RESULT_TTL_MS = 2 * 24 * 60 * 60 * 1000;
/** How long a failed job is kept (API.md: 5 minutes). */
export const FAILED_JOB_TTL_MS = 5 * 60 * 1000;
/** Spool files older than this at start are leftovers of a crash. */
const STALE_SPOOL_MS = 0;
/** What a busy coordinator, or a principal at its job limit, tells the client to wait before trying again. */
const BUSY_RETRY_AFTER_S = 5;
/** What a coordinator out of disk budget tells the client: space comes back as jobs finish or expire. */
const DISK_FULL_RETRY_AFTER_S = 60;
/** File extension of an encrypt result (API.md). */
const RESULT_SUFFIX = '.cifer';
/** Longest original name kept (characters); longer names are cut. */
const ORIGINAL_NAME_MAX_CHARS = 255;
/** Job ids are UUIDs; anything else is unknown without a lookup. */
const JOB_ID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

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
  /** Bytes of spools and results this coordinator may hold; uploads are refused (503) once it is used up. */
  maxDiskBytes: number;
  /** Interval of the TTL sweep, ms. */
  sweepIntervalMs: number;
}

/** Dependencies of {@link createFilesService}. */
export interface FilesDeps {
  verifier: SignedDataVerifier;
  secrets: Pick<SecretsCapability, 'findSecret'>;
  jobs: JobRepo;
  /** Wall clock, Unix ms (job times, TTLs). */
  clock: () => number;
  logger: Logger;
  /** New job ids. @default crypto.randomUUID */
  newId?: () => string;
  /** Job metrics (src/metrics); none when absent. */
  metrics?: FileJobMetrics;
}

/** What the service reports to the node's metrics (label values from fixed sets, never ids). */
export interface FileJobMetrics {
  /** Jobs now pending or processing, by type and state. */
  jobs: { inc(labels: { type: JobType; state: 'pending' | 'processing' }): void; dec(labels: { type: JobType; state: 'pending' | 'processing' }): void };
  /** Bytes read from uploads (`upload`) and written into results (`result`). */
  bytes: { inc(labels: { direction: 'upload' | 'result' }, value: number): void };
  /** Job duration in seconds, from accepted to its final state. */
  duration: { observe(labels: { type: JobType; outcome: 'completed' | 'failed' }, seconds: number): void };
}

/** The service plus its lifecycle (the node starts and stops it). */
export interface FilesCapability extends FilesService {
  /** Create the folders, remove leftover spools, fail interrupted jobs, start the sweeper. */
  start(): Promise<void>;
  /** Stop the sweeper and wait for running jobs (they stop at their next chunk and fail). Idempotent. */
  stop(): Promise<void>;
  /** Expire every job past its TTL now; returns how many expired. */
  sweep(): Promise<number>;
}

/** The documented fields of a job view, in wire order (API.md). */
const VIEW_FIELDS = [
  'id', 'type', 'status', 'progress', 'secretId', 'chainId', 'createdAt', 'completedAt', 'expiredAt', 'error',
  'resultFileName', 'ttl', 'originalSize', 'signerPrincipalId', 'secretOwnerPrincipalId',
] as const satisfies ReadonlyArray<keyof JobView>;

function viewOf(job: JobRecord): JobView {
  const out: Record<string, unknown> = {};
  for (const k of VIEW_FIELDS) out[k] = job[k];
  return out as unknown as JobView;
}

/** Create the files service. */
export function createFilesService(options: FilesOptions, deps: FilesDeps): FilesCapability {
  const log = deps.logger.child({ module: 'files' });
  const { clock } = deps;
  const newId = deps.newId ?? (() => crypto.randomUUID());
  const spoolDir = join(options.dir, 'spool');
  const resultDir = join(options.dir, 'results');
  const resultPath = (id: string): string => join(resultDir, `${id}.zip`);
  /** Jobs of this process not yet finished, with their live progress. */
  const live = new Map<string, { job: JobRecord; done: Promise<void> }>();
  /** Bytes of each result file on disk, by job id (the disk budget; filled at start, kept up to date). */
  const resultBytes = new Map<string, number>();
  /** Spools not yet removed (an upload being read, or waiting for its job). */
  const openSpools = new Set<SealedSpool>();
  const metrics = deps.metrics;
  const stopping = new AbortController();
  let sweeper: NodeJS.Timeout | undefined;
  let sweeping: Promise<number> | undefined;
  let stopped: Promise<void> | undefined;

  async function find(jobId: string): Promise<JobRecord | undefined> {
    if (!JOB_ID_RE.test(jobId)) return undefined;
    return live.get(jobId)?.job ?? (await deps.jobs.get(jobId));
  }

  /**
   * Bytes of the disk budget in use: results on disk, spools (their plaintext length; the seal adds
   * 16 bytes a chunk), and for each running job its result to come (about its original size).
   */
  function diskBytesUsed(): number {
    let used = 0;
    for (const bytes of resultBytes.values()) used += bytes;
    for (const spool of openSpools) used += spool.bytes;
    for (const { job } of live.values()) used += job.originalSize;
    return used;
  }

  function assertJobSlot(): void {
    if (live.size >= options.maxConcurrentJobs) {
      throw new AppError('OVERLOADED', `This coordinator already runs ${options.maxConcurrentJobs} file jobs; try again shortly`, { retryAfterSeconds: BUSY_RETRY_AFTER_S });
    }
  }

  function assertCapacity(incomingBytes = 0): void {
    assertJobSlot();
    const used = diskBytesUsed();
    if (used >= options.maxDiskBytes || used + incomingBytes > options.maxDiskBytes) {
      throw new AppError('OVERLOADED', 'This coordinator has no disk space left for file jobs; try again later', { retryAfterSeconds: DISK_FULL_RETRY_AFTER_S });
    }
  }

  function assertPrincipalLimit(principalId: string): void {
    let running = 0;
    for (const { job } of live.values()) if (job.signerPrincipalId === principalId) running += 1;
    if (running >= options.maxJobsPerPrincipal) {
      throw new AppError('RATE_LIMITED', `You already have ${options.maxJobsPerPrincipal} file jobs running; try again once one has finished`, { retryAfterSeconds: BUSY_RETRY_AFTER_S });
    }
  }

  async function removeResult(id: string): Promise<void> {
    await removeFile(resultPath(id));
    resultBytes.delete(id);
  }

  async function fail(job: JobRecord, reason: string): Promise<void> {
    job.status = 'failed';
    job.error = reason;
    job.completedAt = clock();
    job.ttl = FAILED_JOB_TTL_MS;
    await deps.jobs.put(job);
  }

  /** Encrypt the spool into the job's ZIP. */
  async function runEncrypt(job: JobRecord, spool: SealedSpool, publicKey: Uint8Array): Promise<void> {
    let chunks: AsyncIterableIterator<Buffer> | undefined;
    const startedAt = performance.now();
    let state: 'pending' | 'processing' = 'pending';
    let outcome: 'completed' | 'failed' = 'failed';
    try {
      job.status = 'processing';
      await deps.jobs.put(job);
      metrics?.jobs.dec({ type: job.type, state });
      state = 'processing';
      metrics?.jobs.inc({ type: job.type, state });
      const chunkCount = Math.max(1, Math.ceil(job.originalSize / options.chunkBytes));
      const cifers: string[] = [];
      const reader = spool.read();
      chunks = reader;
      const entries: ZipEntrySource[] = [];
      for (let i = 0; i < chunkCount; i++) {
        entries.push({
          name: `chunk_${i}.enc`,
          async produce() {
            stopping.signal.throwIfAborted();
            const next = await reader.next();
            if (next.done) throw new AppError('DECRYPTION_FAILED', 'Spool ended early');
            const { cifer, encryptedMessage } = sealPayload(publicKey, next.value);
            next.value.fill(0);
            cifers.push(toBase64(cifer));
            // 100 only once the archive is complete.
            job.progress = Math.min(99, Math.floor(((i + 1) * 100) / chunkCount));
            return encryptedMessage;
          },
        });
      }
      entries.push({
        name: 'metadata.json',
        async produce() {
          // Reading to the end makes the spool check its total length.
          if (!(await reader.next()).done) throw new AppError('DECRYPTION_FAILED', 'Spool holds more chunks than expected');
          const metadata = {
            secretId: job.secretId,
            chainId: job.chainId,
            originalName: job.originalName,
            originalSize: job.originalSize,
            originalHash: toHex(spool.sha256!),
            chunkCount,
            chunkSize: options.chunkBytes,
            cifers,
          };
          return new TextEncoder().encode(JSON.stringify(metadata));
        },
      });
      const size = await writeZipFile(resultPath(job.id), entries, new Date(job.createdAt));
      resultBytes.set(job.id, size);
      metrics?.bytes.inc({ direction: 'result' }, size);
      job.status = 'completed';
      job.progress = 100;
      job.completedAt = clock();
      await deps.jobs.put(job);
      outcome = 'completed';
      log.info({ jobId: job.id, chunkCount, bytes: job.originalSize }, 'encrypt job completed');
    } catch (err) {
      const interrupted = stopping.signal.aborted;
      if (!interrupted && !(err instanceof AppError)) log.error({ jobId: job.id, err }, 'encrypt job failed');
      await fail(job, interrupted ? 'Interrupted: the coordinator stopped' : 'Encryption failed').catch((putErr: unknown) =>
        log.error({ jobId: job.id, err: putErr }, 'could not record a failed job'),
      );
    } finally {
      metrics?.jobs.dec({ type: job.type, state });
      metrics?.duration.observe({ type: job.type, outcome }, (performance.now() - startedAt) / 1000);
      // Closes the spool's read handle when the archive stopped early.
      await chunks?.return?.(undefined).catch(() => undefined);
      await spool.dispose().catch((err: unknown) => log.error({ jobId: job.id, err }, 'could not remove a spool'));
    }
  }

  async function sweep(): Promise<number> {
    const now = clock();
    let expired = 0;
    for await (const stored of deps.jobs.list()) {
      if (live.has(stored.id)) continue;
      if (stored.status !== 'completed' && stored.status !== 'failed') continue;
      if (stored.completedAt === null || now < stored.completedAt + stored.ttl) continue;
      await removeResult(stored.id);
      await deps.jobs.put({ ...stored, status: 'expired', expiredAt: now });
      expired += 1;
    }
    if (expired > 0) log.info({ expired }, 'file jobs expired');
    return expired;
  }

  const service: FilesCapability = {
    maxFileBytes: options.maxFileBytes,
    assertCapacity,

    async createSpool() {
      const spool = await createSealedSpool(spoolDir, { chunkBytes: options.chunkBytes, maxBytes: options.maxFileBytes });
      openSpools.add(spool);
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
      });
      return spool;
    },

    async startEncrypt(upload: EncryptUpload): Promise<JobView> {
      const { spool } = upload;
      try {
        const caller = await deps.verifier.verify(upload.request, { parts: 4, at: upload.receivedAt });
        if (upload.secretId !== caller.subject) throw new AppError('BAD_REQUEST', 'secretId does not match the secretId in data');
        const secret = await deps.secrets.findSecret(parseSecretId(caller.subject));
        assertUsable(secret);
        assertPrincipalLimit(caller.principalId);
        // The disk budget was judged before the upload was read; its own spool is in it now.
        assertJobSlot();
        const sha256 = spool.sha256;
        if (!spool.writableFinished || sha256 === undefined) throw new AppError('BAD_REQUEST', 'Upload incomplete');
        const originalName = upload.originalName.slice(0, ORIGINAL_NAME_MAX_CHARS);
        const job: JobRecord = {
          id: newId(),
          type: 'encrypt',
          status: 'pending',
          progress: 0,
          secretId: secret.secretId,
          chainId: caller.chainId,
          createdAt: clock(),
          completedAt: null,
          expiredAt: null,
          error: null,
          resultFileName: originalName + RESULT_SUFFIX,
          ttl: ENCRYPT_RESULT_TTL_MS,
          originalSize: spool.bytes,
          signerPrincipalId: caller.principalId,
          secretOwnerPrincipalId: secret.ownerPrincipalId,
          originalName,
        };
        const publicKey = fromBase64(secret.publicKeyCid);
        await deps.jobs.put(job);
        // Registered before the job runs, so the slot is taken at once.
        const entry = { job, done: Promise.resolve() };
        live.set(job.id, entry);
        metrics?.jobs.inc({ type: job.type, state: 'pending' });
        entry.done = runEncrypt(job, spool, publicKey).finally(() => live.delete(job.id));
        return viewOf(job);
      } catch (err) {
        await spool.dispose();
        throw err;
      }
    },

    async status(jobId) {
      const job = await find(jobId);
      if (!job) throw new AppError('NOT_FOUND', 'Job not found');
      return viewOf(job);
    },

    async download(jobId, request: SignedRequest | undefined): Promise<JobDownload> {
      const job = await find(jobId);
      if (!job) throw new AppError('NOT_FOUND', 'Job not found');
      if (request) {
        // Encrypt results need no signature; the Web2 client signs anyway, and what is sent must hold.
        const caller = await deps.verifier.verify(request, { parts: 6 });
        if (caller.extra[0] !== job.id || caller.extra[1] !== 'download') throw new AppError('BAD_REQUEST', 'data must end with _<jobId>_download');
      }
      if (job.status === 'expired') throw new AppError('NOT_FOUND', 'Job expired');
      if (job.status !== 'completed') throw new AppError('BAD_REQUEST', `Job is ${job.status}, not completed`);
      const file = await openResultFile(resultPath(job.id));
      if (!file) throw new AppError('NOT_FOUND', 'Job result not found');
      return { fileName: job.resultFileName, contentType: 'application/zip', ...file };
    },

    async remove(jobId, request): Promise<void> {
      const caller = await deps.verifier.verify(request, { parts: 6 });
      if (caller.extra[0] !== jobId || caller.extra[1] !== 'delete') throw new AppError('BAD_REQUEST', 'data must end with _<jobId>_delete');
      const job = await find(jobId);
      if (!job || job.status === 'expired') throw new AppError('NOT_FOUND', job ? 'Job expired' : 'Job not found');
      if (caller.subject !== String(job.secretId)) throw new AppError('BAD_REQUEST', 'secretId does not match the job');
      if (job.signerPrincipalId !== caller.principalId) {
        const secret = await deps.secrets.findSecret(job.secretId);
        if (secret.ownerPrincipalId !== caller.principalId && secret.delegatePrincipalId !== caller.principalId) {
          throw new AppError('FORBIDDEN', "Only the job's signer or the secret's owner or delegate may delete this job");
        }
      }
      // A running job still writes its result: deleting it then would race the writer.
      if (live.has(job.id)) throw new AppError('BAD_REQUEST', 'Job is still running; delete it once it has finished');
      await removeResult(job.id);
      await deps.jobs.put({ ...job, status: 'expired', expiredAt: clock() });
      log.info({ jobId: job.id }, 'file job deleted');
    },

    async list(request, includeExpired): Promise<ListedJob[]> {
      const caller = await deps.verifier.verify(request, { parts: 4 });
      // One lookup per secret, not per job.
      const recipientOf = new Map<number, boolean>();
      const rows: ListedJob[] = [];
      for await (const stored of deps.jobs.list()) {
        const job = live.get(stored.id)?.job ?? stored;
        if (job.status === 'expired' && !includeExpired) continue;
        let isRecipient = recipientOf.get(job.secretId);
        if (isRecipient === undefined) {
          const secret = await deps.secrets.findSecret(job.secretId).catch((err: unknown) => {
            if (err instanceof AppError && err.code === 'NOT_FOUND') return undefined;
            throw err;
          });
          isRecipient = secret !== undefined && (secret.ownerPrincipalId === caller.principalId || secret.delegatePrincipalId === caller.principalId);
          recipientOf.set(job.secretId, isRecipient);
        }
        const isSigner = job.signerPrincipalId === caller.principalId;
        if (isSigner || isRecipient) rows.push({ ...viewOf(job), isSigner, isRecipient });
      }
      return rows.sort((a, b) => b.createdAt - a.createdAt || (a.id < b.id ? -1 : 1));
    },

    async start() {
      await ensureDir(spoolDir);
      await ensureDir(resultDir);
      // Their keys died with the process that wrote them: unreadable, only taking space.
      await sweepSpools(spoolDir, STALE_SPOOL_MS);
      for (const [name, size] of await fileSizes(resultDir)) if (name.endsWith('.zip')) resultBytes.set(name.slice(0, -'.zip'.length), size);
      for await (const job of deps.jobs.list()) {
        if (job.status !== 'pending' && job.status !== 'processing') continue;
        await removeFile(`${resultPath(job.id)}.partial`);
        await fail(job, 'Interrupted: the coordinator restarted');
        log.warn({ jobId: job.id }, 'interrupted file job marked failed');
      }
      sweeper = setInterval(() => {
        sweeping ??= sweep()
          .catch((err: unknown) => {
            log.error({ err }, 'file job sweep failed');
            return 0;
          })
          .finally(() => (sweeping = undefined));
      }, options.sweepIntervalMs);
      sweeper.unref();
    },

    stop() {
      stopped ??= (async () => {
        clearInterval(sweeper);
        stopping.abort();
        await Promise.all([...live.values()].map((e) => e.done));
        await sweeping;
      })();
      return stopped;
    },

    sweep,
  };
  return service;
}
