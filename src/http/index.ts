/** The HTTP API (the only importer of koa): app factories (API, operator port), server binding, handler helpers. */
export { createHttpApp, type HttpAppOptions, type HttpAppDeps } from './app.ts';
export type { HttpApp, HttpState, HttpContext, HttpMiddleware, ApiRouter, HttpChain, PermitConfirmMode } from './types.ts';
export { createOperatorApp, type OperatorAppOptions, type OperatorAppDeps } from './operator-app.ts';
export { listenHttp, SHUTDOWN_GRACE_MS, type ListenHttpOptions, type HttpServerHandle, type RequestHandlerFactory } from './server.ts';
export { createJobForwarding, FORWARDED_HEADER, type JobForwardingOptions, type JobForwardingDeps, type JobPeer } from './job-forward.ts';
export { createJsonBodyParser, rawBodyRoute, takesRawBody, type JsonBodyOptions } from './body.ts';
export { parseBody, parseQuery, parseParams, parseInput } from './validate.ts';
