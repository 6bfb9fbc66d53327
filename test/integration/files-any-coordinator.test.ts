/**
 * Any coordinator answers for any file job (docs/http.md, Files and jobs, Any coordinator): a job run
 * on coordinator A is polled, downloaded, deleted and listed through coordinator B, which forwards to
 * A over HTTP. Real cluster, real HTTP; multipart bodies built as streams (as in ./files.test.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { downloadJob, multipartStream, postMultipart, uniqueTimestamps, waitForJob } from '../utils/files.ts';
import { startLocalCluster, type LocalCluster } from 'quorumkeep/testing';
import { getJson, postJson, type JsonResponse } from '../utils/http.ts';
import { expectApiError } from '../utils/web2.ts';
import { newSessionWallet, principalWithSession, signData, type Principal } from '../utils/session.ts';

const CHUNK = 1000;
const MAX_FILE = 8000;
const FORWARDED = { 'X-Quorumkeep-Forwarded': '1' };

let cluster: LocalCluster;
/** Coordinator A (node-0) runs the jobs; B (node-1) is asked about them. */
let A: string;
let B: string;
let alice: Principal;
let bob: Principal;
let secretId: number;
/** A timestamp no other signed string of this file has (decrypt strings are single use). */
const at = uniqueTimestamps();

beforeAll(async () => {
  cluster = await startLocalCluster({
    size: 5,
    threshold: 3,
    coordinators: 2,
    nodeConfig: { files: { chunkBytes: CHUNK, maxFileBytes: MAX_FILE } },
  });
  [A, B] = cluster.coordinators as [string, string];
  alice = await principalWithSession(cluster, A, 'alice');
  bob = await principalWithSession(cluster, A, 'bob');
  const created = await postJson<{ secretId: number }>(`${A}/web2/secret`, alice.signed(0));
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  secretId = created.body.secretId;
  // B verifies the list's signed string against its own replica: let it hold the sessions and the secret.
  await cluster.waitForConvergence({ timeoutMs: 20_000 });
}, 120_000);
afterAll(() => cluster?.stop());

/** POST /encrypt-file on `url` as `p`, to Alice's secret; returns the job id. */
async function encryptOn(url: string, filename: string, content: Buffer, p: Principal = alice): Promise<string> {
  const signed = p.signed(secretId, undefined, at());
  const res = await postMultipart(
    `${url}/encrypt-file`,
    multipartStream([
      { name: 'file', filename, content },
      { name: 'secretId', value: String(secretId) },
      { name: 'data', value: signed.data },
      { name: 'signature', value: signed.signature },
    ]),
  );
  if (res.status !== 200 || typeof res.body.jobId !== 'string') throw new Error(`encrypt-file: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.jobId;
}

function content(size: number): Buffer {
  const out = Buffer.alloc(size);
  for (let i = 0; i < size; i++) out[i] = 0x41 + ((i * 7 + Math.floor(i / 26)) % 26);
  return out;
}

interface Job {
  id: string;
  status: string;
  createdAt: number;
  [k: string]: unknown;
}

interface Row extends Job {
  isSigner: boolean;
  isRecipient: boolean;
}

interface ListBody {
  success: boolean;
  jobs: Row[];
  count: number;
  includeExpired: boolean;
  unreachableCoordinators?: string[];
}

/** Poll the job's status on `url` until it is completed. */
const completedOn = (url: string, jobId: string): Promise<Job> => waitForJob(url, jobId);

function list(url: string, p: Principal, query = ''): Promise<JsonResponse<ListBody>> {
  return postJson<ListBody>(`${url}/jobs${query}`, p.signed(0));
}

describe('a job run on A, through B', () => {
  it('status on B follows the job to completed; download from B is the bytes A serves, with its headers', async () => {
    const jobId = await encryptOn(A, 'report.txt', content(2 * CHUNK + 13));
    const onB = await completedOn(B, jobId);
    const onA = await getJson<{ job: Job }>(`${A}/jobs/${jobId}/status`);
    expect(onB).toEqual(onA.body.job);

    const fromA = await downloadJob(A, jobId);
    const fromB = await downloadJob(B, jobId);
    expect(fromA.status).toBe(200);
    expect(fromB.status).toBe(200);
    expect(fromB.bytes.equals(fromA.bytes)).toBe(true);
    expect(fromB.headers.get('content-type')).toBe('application/zip');
    expect(fromB.headers.get('content-disposition')).toBe('attachment; filename="report.txt.cifer"');
    expect(fromB.headers.get('content-length')).toBe(String(fromA.bytes.length));
    // B's own headers stay on the answer.
    expect(fromB.headers.get('x-request-id')).toEqual(expect.any(String));
    expect(fromB.headers.get('x-content-type-options')).toBe('nosniff');

    // A signed body travels with the request; the holder checks it.
    const signed = await downloadJob(B, jobId, alice.signed(secretId, `${jobId}_download`));
    expect(signed.status).toBe(200);
    expect(signed.bytes.equals(fromA.bytes)).toBe(true);
    const forged = signData(newSessionWallet(), `-1_${secretId}_${alice.wallet.address}_${Date.now()}_${jobId}_download`);
    expectApiError(await postJson(`${B}/jobs/${jobId}/download`, forged), 403, 'FORBIDDEN');
  }, 90_000);

  it('delete on B: refused for a stranger, done for the signer; the job is expired on A', async () => {
    const jobId = await encryptOn(A, 'bobs.txt', content(10), bob);
    await completedOn(A, jobId);
    const carol = await principalWithSession(cluster, A, 'carol');
    expectApiError(await postJson(`${B}/jobs/${jobId}/delete`, carol.signed(secretId, `${jobId}_delete`)), 403, 'FORBIDDEN');
    const deleted = await postJson(`${B}/jobs/${jobId}/delete`, bob.signed(secretId, `${jobId}_delete`));
    expect(deleted.status, JSON.stringify(deleted.body)).toBe(200);
    expect(deleted.body).toEqual({ success: true, message: 'Job has been marked for deletion. Files will be cleaned up shortly.' });
    const onA = await getJson<{ job: Job }>(`${A}/jobs/${jobId}/status`);
    expect(onA.body.job).toMatchObject({ status: 'expired', expiredAt: expect.any(Number) });
    expectApiError(await postJson(`${B}/jobs/${jobId}/download`, {}), 404, 'NOT_FOUND');
    expectApiError(await postJson(`${B}/jobs/${jobId}/delete`, bob.signed(secretId, `${jobId}_delete`)), 404, 'NOT_FOUND');
  }, 90_000);

  it('the list on either coordinator merges both coordinators\' jobs, newest first, without duplicates', async () => {
    const onA = await encryptOn(A, 'on-a.txt', content(5));
    // Bob encrypts on B to Alice's secret: he signed it, she is its recipient.
    const onB = await encryptOn(B, 'on-b.txt', content(6), bob);
    await completedOn(A, onA);
    await completedOn(B, onB);

    for (const url of [A, B]) {
      const byAlice = await list(url, alice);
      expect(byAlice.status, JSON.stringify(byAlice.body)).toBe(200);
      expect(byAlice.body).toMatchObject({ success: true, includeExpired: false });
      expect(byAlice.body.unreachableCoordinators).toBeUndefined();
      const ids = byAlice.body.jobs.map((r) => r.id);
      expect(new Set(ids).size).toBe(ids.length);
      expect(byAlice.body.count).toBe(ids.length);
      const createdAt = byAlice.body.jobs.map((r) => r.createdAt);
      expect(createdAt).toEqual([...createdAt].sort((x, y) => y - x));
      expect(byAlice.body.jobs.find((r) => r.id === onA)).toMatchObject({ status: 'completed', isSigner: true, isRecipient: true });
      expect(byAlice.body.jobs.find((r) => r.id === onB)).toMatchObject({ isSigner: false, isRecipient: true, signerPrincipalId: bob.principalId });

      const byBob = await list(url, bob);
      expect(byBob.body.jobs.find((r) => r.id === onB)).toMatchObject({ isSigner: true, isRecipient: false });
      expect(byBob.body.jobs.find((r) => r.id === onA)).toBeUndefined();
    }

    // Expired jobs (bob's deleted one) only when asked, from A's side too.
    const withExpired = await list(B, bob, '?includeExpired=true');
    expect(withExpired.body.includeExpired).toBe(true);
    expect(withExpired.body.jobs.some((r) => r.status === 'expired' && r.signerPrincipalId === bob.principalId)).toBe(true);
    // The local answer's errors come back unchanged.
    expectApiError(await postJson(`${B}/jobs?includeExpired=maybe`, alice.signed(0)), 400, 'VALIDATION_FAILED');
    const forged = signData(newSessionWallet(), `-1_0_${alice.wallet.address}_${Date.now()}`);
    const refused = await postJson(`${B}/jobs`, forged);
    expectApiError(refused, 403, 'FORBIDDEN');
    expect(refused.body.unreachableCoordinators).toBeUndefined();
  }, 90_000);

  it('decrypt-existing-file on B for a job A ran: the decrypt job runs on A and answers on B', async () => {
    const plain = content(CHUNK + 7);
    const encryptJob = await encryptOn(A, 'secret.txt', plain);
    await completedOn(A, encryptJob);
    const started = await postJson<{ jobId: string }>(`${B}/decrypt-existing-file`, { encryptJobId: encryptJob, ...alice.signed(secretId, undefined, at()) });
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    const decryptJob = await completedOn(B, started.body.jobId);
    expect(decryptJob).toMatchObject({ type: 'decrypt', resultFileName: 'secret.txt' });
    // It ran where the encrypt job's result is.
    expect((await getJson(`${A}/jobs/${decryptJob.id}/status`, FORWARDED)).status).toBe(200);
    expect((await getJson(`${B}/jobs/${decryptJob.id}/status`, FORWARDED)).status).toBe(404);
    const result = await downloadJob(B, decryptJob.id, alice.signed(secretId, `${decryptJob.id}_download`, at()));
    expect(result.status).toBe(200);
    expect(result.headers.get('content-length')).toBe(String(plain.length));
    expect(result.bytes.equals(plain)).toBe(true);
  }, 90_000);

  it('a request already forwarded is answered locally: 404 on B for a job A holds', async () => {
    const jobId = await encryptOn(A, 'local-only.txt', content(3));
    await completedOn(A, jobId);
    expectApiError(await getJson(`${B}/jobs/${jobId}/status`, FORWARDED), 404, 'NOT_FOUND');
    expectApiError(await postJson(`${B}/jobs/${jobId}/download`, {}, FORWARDED), 404, 'NOT_FOUND');
    // A forwarded list is B's jobs only: A's job is not in it.
    const local = await postJson<ListBody>(`${B}/jobs`, alice.signed(0), FORWARDED);
    expect(local.status).toBe(200);
    expect(local.body.jobs.find((r) => r.id === jobId)).toBeUndefined();
  }, 60_000);

  it('an unknown job is 404 on B, for status, download and delete', async () => {
    const id = crypto.randomUUID();
    expectApiError(await getJson(`${B}/jobs/${id}/status`), 404, 'NOT_FOUND');
    expectApiError(await postJson(`${B}/jobs/${id}/download`, {}), 404, 'NOT_FOUND');
    expectApiError(await postJson(`${B}/jobs/${id}/delete`, alice.signed(secretId, `${id}_delete`)), 404, 'NOT_FOUND');
    expectApiError(await getJson(`${B}/jobs/not-a-uuid/status`), 404, 'NOT_FOUND');
  }, 30_000);

  it('B counts what it forwarded', async () => {
    const res = await fetch(`${B}/metrics`, { headers: { Authorization: `Bearer ${cluster.adminToken}` } });
    expect(res.status).toBe(200);
    const text = await res.text();
    const sample = (labels: string[]) =>
      [...text.matchAll(/^quorumkeep_job_forwards_total\{([^}]*)\} (\S+)$/gm)]
        .filter((m) => labels.every((l) => m[1]!.split(',').includes(l)))
        .reduce((sum, m) => sum + Number(m[2]), 0);
    expect(sample(['route="status"', 'outcome="forwarded"'])).toBeGreaterThan(0);
    expect(sample(['route="download"', 'outcome="forwarded"'])).toBeGreaterThan(0);
    expect(sample(['route="delete"', 'outcome="forwarded"'])).toBeGreaterThan(0);
    expect(sample(['route="status"', 'outcome="not_found"'])).toBeGreaterThan(0);
    expect(sample(['route="list"', 'outcome="merged"'])).toBeGreaterThan(0);
    expect(sample(['route="decrypt_existing"', 'outcome="forwarded"'])).toBe(1);
  }, 30_000);
});

describe('with A stopped', () => {
  it('status of A\'s job on B is 503 NOT_READY, the list on B is 200 naming A; both recover when A is back', async () => {
    const known = await encryptOn(A, 'before-stop.txt', content(4));
    await completedOn(B, known);
    // A job B never looked up: located afresh, not from B's cache.
    const unseen = await encryptOn(A, 'never-asked.txt', content(4));
    await completedOn(A, unseen);

    await cluster.stopMember(0);
    for (const id of [known, unseen]) {
      const status = await getJson(`${B}/jobs/${id}/status`);
      expectApiError(status, 503, 'NOT_READY');
      expect(status.body.unreachableCoordinators).toEqual(['node-0']);
      expect(status.headers.get('retry-after')).toBe(String(status.body.retryAfterSeconds));
    }
    expectApiError(await postJson(`${B}/jobs/${known}/download`, {}), 503, 'NOT_READY');

    const partial = await list(B, alice);
    expect(partial.status, JSON.stringify(partial.body)).toBe(200);
    expect(partial.body.unreachableCoordinators).toEqual(['node-0']);
    expect(partial.body.count).toBe(partial.body.jobs.length);
    expect(partial.body.jobs.find((r) => r.id === known)).toBeUndefined();

    await cluster.restartMember(0);
    const back = await getJson<{ job: Job }>(`${B}/jobs/${known}/status`);
    expect(back.status, JSON.stringify(back.body)).toBe(200);
    expect(back.body.job).toMatchObject({ id: known, status: 'completed' });
    const full = await list(B, alice);
    expect(full.body.unreachableCoordinators).toBeUndefined();
    expect(full.body.jobs.map((r) => r.id)).toEqual(expect.arrayContaining([known, unseen]));
  }, 120_000);
});
