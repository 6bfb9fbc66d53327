/**
 * Files and jobs (docs/api.md, Files and jobs): `POST /encrypt-file` and `POST /decrypt-file`
 * (multipart, streamed into a sealed spool), `POST /decrypt-existing-file`, `GET /jobs/:jobId/status`,
 * `POST /jobs/:jobId/download`, `POST /jobs/:jobId/delete` and `POST /jobs` (list).
 *
 * Shapes only here: the multipart form is read by ./../multipart.ts into the service's spool, the
 * text fields are shape-checked, and the service verifies, records and runs the job. The spool is
 * opened with what is known of the upload when its file part begins: the sender's address, the
 * request's length, and `data` and `signature` when they came first (docs/http.md, Files and jobs,
 * "Unverified uploads").
 */
import { pipeline } from 'node:stream/promises';
import { Router } from '@koa/router';
import { z } from 'zod';
import { AppError } from '../../errors/index.ts';
import type { FilesService, JobType } from '../../core/files/types.ts';
import type { SealedSpool } from '../../core/files/spool.ts';
import type { ApiRouter, HttpMiddleware } from '../types.ts';
import { sendViews } from '../send-views.ts';
import { youngGarbage } from '../../crypto/young-garbage.ts';
import { rawBodyRoute } from '../body.ts';
import { readMultipart } from '../multipart.ts';
import { addressKey } from '../rate-limit.ts';
import { parseBody, parseInput, parseQuery } from '../validate.ts';
import { ID_MAX_CHARS, JOB_ID_MAX_CHARS, SIGNATURE_MAX_CHARS, SIGNED_DATA_MAX_CHARS, text } from '../fields.ts';

/** Text fields of the form: `secretId`, `data`, `signature` (a few spare for clients that add one). */
const FORM_FIELDS_MAX = 8;

const encryptFormSchema = z.object({
  secretId: text(ID_MAX_CHARS),
  data: text(SIGNED_DATA_MAX_CHARS),
  signature: text(SIGNATURE_MAX_CHARS),
});

const decryptFormSchema = z.object({
  data: text(SIGNED_DATA_MAX_CHARS),
  signature: text(SIGNATURE_MAX_CHARS),
});

const decryptExistingSchema = z.object({
  encryptJobId: text(JOB_ID_MAX_CHARS),
  data: text(SIGNED_DATA_MAX_CHARS),
  signature: text(SIGNATURE_MAX_CHARS),
});

/** The download body: empty, or a signed `{ data, signature }` (both or neither). */
const downloadSchema = z.object({
  data: text(SIGNED_DATA_MAX_CHARS).optional(),
  signature: text(SIGNATURE_MAX_CHARS).optional(),
});

/** A signed body: `{ data, signature }` (delete, list; an upload's fields sent before its file). */
const signedSchema = z.object({
  data: text(SIGNED_DATA_MAX_CHARS),
  signature: text(SIGNATURE_MAX_CHARS),
});

/** `?includeExpired=`: `true|false`, and `1|0` as the original server took them; absent is false. */
const listQuerySchema = z.object({
  includeExpired: z.enum(['true', 'false', '1', '0']).optional(),
});

/** Dependencies of {@link createFilesRouter}. */
export interface FilesRouteDeps {
  files: FilesService;
  /** Wall clock, Unix ms: the request's start, against which freshness is judged. */
  clock: () => number;
}

/**
 * `Content-Disposition: attachment` for `fileName` (RFC 6266): a quoted ASCII `filename`, and for a
 * name that needs more (non-ASCII, `"`, `\`, controls) an RFC 5987 `filename*` with the exact name.
 */
export function attachmentDisposition(fileName: string): string {
  if (/^[\x20-\x7e]*$/.test(fileName) && !/["\\%]/.test(fileName)) return `attachment; filename="${fileName}"`;
  const fallback = fileName.replace(/[^\x20-\x7e]|["\\%]/g, '_');
  const encoded = encodeURIComponent(fileName).replace(/['()*]/g, (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase());
  return `attachment; filename="${fallback}"; filename*=UTF-8''${encoded}`;
}

/** Create the files router. */
export function createFilesRouter(deps: FilesRouteDeps): ApiRouter {
  const { files, clock } = deps;
  const router: ApiRouter = new Router();

  /**
   * Read a multipart upload into a sealed spool, then hand the spool and the text fields to `start`,
   * which owns the spool from then on. Capacity is judged on `Content-Length` before the body is read.
   */
  async function readUpload<T>(
    ctx: Parameters<HttpMiddleware>[0],
    kind: JobType,
    receivedAt: number,
    start: (spool: SealedSpool, fields: Record<string, string>, filename: string) => Promise<T>,
  ): Promise<T> {
    // The body's length is an upper bound of the file's.
    const length = Number(ctx.get('Content-Length'));
    const declaredBytes = Number.isSafeInteger(length) && length > 0 ? length : undefined;
    try {
      // Refused at once when it cannot fit.
      files.assertCapacity(declaredBytes ?? 0);
    } catch (err) {
      // The upload is not read: close the connection after the answer.
      ctx.set('Connection', 'close');
      throw err;
    }
    let spool: SealedSpool | undefined;
    try {
      const form = await readMultipart(ctx.req, {
        limits: { fileBytes: files.maxUploadBytes(kind), fieldBytes: SIGNED_DATA_MAX_CHARS, fields: FORM_FIELDS_MAX, files: 1 },
        onFile: async (_info, stream, fieldsBefore) => {
          const early = signedSchema.safeParse(fieldsBefore);
          const signed = early.success ? { request: early.data, receivedAt } : undefined;
          spool = await files.createSpool(kind, { address: addressKey(ctx.ip), declaredBytes, signed });
          // Each piece is a socket read, dead once the spool copied it: collected as it goes.
          stream.on('data', (piece: Buffer) => youngGarbage.add(piece.length));
          await pipeline(stream, spool);
        },
      });
      if (!spool) throw new AppError('BAD_REQUEST', 'Missing file part');
      const owned = spool;
      // From here `start` owns the spool, and disposes of it whatever happens.
      spool = undefined;
      return await start(owned, form.fields, form.file.filename);
    } finally {
      await spool?.dispose();
    }
  }

  router.post('/encrypt-file', rawBodyRoute, async (ctx) => {
    const receivedAt = clock();
    const job = await readUpload(ctx, 'encrypt', receivedAt, async (spool, formFields, filename) => {
      let fields: z.infer<typeof encryptFormSchema>;
      try {
        fields = parseInput(formFields, encryptFormSchema);
      } catch (err) {
        await spool.dispose();
        throw err;
      }
      return files.startEncrypt({ spool, originalName: filename, secretId: fields.secretId, request: { data: fields.data, signature: fields.signature }, receivedAt });
    });
    ctx.body = { success: true, jobId: job.id, message: 'File encryption started' };
  });

  router.post('/decrypt-file', rawBodyRoute, async (ctx) => {
    const receivedAt = clock();
    const job = await readUpload(ctx, 'decrypt', receivedAt, async (spool, formFields) => {
      let fields: z.infer<typeof decryptFormSchema>;
      try {
        fields = parseInput(formFields, decryptFormSchema);
      } catch (err) {
        await spool.dispose();
        throw err;
      }
      return files.startDecrypt({ spool, request: { data: fields.data, signature: fields.signature }, receivedAt });
    });
    ctx.body = { success: true, jobId: job.id, message: 'File decryption started' };
  });

  router.post('/decrypt-existing-file', async (ctx) => {
    const { encryptJobId, data, signature } = parseBody(ctx, decryptExistingSchema);
    const job = await files.startDecryptExisting(encryptJobId, { data, signature });
    ctx.body = { success: true, jobId: job.id, message: 'File decryption started' };
  });

  router.get('/jobs/:jobId/status', async (ctx) => {
    const job = await files.status(ctx.params.jobId ?? '');
    ctx.body = { success: true, job };
  });

  router.post('/jobs/:jobId/download', async (ctx) => {
    const { data, signature } = parseBody(ctx, downloadSchema);
    if ((data === undefined) !== (signature === undefined)) throw new AppError('BAD_REQUEST', 'data and signature go together');
    const request = data !== undefined && signature !== undefined ? { data, signature } : undefined;
    const result = await files.download(ctx.params.jobId ?? '', request);
    ctx.type = result.contentType;
    ctx.set('Content-Disposition', attachmentDisposition(result.fileName));
    ctx.length = result.size;
    if ('stream' in result.body) {
      // Each piece is a file read, dead once the socket took it: collected as it goes.
      result.body.stream.on('data', (piece: Buffer) => youngGarbage.add(piece.length));
      ctx.body = result.body.stream;
    }
    else await sendViews(ctx, result.body.views);
  });

  router.post('/jobs/:jobId/delete', async (ctx) => {
    const request = parseBody(ctx, signedSchema);
    await files.remove(ctx.params.jobId ?? '', request);
    ctx.body = { success: true, message: 'Job has been marked for deletion. Files will be cleaned up shortly.' };
  });

  router.post('/jobs', async (ctx) => {
    const query = parseQuery(ctx, listQuerySchema);
    const request = parseBody(ctx, signedSchema);
    const includeExpired = query.includeExpired === 'true' || query.includeExpired === '1';
    const jobs = await files.list(request, includeExpired);
    ctx.body = { success: true, jobs, count: jobs.length, includeExpired };
  });

  return router;
}
