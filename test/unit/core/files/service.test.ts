/**
 * The files service with stubbed deps (CONTRIBUTING.md rule 12): job lifecycle rules that the integration
 * test cannot stage through HTTP — interrupted jobs failed at start, the TTL sweep on an injected
 * clock, the per-coordinator job limit, the spool removed on every refusal, and uploads held by the
 * unverified budget until their sender is verified (or verified at once when the fields came first).
 */
import { mkdir, readdir, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { createFilesService, ENCRYPT_RESULT_TTL_MS, EXPIRED_JOB_RETENTION_MS, FAILED_JOB_TTL_MS, type FilesCapability } from '../../../../src/core/files/service.ts';
import type { JobRecord, UploadOrigin } from '../../../../src/core/files/types.ts';
import type { SignedDataVerifier, VerifiedCaller } from '../../../../src/core/sessions/types.ts';
import type { ResolvedSecret } from '../../../../src/core/secrets/types.ts';
import { AppError, isAppError } from '../../../../src/errors/index.ts';
import { decryptAtRest, encryptAtRest, mlkemPublicKeyFromSeed, systemRandom, toBase64 } from '../../../../src/crypto/index.ts';
import { createLogger } from '../../../../src/log/index.ts';
import { waitFor } from '../../../../src/testing/index.ts';
import { cleanupStack, tempDir } from '../../../utils/temp.ts';
import { memoryRepo } from './fixtures.ts';

const stack = cleanupStack();
afterEach(() => stack.run());

const STORAGE_KEY = systemRandom(32);
const PUBLIC_KEY = toBase64(mlkemPublicKeyFromSeed(systemRandom(64)));
const SECRET: ResolvedSecret = { chainId: -1, secretId: 7, owner: 'owner', delegate: null, publicKeyCid: PUBLIC_KEY, isSyncing: false, secretType: 1 };
const CALLER = { chainId: -1, subject: '7', principalId: 'signer' } as unknown as VerifiedCaller;

function job(id: string, status: JobRecord['status'], completedAt: number | null, ttl = ENCRYPT_RESULT_TTL_MS): JobRecord {
  return {
    id, type: 'encrypt', status, progress: 0, secretId: 7, chainId: -1, createdAt: 1000, completedAt, expiredAt: null, error: null,
    resultFileName: 'a.cifer', ttl, originalSize: 1, signerPrincipalId: 'signer', secretOwnerPrincipalId: 'owner', originalName: 'a',
  };
}

interface SetupOptions {
  verify?: () => Promise<VerifiedCaller>;
  maxConcurrentJobs?: number;
  maxJobsPerPrincipal?: number;
  maxDiskBytes?: number;
  maxUnverifiedBytesPerAddress?: number;
  maxUnverifiedBytes?: number;
}

async function setup(options: SetupOptions = {}) {
  const dir = await tempDir(stack);
  const repo = memoryRepo();
  let now = 1_000_000;
  let ids = 0;
  const verifier: SignedDataVerifier = { verify: options.verify ?? (async () => CALLER) };
  const files: FilesCapability = createFilesService(
    {
      dir,
      maxFileBytes: 10_000,
      chunkBytes: 100,
      maxConcurrentJobs: options.maxConcurrentJobs ?? 4,
      maxJobsPerPrincipal: options.maxJobsPerPrincipal ?? 4,
      maxDiskBytes: options.maxDiskBytes ?? 1_000_000,
      maxUnverifiedBytesPerAddress: options.maxUnverifiedBytesPerAddress ?? 0,
      maxUnverifiedBytes: options.maxUnverifiedBytes ?? 0,
      sweepIntervalMs: 60_000,
    },
    {
      verifier,
      secrets: { resolveSecret: async () => SECRET, recoverSeed: () => Promise.reject(new AppError('QUORUM_UNAVAILABLE', 'no members in unit tests')) },
      keyring: { encryptAtRest: (plaintext, aad) => encryptAtRest(STORAGE_KEY, plaintext, aad), decryptAtRest: (box, aad) => decryptAtRest(STORAGE_KEY, box, aad) },
      jobs: repo,
      clock: () => now,
      logger: createLogger({ level: 'silent' }),
      newId: () => `00000000-0000-4000-8000-${String(++ids).padStart(12, '0')}`,
    },
  );
  stack.push(() => files.stop());
  return { dir, repo, files, advance: (ms: number) => (now += ms), now: () => now };
}

const REQUEST = { data: 'd', signature: 's' };

/** A spool of `bytes` written as an upload from `origin` sends it (its file first, by default). */
async function spooled(files: FilesCapability, bytes: number, origin: UploadOrigin = { address: '10.0.0.1' }) {
  const spool = await files.createSpool('encrypt', origin);
  await pipeline(Readable.from([Buffer.alloc(bytes, 'x')]), spool);
  return spool;
}

async function upload(files: FilesCapability, bytes: number, origin?: UploadOrigin) {
  const spool = await spooled(files, bytes, origin);
  return files.startEncrypt({ spool, originalName: 'a', secretId: '7', request: REQUEST, receivedAt: 0 });
}

async function spoolFiles(dir: string): Promise<string[]> {
  return readdir(join(dir, 'spool'));
}

describe('files service', () => {
  it('marks interrupted jobs failed at start, keeps finished ones, removes leftover spools', async () => {
    const { dir, repo, files, now } = await setup();
    repo.jobs.set('00000000-0000-4000-8000-00000000000a', job('00000000-0000-4000-8000-00000000000a', 'pending', null));
    repo.jobs.set('00000000-0000-4000-8000-00000000000b', job('00000000-0000-4000-8000-00000000000b', 'processing', null));
    repo.jobs.set('00000000-0000-4000-8000-00000000000c', job('00000000-0000-4000-8000-00000000000c', 'completed', 5000));
    await mkdir(join(dir, 'spool'), { recursive: true });
    const leftover = join(dir, 'spool', `qk-spool-${'ab'.repeat(16)}.sealed`);
    await writeFile(leftover, 'leftover');
    // Its mtime after the clock's reading at start (as a file written in that same millisecond has).
    await utimes(leftover, new Date(Date.now() + 60_000), new Date(Date.now() + 60_000));
    await files.start();
    for (const id of ['00000000-0000-4000-8000-00000000000a', '00000000-0000-4000-8000-00000000000b']) {
      expect(await files.status(id)).toMatchObject({ status: 'failed', completedAt: now(), ttl: FAILED_JOB_TTL_MS, error: expect.stringContaining('Interrupted') });
    }
    expect((await files.status('00000000-0000-4000-8000-00000000000c')).status).toBe('completed');
    expect(await spoolFiles(dir)).toEqual([]);
  });

  it('expires completed and failed jobs past their TTL and removes the result', async () => {
    const { dir, files, advance } = await setup();
    await files.start();
    const { id } = await upload(files, 250);
    const done = await waitStatus(files, id, 'completed');
    expect(done.progress).toBe(100);
    expect((await readdir(join(dir, 'results'))).includes(`${id}.zip`)).toBe(true);

    advance(ENCRYPT_RESULT_TTL_MS - 1);
    expect(await files.sweep()).toBe(0);
    advance(1);
    expect(await files.sweep()).toBe(1);
    expect(await files.status(id)).toMatchObject({ status: 'expired', expiredAt: expect.any(Number) });
    expect((await readdir(join(dir, 'results'))).includes(`${id}.zip`)).toBe(false);
    await expect(files.download(id, undefined)).rejects.toMatchObject({ code: 'NOT_FOUND' });

    // An expired job's record is kept for EXPIRED_JOB_RETENTION_MS, then forgotten.
    advance(EXPIRED_JOB_RETENTION_MS - 1);
    await files.sweep();
    expect(await files.status(id)).toMatchObject({ status: 'expired' });
    advance(1);
    await files.sweep();
    await expect(files.status(id)).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });

  it('decrypt-existing-file refuses an encrypt job that has not completed (400), before any share is asked for', async () => {
    const { repo, files } = await setup({ verify: async () => ({ ...CALLER, principalId: 'owner' }) });
    await files.start();
    let release!: () => void;
    repo.hold = new Promise<void>((r) => (release = r));
    const running = await upload(files, 10);
    const refused = await files.startDecryptExisting(running.id, { data: 'd', signature: 's' }).catch((err: unknown) => err);
    expect(isAppError(refused) && refused.code).toBe('BAD_REQUEST');
    expect((refused as Error).message).toMatch(/Encrypt job is (pending|processing), not completed/);
    release();
    await waitStatus(files, running.id, 'completed');
  });

  it('refuses a job over maxConcurrentJobs with 503 OVERLOADED, and removes its spool', async () => {
    const { dir, repo, files } = await setup({ maxConcurrentJobs: 1 });
    await files.start();
    let release!: () => void;
    repo.hold = new Promise<void>((r) => (release = r));
    const first = await upload(files, 10);
    const refused = await upload(files, 10).catch((err: unknown) => err);
    expect(isAppError(refused) && refused.code).toBe('OVERLOADED');
    expect(() => files.assertCapacity()).toThrow(AppError);
    release();
    await waitStatus(files, first.id, 'completed');
    expect(await spoolFiles(dir)).toEqual([]);
  });

  it('refuses a principal over maxJobsPerPrincipal with 429 RATE_LIMITED, others still start', async () => {
    let signer = 'signer';
    const { dir, repo, files } = await setup({ maxJobsPerPrincipal: 1, verify: async () => ({ ...CALLER, principalId: signer }) });
    await files.start();
    let release!: () => void;
    repo.hold = new Promise<void>((r) => (release = r));
    const first = await upload(files, 10);
    const refused = await upload(files, 10).catch((err: unknown) => err);
    expect(isAppError(refused) && refused.code).toBe('RATE_LIMITED');
    expect(isAppError(refused) && refused.extra).toEqual({ retryAfterSeconds: expect.any(Number) });
    signer = 'someone-else';
    const other = await upload(files, 10);
    release();
    await waitStatus(files, first.id, 'completed');
    await waitStatus(files, other.id, 'completed');
    signer = 'signer';
    await waitStatus(files, (await upload(files, 10)).id, 'completed');
    expect(await spoolFiles(dir)).toEqual([]);
  });

  it('refuses uploads once the disk budget is used, and takes them again when a result expires', async () => {
    const { files, advance } = await setup({ maxDiskBytes: 600 });
    await files.start();
    expect(() => files.assertCapacity(601)).toThrow(expect.objectContaining({ code: 'OVERLOADED' }));
    const { id } = await upload(files, 500);
    await waitStatus(files, id, 'completed');
    // The 500-byte file's result (ZIP and envelopes) is over 600 bytes.
    expect(() => files.assertCapacity()).toThrow(expect.objectContaining({ code: 'OVERLOADED', extra: { retryAfterSeconds: expect.any(Number) } }));
    advance(ENCRYPT_RESULT_TTL_MS);
    // Its status reads completed a moment before its run has ended; the sweep leaves a running job
    // alone, so it expires on the first sweep after that.
    await waitFor(async () => (await files.sweep()) === 1, { description: 'the finished job expired' });
    expect(() => files.assertCapacity(100)).not.toThrow();
  });

  it('removes the spool when the caller is refused', async () => {
    const { dir, files } = await setup({ verify: () => Promise.reject(new AppError('FORBIDDEN', 'Invalid signature')) });
    await files.start();
    await expect(upload(files, 10)).rejects.toMatchObject({ code: 'FORBIDDEN' });
    expect(await spoolFiles(dir)).toEqual([]);
  });

  it('refuses a secretId that differs from the one in data', async () => {
    const { dir, files } = await setup();
    await files.start();
    const spool = await spooled(files, 1);
    await expect(files.startEncrypt({ spool, originalName: 'a', secretId: '8', request: REQUEST, receivedAt: 0 })).rejects.toMatchObject({ code: 'BAD_REQUEST' });
    expect(await spoolFiles(dir)).toEqual([]);
  });
});

describe('unverified uploads', () => {
  it('hold the unverified budget, not the disk budget, until their start verifies the sender', async () => {
    const { files } = await setup({ maxDiskBytes: 600, maxUnverifiedBytesPerAddress: 300, maxUnverifiedBytes: 500 });
    await files.start();
    const first = await spooled(files, 300);
    // The disk budget of verified uploads has all its room.
    expect(() => files.assertCapacity(600)).not.toThrow();
    // The address's allowance is used up, so is most of the budget in all.
    await expect(spooled(files, 1)).rejects.toMatchObject({ code: 'RATE_LIMITED' });
    await expect(spooled(files, 201, { address: '10.0.0.2' })).rejects.toMatchObject({ code: 'OVERLOADED' });
    await expect(spooled(files, 301, { address: '10.0.0.3' })).rejects.toMatchObject({ code: 'PAYLOAD_TOO_LARGE' });
    // Verified: the spool moves to the disk budget and the address's allowance is free again.
    const job = await files.startEncrypt({ spool: first, originalName: 'a', secretId: '7', request: REQUEST, receivedAt: 0 });
    expect(() => files.assertCapacity(301)).toThrow(expect.objectContaining({ code: 'OVERLOADED' }));
    const second = await spooled(files, 300);
    await waitStatus(files, job.id, 'completed');
    await second.dispose();
  });

  it('give their bytes back when the sender is refused or the upload is cut', async () => {
    let verify: () => Promise<VerifiedCaller> = () => Promise.reject(new AppError('FORBIDDEN', 'Invalid signature'));
    const { dir, files } = await setup({ verify: () => verify(), maxUnverifiedBytesPerAddress: 300, maxUnverifiedBytes: 300 });
    await files.start();
    await expect(upload(files, 300)).rejects.toMatchObject({ code: 'FORBIDDEN' });
    const cut = await files.createSpool('encrypt', { address: '10.0.0.2' });
    await new Promise<void>((resolve, reject) => cut.write(Buffer.alloc(200), (err) => (err ? reject(err) : resolve())));
    await cut.dispose();
    // All 300 bytes are free again, for any address.
    verify = async () => CALLER;
    await waitStatus(files, (await upload(files, 300, { address: '10.0.0.3' })).id, 'completed');
    expect(await spoolFiles(dir)).toEqual([]);
  });

  it('reserve a declared length up front: an upload that cannot fit is refused before its first byte', async () => {
    const { dir, files } = await setup({ maxUnverifiedBytesPerAddress: 300, maxUnverifiedBytes: 400 });
    await files.start();
    const started = await files.createSpool('encrypt', { address: '10.0.0.1', declaredBytes: 300 });
    stack.push(() => started.dispose());
    await expect(files.createSpool('encrypt', { address: '10.0.0.2', declaredBytes: 200 })).rejects.toMatchObject({ code: 'OVERLOADED' });
    expect(await spoolFiles(dir)).toHaveLength(1);
  });

  it('whose signed fields came first are verified before a byte is written, and count in the disk budget at once', async () => {
    let verify: () => Promise<VerifiedCaller> = () => Promise.reject(new AppError('FORBIDDEN', 'Invalid signature'));
    const { dir, files } = await setup({ verify: () => verify(), maxDiskBytes: 1000, maxUnverifiedBytesPerAddress: 100, maxUnverifiedBytes: 100 });
    await files.start();
    const signed = { address: '10.0.0.1', signed: { request: REQUEST, receivedAt: 0 } };
    await expect(files.createSpool('encrypt', signed)).rejects.toMatchObject({ code: 'FORBIDDEN' });
    expect(await spoolFiles(dir)).toEqual([]);
    verify = async () => CALLER;
    // The address's unverified allowance is full; a verified sender does not need it, even for a file over it.
    const held = await spooled(files, 100);
    const spool = await spooled(files, 500, signed);
    expect(() => files.assertCapacity(501)).toThrow(expect.objectContaining({ code: 'OVERLOADED' }));
    const job = await files.startEncrypt({ spool, originalName: 'a', secretId: '7', request: REQUEST, receivedAt: 0 });
    await waitStatus(files, job.id, 'completed');
    await held.dispose();
  });
});

function waitStatus(files: FilesCapability, id: string, status: string) {
  return waitFor(async () => {
    const view = await files.status(id);
    return view.status === status ? view : undefined;
  });
}
