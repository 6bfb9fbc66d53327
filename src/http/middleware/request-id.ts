/**
 * Request id: echo a well-formed `X-Request-Id` or generate one, and give the request a child logger
 * bound to it (`ctx.state.reqId`, `ctx.state.log`). The child is made on first use: most requests
 * log nothing below the access line's level, and a pino child costs more than the rest of this
 * middleware together (docs/http.md, "Request path cost").
 */
import { toHex, type RandomSource } from '../../crypto/index.ts';
import type { Logger } from '../../log/index.ts';
import type { HttpMiddleware } from '../types.ts';

/** Request ids we echo: 1–128 characters of `[A-Za-z0-9._:-]`, anything else is replaced. */
const REQUEST_ID_RE = /^[A-Za-z0-9._:-]{1,128}$/;
/** Bytes of randomness in a generated request id (32 hex chars). */
const REQUEST_ID_BYTES = 16;

/** The request-id middleware; `log` is the app's logger, whose child each request gets. */
export function requestId(log: Logger, random: RandomSource): HttpMiddleware {
  // A random per-app prefix and a counter: unique, 32 hex chars, and no call into the CSPRNG per
  // request (node's randomFillSync is a visible share of a cheap request's CPU).
  // Request ids correlate log lines; they are not secrets.
  const prefix = toHex(random(REQUEST_ID_BYTES / 2));
  let counter = 0;
  return (ctx, next) => {
    const incoming = ctx.get('X-Request-Id');
    const reqId = REQUEST_ID_RE.test(incoming) ? incoming : prefix + (counter++).toString(16).padStart(REQUEST_ID_BYTES, '0');
    const state = ctx.state;
    state.reqId = reqId;
    let child: Logger | undefined;
    Object.defineProperty(state, 'log', {
      get: () => (child ??= log.child({ reqId })),
      set: (value: Logger) => (child = value),
      enumerable: true,
      configurable: true,
    });
    ctx.response.set('X-Request-Id', reqId);
    return next();
  };
}
