/**
 * Plan limits on the file routes (docs/architecture.md, Usage and plan limits; docs/http.md, Files
 * and jobs): each of the six limit types answers its exact 429 through a file job, a job counts its
 * plaintext bytes when it completes, and a job that fails counts nothing. 5 members, 2 coordinators.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalCluster, waitFor, type LocalCluster } from 'quorumkeep/testing';
import { getJson, postJson, type JsonResponse } from '../utils/http.ts';
import { principalWithSession, type Principal } from '../utils/session.ts';
import { downloadJob, multipartStream, patterned, postMultipart, unzip, waitForJob, zipOf, uniqueTimestamps } from '../utils/files.ts';

const FILE = 1000;
const far = { bytesPerCycle: 1_000_000, requestsPerCycle: 1000, requestsPerSecond: 1000 };
const PLANS = [
  { id: 'roomy', cycle: 'monthly', encryption: far, decryption: far },
  // Room for one 1000-byte file each way, not two.
  { id: 'data', cycle: 'monthly', encryption: { ...far, bytesPerCycle: 1500 }, decryption: { ...far, bytesPerCycle: 1500 } },
  { id: 'requests', cycle: 'monthly', encryption: { ...far, requestsPerCycle: 1 }, decryption: { ...far, requestsPerCycle: 1 } },
  // One token, refilled once in 1000 s.
  { id: 'rate', cycle: 'monthly', encryption: { ...far, requestsPerSecond: 0.001 }, decryption: { ...far, requestsPerSecond: 0.001 } },
];

let cluster: LocalCluster;
let A: string;
let B: string;
/** A timestamp no other signed string of this file has (decrypt strings are single use). */
const at = uniqueTimestamps();

beforeAll(async () => {
  cluster = await startLocalCluster({
    size: 5,
    threshold: 3,
    coordinators: 2,
    nodeConfig: { files: { chunkBytes: 400, maxFileBytes: 8000 }, usage: { plans: PLANS, defaultPlan: 'roomy' } },
  });
  [A, B] = cluster.coordinators as [string, string];
}, 60_000);
afterAll(() => cluster?.stop());

interface User {
  p: Principal;
  secretId: number;
}

async function user(tag: string, planId: string): Promise<User> {
  const p = await principalWithSession(cluster, A, tag);
  const created = await postJson<{ secretId: number }>(`${A}/web2/secret`, p.signed(0, undefined, at()));
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  const auth = { Authorization: `Bearer ${cluster.adminToken}` };
  expect((await postJson(`${A}/admin/usage/plan`, { principalId: p.principalId, planId }, auth)).status).toBe(200);
  await waitFor(async () => (await getJson<{ planId: string }>(`${B}/admin/usage/plan/${p.principalId}`, auth)).body.planId === planId, { description: 'plan on B' });
  return { p, secretId: created.body.secretId };
}

function encryptFile(u: User, base = A): Promise<JsonResponse> {
  const signed = u.p.signed(u.secretId, undefined, at());
  return postMultipart(
    `${base}/encrypt-file`,
    multipartStream([
      { name: 'file', filename: 'f.bin', content: patterned(FILE, 5) },
      { name: 'secretId', value: String(u.secretId) },
      { name: 'data', value: signed.data },
      { name: 'signature', value: signed.signature },
    ]),
  );
}

function decryptExisting(u: User, encryptJobId: string, base = A): Promise<JsonResponse> {
  return postJson(`${base}/decrypt-existing-file`, { encryptJobId, ...u.p.signed(u.secretId, undefined, at()) });
}

/** The exact 429 of a plan limit (docs/http.md, Usage). */
function expectLimit(res: JsonResponse, limitType: string): void {
  expect(res.status, JSON.stringify(res.body)).toBe(429);
  expect(res.body).toMatchObject({ error: 'Limit exceeded', code: 'LIMIT_EXCEEDED', limitType, detail: expect.any(String) });
  const retry = res.body.retryAfterSeconds as number;
  expect(Number.isInteger(retry) && retry >= 1).toBe(true);
  expect(res.headers.get('retry-after')).toBe(String(retry));
}

/** An encrypt job that completed: its id. */
async function encrypted(u: User): Promise<string> {
  const res = await encryptFile(u);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  await waitForJob(A, res.body.jobId as string);
  return res.body.jobId as string;
}

/** What `base` reports of `u`'s usage. */
async function used(u: User, base = A): Promise<{ encryption: { used: number; count: number }; decryption: { used: number; count: number } }> {
  const res = await postJson<{ encryption: { used: number; count: number }; decryption: { used: number; count: number } }>(`${base}/jobs/dataConsumption`, u.p.signed(0, undefined, at()));
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
}

describe('plan limits through file jobs', () => {
  it('data limits: a job counts its plaintext bytes when it completes; a failed decrypt counts nothing; the next file over the limit is 429 on either coordinator', async () => {
    const u = await user('data', 'data');
    const jobId = await encrypted(u);
    expect((await used(u)).encryption).toMatchObject({ used: FILE, count: 1 });
    // Within the documented margin B may admit until A's count reaches it (a flush): then it refuses.
    await waitFor(async () => (await used(u, B)).encryption.used === FILE, { description: 'B to see the encrypt' });
    expectLimit(await encryptFile(u, B), 'encryption_data_limit');

    // A tampered archive: admitted, then the job fails, and its usage is taken back.
    const zip = (await downloadJob(A, jobId)).bytes;
    const entries = await unzip(zip);
    const chunk = Buffer.from(entries.get('chunk_1.enc')!);
    chunk[0] = chunk[0]! ^ 1;
    entries.set('chunk_1.enc', chunk);
    const signed = u.p.signed(u.secretId, undefined, at());
    const bad = await postMultipart(
      `${A}/decrypt-file`,
      multipartStream([{ name: 'file', filename: 'x.cifer', content: await zipOf(entries) }, { name: 'data', value: signed.data }, { name: 'signature', value: signed.signature }]),
    );
    expect(bad.status, JSON.stringify(bad.body)).toBe(200);
    await waitForJob(A, bad.body.jobId as string, 'failed');
    expect((await used(u)).decryption).toMatchObject({ used: 0, count: 0 });

    const ok = await decryptExisting(u, jobId);
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    await waitForJob(A, ok.body.jobId as string);
    expect((await used(u)).decryption).toMatchObject({ used: FILE, count: 1 });
    await waitFor(async () => (await used(u, B)).decryption.used === FILE, { description: 'B to see the decrypt' });
    expectLimit(await decryptExisting(u, jobId, B), 'decryption_data_limit');
  }, 60_000);

  it('request limits: one file job each way, the second is 429', async () => {
    const u = await user('requests', 'requests');
    const jobId = await encrypted(u);
    expectLimit(await encryptFile(u), 'encryption_request_limit');
    const ok = await decryptExisting(u, jobId);
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    await waitForJob(A, ok.body.jobId as string);
    expectLimit(await decryptExisting(u, jobId), 'decryption_request_limit');
  }, 60_000);

  it('rate limits: one token each way, the second job at once is 429', async () => {
    const u = await user('rate', 'rate');
    const jobId = await encrypted(u);
    expectLimit(await encryptFile(u), 'encryption_rate_limit');
    const ok = await decryptExisting(u, jobId);
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expectLimit(await decryptExisting(u, jobId), 'decryption_rate_limit');
  }, 60_000);
});
