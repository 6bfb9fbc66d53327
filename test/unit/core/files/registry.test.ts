/**
 * The jobs of one coordinator (src/core/files/registry.ts) with stubbed deps (CONTRIBUTING.md rule
 * 12): a launched job takes its slot, its principal's share and its size of the disk budget at once;
 * its gauge moves pending → processing → gone with one duration; a job that stops is recorded
 * `failed` with the reason docs/http.md shows and logged only when the cause was unexpected; result
 * files count in the budget until removed; an upload whose sender is not verified yet counts only
 * once its spool is claimed.
 */
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { createJobRegistry, type JobRegistry, type JobRun } from '../../../../src/core/files/registry.ts';
import { FAILED_JOB_TTL_MS } from '../../../../src/core/files/rules.ts';
import { createSealedSpool } from '../../../../src/core/files/spool.ts';
import { createUploadBudget } from '../../../../src/core/files/upload-budget.ts';
import type { FileJobMetrics } from '../../../../src/core/files/types.ts';
import type { ResolvedSecret } from '../../../../src/core/secrets/types.ts';
import type { VerifiedCaller } from '../../../../src/core/sessions/types.ts';
import { AppError } from '../../../../src/errors/index.ts';
import { createLogger } from '../../../../src/log/index.ts';
import { cleanupStack, tempDir } from '../../../utils/temp.ts';
import { memoryRepo } from './fixtures.ts';

const stack = cleanupStack();
afterEach(() => stack.run());

const NOW = 1_700_000_000_000;
const SECRET = { secretId: 7, owner: 'owner' } as ResolvedSecret;
const caller = (principalId: string) => ({ chainId: -1, principalId }) as VerifiedCaller;

/** Metrics that remember every call, in order. */
function recordingMetrics() {
  const calls: string[] = [];
  const durations: Array<{ type: string; outcome: string }> = [];
  const metrics: FileJobMetrics = {
    jobs: { inc: (l) => calls.push(`+${l.type}:${l.state}`), dec: (l) => calls.push(`-${l.type}:${l.state}`) },
    bytes: { inc: (l, value) => calls.push(`${l.direction}=${value}`) },
    duration: { observe: (l) => durations.push(l) },
    uploads: { inc: (l) => calls.push(`upload:${l.order}`) },
    unverifiedBytes: { set: (value) => calls.push(`unverified=${value}`) },
    unverifiedRefusals: { inc: (l) => calls.push(`refused:${l.limit}`) },
  };
  return { metrics, calls, durations };
}

/** A logger whose lines are kept as parsed JSON. */
function recordingLogger() {
  const lines: Array<{ level: number; msg: string; jobId?: string }> = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(JSON.parse(chunk.toString()));
      done();
    },
  });
  return { logger: createLogger({ level: 'info', destination }), lines };
}

async function setup(options: { maxConcurrentJobs?: number; maxJobsPerPrincipal?: number; maxDiskBytes?: number } = {}) {
  const dir = await tempDir(stack);
  const repo = memoryRepo();
  const { metrics, calls, durations } = recordingMetrics();
  const { logger, lines } = recordingLogger();
  const stopping = new AbortController();
  let ids = 0;
  const registry = createJobRegistry(
    { dir, maxConcurrentJobs: options.maxConcurrentJobs ?? 4, maxJobsPerPrincipal: options.maxJobsPerPrincipal ?? 4, maxDiskBytes: options.maxDiskBytes ?? 1_000_000 },
    { jobs: repo, clock: () => NOW, logger, newId: () => `00000000-0000-4000-8000-${String(++ids).padStart(12, '0')}`, metrics, stopping: stopping.signal },
  );
  return { dir, repo, registry, calls, durations, lines, stopping };
}

/** Launch a stored job whose run waits until `finish` is called; `lifecycle` is the run's. */
async function launchHeld(registry: JobRegistry, principalId = 'signer', size = 10) {
  const job = registry.create('encrypt', caller(principalId), SECRET, 'a', size);
  await registry.record(job);
  let finish!: () => void;
  let lifecycle!: JobRun;
  registry.launch(job, (run) => {
    lifecycle = run;
    return new Promise<void>((resolve) => (finish = resolve));
  });
  return { job, lifecycle, finish };
}

describe('job registry', () => {
  it('takes a slot at launch and frees it when the run ends', async () => {
    const { registry } = await setup({ maxConcurrentJobs: 1 });
    const { job, finish } = await launchHeld(registry);
    expect(registry.isRunning(job.id)).toBe(true);
    expect(() => registry.assertJobSlot()).toThrow(expect.objectContaining({ code: 'OVERLOADED' }));
    finish();
    await registry.settled();
    expect(registry.isRunning(job.id)).toBe(false);
    expect(() => registry.assertJobSlot()).not.toThrow();
  });

  it("counts a running job for its signer only, and its size in the disk budget", async () => {
    const { registry } = await setup({ maxJobsPerPrincipal: 1, maxDiskBytes: 100 });
    const { finish } = await launchHeld(registry, 'signer', 60);
    expect(() => registry.assertPrincipalLimit('signer')).toThrow(expect.objectContaining({ code: 'RATE_LIMITED' }));
    expect(() => registry.assertPrincipalLimit('someone-else')).not.toThrow();
    expect(() => registry.assertCapacity(40)).not.toThrow();
    expect(() => registry.assertCapacity(41)).toThrow(expect.objectContaining({ code: 'OVERLOADED' }));
    finish();
    await registry.settled();
    expect(() => registry.assertCapacity(100)).not.toThrow();
  });

  it('finds running jobs with their live progress, stored ones from the repository, and no id that is not a UUID', async () => {
    const { repo, registry } = await setup();
    const { job, finish } = await launchHeld(registry);
    job.progress = 42;
    expect((await registry.find(job.id))?.progress).toBe(42);
    expect(registry.current({ ...job, progress: 0 }).progress).toBe(42);
    finish();
    await registry.settled();
    expect((await registry.find(job.id))?.progress).toBe(0);
    repo.get = () => Promise.reject(new Error('no lookup expected'));
    expect(await registry.find('../x')).toBeUndefined();
  });

  it('moves the gauge pending → processing, and drops it with one duration at the end', async () => {
    const { repo, registry, calls, durations } = await setup();
    const { job, lifecycle, finish } = await launchHeld(registry);
    expect(calls).toEqual(['+encrypt:pending']);
    await lifecycle.processing();
    expect(repo.jobs.get(job.id)?.status).toBe('processing');
    expect(calls).toEqual(['+encrypt:pending', '-encrypt:pending', '+encrypt:processing']);
    lifecycle.end('completed');
    expect(calls.at(-1)).toBe('-encrypt:processing');
    expect(durations).toEqual([{ type: 'encrypt', outcome: 'completed' }]);
    finish();
  });

  it('drops a job that never got to processing from the pending gauge', async () => {
    const { registry, calls, durations } = await setup();
    const { lifecycle, finish } = await launchHeld(registry);
    lifecycle.end('failed');
    expect(calls).toEqual(['+encrypt:pending', '-encrypt:pending']);
    expect(durations).toEqual([{ type: 'encrypt', outcome: 'failed' }]);
    finish();
  });

  it('writes a final state before it shows it: a failed write leaves the job as it was', async () => {
    const { repo, registry } = await setup();
    const job = registry.create('encrypt', caller('signer'), SECRET, 'a', 10);
    repo.put = () => Promise.reject(new Error('disk full'));
    await expect(registry.complete(job)).rejects.toThrow('disk full');
    expect(job).toMatchObject({ status: 'pending', progress: 0, completedAt: null });
  });

  it('records a completed job at 100 %, and a failed one with its reason and the failed TTL', async () => {
    const { repo, registry } = await setup();
    const done = registry.create('encrypt', caller('signer'), SECRET, 'a', 10);
    await registry.complete(done);
    expect(repo.jobs.get(done.id)).toMatchObject({ status: 'completed', progress: 100, completedAt: NOW });
    const failed = registry.create('decrypt', caller('signer'), SECRET, 'a', 10);
    await registry.fail(failed, 'why');
    expect(repo.jobs.get(failed.id)).toMatchObject({ status: 'failed', error: 'why', completedAt: NOW, ttl: FAILED_JOB_TTL_MS });
  });

  it('logs an unexpected failure by job type, not an expected one, and records both failed', async () => {
    const { repo, registry, lines } = await setup();
    const encrypt = registry.create('encrypt', caller('signer'), SECRET, 'a', 10);
    await registry.abandon(encrypt, new Error('EIO'));
    const decrypt = registry.create('decrypt', caller('signer'), SECRET, 'a', 10);
    await registry.abandon(decrypt, new AppError('DECRYPTION_FAILED', 'Integrity check failed'));
    expect(lines.map((l) => [l.msg, l.jobId])).toEqual([['encrypt job failed', encrypt.id]]);
    expect(repo.jobs.get(encrypt.id)).toMatchObject({ status: 'failed', error: 'Encryption failed' });
    expect(repo.jobs.get(decrypt.id)).toMatchObject({ status: 'failed', error: 'Integrity check failed' });
  });

  it('records a job stopped by the coordinator as interrupted, without an error line', async () => {
    const { repo, registry, lines, stopping } = await setup();
    stopping.abort();
    const job = registry.create('decrypt', caller('signer'), SECRET, 'a', 10);
    await registry.abandon(job, new Error('aborted'));
    expect(lines).toEqual([]);
    expect(repo.jobs.get(job.id)?.error).toBe('Interrupted: the coordinator stopped');
  });

  it('logs a failed job it could not record, and does not throw', async () => {
    const { repo, registry, lines } = await setup();
    const job = registry.create('decrypt', caller('signer'), SECRET, 'a', 10);
    repo.put = () => Promise.reject(new Error('disk full'));
    await registry.abandon(job, new AppError('DECRYPTION_FAILED', 'x'));
    expect(lines.map((l) => l.msg)).toEqual(['could not record a failed job']);
  });

  it('counts result files found at start and written later in the disk budget until they are removed', async () => {
    const { dir, registry, calls } = await setup({ maxDiskBytes: 100 });
    const id = '00000000-0000-4000-8000-0000000000aa';
    await mkdir(join(dir, 'results'));
    await writeFile(join(dir, 'results', `${id}.zip`), Buffer.alloc(60));
    await writeFile(join(dir, 'results', 'unrelated.tmp'), Buffer.alloc(60));
    await registry.loadResults();
    expect(() => registry.assertCapacity(41)).toThrow(expect.objectContaining({ code: 'OVERLOADED' }));
    await registry.removeResult(id);
    expect(await readdir(join(dir, 'results'))).toEqual(['unrelated.tmp']);
    expect(() => registry.assertCapacity(100)).not.toThrow();

    registry.resultWritten('00000000-0000-4000-8000-0000000000bb', 100, 80);
    expect(calls).toEqual(['result=80']);
    expect(() => registry.assertCapacity()).toThrow(expect.objectContaining({ code: 'OVERLOADED' }));
  });

  it("counts an upload's spool in the disk budget until it closes, and its bytes once", async () => {
    const { registry, calls } = await setup({ maxDiskBytes: 100 });
    await mkdir(registry.paths.spoolDir);
    const spool = await createSealedSpool(registry.paths.spoolDir, { chunkBytes: 16 });
    stack.push(() => spool.dispose());
    registry.trackSpool(spool);
    await pipeline(Readable.from([Buffer.alloc(70, 'x')]), spool);
    expect(() => registry.assertCapacity(31)).toThrow(expect.objectContaining({ code: 'OVERLOADED' }));
    await spool.dispose();
    expect(calls).toEqual(['upload=70']);
    expect(() => registry.assertCapacity(100)).not.toThrow();
  });

  /** A spool of `bytes` written by an upload whose sender is not verified yet, tracked with its hold on a budget of its own. */
  async function unverifiedSpool(registry: JobRegistry, bytes: number) {
    const budget = createUploadBudget({ perAddressBytes: 1000, totalBytes: 1000 }, { logger: recordingLogger().logger });
    await mkdir(registry.paths.spoolDir, { recursive: true });
    const hold = budget.hold('10.0.0.1');
    const spool = await createSealedSpool(registry.paths.spoolDir, { chunkBytes: 16 }, { admit: (n) => hold.take(n) });
    stack.push(() => spool.dispose());
    registry.trackSpool(spool, hold);
    await pipeline(Readable.from([Buffer.alloc(bytes, 'x')]), spool);
    return { budget, spool };
  }

  it("leaves an unverified upload's spool out of the disk budget until it is claimed, then counts it there", async () => {
    const { registry } = await setup({ maxDiskBytes: 100 });
    const { budget, spool } = await unverifiedSpool(registry, 70);
    // 70 unverified bytes: the budget holds them, the disk budget does not.
    expect(budget.heldBytes()).toBe(70);
    expect(() => registry.assertCapacity(100)).not.toThrow();
    registry.claimSpool(spool);
    expect(budget.heldBytes()).toBe(0);
    expect(() => registry.assertCapacity(31)).toThrow(expect.objectContaining({ code: 'OVERLOADED' }));
    // Claimed once: a second claim changes nothing.
    registry.claimSpool(spool);
    await spool.dispose();
    expect(() => registry.assertCapacity(100)).not.toThrow();
  });

  it('refuses to claim a spool the disk budget cannot take (503, nothing moved), and releases its hold when it closes', async () => {
    const { registry } = await setup({ maxDiskBytes: 100 });
    registry.resultWritten('00000000-0000-4000-8000-0000000000cc', 50, 50);
    const { budget, spool } = await unverifiedSpool(registry, 60);
    expect(() => registry.claimSpool(spool)).toThrow(expect.objectContaining({ code: 'OVERLOADED' }));
    expect(budget.heldBytes()).toBe(60);
    await spool.dispose();
    expect(budget.heldBytes()).toBe(0);
    expect(() => registry.assertCapacity(50)).not.toThrow();
  });
});
