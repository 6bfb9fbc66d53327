/**
 * Callers reaching the jobs of this coordinator (docs/http.md, Files and jobs): a result downloaded
 * (an encrypt result's ZIP as it is on disk, a decrypt result's plaintext streamed out of its sealed
 * file), a finished job deleted early, and the jobs a caller signed or whose secret it owns or
 * delegates listed. Other coordinators reach these jobs by forwarding requests here
 * (src/http/job-forward.ts).
 */
import { AppError } from '../../errors/index.ts';
import type { Logger } from '../../log/index.ts';
import { fromBase64, fromHex, openSpoolCipher, type ChunkCrypto } from '../../crypto/index.ts';
import { assertDecryptRight, type SecretsCapability } from '../secrets/service.ts';
import type { NodeKeyring } from '../secrets/ports.ts';
import type { SignedDataVerifier } from '../sessions/types.ts';
import { fileSize, openResultFile } from './archive.ts';
import type { JobRegistry } from './registry.ts';
import { assertJobAction, assertJobSecret, compareListed, isRecipientOf, resultKeyAad, viewOf } from './rules.ts';
import { readSealedFile } from './spool.ts';
import type { FilesService, JobDownload, JobRecord, JobRepo, ListedJob } from './types.ts';

/** Dependencies of {@link createJobAccess}. */
export interface JobAccessDeps {
  /** Verifies each request's signed data. */
  verifier: SignedDataVerifier;
  secrets: Pick<SecretsCapability, 'resolveSecret'>;
  /** Opens a decrypt result's key, sealed under the node's storage key. */
  keyring: Pick<NodeKeyring, 'decryptAtRest'>;
  /** Durable job metadata. */
  jobs: JobRepo;
  /** This coordinator's jobs (./registry.ts). */
  registry: JobRegistry;
  /** The chunk crypto that opens a decrypt result's chunks. */
  engine: ChunkCrypto;
  /** Wall clock, Unix ms (a deleted job's `expiredAt`). */
  clock: () => number;
  /** The files module's logger. */
  logger: Logger;
}

/** Download, delete and list: the parts of {@link FilesService} that reach existing jobs. */
export type JobAccess = Pick<FilesService, 'download' | 'remove' | 'list'>;

/** Create the access to a files service's jobs (no options: every rule is docs/http.md's). */
export function createJobAccess(deps: JobAccessDeps): JobAccess {
  const { registry, engine, logger: log } = deps;

  /** The plaintext of a completed decrypt job, streamed from its sealed result. */
  async function openDecryptResult(job: JobRecord): Promise<Pick<JobDownload, 'size' | 'body'>> {
    const path = registry.paths.sealedResultPath(job.id);
    if (!job.result || (await fileSize(path)) === undefined) throw new AppError('NOT_FOUND', 'Job result not found');
    const key = deps.keyring.decryptAtRest(fromBase64(job.result.key), resultKeyAad(job.id));
    if (!key) {
      log.error({ jobId: job.id }, 'decrypt result key does not open');
      throw new AppError('NOT_FOUND', 'Job result not found');
    }
    const cipher = openSpoolCipher(key, fromHex(job.result.id));
    const { chunkBytes } = job.result;
    async function* plaintext(): AsyncGenerator<Buffer> {
      try {
        // Views into the reader's buffers, zeroed when it closes: no plaintext copy is left to the GC.
        yield* readSealedFile(path, cipher, chunkBytes, job.originalSize, { engine, inPlace: true });
      } finally {
        cipher.dispose();
      }
    }
    return { size: job.originalSize, body: { views: plaintext() } };
  }

  return {
    async download(jobId, request) {
      const job = await registry.find(jobId);
      if (!job) throw new AppError('NOT_FOUND', 'Job not found');
      // Whether a job expired is public (its status says so): no signature needed to learn it.
      if (job.status === 'expired') throw new AppError('NOT_FOUND', 'Job expired');
      if (job.type === 'decrypt' && !request) throw new AppError('UNAUTHORIZED', 'A decrypt result needs data (…_<jobId>_download) and signature');
      if (request) {
        // Encrypt results need no signature; the Web2 client signs anyway, and what is sent must hold.
        const caller = await deps.verifier.verify(request, { parts: 6, web3: true });
        assertJobAction(caller, job.id, 'download');
        if (job.type === 'decrypt') {
          assertJobSecret(caller, job);
          // The plaintext goes to whoever may decrypt with the secret now.
          assertDecryptRight(await deps.secrets.resolveSecret(job.chainId, job.secretId), caller.principalId);
        }
      }
      if (job.status !== 'completed') throw new AppError('BAD_REQUEST', `Job is ${job.status}, not completed`);
      if (job.type === 'decrypt') return { fileName: job.resultFileName, contentType: 'application/octet-stream', ...(await openDecryptResult(job)) };
      const file = await openResultFile(registry.paths.resultPath(job.id));
      if (!file) throw new AppError('NOT_FOUND', 'Job result not found');
      return { fileName: job.resultFileName, contentType: 'application/zip', size: file.size, body: { stream: file.stream } };
    },

    async remove(jobId, request) {
      const caller = await deps.verifier.verify(request, { parts: 6, web3: true });
      assertJobAction(caller, jobId, 'delete');
      const job = await registry.find(jobId);
      if (!job || job.status === 'expired') throw new AppError('NOT_FOUND', job ? 'Job expired' : 'Job not found');
      assertJobSecret(caller, job);
      if (job.signerPrincipalId !== caller.principalId) {
        const secret = await deps.secrets.resolveSecret(job.chainId, job.secretId);
        if (!isRecipientOf(secret, caller.principalId)) {
          throw new AppError('FORBIDDEN', "Only the job's signer or the secret's owner or delegate may delete this job");
        }
      }
      // A running job still writes its result: deleting it then would race the writer.
      if (job.status === 'pending' || job.status === 'processing') throw new AppError('BAD_REQUEST', 'Job is still running; delete it once it has finished');
      await registry.removeResult(job.id);
      await deps.jobs.put({ ...job, status: 'expired', expiredAt: deps.clock() });
      log.info({ jobId: job.id }, 'file job deleted');
    },

    async list(request, includeExpired): Promise<ListedJob[]> {
      // Web3 principals too (docs/http.md): the list needs only a valid fresh signature.
      const caller = await deps.verifier.verify(request, { parts: 4, web3: true });
      // One lookup per secret, not per job; only secrets of the caller's own chain can be its.
      const recipientOf = new Map<number, boolean>();
      const rows: ListedJob[] = [];
      for await (const stored of deps.jobs.list()) {
        const job = registry.current(stored);
        if (job.status === 'expired' && !includeExpired) continue;
        let isRecipient = job.chainId === caller.chainId ? recipientOf.get(job.secretId) : false;
        if (isRecipient === undefined) {
          const secret = await deps.secrets.resolveSecret(job.chainId, job.secretId).catch((err: unknown) => {
            // Gone, or a Web3 secret not usable (syncing): nobody's to decrypt, so no recipient.
            if (err instanceof AppError && (err.code === 'NOT_FOUND' || err.code === 'FORBIDDEN')) return undefined;
            throw err;
          });
          isRecipient = secret !== undefined && isRecipientOf(secret, caller.principalId);
          recipientOf.set(job.secretId, isRecipient);
        }
        const isSigner = job.signerPrincipalId === caller.principalId;
        if (isSigner || isRecipient) rows.push({ ...viewOf(job), isSigner, isRecipient });
      }
      return rows.sort(compareListed);
    },
  };
}
