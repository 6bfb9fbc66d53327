/**
 * POST /encrypt-file, GET /jobs/:jobId/status and POST /jobs/:jobId/download through a real local
 * cluster (docs/http.md, Files and jobs): multipart bodies built as streams, the `.cifer` ZIP unpacked, and
 * every chunk decrypted by the existing /decrypt-payload route, which proves the envelope end to end.
 */
import { createHash } from 'node:crypto';
import { request } from 'node:http';
import { existsSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import yauzl from 'yauzl';
import { startLocalCluster, waitFor, type LocalCluster } from 'quorumkeep/testing';
import { getJson, postJson, type JsonResponse } from '../utils/http.ts';
import { expectApiError } from '../utils/web2.ts';
import { newSessionWallet, principalWithSession, signData, type Principal } from '../utils/session.ts';

const CHUNK = 1000;
const MAX_FILE = 8000;
const SWEEP_MS = 100;
const BOUNDARY = '----quorumkeepFilesTest7MA4YWxkTrZu0gW';
const DAY_MS = 24 * 60 * 60 * 1000;

let cluster: LocalCluster;
let A: string;
let alice: Principal;
let secretId: number;
let clockOffset = 0;

beforeAll(async () => {
  cluster = await startLocalCluster({
    size: 3,
    threshold: 2,
    coordinators: 1,
    clock: () => Date.now() + clockOffset,
    nodeConfig: { files: { chunkBytes: CHUNK, maxFileBytes: MAX_FILE, sweepIntervalMs: SWEEP_MS } },
  });
  A = cluster.coordinators[0]!;
  alice = await principalWithSession(cluster, A, 'alice');
  const created = await postJson<{ secretId: number }>(`${A}/web2/secret`, alice.signed(0));
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  secretId = created.body.secretId;
}, 60_000);
afterAll(() => cluster?.stop());

interface Form {
  filename: string;
  content: Buffer;
  secretId: string | number;
  data: string;
  signature: string;
}

/** The client's form, in its field order, as a stream of parts (the file in pieces). */
function formStream(form: Form): Readable {
  const field = (name: string, value: string) => Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`);
  // The client escapes `"` (and CR, LF) as %22 and sends the rest as UTF-8.
  const wireName = form.filename.replace(/"/g, '%22');
  async function* parts() {
    yield Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="${wireName}"\r\nContent-Type: application/octet-stream\r\n\r\n`);
    for (let at = 0; at < form.content.length; at += 700) yield form.content.subarray(at, at + 700);
    yield Buffer.from('\r\n');
    yield field('secretId', String(form.secretId));
    yield field('data', form.data);
    yield field('signature', form.signature);
    yield Buffer.from(`--${BOUNDARY}--\r\n`);
  }
  return Readable.from(parts());
}

/** POST the form to `url` (coordinator A by default); `body` replaces the form's stream. */
function postForm(form: Form, url = A, body: Readable = formStream(form)): Promise<JsonResponse> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}/encrypt-file`, { method: 'POST', headers: { 'Content-Type': `multipart/form-data; boundary=${BOUNDARY}` } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: new Headers(res.headers as Record<string, string>), body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown> } as JsonResponse));
      res.on('error', reject);
    });
    req.on('error', reject);
    body.pipe(req);
  });
}

function encryptForm(filename: string, content: Buffer, p: Principal = alice): Form {
  return { filename, content, secretId, ...p.signed(secretId) };
}

interface Job {
  id: string;
  status: string;
  progress: number;
  [k: string]: unknown;
}

async function completedJob(jobId: string): Promise<Job> {
  return waitFor(async () => {
    const res = await getJson<{ job: Job }>(`${A}/jobs/${jobId}/status`);
    expect(res.status).toBe(200);
    if (res.body.job.status === 'failed') throw new Error(`job failed: ${JSON.stringify(res.body.job)}`);
    return res.body.job.status === 'completed' ? res.body.job : undefined;
  }, { timeoutMs: 20_000, intervalMs: 50 });
}

async function unzip(zip: Buffer): Promise<Map<string, Buffer>> {
  const zipfile = await new Promise<yauzl.ZipFile>((resolve, reject) => yauzl.fromBuffer(zip, { lazyEntries: true }, (err, z) => (err ? reject(err) : resolve(z))));
  const out = new Map<string, Buffer>();
  await new Promise<void>((resolve, reject) => {
    zipfile.on('entry', (entry: yauzl.Entry) => {
      zipfile.openReadStream(entry, (err, stream) => {
        if (err) return reject(err);
        const chunks: Buffer[] = [];
        stream.on('data', (c: Buffer) => chunks.push(c));
        stream.on('end', () => {
          out.set(entry.fileName, Buffer.concat(chunks));
          zipfile.readEntry();
        });
        stream.on('error', reject);
      });
    });
    zipfile.on('end', () => resolve());
    zipfile.on('error', reject);
    zipfile.readEntry();
  });
  return out;
}

interface Metadata {
  secretId: number;
  chainId: number;
  originalName: string;
  originalSize: number;
  originalHash: string;
  chunkCount: number;
  chunkSize: number;
  cifers: string[];
}

/** Encrypt, wait, download and unpack; checks what every result must satisfy, returns the pieces. */
async function roundTrip(filename: string, content: Buffer) {
  const started = await postForm(encryptForm(filename, content));
  expect(started.status, JSON.stringify(started.body)).toBe(200);
  expect(started.body).toMatchObject({ success: true, jobId: expect.stringMatching(/^[0-9a-f-]{36}$/), message: expect.any(String) });
  const jobId = started.body.jobId as string;
  const job = await completedJob(jobId);
  const download = await fetch(`${A}/jobs/${jobId}/download`, { method: 'POST' });
  expect(download.status).toBe(200);
  expect(download.headers.get('content-type')).toBe('application/zip');
  const zip = Buffer.from(await download.arrayBuffer());
  expect(download.headers.get('content-length')).toBe(String(zip.length));
  const entries = await unzip(zip);
  const metadata = JSON.parse(entries.get('metadata.json')!.toString('utf8')) as Metadata;
  return { jobId, job, metadata, entries, disposition: download.headers.get('content-disposition') };
}

async function decryptChunk(cifer: string, chunk: Buffer): Promise<string> {
  const res = await postJson<{ decryptedMessage: string }>(`${A}/decrypt-payload`, { cifer, inputFormat: 'base64', ...alice.signed(secretId, chunk.toString('base64')) });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.decryptedMessage;
}

/** ASCII content (so /decrypt-payload's UTF-8 answer is byte-exact), distinct per position. */
function content(size: number): Buffer {
  const out = Buffer.alloc(size);
  for (let i = 0; i < size; i++) out[i] = 0x41 + ((i * 7 + Math.floor(i / 26)) % 26);
  return out;
}

describe('POST /encrypt-file → status → download', () => {
  it.each([
    ['empty', 0],
    ['one byte', 1],
    ['chunk − 1', CHUNK - 1],
    ['chunk', CHUNK],
    ['chunk + 1', CHUNK + 1],
    ['multi-chunk', 3 * CHUNK + 517],
  ])('%s file: metadata, one chunk file per chunk, every chunk decrypts to the original', async (_label, size) => {
    const plain = content(size);
    const { jobId, job, metadata, entries, disposition } = await roundTrip('blob', plain);
    const chunkCount = Math.max(1, Math.ceil(size / CHUNK));
    expect(job).toMatchObject({
      id: jobId,
      type: 'encrypt',
      status: 'completed',
      progress: 100,
      secretId,
      chainId: -1,
      expiredAt: null,
      error: null,
      resultFileName: 'blob.cifer',
      ttl: 2 * DAY_MS,
      originalSize: size,
      signerPrincipalId: alice.principalId,
      secretOwnerPrincipalId: alice.principalId,
    });
    expect(Object.keys(job)).toEqual(['id', 'type', 'status', 'progress', 'secretId', 'chainId', 'createdAt', 'completedAt', 'expiredAt', 'error', 'resultFileName', 'ttl', 'originalSize', 'signerPrincipalId', 'secretOwnerPrincipalId']);
    expect(typeof job.createdAt).toBe('number');
    expect(job.completedAt as number).toBeGreaterThanOrEqual(job.createdAt as number);
    expect(disposition).toBe('attachment; filename="blob.cifer"');

    expect(metadata).toEqual({
      secretId,
      chainId: -1,
      originalName: 'blob',
      originalSize: size,
      originalHash: createHash('sha256').update(plain).digest('hex'),
      chunkCount,
      chunkSize: CHUNK,
      cifers: expect.any(Array),
    });
    expect(metadata.cifers).toHaveLength(chunkCount);
    expect([...entries.keys()].sort()).toEqual(['metadata.json', ...Array.from({ length: chunkCount }, (_, i) => `chunk_${i}.enc`)].sort());
    const decrypted: string[] = [];
    for (let i = 0; i < chunkCount; i++) {
      const chunk = entries.get(`chunk_${i}.enc`)!;
      expect(chunk.length).toBe(Math.min(CHUNK, size - i * CHUNK));
      expect(Buffer.from(metadata.cifers[i]!, 'base64')).toHaveLength(1104);
      // An empty chunk (an empty file's one chunk) has nothing to decrypt: a string with an empty
      // message is never a decrypt's (docs/security.md, Share release), so /decrypt-payload says 400.
      if (chunk.length === 0) {
        const res = await postJson<{ code: string }>(`${A}/decrypt-payload`, { ...alice.signed(secretId, ''), cifer: metadata.cifers[i], inputFormat: 'base64' });
        expect([res.status, res.body.code]).toEqual([400, 'BAD_REQUEST']);
        continue;
      }
      decrypted.push(await decryptChunk(metadata.cifers[i]!, chunk));
    }
    expect(decrypted.join('')).toBe(plain.toString('latin1'));
  }, 60_000);

  it('keeps a UTF-8 name and a name with `"`, and sends them safely in Content-Disposition', async () => {
    const utf8 = await roundTrip('résumé 履歴.txt', content(10));
    expect(utf8.metadata.originalName).toBe('résumé 履歴.txt');
    expect(utf8.job.resultFileName).toBe('résumé 履歴.txt.cifer');
    expect(utf8.disposition).toBe(`attachment; filename="r_sum_ __.txt.cifer"; filename*=UTF-8''${encodeURIComponent('résumé 履歴.txt.cifer')}`);

    const quoted = await roundTrip('say "hi".txt', content(10));
    expect(quoted.metadata.originalName).toBe('say "hi".txt');
    expect(quoted.disposition).toBe(`attachment; filename="say _hi_.txt.cifer"; filename*=UTF-8''say%20%22hi%22.txt.cifer`);
  }, 30_000);

  it('downloads with a valid signature too, and refuses an invalid one', async () => {
    const started = await postForm(encryptForm('signed', content(5)));
    const jobId = started.body.jobId as string;
    await completedJob(jobId);
    const signed = await fetch(`${A}/jobs/${jobId}/download`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(alice.signed(secretId, `${jobId}_download`)) });
    expect(signed.status).toBe(200);
    expect(signed.headers.get('content-type')).toBe('application/zip');
    const forged = signData(newSessionWallet(), `-1_${secretId}_${alice.wallet.address}_${Date.now()}_${jobId}_download`);
    expectApiError(await postJson(`${A}/jobs/${jobId}/download`, forged), 403, 'FORBIDDEN');
  }, 30_000);
});

describe('errors', () => {
  it('a form secretId that differs from data is 400', async () => {
    const form = { ...encryptForm('x', content(3)), secretId: secretId + 1000 };
    expectApiError(await postForm(form), 400, 'BAD_REQUEST');
  });

  it('a signature by another key is 403', async () => {
    const forged = signData(newSessionWallet(), `-1_${secretId}_${alice.wallet.address}_${Date.now()}`);
    expectApiError(await postForm({ filename: 'x', content: content(3), secretId, ...forged }), 403, 'FORBIDDEN');
  });

  it('an unknown secret is 404', async () => {
    expectApiError(await postForm({ filename: 'x', content: content(3), secretId: 999_999, ...alice.signed(999_999) }), 404, 'NOT_FOUND');
  });

  it('a file over files.maxFileBytes is 413 JSON', async () => {
    expectApiError(await postForm(encryptForm('big', content(MAX_FILE + 1))), 413, 'PAYLOAD_TOO_LARGE');
  });

  it('an unknown job is 404 for status and download', async () => {
    const id = crypto.randomUUID();
    expectApiError(await getJson(`${A}/jobs/${id}/status`), 404, 'NOT_FOUND');
    expectApiError(await postJson(`${A}/jobs/${id}/download`, {}), 404, 'NOT_FOUND');
    expectApiError(await getJson(`${A}/jobs/not-a-uuid/status`), 404, 'NOT_FOUND');
  });

  it('a client that disconnects mid-upload leaves no spool behind', async () => {
    const config = cluster.members[0]!.config;
    const spoolDir = join(config.files.dir || join(config.dataDir, 'files'), 'spool');
    const body = new Readable({ read() {} });
    body.push(Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="cut"\r\n\r\n`));
    body.push(content(3000));
    const req = request(`${A}/encrypt-file`, { method: 'POST', headers: { 'Content-Type': `multipart/form-data; boundary=${BOUNDARY}` } });
    req.on('error', () => undefined);
    body.pipe(req);
    await waitFor(async () => (await readdir(spoolDir)).length > 0, { timeoutMs: 10_000 });
    req.destroy();
    await waitFor(async () => (await readdir(spoolDir)).length === 0, { timeoutMs: 10_000 });
  });

  it('no spool is left behind by refused uploads', async () => {
    const spoolDir = join(cluster.members[0]!.config.files.dir || join(cluster.members[0]!.config.dataDir, 'files'), 'spool');
    await waitFor(async () => (await import('node:fs/promises')).readdir(spoolDir).then((names) => names.length === 0), { timeoutMs: 5000 });
  });
});

describe('restart', () => {
  it('a finished job survives a coordinator restart: status and download still answer', async () => {
    const started = await postForm(encryptForm('kept', content(5)));
    const jobId = started.body.jobId as string;
    const before = await completedJob(jobId);
    await cluster.restartMember(0);
    const after = await getJson<{ job: Job }>(`${A}/jobs/${jobId}/status`);
    expect(after.status).toBe(200);
    expect(after.body.job).toEqual(before);
    const download = await fetch(`${A}/jobs/${jobId}/download`, { method: 'POST' });
    expect(download.status).toBe(200);
    const entries = await unzip(Buffer.from(await download.arrayBuffer()));
    expect([...entries.keys()].sort()).toEqual(['chunk_0.enc', 'metadata.json']);
  }, 60_000);
});

describe('POST /jobs/:jobId/delete and POST /jobs (list)', () => {
  let bob: Principal;
  let carol: Principal;
  beforeAll(async () => {
    bob = await principalWithSession(cluster, A, 'bob');
    carol = await principalWithSession(cluster, A, 'carol');
  }, 30_000);

  interface Row extends Job {
    isSigner: boolean;
    isRecipient: boolean;
  }
  async function list(p: Principal, query = ''): Promise<JsonResponse<{ jobs: Row[]; count: number; includeExpired: boolean }>> {
    return postJson<{ jobs: Row[]; count: number; includeExpired: boolean }>(`${A}/jobs${query}`, p.signed(0));
  }
  const rowOf = (rows: Row[], id: string): Row | undefined => rows.find((r) => r.id === id);

  it('lists the jobs a caller signed and those on its secrets, and deletes for the signer or the owner only', async () => {
    const ownJob = (await postForm(encryptForm('mine', content(3)))).body.jobId as string;
    // Bob encrypts to Alice's secret: he signed it, she is its recipient.
    const bobsJob = (await postForm(encryptForm('his', content(4), bob))).body.jobId as string;
    await completedJob(ownJob);
    await completedJob(bobsJob);

    const byAlice = await list(alice);
    expect(byAlice.status).toBe(200);
    expect(byAlice.body).toMatchObject({ success: true, includeExpired: false });
    expect(byAlice.body.count).toBe(byAlice.body.jobs.length);
    expect(rowOf(byAlice.body.jobs, ownJob)).toMatchObject({ type: 'encrypt', status: 'completed', isSigner: true, isRecipient: true });
    expect(rowOf(byAlice.body.jobs, bobsJob)).toMatchObject({ isSigner: false, isRecipient: true, signerPrincipalId: bob.principalId });
    const byBob = await list(bob);
    expect(byBob.body.jobs.map((r) => r.id)).toEqual([bobsJob]);
    expect(byBob.body.jobs[0]).toMatchObject({ isSigner: true, isRecipient: false });
    expect((await list(carol)).body).toMatchObject({ jobs: [], count: 0 });

    // A stranger may not delete; a wrong suffix or secretId is refused.
    expectApiError(await postJson(`${A}/jobs/${ownJob}/delete`, carol.signed(secretId, `${ownJob}_delete`)), 403, 'FORBIDDEN');
    expectApiError(await postJson(`${A}/jobs/${ownJob}/delete`, alice.signed(secretId, `${ownJob}_download`)), 400, 'BAD_REQUEST');
    expectApiError(await postJson(`${A}/jobs/${ownJob}/delete`, alice.signed(secretId + 1, `${ownJob}_delete`)), 400, 'BAD_REQUEST');
    expectApiError(await postJson(`${A}/jobs/${ownJob}/delete`, {}), 400, 'VALIDATION_FAILED');

    // The job's signer deletes his job on someone else's secret; the owner deletes hers.
    const deleted = await postJson(`${A}/jobs/${bobsJob}/delete`, bob.signed(secretId, `${bobsJob}_delete`));
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({ success: true, message: 'Job has been marked for deletion. Files will be cleaned up shortly.' });
    expect((await postJson(`${A}/jobs/${ownJob}/delete`, alice.signed(secretId, `${ownJob}_delete`))).status).toBe(200);

    for (const id of [ownJob, bobsJob]) {
      const status = await getJson<{ job: Job }>(`${A}/jobs/${id}/status`);
      expect(status.body.job).toMatchObject({ status: 'expired', expiredAt: expect.any(Number) });
      expectApiError(await postJson(`${A}/jobs/${id}/download`, {}), 404, 'NOT_FOUND');
      expectApiError(await postJson(`${A}/jobs/${id}/delete`, alice.signed(secretId, `${id}_delete`)), 404, 'NOT_FOUND');
      const { config } = cluster.members[0]!;
      expect(existsSync(join(config.files.dir || join(config.dataDir, 'files'), 'results', `${id}.zip`))).toBe(false);
    }
    expect(rowOf((await list(alice)).body.jobs, ownJob)).toBeUndefined();
    const withExpired = await list(alice, '?includeExpired=true');
    expect(withExpired.body.includeExpired).toBe(true);
    expect(rowOf(withExpired.body.jobs, ownJob)).toMatchObject({ status: 'expired', isSigner: true });
    expect(rowOf((await list(bob, '?includeExpired=1')).body.jobs, bobsJob)).toMatchObject({ status: 'expired' });
    expectApiError(await list(alice, '?includeExpired=maybe'), 400, 'VALIDATION_FAILED');
  }, 60_000);
});

describe('limits and metrics (a coordinator with a small disk budget)', () => {
  const DISK_BUDGET = 4000;
  let small: LocalCluster;
  let S: string;
  let dave: Principal;
  let daveSecret: number;

  beforeAll(async () => {
    small = await startLocalCluster({
      size: 3,
      threshold: 2,
      coordinators: 1,
      nodeConfig: { files: { chunkBytes: CHUNK, maxFileBytes: MAX_FILE, maxDiskBytes: DISK_BUDGET, maxJobsPerPrincipal: 1 } },
    });
    S = small.coordinators[0]!;
    dave = await principalWithSession(small, S, 'dave');
    const created = await postJson<{ secretId: number }>(`${S}/web2/secret`, dave.signed(0));
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    daveSecret = created.body.secretId;
  }, 60_000);
  afterAll(() => small?.stop());

  async function metrics(): Promise<string> {
    const res = await fetch(`${S}/metrics`, { headers: { Authorization: `Bearer ${small.adminToken}` } });
    expect(res.status).toBe(200);
    return res.text();
  }
  /** Sum of a series' samples whose labels include every one of `labels`. */
  function sample(text: string, name: string, labels: string[] = []): number {
    return [...text.matchAll(new RegExp(`^${name}\\{([^}]*)\\} (\\S+)$`, 'gm'))]
      .filter((m) => labels.every((l) => m[1]!.split(',').includes(l)))
      .reduce((sum, m) => sum + Number(m[2]), 0);
  }

  it('counts job states, bytes and durations; refuses uploads with 503 before their body once the disk budget is used', async () => {
    const plain = content(3 * CHUNK);
    const form = { filename: 'fill', content: plain, secretId: daveSecret, ...dave.signed(daveSecret) };
    const started = await postForm(form, S);
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    const jobId = started.body.jobId as string;
    await waitFor(async () => (await getJson<{ job: Job }>(`${S}/jobs/${jobId}/status`)).body.job.status === 'completed', { timeoutMs: 20_000, intervalMs: 50 });
    const download = await fetch(`${S}/jobs/${jobId}/download`, { method: 'POST' });
    const resultBytes = (await download.arrayBuffer()).byteLength;
    expect(resultBytes).toBeGreaterThan(DISK_BUDGET);

    const text = await metrics();
    expect(sample(text, 'quorumkeep_file_bytes_total', ['direction="upload"'])).toBe(plain.length);
    expect(sample(text, 'quorumkeep_file_bytes_total', ['direction="result"'])).toBe(resultBytes);
    expect(sample(text, 'quorumkeep_file_job_duration_seconds_count', ['type="encrypt"', 'outcome="completed"'])).toBe(1);
    expect(sample(text, 'quorumkeep_file_jobs', ['state="pending"']) + sample(text, 'quorumkeep_file_jobs', ['state="processing"'])).toBe(0);

    // A body that never ends: the answer comes anyway, so the coordinator did not wait to read it.
    const stalled = new Readable({ read() {} });
    stalled.push(Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="more"\r\n\r\n`));
    const refused = await postForm(form, S, stalled);
    stalled.destroy();
    expectApiError(refused, 503, 'OVERLOADED');
    expect(refused.body.retryAfterSeconds).toEqual(expect.any(Number));
    expect(refused.headers.get('retry-after')).toBe(String(refused.body.retryAfterSeconds));

    // Deleting the result frees the budget.
    expect((await postJson(`${S}/jobs/${jobId}/delete`, dave.signed(daveSecret, `${jobId}_delete`))).status).toBe(200);
    const again = await postForm({ ...form, ...dave.signed(daveSecret) }, S);
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    await waitFor(async () => (await getJson<{ job: Job }>(`${S}/jobs/${again.body.jobId as string}/status`)).body.job.status === 'completed', { timeoutMs: 20_000, intervalMs: 50 });
  }, 60_000);
});

// Last on the shared cluster: the clock jumps two days ahead and back, and a node that wrote while it
// was ahead keeps its hybrid clock there; members refuse its records as too far ahead (they should),
// so no test may write through this cluster afterwards.
describe('expiry', () => {
  it('a completed job expires after its TTL and its file is removed', async () => {
    const started = await postForm(encryptForm('old', content(5)));
    const jobId = started.body.jobId as string;
    await completedJob(jobId);
    const config = cluster.members[0]!.config;
    const result = join(config.files.dir || join(config.dataDir, 'files'), 'results', `${jobId}.zip`);
    expect(existsSync(result)).toBe(true);
    clockOffset = 2 * DAY_MS + 1000;
    try {
      const job = await waitFor(async () => {
        const res = await getJson<{ job: Job }>(`${A}/jobs/${jobId}/status`);
        return res.body.job.status === 'expired' ? res.body.job : undefined;
      }, { timeoutMs: 5000 });
      expect(job.expiredAt).toEqual(expect.any(Number));
      expect(existsSync(result)).toBe(false);
      expectApiError(await postJson(`${A}/jobs/${jobId}/download`, {}), 404, 'NOT_FOUND');
    } finally {
      clockOffset = 0;
    }
  }, 30_000);
});
