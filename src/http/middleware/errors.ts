/**
 * Error responses (CONTRIBUTING.md rule 7; docs/http.md, "Errors"): every failure becomes `{ error, code, ...extra }`
 * JSON. The outermost middleware of every app of this node (../base-app.ts).
 */
import { STATUS_CODES } from 'node:http';
import { HttpError } from 'koa';
import { ERROR_CODES, isAppError, type ErrorCode } from '../../errors/index.ts';
import type { Logger } from '../../log/index.ts';
import type { HttpMiddleware } from '../types.ts';

/** An error response: status and JSON body. */
interface ErrorReply {
  status: number;
  body: { error: string; code: ErrorCode } & Record<string, unknown>;
}

/** The one answer to anything unexpected: it exposes nothing. */
const INTERNAL_REPLY: ErrorReply = { status: ERROR_CODES.INTERNAL, body: { error: 'Internal error', code: 'INTERNAL' } };

/** Status → code, the reverse of ERROR_CODES (the first, most generic code of each status). */
const CODE_BY_STATUS: ReadonlyMap<number, ErrorCode> = (() => {
  const map = new Map<number, ErrorCode>();
  for (const [code, status] of Object.entries(ERROR_CODES) as Array<[ErrorCode, number]>) {
    if (!map.has(status)) map.set(status, code);
  }
  return map;
})();

/**
 * Reply for a bare error status (koa's 404 when nothing answered, the router's 405, an http-errors
 * error). A status without a code of its own keeps its status and is labelled BAD_REQUEST (4xx) or
 * INTERNAL (5xx).
 */
function statusReply(status: number, message?: string): ErrorReply {
  const code = CODE_BY_STATUS.get(status) ?? (status >= 500 ? 'INTERNAL' : 'BAD_REQUEST');
  const text = STATUS_CODES[status] ?? 'Error';
  return { status, body: { error: message ?? text.charAt(0) + text.slice(1).toLowerCase(), code } };
}

/** The reply for a thrown value, or `undefined` when it is unexpected (a bug or an outage). */
function replyFor(err: unknown): ErrorReply | undefined {
  if (isAppError(err)) return { status: err.status, body: { error: err.message, code: err.code, ...err.extra } };
  // koa's and the router's own errors (ctx.throw, allowedMethods): only 4xx ones are meant for clients.
  if (err instanceof HttpError && err.expose && err.status >= 400 && err.status < 500) return statusReply(err.status, err.message);
  return undefined;
}

/** The error middleware: answers every failure below it as `{ error, code, ...extra }` JSON. */
export function errorResponses(log: Logger): HttpMiddleware {
  return async (ctx, next) => {
    let reply: ErrorReply | undefined;
    try {
      await next();
      // Nothing answered (koa's default 404) or a status without a body (the router's 405): shape
      // it like every other error so clients never see an empty or HTML error.
      if (ctx.status >= 400 && ctx.body == null) reply = statusReply(ctx.status);
    } catch (err) {
      reply = replyFor(err);
      if (reply === undefined) {
        // The request logger carries the reqId; it is missing only if request-id itself threw.
        (ctx.state.log ?? log).error({ err }, 'unhandled error');
        reply = INTERNAL_REPLY;
      }
    }
    if (reply === undefined || ctx.headerSent) return;
    ctx.status = reply.status;
    // RFC 9110 §10.2.3: 429 and 503 answers that know when to come back say so in the header too.
    const retryAfter = reply.body.retryAfterSeconds;
    if (typeof retryAfter === 'number' && retryAfter > 0) ctx.set('Retry-After', String(Math.ceil(retryAfter)));
    // Set explicitly: a handler may have set another type before it threw.
    ctx.type = 'application/json';
    ctx.body = reply.body;
  };
}

/** Errors that mean the client went away or broke the framing mid-request. */
const CLIENT_FAULT_CODES = new Set(['ECONNRESET', 'EPIPE', 'ECONNABORTED', 'ERR_STREAM_PREMATURE_CLOSE', 'ECANCELED']);

/** Whether an error that escaped the middleware is the client's doing (hung up, malformed framing), not the server's. */
export function isClientFault(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown } | null;
  if (!e) return false;
  if (typeof e.code === 'string' && (CLIENT_FAULT_CODES.has(e.code) || e.code.startsWith('HPE_'))) return true;
  return e.message === 'aborted' || e.message === 'Parse Error' || e.message === 'request aborted';
}
