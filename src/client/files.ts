/**
 * File uploads and downloads of the file routes (docs/http.md, "Files and jobs"): a
 * `multipart/form-data` body streamed from disk with a `Content-Length`, and a job result streamed to
 * disk — neither held in memory, whatever the file's size — each reporting its bytes as they pass.
 *
 * The signed fields go before the file. The deployed client sends the file first; the server takes
 * both orders, and this one lets it check the signature before it stores a byte, so the upload never
 * counts against the budget of unverified uploads its address shares with others
 * (docs/http.md, "Unverified uploads").
 */
import { randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { rename, rm, stat } from 'node:fs/promises';
import { basename } from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { ClientError } from './errors.ts';

/** Where a file call is, for a progress display. */
export type FileProgress =
  /** Bytes of the upload sent so far, of `total` (the file's size). */
  | { stage: 'upload'; bytes: number; total: number }
  /** The job as its status last showed it: `progress` 0–100 by chunk. */
  | { stage: 'job'; jobId: string; status: string; progress: number }
  /** Bytes of the result written so far, of `total` (its `Content-Length`). */
  | { stage: 'download'; bytes: number; total: number | undefined };

/** A progress callback; never awaited. */
export type ProgressListener = (progress: FileProgress) => void;

/** The file name as a browser's form sends it: `"`, CR and LF percent-escaped (spec API.md, "Files"). */
function wireFileName(name: string): string {
  return name.replace(/"/g, '%22').replace(/\r/g, '%0D').replace(/\n/g, '%0A');
}

/** A multipart body: text fields, then one file streamed from `path`. */
export interface MultipartUpload {
  body: AsyncIterable<Uint8Array>;
  headers: Record<string, string>;
}

/** Build the body of an upload of the file at `path` (its size given, as stat'ed once by the caller). */
export function multipartUpload(fields: ReadonlyArray<readonly [string, string]>, file: { path: string; size: number; name?: string }, onProgress?: ProgressListener): MultipartUpload {
  const boundary = `----quorumkeep-${randomBytes(12).toString('hex')}`;
  const head = Buffer.from(
    fields.map(([name, value]) => `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`).join('') +
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${wireFileName(file.name ?? basename(file.path))}"\r\nContent-Type: application/octet-stream\r\n\r\n`,
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  async function* body(): AsyncIterable<Uint8Array> {
    yield head;
    let sent = 0;
    onProgress?.({ stage: 'upload', bytes: 0, total: file.size });
    for await (const piece of createReadStream(file.path) as AsyncIterable<Buffer>) {
      sent += piece.length;
      if (sent > file.size) throw new ClientError('INVALID_INPUT', `${file.path} grew while it was being sent`);
      yield piece;
      onProgress?.({ stage: 'upload', bytes: sent, total: file.size });
    }
    if (sent !== file.size) throw new ClientError('INVALID_INPUT', `${file.path} shrank while it was being sent`);
    yield tail;
  }
  return {
    body: body(),
    headers: { 'content-type': `multipart/form-data; boundary=${boundary}`, 'content-length': String(head.length + file.size + tail.length) },
  };
}

/** The size of a regular file; `INVALID_INPUT` for anything else. */
export async function fileSize(path: string): Promise<number> {
  const info = await stat(path).catch((err: NodeJS.ErrnoException) => {
    throw new ClientError('INVALID_INPUT', `${path}: ${err.code ?? err.message}`);
  });
  if (!info.isFile()) throw new ClientError('INVALID_INPUT', `${path}: not a regular file`);
  return info.size;
}

/**
 * Write a response body to `out` (mode 0600: a decrypt result is plaintext): through a temporary file
 * beside it, renamed into place only when every byte of the `Content-Length` arrived, so `out` never
 * holds a partial result. Returns the bytes written.
 */
export async function saveBody(response: Response, out: string, onProgress?: ProgressListener): Promise<number> {
  const declared = response.headers.get('content-length');
  const total = declared !== null && /^\d+$/.test(declared) ? Number(declared) : undefined;
  if (!response.body) throw new ClientError('BAD_ANSWER', 'the download has no body');
  const temp = `${out}.${randomBytes(4).toString('hex')}.part`;
  let bytes = 0;
  onProgress?.({ stage: 'download', bytes, total });
  const count = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      bytes += chunk.length;
      onProgress?.({ stage: 'download', bytes, total });
      done(null, chunk);
    },
  });
  try {
    await pipeline(Readable.fromWeb(response.body as WebReadableStream<Uint8Array>), count, createWriteStream(temp, { mode: 0o600, flags: 'wx' }));
    if (total !== undefined && bytes !== total) throw new ClientError('BAD_ANSWER', `the download ended after ${bytes} of ${total} bytes`);
    await rename(temp, out);
    return bytes;
  } catch (err) {
    await rm(temp, { force: true });
    if (err instanceof ClientError) throw err;
    throw new ClientError('BAD_ANSWER', `the download broke off after ${bytes}${total === undefined ? '' : ` of ${total}`} bytes`, { cause: err });
  }
}
