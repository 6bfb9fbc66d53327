/** The HTTP API (the only importer of koa): app factories (API, operator port), server binding, handler helpers. */
export {
  createHttpApp,
  type HttpApp,
  type HttpAppOptions,
  type HttpAppDeps,
  type HttpState,
  type HttpContext,
  type HttpMiddleware,
  type ApiRouter,
} from './app.ts';
export { createOperatorApp, type OperatorAppOptions, type OperatorAppDeps } from './operator-app.ts';
export { listenHttp, SHUTDOWN_GRACE_MS, type ListenHttpOptions, type HttpServerHandle, type RequestHandlerFactory } from './server.ts';
export { createJobForwarding, FORWARDED_HEADER, type JobForwardingOptions, type JobForwardingDeps, type JobPeer } from './job-forward.ts';
export { createJsonBodyParser, rawBodyRoute, takesRawBody, type JsonBodyOptions } from './body.ts';
export { parseBody, parseQuery, parseParams, parseInput } from './validate.ts';
