/**
 * The encrypt flow (docs/http.md, Files and jobs: POST /encrypt-file). The upload was spooled sealed
 * (./spool.ts), usually before anything was known of the caller; {@link EncryptJobs.start} verifies
 * the signed data (freshness against the request's start), moves the spool from the unverified
 * budget to the disk budget (./registry.ts, claimSpool), records a `pending` job durably, answers,
 * and runs the job in the background: the spool is read chunk by chunk, each chunk sealed like a
 * payload (its own ML-KEM encapsulation to the secret's public key) and written straight into the
 * `.cifer` ZIP (./archive.ts).
 */
import { AppError } from '../../errors/index.ts';
import type { Logger } from '../../log/index.ts';
import { fromBase64, sealChunkPayload, toBase64, toHex, zeroize, type ChunkCrypto } from '../../crypto/index.ts';
import { assertUsable, parseSecretId, type SecretsCapability } from '../secrets/service.ts';
import type { SignedDataVerifier } from '../sessions/types.ts';
import type { UsageAdmission, UsageReservation } from '../usage/types.ts';
import { writeZipFile, type ZipEntrySource } from './archive.ts';
import { createBufferPool, type BufferPool } from './buffer-pool.ts';
import type { JobRegistry, JobRun } from './registry.ts';
import { chunkCountOf, encryptMetadata, progressOf, viewOf } from './rules.ts';
import type { SealedSpool } from './spool.ts';
import type { EncryptUpload, JobRecord, JobView } from './types.ts';

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

/** Options of {@link createEncryptJobs}. */
export interface EncryptJobsOptions {
  /** Plaintext bytes per chunk (`files.chunkBytes`). */
  chunkBytes: number;
}

/** Dependencies of {@link createEncryptJobs}. */
export interface EncryptJobsDeps {
  /** Verifies each request's signed data. */
  verifier: SignedDataVerifier;
  secrets: Pick<SecretsCapability, 'resolveSecret'>;
  /** Plan limits: the upload's bytes are admitted before the job starts. None when usage limits are off. */
  usage?: UsageAdmission | undefined;
  /** This coordinator's jobs (./registry.ts). */
  registry: JobRegistry;
  /** The chunk crypto of every job. */
  engine: ChunkCrypto;
  /** The files module's logger. */
  logger: Logger;
  /** Aborted when the service stops: a running job stops at its next chunk. */
  stopping: AbortSignal;
}

/** The encrypt flow. */
export interface EncryptJobs {
  /** Verify the caller and the secret, record the job and start it; the spool is the job's (disposed of on a refusal). */
  start(upload: EncryptUpload): Promise<JobView>;
}

/** Create the encrypt flow of a files service. */
export function createEncryptJobs(options: EncryptJobsOptions, deps: EncryptJobsDeps): EncryptJobs {
  const { registry, engine, stopping, logger: log } = deps;

  /** Encrypt the spool into the job's ZIP. */
  async function run(job: JobRecord, spool: SealedSpool, publicKey: Uint8Array, usage: UsageReservation | undefined, lifecycle: JobRun): Promise<void> {
    let chunks: AsyncIterableIterator<Buffer> | undefined;
    let outputs: BufferPool | undefined;
    /** Each chunk's seal, by index: requested ahead of the archive writer (settled before the buffers go). */
    const seals: Array<Promise<{ cifer: Uint8Array; crc32: number; output: Buffer; length: number }>> = [];
    let outcome: 'completed' | 'failed' = 'failed';
    try {
      await lifecycle.processing();
      const chunkCount = chunkCountOf(job.originalSize, options.chunkBytes);
      const cifers: string[] = [];
      // Each plaintext chunk is a view into the spool reader's buffers, valid until
      // ENCRYPT_SEALS_IN_FLIGHT more are read: chunk `i + ENCRYPT_SEALS_IN_FLIGHT` is read only once
      // chunk `i`'s seal has settled and its plaintext is zeroed.
      const reader = spool.chunks(ENCRYPT_SEALS_IN_FLIGHT);
      chunks = reader;
      const pool = createBufferPool(ENCRYPT_OUTPUT_BUFFERS, () => engine.borrow(options.chunkBytes), { release: (free) => engine.giveBack(...free) });
      outputs = pool;
      /** Reads chunk after chunk, in order, each read once the one before was handed to the engine. */
      let lastRead: Promise<unknown> = Promise.resolve();
      const startSeal = (i: number): void => {
        const started = lastRead.then(async () => {
          stopping.throwIfAborted();
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
            stopping.throwIfAborted();
            const sealed = await seals[i]!;
            // Its plaintext is zeroed: the reader may reuse its buffer for the chunk this one makes room for.
            if (i + ENCRYPT_SEALS_IN_FLIGHT < chunkCount) startSeal(i + ENCRYPT_SEALS_IN_FLIGHT);
            cifers.push(toBase64(sealed.cifer));
            job.progress = progressOf(i + 1, chunkCount);
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
          const metadata = encryptMetadata(job, toHex(spool.sha256!), chunkCount, options.chunkBytes, cifers);
          return new TextEncoder().encode(JSON.stringify(metadata));
        },
      });
      const size = await writeZipFile(registry.paths.resultPath(job.id), entries, new Date(job.createdAt));
      registry.resultWritten(job.id, size, size);
      await registry.complete(job);
      outcome = 'completed';
      usage?.commit();
      log.info({ jobId: job.id, chunkCount, bytes: job.originalSize }, 'encrypt job completed');
    } catch (err) {
      await registry.abandon(job, err);
    } finally {
      // A job that did not complete counts nothing (a second settle is a no-op).
      usage?.release();
      lifecycle.end(outcome);
      // Seals still in flight settle before their buffers are zeroed and the reader closed.
      await Promise.allSettled(seals);
      // Closes the spool's read handle when the archive stopped early.
      await chunks?.return?.(undefined).catch(() => undefined);
      outputs?.dispose();
      await spool.dispose().catch((err: unknown) => log.error({ jobId: job.id, err }, 'could not remove a spool'));
    }
  }

  return {
    async start(upload) {
      const { spool } = upload;
      let usage: UsageReservation | undefined;
      try {
        const caller = await deps.verifier.verify(upload.request, { parts: 4, at: upload.receivedAt, web3: true });
        // A verified sender's upload: out of the unverified budget, into the disk budget.
        registry.claimSpool(spool);
        if (upload.secretId !== caller.subject) throw new AppError('BAD_REQUEST', 'secretId does not match the secretId in data');
        const secret = await deps.secrets.resolveSecret(caller.chainId, parseSecretId(caller.subject));
        assertUsable(secret);
        registry.assertPrincipalLimit(caller.principalId);
        // The disk budget was judged before the upload was read and again as its spool joined it.
        registry.assertJobSlot();
        const sha256 = spool.sha256;
        if (!spool.writableFinished || sha256 === undefined) throw new AppError('BAD_REQUEST', 'Upload incomplete');
        const job = registry.create('encrypt', caller, secret, upload.originalName, spool.bytes);
        const publicKey = fromBase64(secret.publicKeyCid);
        usage = await deps.usage?.admit(caller.principalId, 'encryption', spool.bytes);
        await registry.record(job);
        const admitted = usage;
        usage = undefined;
        // Registered before the job runs, so the slot is taken at once.
        registry.launch(job, (lifecycle) => run(job, spool, publicKey, admitted, lifecycle));
        return viewOf(job);
      } catch (err) {
        usage?.release();
        await spool.dispose();
        throw err;
      }
    },
  };
}
