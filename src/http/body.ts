/**
 * JSON request bodies (docs/http.md, "Request bodies": JSON, `Content-Type: application/json`, at most 1 MiB).
 *
 * Small on purpose: read the raw stream under a byte limit, decode UTF-8, `JSON.parse`, require an
 * object. The parsed value is exposed as `ctx.state.body` (type `unknown`) and never merged into
 * another object, so a `__proto__` key stays an inert own property. Validation is the handler's job
 * (`parseBody` in ./validate.ts).
 */
import type { IncomingMessage } from 'node:http';
import type Koa from 'koa';
import { AppError } from '../errors/index.ts';
import type { ApiRouter, HttpContext, HttpMiddleware, HttpState } from './types.ts';
import { routeLayers } from './route-layers.ts';

/** Methods whose requests carry a body we parse. */
const BODY_METHODS: ReadonlySet<string> = new Set(['POST', 'PUT', 'PATCH']);

/** JSON is UTF-8 (RFC 8259 §8.1); `fatal` turns malformed bytes into an error instead of U+FFFD. */
const UTF8 = new TextDecoder('utf-8', { fatal: true });

type HttpCtx = Koa.ParameterizedContext<HttpState, HttpContext>;

/** Options of {@link createJsonBodyParser}. */
export interface JsonBodyOptions {
  /** Largest body accepted, in bytes; larger ones are answered 413 as soon as the limit is passed. */
  limitBytes: number;
  /** Requests to leave unread (routes that stream their own body, e.g. multipart). @default none */
  skip?: (ctx: HttpCtx) => boolean;
}

/**
 * Marker for routes that read the request stream themselves (multipart uploads): put it first in
 * the route's middleware, e.g. `router.post('/encrypt-file', rawBodyRoute, handler)`, and the JSON
 * parser leaves that route's body alone (see {@link takesRawBody}).
 */
export const rawBodyRoute: Koa.Middleware<HttpState, HttpContext> = (_ctx, next) => next();

/**
 * A `skip` predicate for {@link createJsonBodyParser}: true when the route `router` would dispatch
 * the request to is marked with {@link rawBodyRoute}. The router is asked (rather than a list of
 * paths kept here) so the opt-out sits next to the route it concerns.
 */
export function takesRawBody(router: ApiRouter): (ctx: HttpCtx) => boolean {
  const rawRoutes = routeLayers(router, (layer) => layer.stack.includes(rawBodyRoute));
  return (ctx) => rawRoutes(ctx.path, ctx.method).length > 0;
}

/**
 * The JSON body parser middleware.
 *
 * - 413 `PAYLOAD_TOO_LARGE` when `Content-Length` exceeds the limit (without reading) or as soon as
 *   the bytes read pass it (chunked bodies);
 * - 415 `UNSUPPORTED_MEDIA_TYPE` for a non-empty body whose type is not `application/json` (UTF-8);
 * - `{}` for an empty body; 400 `INVALID_JSON` for malformed JSON or UTF-8;
 * - 400 `VALIDATION_FAILED` when the top level is not an object.
 */
export function createJsonBodyParser(options: JsonBodyOptions): HttpMiddleware {
  const { limitBytes, skip } = options;
  return async (ctx, next) => {
    if (!BODY_METHODS.has(ctx.method) || skip?.(ctx)) return next();
    const declaredLength = ctx.request.length;
    if (declaredLength !== undefined && declaredLength > limitBytes) throw payloadTooLarge(ctx, limitBytes);
    const chunked = ctx.get('Transfer-Encoding') !== '';
    if (!chunked && !declaredLength) {
      ctx.state.body = {};
      return next();
    }
    if (!isJsonContentType(ctx.get('Content-Type'))) {
      throw new AppError('UNSUPPORTED_MEDIA_TYPE', 'Content-Type must be application/json');
    }
    const raw = await readLimited(ctx.req, limitBytes, () => payloadTooLarge(ctx, limitBytes));
    ctx.state.body = parseJsonObject(raw);
    return next();
  };
}

/** True for `application/json`, optionally with `charset=utf-8`; other charsets are not JSON. */
function isJsonContentType(header: string): boolean {
  if (header === 'application/json') return true;
  const [mediaType, ...params] = header.split(';').map((part) => part.trim().toLowerCase());
  if (mediaType !== 'application/json') return false;
  return params.every((param) => {
    const [name, value = ''] = param.split('=', 2).map((s) => s.trim());
    return name !== 'charset' || /^"?utf-?8"?$/.test(value);
  });
}

/** 413 for a body past `limitBytes`; the connection closes after the answer. */
export function payloadTooLarge(ctx: HttpCtx, limitBytes: number): AppError {
  // The rest of the upload is never read: close the connection after the answer instead of
  // leaving unread bytes in front of the next keep-alive request.
  ctx.set('Connection', 'close');
  return new AppError('PAYLOAD_TOO_LARGE', `Request body exceeds ${limitBytes} bytes`);
}

/** Read the whole request body, rejecting with `tooLarge()` as soon as it passes `limitBytes`. */
export function readLimited(req: IncomingMessage, limitBytes: number, tooLarge: () => Error): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let received = 0;
    const cleanup = (): void => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onIncomplete);
      req.off('close', onIncomplete);
    };
    const onData = (chunk: Buffer): void => {
      received += chunk.length;
      if (received > limitBytes) {
        cleanup();
        // Stop pulling bytes; the 413 goes out with `Connection: close`.
        req.pause();
        reject(tooLarge());
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = (): void => {
      cleanup();
      resolve(Buffer.concat(chunks, received));
    };
    // The client went away mid-body (`close` before `end`) or the stream broke.
    const onIncomplete = (): void => {
      cleanup();
      reject(new AppError('BAD_REQUEST', 'Request body incomplete'));
    };
    req.on('data', onData);
    req.once('end', onEnd);
    req.once('error', onIncomplete);
    req.once('close', onIncomplete);
  });
}

/** Decode a body as strict UTF-8: 400 `INVALID_JSON` on malformed bytes. */
export function decodeUtf8Body(raw: Buffer): string {
  try {
    return UTF8.decode(raw);
  } catch {
    throw new AppError('INVALID_JSON', 'Request body is not valid UTF-8');
  }
}

/** Decode and parse a body; the top level must be a JSON object. */
export function parseJsonObject(raw: Buffer): unknown {
  const text = decodeUtf8Body(raw);
  if (text.trim() === '') return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new AppError('INVALID_JSON', 'Request body is not valid JSON');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new AppError('VALIDATION_FAILED', 'Request body must be a JSON object');
  }
  return value;
}
