/**
 * The files capability's ports (docs/http.md, Files and jobs): file encryption as asynchronous jobs whose
 * metadata is durable and whose results live on the coordinator that ran them.
 */
import type { Readable } from 'node:stream';
import type { SignedRequest } from '../sessions/types.ts';
import type { SealedSpool } from './spool.ts';

/** Job kinds: `encrypt` (POST /encrypt-file) and `decrypt` (POST /decrypt-file, /decrypt-existing-file). */
export type JobType = 'encrypt' | 'decrypt';

/** pending → processing → completed | failed, and completed | failed → expired (absorbing). */
export type JobStatus = 'pending' | 'processing' | 'completed' | 'failed' | 'expired';

/** A job as GET /jobs/:jobId/status shows it (docs/http.md field order; times Unix ms or null). */
export interface JobView {
  id: string;
  type: JobType;
  status: JobStatus;
  /** 0–100, by chunk. */
  progress: number;
  secretId: number;
  chainId: number;
  /** Unix ms. */
  createdAt: number;
  /** Unix ms the job completed or failed; null before. */
  completedAt: number | null;
  /** Unix ms the job expired; null before. */
  expiredAt: number | null;
  /** Why the job failed; null otherwise. */
  error: string | null;
  /** `<originalName>.cifer` for encrypt jobs, the original name for decrypt jobs. */
  resultFileName: string;
  /** How long the result is kept after `completedAt`, ms (docs/http.md TTLs). */
  ttl: number;
  /** Plaintext bytes. */
  originalSize: number;
  signerPrincipalId: string;
  secretOwnerPrincipalId: string;
}

/** The durable record of a job (the `jobs` sublevel): the view plus what the coordinator needs. */
export interface JobRecord extends JobView {
  /** The uploaded file's name, decoded (decrypt: the name in the archive's metadata). */
  originalName: string;
  /**
   * Decrypt jobs: how the plaintext result is sealed on disk (never in clear): its chunk key sealed
   * under the node's storage key (base64), the sealed file's id (hex) and its plaintext chunk size.
   */
  result?: { key: string; id: string; chunkBytes: number };
  /** decrypt-existing-file: the encrypt job whose result was decrypted. */
  sourceJobId?: string;
}

/** Durable job metadata (implemented in src/store). */
export interface JobRepo {
  get(id: string): Promise<JobRecord | undefined>;
  /** Write durably (fsync). */
  put(job: JobRecord): Promise<void>;
  /** Every job, in id order. */
  list(): AsyncIterable<JobRecord>;
  /** Forget a job (an expired one past its retention). */
  delete(id: string): Promise<void>;
}

/**
 * Where an upload comes from, as the HTTP layer knows it when the file part begins
 * (docs/http.md, Files and jobs, "Unverified uploads").
 */
export interface UploadOrigin {
  /**
   * The sender's address as the per-address allowance keys it: `ctx.ip` (behind `http.trustProxy`,
   * the proxy's X-Forwarded-For entry), an IPv6 sender by its /64.
   */
  address: string;
  /** The request's `Content-Length`, when it sent one: an upper bound of the file's bytes. */
  declaredBytes?: number | undefined;
  /**
   * The signed `data` and `signature` when they came before the file: verified before a byte is
   * written, and the upload counts in the disk budget at once instead of the unverified budget.
   */
  signed?: { request: SignedRequest; receivedAt: number } | undefined;
}

/** What POST /encrypt-file hands the service once the form has been read. */
export interface EncryptUpload {
  /** The finished spool holding the file; the service owns it from here and disposes of it. */
  spool: SealedSpool;
  /** The file's name as the client sent it (decoded). */
  originalName: string;
  /** The form's `secretId` field (must equal the one in `data`). */
  secretId: string;
  /** `data` `-1_<secretId>_<sessionAddress>_<ts>` and its signature. */
  request: SignedRequest;
  /** Unix ms the request started: freshness is judged against it (the upload may take a while). */
  receivedAt: number;
}

/** What POST /decrypt-file hands the service once the form has been read. */
export interface DecryptUpload {
  /** The finished spool holding the `.cifer` archive; the service owns it from here. */
  spool: SealedSpool;
  /** `data` `-1_<secretId>_<sessionAddress>_<ts>` and its signature (owner or delegate). */
  request: SignedRequest;
  /** Unix ms the request started: freshness is judged against it. */
  receivedAt: number;
}

/** A finished result, ready to stream. */
export interface JobDownload {
  fileName: string;
  contentType: string;
  /** Bytes. */
  size: number;
  /**
   * The bytes: a stream whose chunks the receiver owns (an encrypt result: ciphertext), or — for
   * plaintext — `views` into the reader's buffers, each valid only until the next is asked for and
   * zeroed when the reader is done: send each one (wait until the socket has taken it) before asking
   * for the next, and `return()` the iterator when stopping early.
   */
  body: { stream: Readable } | { views: AsyncIterableIterator<Uint8Array> };
}

/** A row of POST /jobs: the job and how the caller relates to it (docs/http.md, Files and jobs). */
export interface ListedJob extends JobView {
  /** The caller signed the request that made the job. */
  isSigner: boolean;
  /** The caller owns or is delegate of the job's secret (now, in this coordinator's replica). */
  isRecipient: boolean;
}

/** The files service (HTTP port). */
export interface FilesService {
  /** Largest file accepted, bytes. */
  readonly maxFileBytes: number;
  /**
   * 503 OVERLOADED when the coordinator already runs its maximum of jobs, or when its disk budget
   * (spools and results) is used up or cannot take `incomingBytes` more (the request's length, when
   * known). Called before an upload's body is read.
   */
  assertCapacity(incomingBytes?: number): void;
  /** Largest upload of each kind, bytes: a `.cifer` archive may exceed the largest file by its envelope. */
  maxUploadBytes(kind: JobType): number;
  /**
   * A new sealed spool for an upload (the caller disposes of it unless it reaches a `start…`). An
   * upload whose signed fields came first is verified now (403 and the like before any byte is
   * written); any other holds the unverified budget, per address and in all, until its `start…`
   * verifies the sender: 413 `PAYLOAD_TOO_LARGE` when the file alone is over the per-address
   * allowance, 429 `RATE_LIMITED` when the address's other unverified uploads leave no room, 503
   * `OVERLOADED` when all of them leave none — now, or from the write that would pass the limit.
   */
  createSpool(kind: JobType, origin: UploadOrigin): Promise<SealedSpool>;
  /** Verify the caller and the secret, record the job and start it in the background. */
  startEncrypt(upload: EncryptUpload): Promise<JobView>;
  /**
   * Verify the caller (owner or delegate), check the archive (400 `Invalid ZIP format: …`, secretId or
   * chainId mismatch), gather the secret's shares once, record the job and start it in the background.
   */
  startDecrypt(upload: DecryptUpload): Promise<JobView>;
  /**
   * The same on the result of a completed encrypt job of this coordinator (404 unknown or expired,
   * 400 not completed or not an encrypt job).
   */
  startDecryptExisting(encryptJobId: string, request: SignedRequest): Promise<JobView>;
  /** Whether this coordinator ran (and so holds) job `jobId`, whatever its state. */
  holds(jobId: string): Promise<boolean>;
  /** 404 when unknown. */
  status(jobId: string): Promise<JobView>;
  /**
   * The result of a completed job: 404 unknown or expired, 400 not completed. Encrypt results need no
   * signature; one that is sent (`…_<jobId>_download`) must be valid. Decrypt results need one (401
   * without) from the secret's owner or delegate (403 otherwise), and stream the plaintext.
   */
  download(jobId: string, request: SignedRequest | undefined): Promise<JobDownload>;
  /**
   * Expire a finished job early and remove its result (`…_<jobId>_delete`): the job's signer, or the
   * owner or delegate of its secret. 404 unknown or already expired, 400 still running.
   */
  remove(jobId: string, request: SignedRequest): Promise<void>;
  /**
   * Jobs the caller signed and jobs on secrets it owns or is delegate of (`<chainId>_0_<signer>_<fresh>`,
   * the secretId part ignored), newest first; expired ones only with `includeExpired`.
   */
  list(request: SignedRequest, includeExpired: boolean): Promise<ListedJob[]>;
}

/** What the files service reports to the node's metrics (label values from fixed sets, never ids). */
export interface FileJobMetrics {
  /** Jobs now pending or processing, by type and state. */
  jobs: { inc(labels: { type: JobType; state: 'pending' | 'processing' }): void; dec(labels: { type: JobType; state: 'pending' | 'processing' }): void };
  /** Bytes read from uploads (`upload`) and written into results (`result`). */
  bytes: { inc(labels: { direction: 'upload' | 'result' }, value: number): void };
  /** Job duration in seconds, from accepted to its final state. */
  duration: { observe(labels: { type: JobType; outcome: 'completed' | 'failed' }, seconds: number): void };
  /** Uploads whose file part began, by whether their signed fields came before it or will come after. */
  uploads: { inc(labels: { order: UploadOrder }): void };
  /** Bytes now held by uploads whose sender is not verified yet (the unverified budget in use). */
  unverifiedBytes: { set(value: number): void };
  /** Uploads the unverified budget refused, by the allowance that refused them. */
  unverifiedRefusals: { inc(labels: { limit: UnverifiedLimit }): void };
}

/** Whether an upload's signed fields came before its file part (`fields_first`) or after (`file_first`). */
export type UploadOrder = 'fields_first' | 'file_first';

/**
 * The allowance of the unverified budget that refused an upload: `upload` (its file alone is over
 * the per-address allowance), `address` (its sender's other unverified uploads leave no room),
 * `total` (every sender's together leave none).
 */
export type UnverifiedLimit = 'upload' | 'address' | 'total';
