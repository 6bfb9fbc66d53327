/**
 * Streaming multipart intake (docs/http.md, "Files and jobs (any coordinator)"): the only importer of @fastify/busboy.
 *
 * The deployed client sends `file` first, then `secretId`, `data`, `signature`, so the file is
 * streamed into a consumer (the sealed spool) as it arrives, and the text fields are collected after;
 * fields a client sends before the file are handed to the consumer with it (the upload's sender can
 * then be verified before its bytes are written).
 * Every failure is an AppError; on one, the rest of the body is drained (never a reset connection:
 * the client gets its JSON answer) and the file stream is destroyed so the consumer cleans up.
 */
import type { IncomingMessage } from 'node:http';
import type { Readable } from 'node:stream';
import { Busboy, type BusboyFileStream } from '@fastify/busboy';
import { AppError } from '../errors/index.ts';

/** Limits of {@link readMultipart}. */
export interface MultipartLimits {
  /** Largest file part, in bytes; one more → 413. */
  fileBytes: number;
  /** Largest text field, in bytes; one more → 413. */
  fieldBytes: number;
  /** Most text fields; one more → 400. */
  fields: number;
  /** Most file parts; one more → 400. */
  files: number;
}

/** What is known of the file part when it starts. */
export interface MultipartFileInfo {
  /** The form field name (`file`). */
  fieldName: string;
  /** The filename, decoded (see {@link decodeClientFilename}). */
  filename: string;
  /** The part's Content-Type. */
  mimeType: string;
}

/** Options of {@link readMultipart}. */
export interface MultipartOptions {
  limits: MultipartLimits;
  /**
   * Consume the file part; must read `stream` to its end (e.g. `pipeline(stream, spool)`) and reject
   * if it fails — `stream` errors when the upload is cut or too large, and the consumer must then
   * remove what it wrote. `fieldsBefore`: the text fields that came before the file part (a copy).
   */
  onFile: (info: MultipartFileInfo, stream: Readable, fieldsBefore: Readonly<Record<string, string>>) => Promise<void>;
}

/** The parsed form. */
export interface MultipartResult {
  /** Text fields by name (the last value wins when a name repeats). */
  fields: Record<string, string>;
  /** Field names in the order received (file included), e.g. `file, secretId, data, signature`. */
  fieldOrder: string[];
  /** The file part. */
  file: MultipartFileInfo & { bytes: number };
}

/**
 * The filename as the deployed client writes it (the WHATWG form-data encoding): UTF-8, with `"`,
 * CR and LF escaped as `%22`, `%0D`, `%0A`. Only those three are decoded; any other `%` is literal.
 */
export function decodeClientFilename(raw: string): string {
  return raw.replace(/%(22|0D|0A)/gi, (_m, hex: string) => String.fromCharCode(parseInt(hex, 16)));
}

/**
 * Read a multipart/form-data request: stream its one file part into `onFile`, collect its text
 * fields. Rejects with 415 `UNSUPPORTED_MEDIA_TYPE` (not multipart/form-data), 400 `BAD_REQUEST`
 * (no boundary, malformed body, missing file, too many parts, body cut short), or 413
 * `PAYLOAD_TOO_LARGE` (file or field over its limit).
 */
export function readMultipart(req: IncomingMessage, options: MultipartOptions): Promise<MultipartResult> {
  const contentType = req.headers['content-type'] ?? '';
  if (!/^multipart\/form-data\s*(;|$)/i.test(contentType)) {
    return Promise.reject(new AppError('UNSUPPORTED_MEDIA_TYPE', 'Content-Type must be multipart/form-data'));
  }
  if (!/;\s*boundary=/i.test(contentType)) return Promise.reject(new AppError('BAD_REQUEST', 'Multipart boundary missing'));
  const { limits, onFile } = options;

  return new Promise<MultipartResult>((resolve, reject) => {
    let busboy: ReturnType<typeof Busboy>;
    try {
      busboy = Busboy({
        headers: { ...req.headers, 'content-type': contentType },
        limits: { fileSize: limits.fileBytes, fieldSize: limits.fieldBytes, fields: limits.fields, files: limits.files, parts: limits.fields + limits.files },
      });
    } catch {
      reject(new AppError('BAD_REQUEST', 'Malformed multipart request'));
      return;
    }
    const fields: Record<string, string> = Object.create(null) as Record<string, string>;
    const fieldOrder: string[] = [];
    let file: (MultipartFileInfo & { stream: BusboyFileStream; done: Promise<void> }) | undefined;
    let settled = false;

    const cleanup = (): void => {
      req.off('close', onClose);
      req.unpipe(busboy);
    };
    const fail = (err: AppError): void => {
      if (settled) return;
      settled = true;
      cleanup();
      // The consumer sees the failure and removes what it wrote.
      if (file && !file.stream.readableEnded) file.stream.destroy(err);
      // Drain the rest so the client can read our answer (no reset, keep-alive survives).
      req.resume();
      const rejectAfterConsumer = (): void => reject(err);
      (file ? file.done.catch(() => undefined) : Promise.resolve()).then(rejectAfterConsumer, rejectAfterConsumer);
    };
    const onClose = (): void => {
      if (!req.complete) fail(new AppError('BAD_REQUEST', 'Request body incomplete'));
    };

    busboy.on('file', (fieldName, stream, rawFilename, _encoding, mimeType) => {
      fieldOrder.push(fieldName);
      if (file || fieldName !== 'file') {
        stream.resume();
        fail(new AppError('BAD_REQUEST', `Unexpected file field: ${fieldName}`));
        return;
      }
      // The consumer may attach its own listeners only after an await (e.g. opening its spool): a
      // failure before then must not become an unhandled 'error' event.
      stream.on('error', () => undefined);
      const info: MultipartFileInfo = { fieldName, filename: decodeClientFilename(rawFilename), mimeType };
      stream.once('limit', () => fail(new AppError('PAYLOAD_TOO_LARGE', `File exceeds ${limits.fileBytes} bytes`, { limitBytes: limits.fileBytes })));
      const fieldsBefore = { ...fields };
      const done = Promise.resolve().then(() => onFile(info, stream, fieldsBefore));
      file = { ...info, stream, done };
      done.catch((err: unknown) => {
        // The consumer's own refusal (e.g. its size limit) passes through as is.
        fail(err instanceof AppError ? err : new AppError('BAD_REQUEST', 'Upload failed'));
        stream.resume();
      });
    });
    busboy.on('field', (name, value, _nameTruncated, valueTruncated) => {
      if (valueTruncated) {
        fail(new AppError('PAYLOAD_TOO_LARGE', `Field ${name} exceeds ${limits.fieldBytes} bytes`, { limitBytes: limits.fieldBytes }));
        return;
      }
      fieldOrder.push(name);
      fields[name] = value;
    });
    const tooMany = (): void => fail(new AppError('BAD_REQUEST', 'Too many multipart parts'));
    busboy.on('fieldsLimit', tooMany);
    busboy.on('filesLimit', tooMany);
    busboy.on('partsLimit', tooMany);
    busboy.on('error', () => fail(new AppError('BAD_REQUEST', 'Malformed multipart request')));
    busboy.on('finish', () => {
      if (settled) return;
      if (!file) {
        fail(new AppError('BAD_REQUEST', 'Missing file part'));
        return;
      }
      const current = file;
      current.done.then(
        () => {
          if (settled) return;
          settled = true;
          cleanup();
          const { stream, done: _done, ...info } = current;
          resolve({ fields: { ...fields }, fieldOrder, file: { ...info, bytes: stream.bytesRead } });
        },
        () => undefined,
      );
    });
    req.on('close', onClose);
    req.pipe(busboy);
  });
}
