/**
 * The client of `npm run bench -- files`, run in a worker thread so its work (generating and hashing
 * the upload, hashing the download, its half of every socket copy) is not charged to the server's
 * event loop: on a 2-core machine a client on the same thread would halve what we measure. It streams
 * everything: a 1 GiB file never sits in its memory (the process RSS sampled by the bench includes
 * this thread's).
 *
 * Requests arrive as messages `{ id, op, … }` and are answered `{ id, result }` or `{ id, error }`.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import { request, type IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import { parentPort, workerData } from 'node:worker_threads';
import { signPersonalMessage } from '../src/crypto/index.ts';

/** What the bench hands the worker. */
export interface FilesClientData {
  url: string;
  secretId: number;
  /** The session's secp256k1 private key and address (a bench session, thrown away afterwards). */
  wallet: Uint8Array;
  address: string;
}

/** Operations the worker performs. */
export type FilesClientOp =
  | { op: 'encrypt'; bytes: number }
  | { op: 'save'; jobId: string; path: string }
  | { op: 'decryptExisting'; encryptJobId: string; sha256: string }
  | { op: 'decryptFile'; path: string; sha256: string }
  | { op: 'delete'; jobId: string };

/** Timings of one job, ms from the request's first byte. */
export interface JobTimings {
  jobId: string;
  /** The request that starts the job, until its answer (the upload, for a multipart one). */
  startMs: number;
  /** From that answer until the status poll sees `completed`. */
  processMs: number;
  /** The result streamed and counted (and hashed, for plaintext). */
  downloadMs: number;
  totalMs: number;
  /** Bytes uploaded (the file part). */
  uploaded: number;
  downloaded: number;
  /** SHA-256 (hex) of what was uploaded (encrypt) or downloaded (decrypt). */
  sha256: string;
}

const { url, secretId, wallet, address } = workerData as FilesClientData;
const BOUNDARY = '----quorumkeepBenchFiles';
/** Size of each piece of the generated upload. */
const PIECE_BYTES = 1024 * 1024;
/** Status poll interval, ms: small next to a job of seconds. */
const POLL_MS = 20;

let lastTimestamp = 0;
/**
 * `-1_<secretId>_<address>_<ts>[_<extra>]`, signed. Timestamps strictly increase: members release
 * shares once per signed string, so two decrypts must never sign the same one.
 */
function signed(extra?: string): { data: string; signature: string } {
  lastTimestamp = Math.max(Date.now(), lastTimestamp + 1);
  const data = `-1_${secretId}_${address}_${lastTimestamp}` + (extra === undefined ? '' : `_${extra}`);
  return { data, signature: signPersonalMessage(data, wallet) };
}

function readAll(res: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    res.on('data', (c: Buffer) => chunks.push(c));
    res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    res.on('error', reject);
  });
}

/** POST `body` (a stream or a string) and parse the JSON answer; throws unless 200. */
function postJson(path: string, contentType: string, body: Readable | string): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}${path}`, { method: 'POST', headers: { 'Content-Type': contentType } }, (res) => {
      readAll(res).then((text) => {
        if (res.statusCode !== 200) reject(new Error(`${path}: ${res.statusCode} ${text.slice(0, 300)}`));
        else resolve(JSON.parse(text) as Record<string, unknown>);
      }, reject);
    });
    req.on('error', reject);
    if (typeof body === 'string') req.end(body);
    else body.on('error', (err) => req.destroy(err)).pipe(req);
  });
}

/** A multipart form: the file part from `file`, then the text fields (the deployed client's order). */
function multipart(file: AsyncIterable<Uint8Array>, filename: string, fields: Record<string, string>): Readable {
  async function* body() {
    yield Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\nContent-Type: application/octet-stream\r\n\r\n`);
    yield* file;
    let tail = '\r\n';
    for (const [name, value] of Object.entries(fields)) tail += `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;
    yield Buffer.from(`${tail}--${BOUNDARY}--\r\n`);
  }
  return Readable.from(body(), { objectMode: false });
}

async function waitCompleted(jobId: string): Promise<void> {
  for (;;) {
    const res = await fetch(`${url}/jobs/${jobId}/status`);
    const { job } = (await res.json()) as { job: { status: string; error: string | null } };
    if (job.status === 'completed') return;
    if (job.status !== 'pending' && job.status !== 'processing') throw new Error(`job ${jobId} ${job.status}: ${job.error}`);
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}

/** Stream a job's result into `sink`; resolves to the byte count. */
function download(jobId: string, body: { data: string; signature: string } | undefined, sink: (chunk: Buffer) => void | Promise<void>): Promise<number> {
  return new Promise((resolve, reject) => {
    const payload = body ? JSON.stringify(body) : '';
    const req = request(`${url}/jobs/${jobId}/download`, { method: 'POST', headers: body ? { 'Content-Type': 'application/json' } : {} }, (res) => {
      if (res.statusCode !== 200) {
        void readAll(res).then((text) => reject(new Error(`download ${jobId}: ${res.statusCode} ${text.slice(0, 300)}`)), reject);
        return;
      }
      let bytes = 0;
      void (async () => {
        for await (const chunk of res as AsyncIterable<Buffer>) {
          bytes += chunk.length;
          await sink(chunk);
        }
        const expected = Number(res.headers['content-length']);
        if (bytes !== expected) throw new Error(`download ${jobId}: ${bytes} bytes, Content-Length ${expected}`);
        return bytes;
      })().then(resolve, reject);
    });
    req.on('error', reject);
    req.end(payload);
  });
}

/** Upload (multipart) or start (JSON) a job, wait for it, download its result: the timings. */
async function runJob(
  start: () => Promise<Record<string, unknown>>,
  downloadBody: (jobId: string) => { data: string; signature: string } | undefined,
  hashDownload: boolean,
): Promise<Omit<JobTimings, 'uploaded' | 'sha256'> & { downloadSha256: string }> {
  const t0 = performance.now();
  const started = await start();
  const t1 = performance.now();
  const jobId = started.jobId as string;
  await waitCompleted(jobId);
  const t2 = performance.now();
  const hash = createHash('sha256');
  const downloaded = await download(jobId, downloadBody(jobId), hashDownload ? (c) => void hash.update(c) : () => undefined);
  const t3 = performance.now();
  return { jobId, startMs: t1 - t0, processMs: t2 - t1, downloadMs: t3 - t2, totalMs: t3 - t0, downloaded, downloadSha256: hash.digest('hex') };
}

async function encrypt(bytes: number): Promise<JobTimings> {
  const piece = randomBytes(PIECE_BYTES);
  const hash = createHash('sha256');
  async function* file() {
    for (let at = 0; at < bytes; at += PIECE_BYTES) {
      const part = piece.subarray(0, Math.min(PIECE_BYTES, bytes - at));
      hash.update(part);
      yield part;
    }
  }
  const { downloadSha256: _, ...timings } = await runJob(
    () => {
      const { data, signature } = signed();
      return postJson('/encrypt-file', `multipart/form-data; boundary=${BOUNDARY}`, multipart(file(), 'bench.bin', { secretId: String(secretId), data, signature }));
    },
    () => undefined,
    false,
  );
  return { ...timings, uploaded: bytes, sha256: hash.digest('hex') };
}

/** Download an encrypt result into `path` and fsync it (not measured: the input of a decrypt-file). */
async function save(jobId: string, path: string): Promise<number> {
  const handle = await open(path, 'w', 0o600);
  try {
    const bytes = await download(jobId, undefined, async (chunk) => {
      for (let at = 0; at < chunk.length; ) at += (await handle.write(chunk, at)).bytesWritten;
    });
    // Its write-back must not compete with the next figure's fsync.
    await handle.sync();
    return bytes;
  } finally {
    await handle.close();
  }
}

function checked(timings: Awaited<ReturnType<typeof runJob>>, uploaded: number, sha256: string): JobTimings {
  if (timings.downloadSha256 !== sha256) throw new Error(`decrypt ${timings.jobId}: SHA-256 ${timings.downloadSha256}, uploaded ${sha256}`);
  const { downloadSha256, ...rest } = timings;
  return { ...rest, uploaded, sha256: downloadSha256 };
}

const downloadBody = (jobId: string) => signed(`${jobId}_download`);

async function handle(message: FilesClientOp): Promise<unknown> {
  switch (message.op) {
    case 'encrypt':
      return encrypt(message.bytes);
    case 'save':
      return save(message.jobId, message.path);
    case 'decryptExisting': {
      const timings = await runJob(
        () => postJson('/decrypt-existing-file', 'application/json', JSON.stringify({ encryptJobId: message.encryptJobId, ...signed() })),
        downloadBody,
        true,
      );
      return checked(timings, 0, message.sha256);
    }
    case 'decryptFile': {
      const { size } = await stat(message.path);
      const timings = await runJob(
        () => {
          const { data, signature } = signed();
          const file = createReadStream(message.path, { highWaterMark: PIECE_BYTES });
          return postJson('/decrypt-file', `multipart/form-data; boundary=${BOUNDARY}`, multipart(file, 'bench.bin.cifer', { data, signature }));
        },
        downloadBody,
        true,
      );
      return checked(timings, size, message.sha256);
    }
    case 'delete':
      // A job reads `completed` a moment before its clean-up ends; until then delete says "still running".
      for (let attempt = 0; ; attempt++) {
        try {
          return await postJson(`/jobs/${message.jobId}/delete`, 'application/json', JSON.stringify(signed(`${message.jobId}_delete`)));
        } catch (err) {
          if (attempt >= 50 || !String(err).includes('still running')) throw err;
          await new Promise((r) => setTimeout(r, POLL_MS));
        }
      }
  }
}

parentPort!.on('message', (message: FilesClientOp & { id: number }) => {
  handle(message).then(
    (result) => parentPort!.postMessage({ id: message.id, result }),
    (err: unknown) => parentPort!.postMessage({ id: message.id, error: err instanceof Error ? (err.stack ?? err.message) : String(err) }),
  );
});
