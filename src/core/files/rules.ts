/**
 * The files capability's plain rules (docs/http.md, Files and jobs): job ids and where a job's files
 * live, a new job's fields and the view callers see, the limits a coordinator enforces, when a
 * finished job expires, what a failed job reports, and the checks a request about a job passes. No
 * I/O: the job flows in this folder call these.
 */
import { join } from 'node:path';
import { utf8 } from '../../crypto/index.ts';
import { AppError } from '../../errors/index.ts';
import type { ResolvedSecret } from '../secrets/types.ts';
import type { VerifiedCaller } from '../sessions/types.ts';
import type { CiferArchiveLimits, CiferMetadata } from './cifer-archive.ts';
import type { JobRecord, JobType, JobView, ListedJob, UnverifiedLimit } from './types.ts';

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
/** What a busy coordinator, or a principal at its job limit, tells the client to wait before trying again. */
const BUSY_RETRY_AFTER_S = 5;
/** What a coordinator out of disk budget tells the client: space comes back as jobs finish or expire. */
const DISK_FULL_RETRY_AFTER_S = 60;
/**
 * The default unverified budget in all, in per-address allowances: a sender's upload still fits
 * while three other addresses each hold all of theirs (docs/http.md, Files and jobs, "Unverified
 * uploads").
 */
const UNVERIFIED_DEFAULT_ADDRESSES = 4;
/** File extension of an encrypt result (docs/http.md, Files and jobs). */
const RESULT_SUFFIX = '.cifer';
/** Longest original name kept (characters); longer names are cut. */
export const ORIGINAL_NAME_MAX_CHARS = 255;
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
/** Job ids are UUIDs; anything else is unknown without a lookup. */
const JOB_ID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The documented fields of a job view, in wire order (docs/http.md, Files and jobs). */
const VIEW_FIELDS = [
  'id', 'type', 'status', 'progress', 'secretId', 'chainId', 'createdAt', 'completedAt', 'expiredAt', 'error',
  'resultFileName', 'ttl', 'originalSize', 'signerPrincipalId', 'secretOwnerPrincipalId',
] as const satisfies ReadonlyArray<keyof JobView>;

/** Whether `jobId` has the shape of a job id (a UUID): anything else is unknown without a lookup. */
export function isJobId(jobId: string): boolean {
  return JOB_ID_RE.test(jobId);
}

/** Where a files folder keeps its spools and its jobs' results. */
export interface JobPaths {
  /** Spools of uploads and of decrypt results being written. */
  spoolDir: string;
  resultDir: string;
  /** An encrypt result: the `.cifer` ZIP. */
  resultPath(id: string): string;
  /** A decrypt result: the plaintext, sealed (./spool.ts format) under a key kept sealed in the job. */
  sealedResultPath(id: string): string;
}

/** The paths under the files folder `dir` (`files.dir` of the config). */
export function jobPaths(dir: string): JobPaths {
  const resultDir = join(dir, 'results');
  return {
    spoolDir: join(dir, 'spool'),
    resultDir,
    resultPath: (id) => join(resultDir, `${id}.zip`),
    sealedResultPath: (id) => join(resultDir, `${id}.sealed`),
  };
}

/** The job id of a result file's name (`<id>.zip`, `<id>.sealed`), or undefined for any other file. */
export function resultFileJobId(name: string): string | undefined {
  return /^(.+)\.(zip|sealed)$/.exec(name)?.[1];
}

/** Chunks of a file of `bytes` in chunks of `chunkBytes` (an empty file still has one). */
export function chunkCountOf(bytes: number, chunkBytes: number): number {
  return Math.max(1, Math.ceil(bytes / chunkBytes));
}

/** Largest `.cifer` upload: the largest file plus the archive's envelope around it. */
export function maxDecryptUploadBytes(maxFileBytes: number, chunkBytes: number): number {
  return maxFileBytes + chunkCountOf(maxFileBytes, chunkBytes) * ARCHIVE_OVERHEAD_PER_CHUNK_BYTES + ARCHIVE_OVERHEAD_FIXED_BYTES;
}

/** What an archive to decrypt may hold on a coordinator with these `files.*` options. */
export function archiveLimitsOf(maxFileBytes: number, chunkBytes: number): CiferArchiveLimits {
  return {
    maxEntries: ARCHIVE_MAX_ENTRIES,
    maxMetadataBytes: ARCHIVE_MAX_METADATA_BYTES,
    maxChunkBytes: Math.max(chunkBytes, ARCHIVE_MAX_CHUNK_BYTES),
    maxOriginalBytes: maxFileBytes,
  };
}

/** The associated data that binds a decrypt result's sealed key to job `id`. */
export function resultKeyAad(id: string): Uint8Array {
  return utf8(RESULT_KEY_AAD_LABEL + id);
}

/** Progress (0–99) once `done` of `count` chunks are through: 100 only once the result is complete. */
export function progressOf(done: number, count: number): number {
  return Math.min(99, Math.floor((done * 100) / count));
}

/** Plaintext bytes of chunk `index` of an archive: `chunkSize`, the last one what is left. */
export function expectedChunkBytes(index: number, metadata: Pick<CiferMetadata, 'chunkCount' | 'chunkSize' | 'originalSize'>): number {
  const { chunkCount, chunkSize, originalSize } = metadata;
  return index < chunkCount - 1 ? chunkSize : originalSize - (chunkCount - 1) * chunkSize;
}

/**
 * The metadata.json of an encrypt job's `.cifer` archive (docs/http.md, Files and jobs), in the order
 * ./cifer-archive.ts reads back: the job's secret and original file, and the chunks' cifers in order.
 */
export function encryptMetadata(
  job: Pick<JobRecord, 'secretId' | 'chainId' | 'originalName' | 'originalSize'>,
  originalHash: string,
  chunkCount: number,
  chunkSize: number,
  cifers: string[],
): CiferMetadata {
  return { secretId: job.secretId, chainId: job.chainId, originalName: job.originalName, originalSize: job.originalSize, originalHash, chunkCount, chunkSize, cifers };
}

/** What a job reports shown to a caller: the documented fields, in wire order. */
export function viewOf(job: JobRecord): JobView {
  const out: Record<string, unknown> = {};
  for (const k of VIEW_FIELDS) out[k] = job[k];
  return out as unknown as JobView;
}

/** A new `pending` job of `type` for a verified caller (docs/http.md field values; names cut to size). */
export function newJob(
  type: JobType,
  caller: Pick<VerifiedCaller, 'chainId' | 'principalId'>,
  secret: Pick<ResolvedSecret, 'secretId' | 'owner'>,
  name: string,
  originalSize: number,
  made: { id: string; now: number },
): JobRecord {
  const originalName = name.slice(0, ORIGINAL_NAME_MAX_CHARS);
  return {
    id: made.id,
    type,
    status: 'pending',
    progress: 0,
    secretId: secret.secretId,
    chainId: caller.chainId,
    createdAt: made.now,
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

/** 503 OVERLOADED when `running` jobs already fill the coordinator's `max`. */
export function assertJobSlot(running: number, max: number): void {
  if (running >= max) {
    throw new AppError('OVERLOADED', `This coordinator already runs ${max} file jobs; try again shortly`, { retryAfterSeconds: BUSY_RETRY_AFTER_S });
  }
}

/** 503 OVERLOADED when `used` bytes fill the disk budget `max`, or `incoming` more would overflow it. */
export function assertDiskRoom(used: number, incoming: number, max: number): void {
  if (used >= max || used + incoming > max) {
    throw new AppError('OVERLOADED', 'This coordinator has no disk space left for file jobs; try again later', { retryAfterSeconds: DISK_FULL_RETRY_AFTER_S });
  }
}

/** The allowances of the unverified budget, in bytes, after their defaults (`0` in the config). */
export interface UnverifiedAllowances {
  /** What one address's unverified uploads may hold at once. */
  perAddressBytes: number;
  /** What every address's together may hold at once. */
  totalBytes: number;
}

/**
 * The unverified budget of a coordinator with these `files.*` options: `0` per address is the
 * largest upload (a `.cifer` of the largest file, so one client that sends its file first is never
 * refused for its size), `0` in all is {@link UNVERIFIED_DEFAULT_ADDRESSES} per-address allowances.
 */
export function unverifiedAllowancesOf(options: {
  maxFileBytes: number;
  chunkBytes: number;
  maxUnverifiedBytesPerAddress: number;
  maxUnverifiedBytes: number;
}): UnverifiedAllowances {
  const perAddressBytes = options.maxUnverifiedBytesPerAddress || maxDecryptUploadBytes(options.maxFileBytes, options.chunkBytes);
  return { perAddressBytes, totalBytes: options.maxUnverifiedBytes || UNVERIFIED_DEFAULT_ADDRESSES * perAddressBytes };
}

/**
 * The answer to an upload the unverified budget cannot hold: 413 `PAYLOAD_TOO_LARGE` when its file
 * alone is over the per-address allowance (only sending the signed fields first helps), 429
 * `RATE_LIMITED` when its address's other uploads fill that allowance, 503 `OVERLOADED` when every
 * address's fill the budget in all; the last two free up as those uploads end.
 */
export function unverifiedRefusal(limit: UnverifiedLimit, limitBytes: number): AppError {
  switch (limit) {
    case 'upload':
      return new AppError('PAYLOAD_TOO_LARGE', `A file sent before data and signature may be at most ${limitBytes} bytes; send them before the file`, { limitBytes });
    case 'address':
      return new AppError('RATE_LIMITED', 'Too many unverified uploads from this address; try again shortly', { retryAfterSeconds: BUSY_RETRY_AFTER_S });
    case 'total':
      return new AppError('OVERLOADED', 'This coordinator takes no more unverified uploads now; try again shortly', { retryAfterSeconds: BUSY_RETRY_AFTER_S });
  }
}

/** 429 RATE_LIMITED when a principal already runs `running` jobs of its `max`. */
export function assertPrincipalRoom(running: number, max: number): void {
  if (running >= max) {
    throw new AppError('RATE_LIMITED', `You already have ${max} file jobs running; try again once one has finished`, { retryAfterSeconds: BUSY_RETRY_AFTER_S });
  }
}

/**
 * What the sweep does with a job that is not running, at `now`: `forget` an expired record past its
 * retention, `expire` a completed or failed job past its TTL, `keep` anything else.
 */
export function sweepVerdict(job: Pick<JobRecord, 'status' | 'completedAt' | 'expiredAt' | 'ttl'>, now: number): 'forget' | 'expire' | 'keep' {
  if (job.status === 'expired') return job.expiredAt !== null && now >= job.expiredAt + EXPIRED_JOB_RETENTION_MS ? 'forget' : 'keep';
  if (job.status !== 'completed' && job.status !== 'failed') return 'keep';
  if (job.completedAt === null || now < job.completedAt + job.ttl) return 'keep';
  return 'expire';
}

/**
 * The `error` a failed job shows: an interruption says so; a decrypt job says which check refused
 * the file (an {@link AppError}'s message); anything else is a generic failure (its cause is logged).
 */
export function failureReason(type: JobType, err: unknown, interrupted: boolean): string {
  if (interrupted) return 'Interrupted: the coordinator stopped';
  if (type === 'encrypt') return 'Encryption failed';
  return err instanceof AppError ? err.message : 'Decryption failed';
}

/** 400 unless the archive is the request's: the same secretId and chainId. */
export function assertArchiveMatches(metadata: Pick<CiferMetadata, 'secretId' | 'chainId'>, secret: Pick<ResolvedSecret, 'secretId'>, caller: Pick<VerifiedCaller, 'chainId'>): void {
  if (metadata.secretId !== secret.secretId) throw new AppError('BAD_REQUEST', 'secretId does not match the file');
  if (metadata.chainId !== caller.chainId) throw new AppError('BAD_REQUEST', 'chainId does not match the file');
}

/** The encrypt job decrypt-existing-file reads: 404 unknown or expired, 400 not an encrypt job or not completed. */
export function assertDecryptSource(source: JobRecord | undefined): asserts source is JobRecord {
  if (!source) throw new AppError('NOT_FOUND', 'Encrypt job not found');
  if (source.status === 'expired') throw new AppError('NOT_FOUND', 'Encrypt job expired');
  if (source.type !== 'encrypt') throw new AppError('BAD_REQUEST', 'Job is not an encrypt job');
  if (source.status !== 'completed') throw new AppError('BAD_REQUEST', `Encrypt job is ${source.status}, not completed`);
}

/** 400 unless a signed request about a job ends with `_<jobId>_<action>` (its last two parts). */
export function assertJobAction(caller: Pick<VerifiedCaller, 'extra'>, jobId: string, action: 'download' | 'delete'): void {
  if (caller.extra[0] !== jobId || caller.extra[1] !== action) throw new AppError('BAD_REQUEST', `data must end with _<jobId>_${action}`);
}

/** 400 unless a signed request about a job names the job's secret and chain. */
export function assertJobSecret(caller: Pick<VerifiedCaller, 'subject' | 'chainId'>, job: Pick<JobRecord, 'secretId' | 'chainId'>): void {
  if (caller.subject !== String(job.secretId) || caller.chainId !== job.chainId) throw new AppError('BAD_REQUEST', 'secretId does not match the job');
}

/** Whether `principalId` owns the secret or is its delegate (a job's recipient). */
export function isRecipientOf(secret: Pick<ResolvedSecret, 'owner' | 'delegate'>, principalId: string): boolean {
  return secret.owner === principalId || secret.delegate === principalId;
}

/** The order of POST /jobs: newest first, then by id. */
export function compareListed(a: ListedJob, b: ListedJob): number {
  return b.createdAt - a.createdAt || (a.id < b.id ? -1 : 1);
}
