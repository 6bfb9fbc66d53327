/**
 * Helpers for the file-job tests (docs/api.md, Files and jobs): multipart bodies built as streams in
 * the deployed client's field order, job polling, downloads and ZIPs built or unpacked in memory.
 */
import { request } from 'node:http';
import { Readable } from 'node:stream';
import { expect } from 'vitest';
import yauzl from 'yauzl';
import { ZipFile } from 'yazl';
import { waitFor } from 'quorumkeep/testing';
import { getJson, type JsonResponse } from './http.ts';

/** The multipart boundary of every test form. */
export const BOUNDARY = '----quorumkeepFilesTest7MA4YWxkTrZu0gW';

/** A form part: a text field, or the file (sent in pieces of 700 bytes). */
export type FormPart = { name: string; value: string } | { name: 'file'; filename: string; content: Buffer };

/** The parts as a multipart/form-data stream. The file's name is escaped as the client does (`"` → %22). */
export function multipartStream(parts: readonly FormPart[]): Readable {
  async function* body() {
    for (const part of parts) {
      if ('content' in part) {
        const wireName = part.filename.replace(/"/g, '%22');
        yield Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="${wireName}"\r\nContent-Type: application/octet-stream\r\n\r\n`);
        for (let at = 0; at < part.content.length; at += 700) yield part.content.subarray(at, at + 700);
        yield Buffer.from('\r\n');
      } else {
        yield Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="${part.name}"\r\n\r\n${part.value}\r\n`);
      }
    }
    yield Buffer.from(`--${BOUNDARY}--\r\n`);
  }
  return Readable.from(body());
}

/** Options of {@link postMultipart}. */
export interface PostMultipartOptions {
  /**
   * The local address to send from, e.g. `127.0.0.2`: Linux routes all of 127.0.0.0/8 to loopback,
   * so a test can be several clients by address. @default the system's choice (127.0.0.1)
   */
  localAddress?: string;
}

/** POST a multipart body (a stream) to `url`; the JSON answer. */
export function postMultipart(url: string, body: Readable, options: PostMultipartOptions = {}): Promise<JsonResponse> {
  return new Promise((resolve, reject) => {
    const headers = { 'Content-Type': `multipart/form-data; boundary=${BOUNDARY}` };
    const req = request(url, { method: 'POST', headers, ...(options.localAddress ? { localAddress: options.localAddress } : {}) }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        try {
          resolve({ status: res.statusCode!, headers: new Headers(res.headers as Record<string, string>), body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown> });
        } catch (err) {
          reject(err);
        }
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    body.pipe(req);
  });
}

/** A job as GET /jobs/:id/status shows it. */
export interface JobStatus {
  id: string;
  type: string;
  status: string;
  progress: number;
  createdAt: number;
  error: string | null;
  [k: string]: unknown;
}

/** Poll `base`'s status of `jobId` until it is `status` (throws early when it ends otherwise). */
export async function waitForJob(base: string, jobId: string, status: 'completed' | 'failed' = 'completed', timeoutMs = 30_000): Promise<JobStatus> {
  // waitFor retries on a throw: an ended job is returned, and judged here.
  const job = await waitFor(
    async () => {
      const res = await getJson<{ job: JobStatus }>(`${base}/jobs/${jobId}/status`);
      if (res.status !== 200) return undefined;
      const ended = ['completed', 'failed', 'expired'].includes(res.body.job.status);
      return ended ? res.body.job : undefined;
    },
    { timeoutMs, intervalMs: 50, description: `job ${jobId} to end` },
  );
  expect(job.status, JSON.stringify(job)).toBe(status);
  return job;
}

/** POST /jobs/:id/download, with an optional signed body; the raw answer. */
export async function downloadJob(base: string, jobId: string, signed?: { data: string; signature: string }): Promise<{ status: number; headers: Headers; bytes: Buffer }> {
  const res = await fetch(`${base}/jobs/${jobId}/download`, {
    method: 'POST',
    ...(signed ? { headers: { 'content-type': 'application/json' }, body: JSON.stringify(signed) } : {}),
  });
  return { status: res.status, headers: res.headers, bytes: Buffer.from(await res.arrayBuffer()) };
}

/** Every entry of a ZIP held in memory, by name. */
export async function unzip(zip: Buffer): Promise<Map<string, Buffer>> {
  const zipfile = await yauzl.fromBufferPromise(zip, { lazyEntries: true });
  const out = new Map<string, Buffer>();
  for await (const entry of zipfile.eachEntry()) {
    const stream = await zipfile.openReadStreamPromise(entry);
    const chunks: Buffer[] = [];
    for await (const c of stream) chunks.push(c as Buffer);
    out.set(entry.fileName, Buffer.concat(chunks));
  }
  return out;
}

/** A ZIP of `entries`, in order (stored, as the service writes them). */
export async function zipOf(entries: Iterable<[string, Buffer]>): Promise<Buffer> {
  const zip = new ZipFile();
  for (const [name, bytes] of entries) zip.addBuffer(bytes, name, { compress: false });
  zip.end();
  const chunks: Buffer[] = [];
  for await (const c of zip.outputStream) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

/**
 * A clock of timestamps no other signed string of the test has (a decrypt string is released to one
 * coordinator only, so two strings signed in the same millisecond must still differ). `offset` shifts
 * it with the cluster's.
 */
export function uniqueTimestamps(offset: () => number = () => 0): () => number {
  let last = 0;
  return () => (last = Math.max(Date.now() + offset(), last + 1));
}

/** Content whose bytes differ by position (so a swapped or shifted chunk shows). */
export function patterned(size: number, seed = 0): Buffer {
  const out = Buffer.alloc(size);
  for (let i = 0; i < size; i++) out[i] = (i * 31 + seed * 17 + Math.floor(i / 251)) & 0xff;
  return out;
}
