/**
 * POST /decrypt-file and POST /decrypt-existing-file through a real cluster of five members, two of
 * them coordinators (docs/api.md, Files and jobs): files encrypted on one coordinator come back byte
 * for byte through either decrypt route, on either coordinator; every refusal the contract names;
 * tampered archives fail by their GCM tags or by `originalHash`; the plaintext result is never on
 * disk in clear, needs the owner's or delegate's signature to download, and expires.
 */
import { existsSync } from 'node:fs';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalCluster, waitFor, type LocalCluster } from 'quorumkeep/testing';
import { getJson, postJson } from '../utils/http.ts';
import { expectApiError } from '../utils/web2.ts';
import { principalWithSession, type Principal } from '../utils/session.ts';
import { downloadJob, multipartStream, patterned, postMultipart, unzip, waitForJob, zipOf, type JobStatus, uniqueTimestamps } from '../utils/files.ts';

const CHUNK = 1000;
const MAX_FILE = 8000;
const HOUR_MS = 60 * 60 * 1000;

let cluster: LocalCluster;
let A: string;
let B: string;
let alice: Principal;
let bob: Principal;
let secretId: number;
let otherSecretId: number;
let clockOffset = 0;
/** A timestamp no other signed string of this file has (decrypt strings are single use). */
const at = uniqueTimestamps(() => clockOffset);

beforeAll(async () => {
  cluster = await startLocalCluster({
    size: 5,
    threshold: 3,
    coordinators: 2,
    clock: () => Date.now() + clockOffset,
    nodeConfig: { files: { chunkBytes: CHUNK, maxFileBytes: MAX_FILE, sweepIntervalMs: 100 } },
  });
  [A, B] = cluster.coordinators as [string, string];
  alice = await principalWithSession(cluster, A, 'alice');
  bob = await principalWithSession(cluster, A, 'bob');
  for (const target of ['main', 'other'] as const) {
    const created = await postJson<{ secretId: number }>(`${A}/web2/secret`, alice.signed(0, undefined, at()));
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    if (target === 'main') secretId = created.body.secretId;
    else otherSecretId = created.body.secretId;
  }
  // Both coordinators serve both secrets before the tests start.
  await cluster.waitForConvergence();
}, 90_000);
afterAll(() => cluster?.stop());

/** Encrypt `content` on `base`; the finished job's id and its `.cifer` archive. */
async function encrypted(content: Buffer, filename = 'blob', base = A, secret = secretId): Promise<{ jobId: string; zip: Buffer }> {
  const started = await postMultipart(
    `${base}/encrypt-file`,
    multipartStream([{ name: 'file', filename, content }, { name: 'secretId', value: String(secret) }, ...signedFields(alice.signed(secret, undefined, at()))]),
  );
  expect(started.status, JSON.stringify(started.body)).toBe(200);
  const jobId = started.body.jobId as string;
  await waitForJob(base, jobId);
  const download = await downloadJob(base, jobId);
  expect(download.status).toBe(200);
  return { jobId, zip: download.bytes };
}

function signedFields(signed: { data: string; signature: string }) {
  return [
    { name: 'data', value: signed.data },
    { name: 'signature', value: signed.signature },
  ];
}

/** POST /decrypt-file with `zip`, signed by `who` for `secret`. */
function decryptFile(base: string, zip: Buffer, who: Principal = alice, secret = secretId) {
  return postMultipart(`${base}/decrypt-file`, multipartStream([{ name: 'file', filename: 'x.cifer', content: zip }, ...signedFields(who.signed(secret, undefined, at()))]));
}

/** Download a decrypt job's plaintext from `base` with `who`'s signature. */
function downloadPlain(base: string, job: JobStatus | string, who: Principal = alice) {
  const id = typeof job === 'string' ? job : job.id;
  return downloadJob(base, id, who.signed(secretId, `${id}_download`, at()));
}

function filesDir(slot: number): string {
  const config = cluster.members[slot]!.config;
  return config.files.dir || join(config.dataDir, 'files');
}

describe('round trips: encrypt on A, decrypt on either coordinator', () => {
  it.each([0, 1, CHUNK - 1, CHUNK, CHUNK + 1, 3 * CHUNK + 500])('%i bytes: decrypt-file on B and decrypt-existing-file on A give the file back byte for byte', async (size) => {
    const content = patterned(size, size);
    const { jobId, zip } = await encrypted(content);

    const started = await decryptFile(B, zip);
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    expect(started.body).toMatchObject({ success: true, jobId: expect.stringMatching(/^[0-9a-f-]{36}$/), message: expect.any(String) });
    const job = await waitForJob(B, started.body.jobId as string);
    expect(job).toMatchObject({ type: 'decrypt', status: 'completed', progress: 100, secretId, chainId: -1, resultFileName: 'blob', originalSize: size, ttl: 3 * HOUR_MS, signerPrincipalId: alice.principalId, secretOwnerPrincipalId: alice.principalId, error: null });
    const plain = await downloadPlain(B, job);
    expect(plain.status).toBe(200);
    expect(plain.headers.get('content-type')).toBe('application/octet-stream');
    expect(plain.headers.get('content-length')).toBe(String(size));
    expect(plain.headers.get('content-disposition')).toBe('attachment; filename="blob"');
    expect(plain.bytes.equals(content)).toBe(true);

    const existing = await postJson<{ jobId: string }>(`${A}/decrypt-existing-file`, { encryptJobId: jobId, ...alice.signed(secretId, undefined, at()) });
    expect(existing.status, JSON.stringify(existing.body)).toBe(200);
    const again = await waitForJob(A, existing.body.jobId);
    const plainAgain = await downloadPlain(A, again);
    expect(plainAgain.status).toBe(200);
    expect(plainAgain.bytes.equals(content)).toBe(true);
  }, 60_000);

  it('keeps a UTF-8 name and a name with `"` through the round trip', async () => {
    for (const name of ['naïve 文件.txt', 'say "hi".txt']) {
      const content = patterned(1500, 3);
      const { zip } = await encrypted(content, name);
      const started = await decryptFile(A, zip);
      expect(started.status, JSON.stringify(started.body)).toBe(200);
      const job = await waitForJob(A, started.body.jobId as string);
      expect(job.resultFileName).toBe(name);
      const plain = await downloadPlain(A, job);
      expect(plain.bytes.equals(content)).toBe(true);
      const disposition = plain.headers.get('content-disposition')!;
      expect(decodeURIComponent(/filename\*=UTF-8''(.+)$/.exec(disposition)![1]!)).toBe(name);
    }
  }, 60_000);

  it('a delegate may decrypt; the plaintext result is sealed on disk, never in clear', async () => {
    const marker = Buffer.from('QUORUMKEEP-PLAINTEXT-MARKER-'.repeat(40));
    const { zip } = await encrypted(marker);
    expect((await postJson(`${A}/web2/setDelegate`, alice.signed(secretId, bob.principalId, at()))).status).toBe(200);
    try {
      await cluster.waitForConvergence();
      const started = await decryptFile(A, zip, bob);
      expect(started.status, JSON.stringify(started.body)).toBe(200);
      const job = await waitForJob(A, started.body.jobId as string);
      const plain = await downloadJob(A, job.id, bob.signed(secretId, `${job.id}_download`, at()));
      expect(plain.bytes.equals(marker)).toBe(true);
      const results = join(filesDir(0), 'results');
      const names = await readdir(results);
      expect(names).toContain(`${job.id}.sealed`);
      for (const name of names) expect((await readFile(join(results, name))).includes('QUORUMKEEP-PLAINTEXT')).toBe(false);
    } finally {
      expect((await postJson(`${A}/web2/setDelegate`, alice.signed(secretId, '', at()))).status).toBe(200);
      await cluster.waitForConvergence();
    }
  }, 60_000);
});

describe('refusals', () => {
  let sample: { jobId: string; zip: Buffer };
  let entries: Map<string, Buffer>;
  beforeAll(async () => {
    sample = await encrypted(patterned(2500, 9));
    entries = await unzip(sample.zip);
    expect([...entries.keys()].sort()).toEqual(['chunk_0.enc', 'chunk_1.enc', 'chunk_2.enc', 'metadata.json']);
  }, 60_000);

  it('an archive without metadata.json, or without one of its chunks, is 400 naming what is missing', async () => {
    const noMeta = await zipOf([...entries].filter(([n]) => n !== 'metadata.json'));
    const a = await decryptFile(A, noMeta);
    expectApiError(a, 400, 'BAD_REQUEST');
    expect(a.body.error).toBe('Invalid ZIP format: missing metadata.json');
    const noChunk = await zipOf([...entries].filter(([n]) => n !== 'chunk_1.enc'));
    const b = await decryptFile(A, noChunk);
    expectApiError(b, 400, 'BAD_REQUEST');
    expect(b.body.error).toBe('Invalid ZIP format: missing chunk_1.enc');
    const notZip = await decryptFile(A, patterned(3000, 1));
    expectApiError(notZip, 400, 'BAD_REQUEST');
    expect(notZip.body.error).toMatch(/^Invalid ZIP format/);
  }, 30_000);

  it('a secretId in data that differs from the archive is 400; a chainId that differs is 400', async () => {
    const res = await decryptFile(A, sample.zip, alice, otherSecretId);
    expectApiError(res, 400, 'BAD_REQUEST');
    expect(res.body.error).toMatch(/secretId does not match/);
    const metadata = JSON.parse(entries.get('metadata.json')!.toString('utf8')) as Record<string, unknown>;
    const otherChain = await zipOf([...entries].map(([n, b]) => [n, n === 'metadata.json' ? Buffer.from(JSON.stringify({ ...metadata, chainId: 8453 })) : b]));
    const chain = await decryptFile(A, otherChain);
    expectApiError(chain, 400, 'BAD_REQUEST');
    expect(chain.body.error).toMatch(/chainId does not match/);
  }, 30_000);

  it('a stranger may not decrypt: 403, on both routes', async () => {
    expectApiError(await decryptFile(A, sample.zip, bob), 403, 'FORBIDDEN');
    expectApiError(await postJson(`${A}/decrypt-existing-file`, { encryptJobId: sample.jobId, ...bob.signed(secretId, undefined, at()) }), 403, 'FORBIDDEN');
  }, 30_000);

  it('decrypt-existing-file: unknown job 404, a decrypt job 400; a missing field 400', async () => {
    expectApiError(await postJson(`${A}/decrypt-existing-file`, { encryptJobId: '00000000-0000-4000-8000-000000000000', ...alice.signed(secretId, undefined, at()) }), 404, 'NOT_FOUND');
    const started = await decryptFile(A, sample.zip);
    const decryptJob = started.body.jobId as string;
    await waitForJob(A, decryptJob);
    const res = await postJson(`${A}/decrypt-existing-file`, { encryptJobId: decryptJob, ...alice.signed(secretId, undefined, at()) });
    expectApiError(res, 400, 'BAD_REQUEST');
    expect(res.body.error).toMatch(/not an encrypt job/);
    expectApiError(await postJson(`${A}/decrypt-existing-file`, alice.signed(secretId, undefined, at())), 400, 'VALIDATION_FAILED');
  }, 30_000);

  it('one signed string opens decryptions on one coordinator: the same string through the other is refused by the members', async () => {
    const signed = alice.signed(secretId, undefined, at());
    const form = () => multipartStream([{ name: 'file', filename: 'x.cifer', content: sample.zip }, ...signedFields(signed)]);
    const first = await postMultipart(`${A}/decrypt-file`, form());
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    // On the other coordinator the members, not the coordinator, keep the string for A: every member
    // A asked refuses, a retry could never pass, so the answer says why instead of a 503.
    expectApiError(await postMultipart(`${B}/decrypt-file`, form()), 403, 'FORBIDDEN');
    // A itself may use it again (docs/security.md, Share release: the client's second file of a block).
    const again = await postMultipart(`${A}/decrypt-file`, form());
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    await waitForJob(A, again.body.jobId as string);
  }, 30_000);

  it('a decrypt result downloads only with the owner or delegate signature: none 401, a stranger 403, another job id 400', async () => {
    const started = await decryptFile(A, sample.zip);
    const job = await waitForJob(A, started.body.jobId as string);
    expectApiError(await postJson(`${A}/jobs/${job.id}/download`, {}), 401, 'UNAUTHORIZED');
    expectApiError(await postJson(`${A}/jobs/${job.id}/download`, bob.signed(secretId, `${job.id}_download`, at())), 403, 'FORBIDDEN');
    expectApiError(await postJson(`${A}/jobs/${job.id}/download`, alice.signed(secretId, `${sample.jobId}_download`, at())), 400, 'BAD_REQUEST');
    expect((await downloadPlain(A, job)).status).toBe(200);
  }, 30_000);

  it('a sealed result tampered at its first chunk is a 400 JSON before any byte; further in, the connection ends short; mended, it downloads whole', async () => {
    const content = patterned(3 * CHUNK + 500, 21);
    const { jobId } = await encrypted(content);
    const started = await postJson<{ jobId: string }>(`${A}/decrypt-existing-file`, { encryptJobId: jobId, ...alice.signed(secretId, undefined, at()) });
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    const job = await waitForJob(A, started.body.jobId);
    const sealedPath = join(filesDir(0), 'results', `${job.id}.sealed`);
    const original = await readFile(sealedPath);
    const record = CHUNK + 16;
    try {
      const first = Buffer.from(original);
      first[5]! ^= 1;
      await writeFile(sealedPath, first);
      const refused = await downloadPlain(A, job);
      expect(refused.status).toBe(400);
      expect(refused.headers.get('content-type')).toMatch(/^application\/json/);
      expect(refused.headers.get('content-disposition')).toBeNull();
      expect(JSON.parse(refused.bytes.toString('utf8'))).toMatchObject({ code: 'DECRYPTION_FAILED' });

      const later = Buffer.from(original);
      later[2 * record + 5]! ^= 1;
      await writeFile(sealedPath, later);
      const res = await fetch(`${A}/jobs/${job.id}/download`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(alice.signed(secretId, `${job.id}_download`, at())) });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-length')).toBe(String(content.length));
      // Two chunks went out; the third fails its tag and the connection ends before Content-Length.
      await expect(res.arrayBuffer()).rejects.toThrow();
    } finally {
      await writeFile(sealedPath, original);
    }
    const whole = await downloadPlain(A, job);
    expect(whole.status).toBe(200);
    expect(whole.bytes.equals(content)).toBe(true);
  }, 60_000);

  it('a chunk swapped in from another file fails its GCM tag; chunk and cifer swapped together fail originalHash', async () => {
    const other = await encrypted(patterned(2500, 10));
    const otherEntries = await unzip(other.zip);
    const swapped = await zipOf([...entries].map(([n, b]) => [n, n === 'chunk_1.enc' ? otherEntries.get('chunk_1.enc')! : b]));
    const a = await decryptFile(A, swapped);
    expect(a.status, JSON.stringify(a.body)).toBe(200);
    const failed = await waitForJob(A, a.body.jobId as string, 'failed');
    expect(failed.error).toMatch(/chunk_1\.enc does not open/);

    const meta = JSON.parse(entries.get('metadata.json')!.toString('utf8')) as { cifers: string[] };
    const otherMeta = JSON.parse(otherEntries.get('metadata.json')!.toString('utf8')) as { cifers: string[] };
    const cifers = [...meta.cifers];
    cifers[1] = otherMeta.cifers[1]!;
    const both = await zipOf(
      [...entries].map(([n, b]) => [n, n === 'chunk_1.enc' ? otherEntries.get('chunk_1.enc')! : n === 'metadata.json' ? Buffer.from(JSON.stringify({ ...meta, cifers })) : b]),
    );
    const c = await decryptFile(A, both);
    expect(c.status, JSON.stringify(c.body)).toBe(200);
    const failedToo = await waitForJob(A, c.body.jobId as string, 'failed');
    expect(failedToo.error).toMatch(/Integrity check failed/);
    // A failed job leaves no result behind.
    expect(existsSync(join(filesDir(0), 'results', `${c.body.jobId as string}.sealed`))).toBe(false);
  }, 60_000);

  it('an archive over the upload limit is 413 JSON', async () => {
    const res = await decryptFile(A, patterned(MAX_FILE + 64 * 1024 + 16 * 2048, 2));
    expectApiError(res, 413, 'PAYLOAD_TOO_LARGE');
  }, 30_000);
});

describe('lifetime', () => {
  it('a decrypt result survives a coordinator restart, then expires after 3 hours with its file', async () => {
    const content = patterned(1200, 4);
    const { zip } = await encrypted(content);
    const started = await decryptFile(A, zip);
    const job = await waitForJob(A, started.body.jobId as string);
    await cluster.restartMember(0);
    const plain = await downloadPlain(A, job);
    expect(plain.status).toBe(200);
    expect(plain.bytes.equals(content)).toBe(true);

    const result = join(filesDir(0), 'results', `${job.id}.sealed`);
    expect(existsSync(result)).toBe(true);
    clockOffset = 3 * HOUR_MS + 1000;
    try {
      const expired = await waitFor(async () => {
        const res = await getJson<{ job: JobStatus }>(`${A}/jobs/${job.id}/status`);
        return res.body.job.status === 'expired' ? res.body.job : undefined;
      }, { timeoutMs: 10_000 });
      expect(expired.expiredAt).toEqual(expect.any(Number));
      expect(existsSync(result)).toBe(false);
      // Its session has expired by now too: what expired is public, and told without a signature.
      expectApiError(await postJson(`${A}/jobs/${job.id}/download`, {}), 404, 'NOT_FOUND');
    } finally {
      clockOffset = 0;
    }
  }, 90_000);
});
