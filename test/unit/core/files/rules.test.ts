/**
 * The files capability's plain rules (src/core/files/rules.ts; docs/http.md, Files and jobs): job
 * ids and paths, a new job and its view, the sizes and limits a coordinator derives from its
 * options, when the sweep expires or forgets a job, what a failed job reports, and the checks a
 * request about a job or an archive passes. No I/O, no deps.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  DECRYPT_RESULT_TTL_MS,
  ENCRYPT_RESULT_TTL_MS,
  EXPIRED_JOB_RETENTION_MS,
  ORIGINAL_NAME_MAX_CHARS,
  archiveLimitsOf,
  assertArchiveMatches,
  assertDecryptSource,
  assertDiskRoom,
  assertJobAction,
  assertJobSecret,
  assertJobSlot,
  assertPrincipalRoom,
  chunkCountOf,
  compareListed,
  encryptMetadata,
  expectedChunkBytes,
  failureReason,
  isJobId,
  isRecipientOf,
  jobPaths,
  maxDecryptUploadBytes,
  newJob,
  progressOf,
  resultFileJobId,
  resultKeyAad,
  sweepVerdict,
  viewOf,
} from '../../../../src/core/files/rules.ts';
import type { JobRecord, ListedJob } from '../../../../src/core/files/types.ts';
import { AppError } from '../../../../src/errors/index.ts';

const ID = '00000000-0000-4000-8000-000000000001';
const NOW = 1_700_000_000_000;
const CALLER = { chainId: -1, principalId: 'signer' };
const SECRET = { secretId: 7, owner: 'owner' };

function job(changes: Partial<JobRecord> = {}): JobRecord {
  return { ...newJob('encrypt', CALLER, SECRET, 'a.txt', 10, { id: ID, now: NOW }), ...changes };
}

/** The AppError `fn` throws (fails the test when it throws nothing or something else). */
function thrown(fn: () => void): AppError {
  try {
    fn();
  } catch (err) {
    if (err instanceof AppError) return err;
    throw err;
  }
  throw new Error('expected an AppError');
}

describe('job ids and paths', () => {
  it('takes lowercase UUIDs as job ids, nothing else', () => {
    expect(isJobId(ID)).toBe(true);
    expect(isJobId('abcdef00-0000-4000-8000-00000000000f')).toBe(true);
    expect(isJobId('ABCDEF00-0000-4000-8000-00000000000F')).toBe(false);
    expect(isJobId(`${ID}0`)).toBe(false);
    expect(isJobId('../../etc/passwd')).toBe(false);
    expect(isJobId('')).toBe(false);
  });

  it('puts spools and results under the files folder, and reads a job id back from a result file name', () => {
    const paths = jobPaths('/data/files');
    expect(paths.spoolDir).toBe(join('/data/files', 'spool'));
    expect(paths.resultDir).toBe(join('/data/files', 'results'));
    expect(paths.resultPath(ID)).toBe(join('/data/files', 'results', `${ID}.zip`));
    expect(paths.sealedResultPath(ID)).toBe(join('/data/files', 'results', `${ID}.sealed`));
    expect(resultFileJobId(`${ID}.zip`)).toBe(ID);
    expect(resultFileJobId(`${ID}.sealed`)).toBe(ID);
    expect(resultFileJobId(`${ID}.zip.partial`)).toBeUndefined();
    expect(resultFileJobId('notes.txt')).toBeUndefined();
  });

  it('binds a decrypt result key to its job: each job id its own associated data', () => {
    const aad = Buffer.from(resultKeyAad(ID)).toString();
    expect(aad).toBe(`quorumkeep/file-result-key/v1/${ID}`);
    expect(Buffer.from(resultKeyAad('00000000-0000-4000-8000-000000000002')).equals(Buffer.from(resultKeyAad(ID)))).toBe(false);
  });
});

describe('a new job and its view', () => {
  it('makes a pending encrypt job: `.cifer` result name, the 2-day TTL, the caller as signer', () => {
    expect(newJob('encrypt', CALLER, SECRET, 'a.txt', 10, { id: ID, now: NOW })).toEqual({
      id: ID, type: 'encrypt', status: 'pending', progress: 0, secretId: 7, chainId: -1, createdAt: NOW, completedAt: null, expiredAt: null,
      error: null, resultFileName: 'a.txt.cifer', ttl: ENCRYPT_RESULT_TTL_MS, originalSize: 10, signerPrincipalId: 'signer',
      secretOwnerPrincipalId: 'owner', originalName: 'a.txt',
    });
  });

  it('makes a decrypt job named like the original file, kept 3 hours', () => {
    const made = newJob('decrypt', { chainId: 5, principalId: '0xabc' }, SECRET, 'a.txt', 10, { id: ID, now: NOW });
    expect(made).toMatchObject({ type: 'decrypt', resultFileName: 'a.txt', ttl: DECRYPT_RESULT_TTL_MS, chainId: 5, signerPrincipalId: '0xabc' });
  });

  it('cuts a long original name to ORIGINAL_NAME_MAX_CHARS before the suffix', () => {
    const made = newJob('encrypt', CALLER, SECRET, 'x'.repeat(ORIGINAL_NAME_MAX_CHARS + 10), 10, { id: ID, now: NOW });
    expect(made.originalName).toHaveLength(ORIGINAL_NAME_MAX_CHARS);
    expect(made.resultFileName).toBe(`${'x'.repeat(ORIGINAL_NAME_MAX_CHARS)}.cifer`);
  });

  it('shows the documented fields only, in wire order (not the original name, the result key or the source job)', () => {
    const view = viewOf(job({ result: { key: 'secret', id: 'ab', chunkBytes: 1 }, sourceJobId: ID }));
    expect(Object.keys(view)).toEqual([
      'id', 'type', 'status', 'progress', 'secretId', 'chainId', 'createdAt', 'completedAt', 'expiredAt', 'error',
      'resultFileName', 'ttl', 'originalSize', 'signerPrincipalId', 'secretOwnerPrincipalId',
    ]);
  });
});

describe('sizes', () => {
  it('counts chunks, one at least', () => {
    expect(chunkCountOf(0, 100)).toBe(1);
    expect(chunkCountOf(100, 100)).toBe(1);
    expect(chunkCountOf(101, 100)).toBe(2);
  });

  it('lets a .cifer upload exceed the largest file by its envelope, per chunk and once', () => {
    expect(maxDecryptUploadBytes(1000, 100)).toBe(1000 + 10 * 2048 + 64 * 1024);
    expect(maxDecryptUploadBytes(0, 100)).toBe(2048 + 64 * 1024);
  });

  it('accepts archive chunks up to 16 MiB, or the configured chunk when larger', () => {
    expect(archiveLimitsOf(5000, 1024)).toEqual({ maxEntries: 20_000, maxMetadataBytes: 32 * 1024 * 1024, maxChunkBytes: 16 * 1024 * 1024, maxOriginalBytes: 5000 });
    expect(archiveLimitsOf(5000, 32 * 1024 * 1024).maxChunkBytes).toBe(32 * 1024 * 1024);
  });

  it('expects full chunks, then what is left in the last one', () => {
    const metadata = { chunkCount: 3, chunkSize: 100, originalSize: 250 };
    expect([0, 1, 2].map((i) => expectedChunkBytes(i, metadata))).toEqual([100, 100, 50]);
    expect(expectedChunkBytes(0, { chunkCount: 1, chunkSize: 100, originalSize: 0 })).toBe(0);
  });

  it('reports progress by chunk, 99 at most until the result is complete', () => {
    expect(progressOf(1, 3)).toBe(33);
    expect(progressOf(3, 3)).toBe(99);
    expect(progressOf(1, 1000)).toBe(0);
  });

  it('writes metadata.json fields in the order of the archive format', () => {
    const metadata = encryptMetadata(job(), 'ab'.repeat(32), 1, 100, ['c0']);
    expect(metadata).toEqual({ secretId: 7, chainId: -1, originalName: 'a.txt', originalSize: 10, originalHash: 'ab'.repeat(32), chunkCount: 1, chunkSize: 100, cifers: ['c0'] });
    expect(Object.keys(metadata)).toEqual(['secretId', 'chainId', 'originalName', 'originalSize', 'originalHash', 'chunkCount', 'chunkSize', 'cifers']);
  });
});

describe('limits', () => {
  it('refuses a job once the coordinator runs its maximum: 503 OVERLOADED, retry in 5 s', () => {
    expect(() => assertJobSlot(3, 4)).not.toThrow();
    const err = thrown(() => assertJobSlot(4, 4));
    expect(err).toMatchObject({ code: 'OVERLOADED', extra: { retryAfterSeconds: 5 } });
    expect(err.message).toContain('4 file jobs');
  });

  it('refuses when the disk budget is full or the incoming bytes would overflow it: 503, retry in 60 s', () => {
    expect(() => assertDiskRoom(500, 500, 1000)).not.toThrow();
    expect(thrown(() => assertDiskRoom(500, 501, 1000))).toMatchObject({ code: 'OVERLOADED', extra: { retryAfterSeconds: 60 } });
    // A full budget refuses even an upload of unknown length.
    expect(thrown(() => assertDiskRoom(1000, 0, 1000)).code).toBe('OVERLOADED');
  });

  it('refuses a principal at its maximum of running jobs: 429 RATE_LIMITED', () => {
    expect(() => assertPrincipalRoom(1, 2)).not.toThrow();
    expect(thrown(() => assertPrincipalRoom(2, 2))).toMatchObject({ code: 'RATE_LIMITED', extra: { retryAfterSeconds: 5 } });
  });
});

describe('sweepVerdict', () => {
  it('expires a completed or failed job once its TTL has passed, not before', () => {
    for (const status of ['completed', 'failed'] as const) {
      const done = job({ status, completedAt: NOW, ttl: 1000 });
      expect(sweepVerdict(done, NOW + 999)).toBe('keep');
      expect(sweepVerdict(done, NOW + 1000)).toBe('expire');
    }
  });

  it('keeps running jobs, and finished ones with no completion time', () => {
    expect(sweepVerdict(job({ status: 'pending' }), NOW + ENCRYPT_RESULT_TTL_MS * 10)).toBe('keep');
    expect(sweepVerdict(job({ status: 'processing' }), NOW + ENCRYPT_RESULT_TTL_MS * 10)).toBe('keep');
    expect(sweepVerdict(job({ status: 'completed', completedAt: null }), NOW + ENCRYPT_RESULT_TTL_MS * 10)).toBe('keep');
  });

  it('forgets an expired job after EXPIRED_JOB_RETENTION_MS, and never expires it again', () => {
    const expired = job({ status: 'expired', completedAt: NOW - ENCRYPT_RESULT_TTL_MS, expiredAt: NOW });
    expect(sweepVerdict(expired, NOW + EXPIRED_JOB_RETENTION_MS - 1)).toBe('keep');
    expect(sweepVerdict(expired, NOW + EXPIRED_JOB_RETENTION_MS)).toBe('forget');
    expect(sweepVerdict(job({ status: 'expired', expiredAt: null }), NOW + EXPIRED_JOB_RETENTION_MS * 10)).toBe('keep');
  });
});

describe('failureReason', () => {
  it('says a job was interrupted when the coordinator stopped, whatever the error', () => {
    expect(failureReason('encrypt', new Error('x'), true)).toBe('Interrupted: the coordinator stopped');
    expect(failureReason('decrypt', new AppError('DECRYPTION_FAILED', 'chunk_0'), true)).toBe('Interrupted: the coordinator stopped');
  });

  it('keeps an encrypt failure generic, even an AppError', () => {
    expect(failureReason('encrypt', new AppError('DECRYPTION_FAILED', 'Spool ended early'), false)).toBe('Encryption failed');
  });

  it("shows a decrypt job's refusal of the file, and nothing of an unexpected error", () => {
    expect(failureReason('decrypt', new AppError('DECRYPTION_FAILED', 'Integrity check failed'), false)).toBe('Integrity check failed');
    expect(failureReason('decrypt', new Error('EIO /data/files/results/x'), false)).toBe('Decryption failed');
  });
});

describe('request checks', () => {
  it('wants the archive of the signed secret and chain', () => {
    expect(() => assertArchiveMatches({ secretId: 7, chainId: -1 }, SECRET, CALLER)).not.toThrow();
    expect(thrown(() => assertArchiveMatches({ secretId: 8, chainId: -1 }, SECRET, CALLER))).toMatchObject({ code: 'BAD_REQUEST', message: 'secretId does not match the file' });
    expect(thrown(() => assertArchiveMatches({ secretId: 7, chainId: 5 }, SECRET, CALLER))).toMatchObject({ code: 'BAD_REQUEST', message: 'chainId does not match the file' });
  });

  it('decrypts only a completed encrypt job: 404 unknown or expired, 400 otherwise', () => {
    expect(() => assertDecryptSource(job({ status: 'completed' }))).not.toThrow();
    expect(thrown(() => assertDecryptSource(undefined))).toMatchObject({ code: 'NOT_FOUND', message: 'Encrypt job not found' });
    expect(thrown(() => assertDecryptSource(job({ status: 'expired' })))).toMatchObject({ code: 'NOT_FOUND', message: 'Encrypt job expired' });
    expect(thrown(() => assertDecryptSource(job({ type: 'decrypt', status: 'completed' })))).toMatchObject({ code: 'BAD_REQUEST', message: 'Job is not an encrypt job' });
    expect(thrown(() => assertDecryptSource(job({ status: 'failed' })))).toMatchObject({ code: 'BAD_REQUEST', message: 'Encrypt job is failed, not completed' });
  });

  it('wants data ending with _<jobId>_<action>', () => {
    expect(() => assertJobAction({ extra: [ID, 'download'] }, ID, 'download')).not.toThrow();
    expect(thrown(() => assertJobAction({ extra: [ID, 'delete'] }, ID, 'download'))).toMatchObject({ code: 'BAD_REQUEST', message: 'data must end with _<jobId>_download' });
    expect(thrown(() => assertJobAction({ extra: ['other', 'delete'] }, ID, 'delete'))).toMatchObject({ code: 'BAD_REQUEST', message: 'data must end with _<jobId>_delete' });
  });

  it("wants the job's secret and chain in data", () => {
    expect(() => assertJobSecret({ subject: '7', chainId: -1 }, job())).not.toThrow();
    expect(thrown(() => assertJobSecret({ subject: '8', chainId: -1 }, job())).message).toBe('secretId does not match the job');
    expect(thrown(() => assertJobSecret({ subject: '7', chainId: 5 }, job())).code).toBe('BAD_REQUEST');
  });

  it('counts the owner and a delegate that is set as recipients, nobody else', () => {
    expect(isRecipientOf({ owner: 'o', delegate: 'd' }, 'o')).toBe(true);
    expect(isRecipientOf({ owner: 'o', delegate: 'd' }, 'd')).toBe(true);
    expect(isRecipientOf({ owner: 'o', delegate: null }, 'x')).toBe(false);
  });

  it('lists newest first, then by id', () => {
    const row = (id: string, createdAt: number) => ({ ...viewOf(job({ id, createdAt })), isSigner: true, isRecipient: false }) satisfies ListedJob;
    const rows = [row('b', 1), row('c', 2), row('a', 1)].sort(compareListed);
    expect(rows.map((r) => r.id)).toEqual(['c', 'a', 'b']);
  });
});
