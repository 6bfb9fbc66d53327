/**
 * What every koa app of this node is built from (the API app, ./app.ts, and the operator port's,
 * ./operator-app.ts): the base app with its error handling, and the one router resource routers are
 * mounted under.
 */
import { METHODS } from 'node:http';
import Koa, { HttpError } from 'koa';
import { Router } from '@koa/router';
import type { Logger } from '../log/index.ts';
import { errorResponses, isClientFault } from './middleware/errors.ts';
import type { ApiRouter, HttpApp, HttpState } from './types.ts';

/**
 * A koa app with what every app of this node starts with: escaped errors logged as one line, and the
 * error middleware first, so every failure is answered `{ error, code }` (CONTRIBUTING.md rule 7).
 */
export function createBaseApp(log: Logger, options: { trustProxy: boolean }): HttpApp {
  // Behind a proxy, ctx.ip is the last X-Forwarded-For entry — the one our proxy appended — never a
  // value the client wrote itself (the leftmost entries are whatever the client sent).
  const app: HttpApp = new Koa({ proxy: options.trustProxy, maxIpsCount: 1 });
  // Errors that escape the middleware (e.g. a response stream failing after the headers went out):
  // log them once as a line instead of koa's default stack dump on stderr.
  app.on('error', (err: unknown, ctx?: { state?: Partial<HttpState> }) => {
    if (err instanceof HttpError && err.expose) return;
    // A client that hung up or sent a broken body is not a server error.
    if (isClientFault(err)) return (ctx?.state?.log ?? log).debug({ code: (err as NodeJS.ErrnoException).code }, 'client aborted or sent a malformed body');
    (ctx?.state?.log ?? log).error({ err }, 'unhandled http error');
  });
  app.use(errorResponses(log));
  return app;
}

/** Mount resource routers under one router, so 405 handling and route matching see every route. */
export function combineRouters(routers: ReadonlyArray<ApiRouter | undefined>): ApiRouter {
  // Every method Node parses is "implemented": an unsupported method on a known path is a 405, not a 501.
  const api: ApiRouter = new Router({ methods: [...METHODS] });
  for (const router of routers) if (router) api.use(router.routes());
  return api;
}
