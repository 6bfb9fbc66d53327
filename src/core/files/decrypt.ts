/**
 * The decrypt flows (docs/http.md, Files and jobs: POST /decrypt-file, /decrypt-existing-file): the
 * archive — an uploaded one through its sealed spool, read at random offsets, or an encrypt job's
 * result — is checked before the job is accepted (./cifer-archive.ts); the secret's shares are
 * gathered once per job and the key imported once (the seed zeroed at once); the job then runs in
 * the background (./decrypt-run.ts).
 */
import { AppError } from '../../errors/index.ts';
import type { Logger } from '../../log/index.ts';
import { createPayloadOpener, fromBase64, zeroize, type PayloadOpener } from '../../crypto/index.ts';
import { assertDecryptRight, assertUsable, parseSecretId, type SecretsCapability } from '../secrets/service.ts';
import type { ResolvedSecret } from '../secrets/types.ts';
import type { SignedDataVerifier, SignedRequest, VerifiedCaller } from '../sessions/types.ts';
import type { UsageAdmission } from '../usage/types.ts';
import { openFileRange, type FileRange } from './archive.ts';
import { openCiferArchive, type CiferArchive, type CiferArchiveLimits, type RangeSource } from './cifer-archive.ts';
import type { DecryptRunner } from './decrypt-run.ts';
import type { JobRegistry } from './registry.ts';
import { assertArchiveMatches, assertDecryptSource, viewOf } from './rules.ts';
import type { DecryptUpload, JobView } from './types.ts';

/** Options of {@link createDecryptJobs}. */
export interface DecryptJobsOptions {
  /** What an archive to decrypt may hold. */
  archiveLimits: CiferArchiveLimits;
}

/** Dependencies of {@link createDecryptJobs}. */
export interface DecryptJobsDeps {
  /** Verifies each request's signed data. */
  verifier: SignedDataVerifier;
  secrets: Pick<SecretsCapability, 'resolveSecret' | 'recoverSeed'>;
  /** Plan limits: the archive's `originalSize` is admitted before the shares are asked for. None when off. */
  usage?: UsageAdmission | undefined;
  /** This coordinator's jobs (./registry.ts). */
  registry: JobRegistry;
  /** Runs an accepted job. */
  run: DecryptRunner;
  /** The files module's logger. */
  logger: Logger;
}

/** The decrypt flows. */
export interface DecryptJobs {
  /** An uploaded archive (its spool is the job's; disposed of on a refusal). */
  start(upload: DecryptUpload): Promise<JobView>;
  /** The result of a completed encrypt job of this coordinator. */
  startExisting(encryptJobId: string, request: SignedRequest): Promise<JobView>;
}

/** Create the decrypt flows of a files service. */
export function createDecryptJobs(options: DecryptJobsOptions, deps: DecryptJobsDeps): DecryptJobs {
  const { registry, logger: log } = deps;

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
  async function accept(
    caller: VerifiedCaller,
    secret: ResolvedSecret,
    request: SignedRequest,
    archive: CiferArchive,
    release: () => Promise<void>,
    sourceJobId?: string,
  ): Promise<JobView> {
    const { metadata } = archive;
    assertArchiveMatches(metadata, secret, caller);
    registry.assertPrincipalLimit(caller.principalId);
    // The plaintext result to come takes its size from the disk budget.
    registry.assertCapacity(metadata.originalSize);
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
    const job = registry.create('decrypt', caller, secret, metadata.originalName, metadata.originalSize);
    if (sourceJobId !== undefined) job.sourceJobId = sourceJobId;
    try {
      await registry.record(job);
    } catch (err) {
      usage?.release();
      throw err;
    }
    const work = { archive, opener, release, usage };
    registry.launch(job, (lifecycle) => deps.run(job, work, lifecycle));
    return viewOf(job);
  }

  return {
    async start(upload) {
      const { spool } = upload;
      let archive: CiferArchive | undefined;
      try {
        const { caller, secret } = await decryptCaller(upload.request, upload.receivedAt);
        // A verified sender's upload: out of the unverified budget, into the disk budget.
        registry.claimSpool(spool);
        registry.assertJobSlot();
        if (!spool.writableFinished) throw new AppError('BAD_REQUEST', 'Upload incomplete');
        const source: RangeSource = { bytes: spool.bytes, readRange: (start, end) => spool.readRange(start, end), readInto: (start, target) => spool.readRangeInto(start, target) };
        archive = await openCiferArchive(source, options.archiveLimits);
        return await accept(caller, secret, upload.request, archive, () => spool.dispose());
      } catch (err) {
        archive?.close();
        await spool.dispose();
        throw err;
      }
    },

    async startExisting(encryptJobId, request) {
      const { caller, secret } = await decryptCaller(request);
      const source = await registry.find(encryptJobId);
      assertDecryptSource(source);
      registry.assertJobSlot();
      // Opened now: a sweep or delete that removes the file meanwhile cannot cut the job short.
      let file: FileRange;
      try {
        file = await openFileRange(registry.paths.resultPath(source.id));
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new AppError('NOT_FOUND', 'Encrypt job result not found');
        throw err;
      }
      let archive: CiferArchive | undefined;
      try {
        archive = await openCiferArchive(file, options.archiveLimits);
        return await accept(caller, secret, request, archive, () => file.close(), source.id);
      } catch (err) {
        archive?.close();
        await file.close();
        throw err;
      }
    },
  };
}
