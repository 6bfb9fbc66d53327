/**
 * File jobs across a `kill -9` of their coordinator (docs/http.md, Files and jobs → Durability), with
 * real processes: a job found `processing` at start was interrupted and is marked `failed`, its spool
 * and partial result are gone, and a job that had completed still downloads, byte for byte.
 */
import { existsSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from 'quorumkeep/testing';
import { BOUNDARY, downloadJob, multipartStream, patterned, postMultipart, unzip, waitForJob, type JobStatus } from '../utils/files.ts';
import { getJson, postJson } from '../utils/http.ts';
import { startProcessCluster } from '../utils/process-cluster.ts';
import { outboxPrincipalWithSession } from '../utils/process-web2.ts';
import { cleanupStack, tempDir } from '../utils/temp.ts';

/** Small chunks: many ML-KEM encapsulations, so the large job stays `processing` for seconds. */
const CHUNK_BYTES = 64 * 1024;
const MAX_FILE_BYTES = 512 * 1024 * 1024;
/** The job that is killed: 4,096 chunks. */
const LARGE_FILE_BYTES = 256 * 1024 * 1024;
/** The job that finishes: four chunks, the last one short. */
const SMALL_FILE_BYTES = 3 * CHUNK_BYTES + 1234;
/** A 256 MiB upload on a busy 2-core machine outlasts the default 30 s request deadline. */
const REQUEST_TIMEOUT_MS = 600_000;

const stack = cleanupStack();
afterEach(() => stack.run());

/** The encrypt form, in the client's field order, with the file's bytes produced lazily by `file`. */
function encryptForm(file: AsyncIterable<Buffer>, filename: string, secretId: number, signed: { data: string; signature: string }): Readable {
  async function* body() {
    yield Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\nContent-Type: application/octet-stream\r\n\r\n`);
    yield* file;
    yield Buffer.from('\r\n');
    // The text fields and the closing boundary, as the shared helper writes them.
    const fields = multipartStream([
      { name: 'secretId', value: String(secretId) },
      { name: 'data', value: signed.data },
      { name: 'signature', value: signed.signature },
    ]);
    for await (const chunk of fields) yield chunk as Buffer;
  }
  return Readable.from(body());
}

/** `size` bytes, generated a MiB at a time (never held whole in memory); each MiB differs. */
async function* generated(size: number): AsyncGenerator<Buffer> {
  const MIB = 1024 * 1024;
  for (let at = 0; at < size; at += MIB) yield patterned(Math.min(MIB, size - at), at / MIB);
}

async function jobStatus(base: string, jobId: string): Promise<JobStatus> {
  const res = await getJson<{ job: JobStatus }>(`${base}/jobs/${jobId}/status`);
  if (res.status !== 200) throw new Error(`status of ${jobId}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.job;
}

/** POST /encrypt-file with `form`; the job's id. */
async function startEncrypt(base: string, form: Readable): Promise<string> {
  const res = await postMultipart(`${base}/encrypt-file`, form);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.jobId as string;
}

describe('file jobs and kill -9 of their coordinator (real CLI, child processes)', () => {
  it("a killed coordinator's interrupted file job is failed after restart, and finished ones still download", async () => {
    const dir = await tempDir(stack, 'qk-files-kill9-');
    const pc = await startProcessCluster(dir, {
      size: 3,
      threshold: 2,
      configure: (_i, config) => ({
        ...config,
        http: { ...(config.http as Record<string, unknown>), requestTimeoutMs: REQUEST_TIMEOUT_MS },
        files: { chunkBytes: CHUNK_BYTES, maxFileBytes: MAX_FILE_BYTES },
      }),
    });
    stack.push(() => pc.stopAll());
    const A = pc.urls[0]!;
    const filesDir = join(pc.dataDir(0), 'files');
    const spoolDir = join(filesDir, 'spool');
    const resultDir = join(filesDir, 'results');
    const failureContext = () => `node-0 output:\n${pc.output(0)}`;
    await waitFor(async () => (await getJson<{ cluster: { reachable: number } }>(`${A}/healthz`)).body.cluster.reachable === 3, {
      timeoutMs: 30_000,
      description: 'node-0 to reach every node',
    });

    const alice = await outboxPrincipalWithSession(pc, A, 'alice');
    const created = await postJson<{ secretId: number }>(`${A}/web2/secret`, alice.signed(0));
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const secretId = created.body.secretId;

    // The finished job.
    const smallContent = patterned(SMALL_FILE_BYTES, 7);
    const { data, signature } = alice.signed(secretId);
    const smallId = await startEncrypt(
      A,
      multipartStream([
        { name: 'file', filename: 'small.bin', content: smallContent },
        { name: 'secretId', value: String(secretId) },
        { name: 'data', value: data },
        { name: 'signature', value: signature },
      ]),
    );
    await waitForJob(A, smallId, 'completed', 60_000);
    const before = await downloadJob(A, smallId);
    expect(before.status).toBe(200);
    const metadataBefore = JSON.parse((await unzip(before.bytes)).get('metadata.json')!.toString('utf8')) as { originalSize: number; chunkCount: number };
    expect(metadataBefore).toMatchObject({ originalSize: SMALL_FILE_BYTES, chunkCount: 4 });

    // The interrupted job: killed while it writes its archive (spool and partial result on disk).
    const largeId = await startEncrypt(A, encryptForm(generated(LARGE_FILE_BYTES), 'large.bin', secretId, alice.signed(secretId)));
    const partial = join(resultDir, `${largeId}.zip.partial`);
    const running = await waitFor(
      async () => {
        const job = await jobStatus(A, largeId);
        if (job.status === 'pending' || (job.status === 'processing' && (job.progress === 0 || !existsSync(partial)))) return undefined;
        return job;
      },
      { timeoutMs: 60_000, intervalMs: 50, description: 'the large job to be processing' },
    );
    expect(running.status, `the large job ended before it could be killed (make it larger): ${JSON.stringify(running)}`).toBe('processing');
    expect(running.progress).toBeLessThan(100);
    expect(await readdir(spoolDir)).toHaveLength(1);
    await pc.kill9(0);
    // Nothing ran at the kill: what the crash left is still there for the restart to clean.
    expect(existsSync(partial)).toBe(true);

    await pc.start(0);
    const failed = await waitFor(
      async () => {
        const job = await jobStatus(A, largeId);
        return job.status === 'processing' || job.status === 'pending' ? undefined : job;
      },
      { timeoutMs: 30_000, description: 'the interrupted job to be marked' },
    );
    expect(failed, failureContext()).toMatchObject({ id: largeId, status: 'failed', originalSize: LARGE_FILE_BYTES });
    // The restart's reason: a SIGKILL runs no stop code, so nothing marked it before.
    expect(failed.error).toMatch(/interrupted/i);
    expect(failed.error).toMatch(/restart/i);
    expect(failed.progress).toBeLessThan(100);
    expect(failed.completedAt).toEqual(expect.any(Number));

    const largeDownload = await downloadJob(A, largeId);
    expect(largeDownload.status, largeDownload.bytes.toString('utf8')).toBe(400);
    expect(JSON.parse(largeDownload.bytes.toString('utf8'))).toMatchObject({ code: 'BAD_REQUEST' });

    expect(await jobStatus(A, smallId)).toMatchObject({ status: 'completed', progress: 100, error: null });
    const after = await downloadJob(A, smallId);
    expect(after.status).toBe(200);
    expect(after.headers.get('content-type')).toMatch(/^application\/zip/);
    expect(after.bytes.equals(before.bytes)).toBe(true);
    const entries = await unzip(after.bytes);
    expect([...entries.keys()]).toEqual(['chunk_0.enc', 'chunk_1.enc', 'chunk_2.enc', 'chunk_3.enc', 'metadata.json']);

    // Only the finished result is left: no spool, no partial archive.
    expect(await readdir(spoolDir)).toEqual([]);
    expect(await readdir(resultDir)).toEqual([`${smallId}.zip`]);
  }, 300_000);
});
