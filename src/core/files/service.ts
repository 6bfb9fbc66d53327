/**
 * File jobs (docs/http.md, Files and jobs), on the coordinator that runs them.
 *
 * Encrypt: POST /encrypt-file spools the upload sealed (./spool.ts) before anything is known of the
 * caller; {@link FilesService.startEncrypt} then verifies the signed data (freshness against the
 * request's start), records a `pending` job durably, answers, and runs the job in the background: the
 * spool is read chunk by chunk, each chunk sealed like a payload (its own ML-KEM encapsulation to the
 * secret's public key) and written straight into the `.cifer` ZIP (./archive.ts).
 *
 * Decrypt: the archive (an uploaded one through its sealed spool, read at random offsets, or an
 * encrypt job's result) is checked before the job is accepted (./cifer-archive.ts); the secret's
 * shares are gathered once per job and the key imported once (the seed zeroed at once); each chunk is
 * opened by its GCM tag and the whole by `originalHash`. The plaintext result is sealed on disk under
 * a random key kept sealed by the node's storage key in the job record.
 *
 * Job metadata is durable (the `jobs` sublevel); results are files under `<dir>/results`. A job found
 * `pending` or `processing` at start was interrupted by a stop or crash: it is marked `failed`. A
 * sweeper expires jobs past their TTL, removes their files, and forgets expired records after
 * {@link EXPIRED_JOB_RETENTION_MS}. Delete expires a finished job early; the list keeps the jobs the
 * caller signed or whose secret it owns or delegates. Other coordinators reach these jobs by
 * forwarding requests here (src/http/job-forward.ts).
 */
import { rename } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable, type Writable } from 'node:stream';
import { finished } from 'node:stream/promises';
import { AppError } from '../../errors/index.ts';
import type { Logger } from '../../log/index.ts';
import {
  AES_GCM_TAG_BYTES,
  SPOOL_CHUNK_OVERHEAD_BYTES,
  createChunkCrypto,
  createPayloadOpener,
  createSpoolCipher,
  fromBase64,
  fromHex,
  openChunkPayload,
  openSpoolCipher,
  sealChunkPayload,
  toBase64,
  toHex,
  utf8,
  zeroize,
  type ChunkCrypto,
  type PayloadOpener,
} from '../../crypto/index.ts';
import type { SignedDataVerifier, SignedRequest, VerifiedCaller } from '../sessions/types.ts';
import { assertDecryptRight, assertUsable, parseSecretId, type SecretsCapability } from '../secrets/service.ts';
import type { NodeKeyring } from '../secrets/ports.ts';
import type { UsageAdmission, UsageReservation } from '../usage/types.ts';
import type { ResolvedSecret } from '../secrets/types.ts';
import { chunkBuffer, createSealedSpool, readSealedFile, sweepSpools, type SealedSpool } from './spool.ts';
import { createBufferPool, type BufferPool } from './buffer-pool.ts';
import { ensureDir, fileSize, fileSizes, openFileRange, openResultFile, removeFile, writeZipFile, type FileRange, type ZipEntrySource } from './archive.ts';
import { openCiferArchive, type CiferArchive, type CiferArchiveLimits, type RangeSource } from './cifer-archive.ts';
import type { DecryptUpload, EncryptUpload, FilesService, JobDownload, JobRecord, JobRepo, JobType, JobView, ListedJob } from './types.ts';

/** How long an encrypt result is kept after it completes (docs/http.md, Files and jobs: 2 days). */
export const ENCRYPT_RESULT_TTL_MS = 2 * 24 * 60 * 60 * 1000;
/** How long a decrypt result is kept after it completes (docs/http.md, Files and jobs: 3 hours). */
export const DECRYPT_RESULT_TTL_MS = 3 * 60 * 60 * 1000;
/**
 * How long an expired job's record is kept after it expired: status and `includeExpired` lists
 * still show it for a week, then it is forgotten (its files went when it expired).
 */
export const EXPIRED_JOB_RETENTION_MS = 7 * 24 * 60 * 60 * 1000;
/** How long a failed job is kept (docs/http.md, Files and jobs: 5 minutes). */
export const FAILED_JOB_TTL_MS = 5 * 60 * 1000;
/** Spool files older than this at start are leftovers of a crash. */
const STALE_SPOOL_MS = 0;
/** What a busy coordinator, or a principal at its job limit, tells the client to wait before trying again. */
const BUSY_RETRY_AFTER_S = 5;
/** What a coordinator out of disk budget tells the client: space comes back as jobs finish or expire. */
const DISK_FULL_RETRY_AFTER_S = 60;
/** File extension of an encrypt result (docs/http.md, Files and jobs). */
const RESULT_SUFFIX = '.cifer';
/** Longest original name kept (characters); longer names are cut. */
const ORIGINAL_NAME_MAX_CHARS = 255;
/**
 * What a `.cifer` archive adds to its file, per chunk, at most: the chunk's GCM tag, its ZIP headers
 * (local, data descriptor, central; ZIP64 fields included) and its base64 cifer in metadata.json.
 */
const ARCHIVE_OVERHEAD_PER_CHUNK_BYTES = 2048;
/** What a `.cifer` archive adds to its file once: metadata.json's other fields, the directory's end. */
const ARCHIVE_OVERHEAD_FIXED_BYTES = 64 * 1024;
/** Entries an uploaded archive may hold (a 1 GiB file in 1 MiB chunks has 1,025). */
const ARCHIVE_MAX_ENTRIES = 20_000;
/** Bytes of an archive's metadata.json (≈1.5 KB per chunk of base64 cifer). */
const ARCHIVE_MAX_METADATA_BYTES = 32 * 1024 * 1024;
/** Largest chunk of an archive held in memory while it is decrypted (at least the configured chunk). */
const ARCHIVE_MAX_CHUNK_BYTES = 16 * 1024 * 1024;
/** Domain label of the associated data that binds a decrypt result's sealed key to its job. */
const RESULT_KEY_AAD_LABEL = 'quorumkeep/file-result-key/v1/';
/**
 * Chunks of an encrypt job whose seal is requested before the archive writer asks for them: the
 * engine seals the next while the current one goes to the ZIP (one at a time, the engine's thread
 * waited on the event loop between chunks; see src/core/files/spool.ts, SPOOL_READ_AHEAD_RECORDS).
 */
const ENCRYPT_SEALS_IN_FLIGHT = 2;
/**
 * Output buffers of an encrypt job: those being sealed, one being written (the ZIP writer gives
 * each back once written), and one more so the AES does not wait on a slow write.
 */
const ENCRYPT_OUTPUT_BUFFERS = ENCRYPT_SEALS_IN_FLIGHT + 2;
/**
 * Archive chunks of a decrypt job in flight (each a sealed and a plaintext buffer): read ahead,
 * being opened, being written into the result. With one or two the engine's thread waited on the
 * event loop between chunks (see src/core/files/spool.ts, SPOOL_READ_AHEAD_RECORDS).
 */
const DECRYPT_CHUNK_SLOTS = 4;
/** Of those, chunks whose open is queued on the engine at once (the rest are being read). */
const DECRYPT_OPENS_IN_FLIGHT = 2;
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

/** The documented fields of a job view, in wire order (docs/http.md, Files and jobs). */
const VIEW_FIELDS = [
  'id', 'type', 'status', 'progress', 'secretId', 'chainId', 'createdAt', 'completedAt', 'expiredAt', 'error',
  'resultFileName', 'ttl', 'originalSize', 'signerPrincipalId', 'secretOwnerPrincipalId',
] as const satisfies ReadonlyArray<keyof JobView>;

/** Write `data` and resolve once the stream has taken it (back-pressure, and the caller may zero it). */
function writeTo(stream: Writable, data: Uint8Array): Promise<void> {
  return new Promise((resolve, reject) => {
    stream.write(data, (err) => (err ? reject(err) : resolve()));
  });
}

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
  /** A decrypt result: the plaintext, sealed (./spool.ts format) under a key kept sealed in the job. */
  const sealedResultPath = (id: string): string => join(resultDir, `${id}.sealed`);
  const maxDecryptUploadBytes =
    options.maxFileBytes + Math.max(1, Math.ceil(options.maxFileBytes / options.chunkBytes)) * ARCHIVE_OVERHEAD_PER_CHUNK_BYTES + ARCHIVE_OVERHEAD_FIXED_BYTES;
  const archiveLimits: CiferArchiveLimits = {
    maxEntries: ARCHIVE_MAX_ENTRIES,
    maxMetadataBytes: ARCHIVE_MAX_METADATA_BYTES,
    maxChunkBytes: Math.max(options.chunkBytes, ARCHIVE_MAX_CHUNK_BYTES),
    maxOriginalBytes: options.maxFileBytes,
  };
  const resultKeyAad = (id: string): Uint8Array => utf8(RESULT_KEY_AAD_LABEL + id);
  /** Jobs of this process not yet finished, with their live progress. */
  const live = new Map<string, { job: JobRecord; done: Promise<void> }>();
  /** Bytes of each result file on disk, by job id (the disk budget; filled at start, kept up to date). */
  const resultBytes = new Map<string, number>();
  /** Spools not yet removed (an upload being read, or waiting for its job). */
  const openSpools = new Set<SealedSpool>();
  const metrics = deps.metrics;
  const engine = deps.chunkCrypto ?? createChunkCrypto();
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
    await removeFile(sealedResultPath(id));
    resultBytes.delete(id);
  }

  /** A new `pending` job of `type` for a verified caller (docs/http.md field values; names cut to size). */
  function newJob(type: JobType, caller: VerifiedCaller, secret: ResolvedSecret, name: string, originalSize: number): JobRecord {
    const originalName = name.slice(0, ORIGINAL_NAME_MAX_CHARS);
    return {
      id: newId(),
      type,
      status: 'pending',
      progress: 0,
      secretId: secret.secretId,
      chainId: caller.chainId,
      createdAt: clock(),
      completedAt: null,
      expiredAt: null,
      error: null,
      resultFileName: type === 'encrypt' ? originalName + RESULT_SUFFIX : originalName,
      ttl: type === 'encrypt' ? ENCRYPT_RESULT_TTL_MS : DECRYPT_RESULT_TTL_MS,
      originalSize,
      signerPrincipalId: caller.principalId,
      secretOwnerPrincipalId: secret.owner,
      originalName,
    };
  }

  /**
   * Record a job's final state, then show it: a delete (allowed once a job is final, see `remove`)
   * never races a write of the state it replaces.
   */
  async function settle(job: JobRecord, changes: Partial<JobRecord>): Promise<void> {
    await deps.jobs.put({ ...job, ...changes });
    Object.assign(job, changes);
  }

  async function fail(job: JobRecord, reason: string): Promise<void> {
    await settle(job, { status: 'failed', error: reason, completedAt: clock(), ttl: FAILED_JOB_TTL_MS });
  }

  /** Encrypt the spool into the job's ZIP. */
  async function runEncrypt(job: JobRecord, spool: SealedSpool, publicKey: Uint8Array, usage: UsageReservation | undefined): Promise<void> {
    let chunks: AsyncIterableIterator<Buffer> | undefined;
    let outputs: BufferPool | undefined;
    /** Each chunk's seal, by index: requested ahead of the archive writer (settled before the buffers go). */
    const seals: Array<Promise<{ cifer: Uint8Array; crc32: number; output: Buffer; length: number }>> = [];
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
      // Each plaintext chunk is a view into the spool reader's buffers, valid until
      // ENCRYPT_SEALS_IN_FLIGHT more are read: chunk `i + ENCRYPT_SEALS_IN_FLIGHT` is read only once
      // chunk `i`'s seal has settled and its plaintext is zeroed.
      const reader = spool.chunks(ENCRYPT_SEALS_IN_FLIGHT);
      chunks = reader;
      const pool = createBufferPool(ENCRYPT_OUTPUT_BUFFERS, () => chunkBuffer(engine, options.chunkBytes));
      outputs = pool;
      /** Reads chunk after chunk, in order, each read once the one before was handed to the engine. */
      let lastRead: Promise<unknown> = Promise.resolve();
      const startSeal = (i: number): void => {
        const started = lastRead.then(async () => {
          stopping.signal.throwIfAborted();
          const next = await reader.next();
          if (next.done) throw new AppError('DECRYPTION_FAILED', 'Spool ended early');
          const output = await pool.take();
          return { plaintext: next.value, output, sealing: sealChunkPayload(engine, publicKey, next.value, output) };
        });
        lastRead = started.catch(() => undefined);
        const sealed = started.then(async ({ plaintext, output, sealing }) => {
          try {
            return { ...(await sealing), output, length: plaintext.length };
          } catch (err) {
            pool.give(output);
            throw err;
          } finally {
            zeroize(plaintext);
          }
        });
        // Its failure is reported where the archive writer asks for it; a job that stops first never asks.
        sealed.catch(() => undefined);
        seals[i] = sealed;
      };
      for (let i = 0; i < Math.min(chunkCount, ENCRYPT_SEALS_IN_FLIGHT); i++) startSeal(i);
      const entries: ZipEntrySource[] = [];
      for (let i = 0; i < chunkCount; i++) {
        entries.push({
          name: `chunk_${i}.enc`,
          async produce() {
            stopping.signal.throwIfAborted();
            const sealed = await seals[i]!;
            // Its plaintext is zeroed: the reader may reuse its buffer for the chunk this one makes room for.
            if (i + ENCRYPT_SEALS_IN_FLIGHT < chunkCount) startSeal(i + ENCRYPT_SEALS_IN_FLIGHT);
            cifers.push(toBase64(sealed.cifer));
            // 100 only once the archive is complete.
            job.progress = Math.min(99, Math.floor(((i + 1) * 100) / chunkCount));
            return { data: sealed.output.subarray(0, sealed.length), crc32: sealed.crc32, written: () => pool.give(sealed.output) };
          },
        });
      }
      entries.push({
        name: 'metadata.json',
        async produce() {
          // Reading to the end makes the spool check its total length (after the last chunk's read).
          await lastRead;
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
      await settle(job, { status: 'completed', progress: 100, completedAt: clock() });
      outcome = 'completed';
      usage?.commit();
      log.info({ jobId: job.id, chunkCount, bytes: job.originalSize }, 'encrypt job completed');
    } catch (err) {
      const interrupted = stopping.signal.aborted;
      if (!interrupted && !(err instanceof AppError)) log.error({ jobId: job.id, err }, 'encrypt job failed');
      await fail(job, interrupted ? 'Interrupted: the coordinator stopped' : 'Encryption failed').catch((putErr: unknown) =>
        log.error({ jobId: job.id, err: putErr }, 'could not record a failed job'),
      );
    } finally {
      // A job that did not complete counts nothing (a second settle is a no-op).
      usage?.release();
      metrics?.jobs.dec({ type: job.type, state });
      metrics?.duration.observe({ type: job.type, outcome }, (performance.now() - startedAt) / 1000);
      // Seals still in flight settle before their buffers are zeroed and the reader closed.
      await Promise.allSettled(seals);
      // Closes the spool's read handle when the archive stopped early.
      await chunks?.return?.(undefined).catch(() => undefined);
      outputs?.dispose();
      await spool.dispose().catch((err: unknown) => log.error({ jobId: job.id, err }, 'could not remove a spool'));
    }
  }

  /** A decrypt's caller: verified, the secret usable, and the caller its owner or delegate. */
  async function decryptCaller(request: SignedRequest, at?: number): Promise<{ caller: VerifiedCaller; secret: ResolvedSecret }> {
    const caller = await deps.verifier.verify(request, at === undefined ? { parts: 4, web3: true } : { parts: 4, at, web3: true });
    const secret = await deps.secrets.resolveSecret(caller.chainId, parseSecretId(caller.subject));
    assertUsable(secret);
    assertDecryptRight(secret, caller.principalId);
    return { caller, secret };
  }

  /**
   * Check an opened archive against the request, gather the secret's shares once for the whole job,
   * record the job and start it. `release` frees what the archive was read from; on a refusal the
   * caller closes the archive and releases it.
   */
  async function acceptDecrypt(
    caller: VerifiedCaller,
    secret: ResolvedSecret,
    request: SignedRequest,
    archive: CiferArchive,
    release: () => Promise<void>,
    sourceJobId?: string,
  ): Promise<JobView> {
    const { metadata } = archive;
    if (metadata.secretId !== secret.secretId) throw new AppError('BAD_REQUEST', 'secretId does not match the file');
    if (metadata.chainId !== caller.chainId) throw new AppError('BAD_REQUEST', 'chainId does not match the file');
    assertPrincipalLimit(caller.principalId);
    // The plaintext result to come takes its size from the disk budget.
    assertCapacity(metadata.originalSize);
    // Before the shares: a refused request must not spend the signed string at the members.
    const usage = await deps.usage?.admit(caller.principalId, 'decryption', metadata.originalSize);
    let opener: PayloadOpener | undefined;
    try {
      const seed = await deps.secrets.recoverSeed(secret, request, { file: true });
      try {
        opener = createPayloadOpener(seed, fromBase64(secret.publicKeyCid));
      } finally {
        zeroize(seed);
      }
      if (!opener) {
        // A corrupt or lying member's share: not the client's fault (see the payloads service).
        log.error({ secretId: secret.secretId }, 'released shares do not rebuild the secret');
        throw new AppError('QUORUM_UNAVAILABLE', 'The released shares do not rebuild the secret; try again');
      }
    } catch (err) {
      usage?.release();
      throw err;
    }
    const job = newJob('decrypt', caller, secret, metadata.originalName, metadata.originalSize);
    if (sourceJobId !== undefined) job.sourceJobId = sourceJobId;
    try {
      await deps.jobs.put(job);
    } catch (err) {
      usage?.release();
      throw err;
    }
    const entry = { job, done: Promise.resolve() };
    live.set(job.id, entry);
    metrics?.jobs.inc({ type: job.type, state: 'pending' });
    entry.done = runDecrypt(job, archive, opener, metadata.originalHash, release, usage).finally(() => live.delete(job.id));
    return viewOf(job);
  }

  /** Decrypt the archive chunk by chunk into the job's sealed result; the key is dropped at the end. */
  async function runDecrypt(
    job: JobRecord,
    archive: CiferArchive,
    opener: PayloadOpener,
    originalHash: string,
    release: () => Promise<void>,
    usage: UsageReservation | undefined,
  ): Promise<void> {
    const startedAt = performance.now();
    let state: 'pending' | 'processing' = 'pending';
    let outcome: 'completed' | 'failed' = 'failed';
    const cipher = createSpoolCipher();
    let writer: SealedSpool | undefined;
    // Chunk `i` is read from the archive into `slots[i % slots.length].sealed` and opened into its
    // `output`: buffers for the whole job. Reads and opens in flight, by slot (settled before the
    // buffers are zeroed and the archive closed).
    let slots: Array<{ sealed: Buffer; output: Buffer }> = [];
    const reads: Array<Promise<number>> = [];
    const opens: Array<Promise<number | undefined>> = [];
    const hash = engine.startHash();
    try {
      const key = cipher.exportKey();
      try {
        job.result = { key: toBase64(deps.keyring.encryptAtRest(key, resultKeyAad(job.id))), id: toHex(cipher.spoolId), chunkBytes: options.chunkBytes };
      } finally {
        zeroize(key);
      }
      job.status = 'processing';
      await deps.jobs.put(job);
      metrics?.jobs.dec({ type: job.type, state });
      state = 'processing';
      metrics?.jobs.inc({ type: job.type, state });
      // Not hashed by the spool: the job hashes the plaintext itself, below.
      writer = await createSealedSpool(spoolDir, { chunkBytes: options.chunkBytes, maxBytes: job.originalSize, fsync: true, sha256: false }, { cipher, engine });
      const { metadata } = archive;
      const count = metadata.chunkCount;
      const result = writer;
      slots = Array.from({ length: Math.min(count, DECRYPT_CHUNK_SLOTS) }, () => ({
        sealed: chunkBuffer(engine, metadata.chunkSize + AES_GCM_TAG_BYTES),
        output: chunkBuffer(engine, metadata.chunkSize),
      }));
      let lastRead: Promise<unknown> = Promise.resolve();
      const startRead = (i: number): void => {
        // One after another, in order: an uploaded archive is read through its spool's one reader,
        // which reads ahead for a sequential reader and starts over for any other.
        const reading = lastRead.then(() => archive.chunkInto(i, slots[i % slots.length]!.sealed));
        lastRead = reading.catch(() => undefined);
        // Its failure is reported where it is awaited; a job that stops first never asks.
        reading.catch(() => undefined);
        reads[i % slots.length] = reading;
      };
      /** Chunk `i` opened: checked, copied into the result spool, zeroed; its slot reads the chunk `slots.length` on. */
      const writeChunk = async (i: number): Promise<void> => {
        const { output } = slots[i % slots.length]!;
        const opened = await opens[i % slots.length];
        if (opened === undefined) throw new AppError('DECRYPTION_FAILED', `Decryption failed: chunk_${i}.enc does not open with its cifer`);
        const expected = i < count - 1 ? metadata.chunkSize : metadata.originalSize - (count - 1) * metadata.chunkSize;
        if (opened !== expected) throw new AppError('DECRYPTION_FAILED', `Decryption failed: chunk_${i}.enc has ${opened} bytes, not ${expected}`);
        // Copied into the result spool's own chunk buffer before this resolves.
        await writeTo(result, output.subarray(0, opened));
        zeroize(output.subarray(0, opened));
        job.progress = Math.min(99, Math.floor(((i + 1) * 100) / count));
        if (i + slots.length < count) startRead(i + slots.length);
      };
      for (let i = 0; i < slots.length; i++) startRead(i);
      for (let i = 0; i < count; i++) {
        stopping.signal.throwIfAborted();
        const sealedBytes = await reads[i % slots.length]!;
        const slot = slots[i % slots.length]!;
        // Requested now, in chunk order: hashed (where it is opened, once its tag holds) in order.
        const opening = openChunkPayload(engine, opener, archive.cifer(i), slot.sealed.subarray(0, sealedBytes), slot.output, hash);
        opening.catch(() => undefined);
        opens[i % slots.length] = opening;
        // The engine opens chunk `i` while the one before is written.
        if (i >= DECRYPT_OPENS_IN_FLIGHT - 1) await writeChunk(i - DECRYPT_OPENS_IN_FLIGHT + 1);
      }
      for (let i = Math.max(0, count - DECRYPT_OPENS_IN_FLIGHT + 1); i < count; i++) {
        stopping.signal.throwIfAborted();
        await writeChunk(i);
      }
      writer.end();
      await finished(writer);
      if (toHex(await engine.digest(hash)) !== originalHash) throw new AppError('DECRYPTION_FAILED', 'Integrity check failed: the decrypted file does not match originalHash');
      // Complete and durable (fsync'd) before it is announced.
      await rename(writer.path, sealedResultPath(job.id));
      const size = job.originalSize + Math.max(1, Math.ceil(job.originalSize / options.chunkBytes)) * SPOOL_CHUNK_OVERHEAD_BYTES;
      resultBytes.set(job.id, size);
      metrics?.bytes.inc({ direction: 'result' }, job.originalSize);
      await settle(job, { status: 'completed', progress: 100, completedAt: clock() });
      outcome = 'completed';
      usage?.commit();
      log.info({ jobId: job.id, chunkCount: metadata.chunkCount, bytes: job.originalSize }, 'decrypt job completed');
    } catch (err) {
      const interrupted = stopping.signal.aborted;
      if (!interrupted && !(err instanceof AppError)) log.error({ jobId: job.id, err }, 'decrypt job failed');
      delete job.result;
      const reason = interrupted ? 'Interrupted: the coordinator stopped' : err instanceof AppError ? err.message : 'Decryption failed';
      await fail(job, reason).catch((putErr: unknown) => log.error({ jobId: job.id, err: putErr }, 'could not record a failed job'));
    } finally {
      // A job that did not complete counts nothing (a second settle is a no-op).
      usage?.release();
      // Reads and opens still in flight finish before their buffers are zeroed and the archive closes.
      await Promise.allSettled([...reads, ...opens]);
      for (const slot of slots) zeroize(slot.output);
      engine.dropHash(hash);
      metrics?.jobs.dec({ type: job.type, state });
      metrics?.duration.observe({ type: job.type, outcome }, (performance.now() - startedAt) / 1000);
      archive.close();
      // Removes the sealed file unless it was renamed into place; zeroes the key.
      await writer?.dispose().catch((err: unknown) => log.error({ jobId: job.id, err }, 'could not remove a partial result'));
      cipher.dispose();
      await release().catch((err: unknown) => log.error({ jobId: job.id, err }, 'could not remove a spool'));
    }
  }

  /** The plaintext of a completed decrypt job, streamed from its sealed result. */
  async function openDecryptResult(job: JobRecord): Promise<{ size: number; stream: Readable }> {
    if (!job.result || (await fileSize(sealedResultPath(job.id))) === undefined) throw new AppError('NOT_FOUND', 'Job result not found');
    const key = deps.keyring.decryptAtRest(fromBase64(job.result.key), resultKeyAad(job.id));
    if (!key) {
      log.error({ jobId: job.id }, 'decrypt result key does not open');
      throw new AppError('NOT_FOUND', 'Job result not found');
    }
    const cipher = openSpoolCipher(key, fromHex(job.result.id));
    const { chunkBytes } = job.result;
    async function* plaintext(): AsyncGenerator<Buffer> {
      try {
        // Each chunk a copy the response owns (it may still be sending it when the next is read).
        for await (const chunk of readSealedFile(sealedResultPath(job.id), cipher, chunkBytes, job.originalSize, { engine })) {
          yield chunk;
        }
      } finally {
        cipher.dispose();
      }
    }
    return { size: job.originalSize, stream: Readable.from(plaintext(), { objectMode: false }) };
  }

  async function sweep(): Promise<number> {
    const now = clock();
    let expired = 0;
    let forgotten = 0;
    for await (const stored of deps.jobs.list()) {
      if (live.has(stored.id)) continue;
      if (stored.status === 'expired' && stored.expiredAt !== null && now >= stored.expiredAt + EXPIRED_JOB_RETENTION_MS) {
        await deps.jobs.delete(stored.id);
        forgotten += 1;
        continue;
      }
      if (stored.status !== 'completed' && stored.status !== 'failed') continue;
      if (stored.completedAt === null || now < stored.completedAt + stored.ttl) continue;
      await removeResult(stored.id);
      await deps.jobs.put({ ...stored, status: 'expired', expiredAt: now });
      expired += 1;
    }
    if (expired > 0 || forgotten > 0) log.info({ expired, forgotten }, 'file jobs expired');
    return expired;
  }

  const service: FilesCapability = {
    maxFileBytes: options.maxFileBytes,
    assertCapacity,

    maxUploadBytes(kind) {
      return kind === 'decrypt' ? maxDecryptUploadBytes : options.maxFileBytes;
    },

    async createSpool(kind) {
      // Only an encrypt job reads the upload's SHA-256 (its originalHash).
      const spool = await createSealedSpool(spoolDir, { chunkBytes: options.chunkBytes, maxBytes: service.maxUploadBytes(kind), sha256: kind === 'encrypt' }, { engine });
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
      let usage: UsageReservation | undefined;
      try {
        const caller = await deps.verifier.verify(upload.request, { parts: 4, at: upload.receivedAt, web3: true });
        if (upload.secretId !== caller.subject) throw new AppError('BAD_REQUEST', 'secretId does not match the secretId in data');
        const secret = await deps.secrets.resolveSecret(caller.chainId, parseSecretId(caller.subject));
        assertUsable(secret);
        assertPrincipalLimit(caller.principalId);
        // The disk budget was judged before the upload was read; its own spool is in it now.
        assertJobSlot();
        const sha256 = spool.sha256;
        if (!spool.writableFinished || sha256 === undefined) throw new AppError('BAD_REQUEST', 'Upload incomplete');
        const job = newJob('encrypt', caller, secret, upload.originalName, spool.bytes);
        const publicKey = fromBase64(secret.publicKeyCid);
        usage = await deps.usage?.admit(caller.principalId, 'encryption', spool.bytes);
        await deps.jobs.put(job);
        // Registered before the job runs, so the slot is taken at once.
        const entry = { job, done: Promise.resolve() };
        live.set(job.id, entry);
        metrics?.jobs.inc({ type: job.type, state: 'pending' });
        const admitted = usage;
        usage = undefined;
        entry.done = runEncrypt(job, spool, publicKey, admitted).finally(() => live.delete(job.id));
        return viewOf(job);
      } catch (err) {
        usage?.release();
        await spool.dispose();
        throw err;
      }
    },

    async startDecrypt(upload: DecryptUpload): Promise<JobView> {
      const { spool } = upload;
      let archive: CiferArchive | undefined;
      try {
        const { caller, secret } = await decryptCaller(upload.request, upload.receivedAt);
        assertJobSlot();
        if (!spool.writableFinished) throw new AppError('BAD_REQUEST', 'Upload incomplete');
        const source: RangeSource = { bytes: spool.bytes, readRange: (start, end) => spool.readRange(start, end), readInto: (start, target) => spool.readRangeInto(start, target) };
        archive = await openCiferArchive(source, archiveLimits);
        return await acceptDecrypt(caller, secret, upload.request, archive, () => spool.dispose());
      } catch (err) {
        archive?.close();
        await spool.dispose();
        throw err;
      }
    },

    async startDecryptExisting(encryptJobId, request): Promise<JobView> {
      const { caller, secret } = await decryptCaller(request);
      const source = await find(encryptJobId);
      if (!source) throw new AppError('NOT_FOUND', 'Encrypt job not found');
      if (source.status === 'expired') throw new AppError('NOT_FOUND', 'Encrypt job expired');
      if (source.type !== 'encrypt') throw new AppError('BAD_REQUEST', 'Job is not an encrypt job');
      if (source.status !== 'completed') throw new AppError('BAD_REQUEST', `Encrypt job is ${source.status}, not completed`);
      assertJobSlot();
      // Opened now: a sweep or delete that removes the file meanwhile cannot cut the job short.
      let file: FileRange;
      try {
        file = await openFileRange(resultPath(source.id));
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new AppError('NOT_FOUND', 'Encrypt job result not found');
        throw err;
      }
      let archive: CiferArchive | undefined;
      try {
        archive = await openCiferArchive(file, archiveLimits);
        return await acceptDecrypt(caller, secret, request, archive, () => file.close(), source.id);
      } catch (err) {
        archive?.close();
        await file.close();
        throw err;
      }
    },

    async holds(jobId) {
      return (await find(jobId)) !== undefined;
    },

    async status(jobId) {
      const job = await find(jobId);
      if (!job) throw new AppError('NOT_FOUND', 'Job not found');
      return viewOf(job);
    },

    async download(jobId, request: SignedRequest | undefined): Promise<JobDownload> {
      const job = await find(jobId);
      if (!job) throw new AppError('NOT_FOUND', 'Job not found');
      // Whether a job expired is public (its status says so): no signature needed to learn it.
      if (job.status === 'expired') throw new AppError('NOT_FOUND', 'Job expired');
      if (job.type === 'decrypt' && !request) throw new AppError('UNAUTHORIZED', 'A decrypt result needs data (…_<jobId>_download) and signature');
      if (request) {
        // Encrypt results need no signature; the Web2 client signs anyway, and what is sent must hold.
        const caller = await deps.verifier.verify(request, { parts: 6, web3: true });
        if (caller.extra[0] !== job.id || caller.extra[1] !== 'download') throw new AppError('BAD_REQUEST', 'data must end with _<jobId>_download');
        if (job.type === 'decrypt') {
          if (caller.subject !== String(job.secretId) || caller.chainId !== job.chainId) throw new AppError('BAD_REQUEST', 'secretId does not match the job');
          // The plaintext goes to whoever may decrypt with the secret now.
          assertDecryptRight(await deps.secrets.resolveSecret(job.chainId, job.secretId), caller.principalId);
        }
      }
      if (job.status !== 'completed') throw new AppError('BAD_REQUEST', `Job is ${job.status}, not completed`);
      if (job.type === 'decrypt') return { fileName: job.resultFileName, contentType: 'application/octet-stream', ...(await openDecryptResult(job)) };
      const file = await openResultFile(resultPath(job.id));
      if (!file) throw new AppError('NOT_FOUND', 'Job result not found');
      return { fileName: job.resultFileName, contentType: 'application/zip', ...file };
    },

    async remove(jobId, request): Promise<void> {
      const caller = await deps.verifier.verify(request, { parts: 6, web3: true });
      if (caller.extra[0] !== jobId || caller.extra[1] !== 'delete') throw new AppError('BAD_REQUEST', 'data must end with _<jobId>_delete');
      const job = await find(jobId);
      if (!job || job.status === 'expired') throw new AppError('NOT_FOUND', job ? 'Job expired' : 'Job not found');
      if (caller.subject !== String(job.secretId) || caller.chainId !== job.chainId) throw new AppError('BAD_REQUEST', 'secretId does not match the job');
      if (job.signerPrincipalId !== caller.principalId) {
        const secret = await deps.secrets.resolveSecret(job.chainId, job.secretId);
        if (secret.owner !== caller.principalId && secret.delegate !== caller.principalId) {
          throw new AppError('FORBIDDEN', "Only the job's signer or the secret's owner or delegate may delete this job");
        }
      }
      // A running job still writes its result: deleting it then would race the writer.
      if (job.status === 'pending' || job.status === 'processing') throw new AppError('BAD_REQUEST', 'Job is still running; delete it once it has finished');
      await removeResult(job.id);
      await deps.jobs.put({ ...job, status: 'expired', expiredAt: clock() });
      log.info({ jobId: job.id }, 'file job deleted');
    },

    async list(request, includeExpired): Promise<ListedJob[]> {
      // Web3 principals too (docs/http.md): the list needs only a valid fresh signature.
      const caller = await deps.verifier.verify(request, { parts: 4, web3: true });
      // One lookup per secret, not per job; only secrets of the caller's own chain can be its.
      const recipientOf = new Map<number, boolean>();
      const rows: ListedJob[] = [];
      for await (const stored of deps.jobs.list()) {
        const job = live.get(stored.id)?.job ?? stored;
        if (job.status === 'expired' && !includeExpired) continue;
        let isRecipient = job.chainId === caller.chainId ? recipientOf.get(job.secretId) : false;
        if (isRecipient === undefined) {
          const secret = await deps.secrets.resolveSecret(job.chainId, job.secretId).catch((err: unknown) => {
            // Gone, or a Web3 secret not usable (syncing): nobody's to decrypt, so no recipient.
            if (err instanceof AppError && (err.code === 'NOT_FOUND' || err.code === 'FORBIDDEN')) return undefined;
            throw err;
          });
          isRecipient = secret !== undefined && (secret.owner === caller.principalId || secret.delegate === caller.principalId);
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
      for (const [name, size] of await fileSizes(resultDir)) {
        const result = /^(.+)\.(zip|sealed)$/.exec(name);
        if (result) resultBytes.set(result[1]!, size);
      }
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
        // Only the one it made: an engine passed in is its owner's to stop.
        if (!deps.chunkCrypto) await engine.close();
      })();
      return stopped;
    },

    sweep,
  };
  return service;
}
