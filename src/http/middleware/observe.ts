/** Observation: the access log line and the latency histogram of each request. */
import { performance } from 'node:perf_hooks';
import type Koa from 'koa';
import type { Logger } from '../../log/index.ts';
import type { NodeMetrics } from '../../metrics/index.ts';
import type { HttpContext, HttpMiddleware, HttpState } from '../types.ts';

/** Route label for requests no route handled (keeps metric labels a fixed set). */
const UNMATCHED_ROUTE = 'unmatched';

/** The route pattern that handled the request, never the raw URL (metric labels stay a fixed set). */
function routeLabel(ctx: Koa.ParameterizedContext<HttpState, HttpContext>): string {
  const pattern = ctx._matchedRoute ?? ctx.matched?.find((layer) => layer.methods.length > 0)?.path;
  return pattern === undefined ? UNMATCHED_ROUTE : String(pattern);
}

/**
 * Access log line and latency histogram. Both are written when the response is done (`close`), so
 * they see the final status set by the error middleware outside this one. The line goes through
 * `log` (the app's logger) with the request id as a field — the same line a per-request child would
 * write, without making one per request.
 */
export function observe(metrics: NodeMetrics, log: Logger): HttpMiddleware {
  return (ctx, next) => {
    const startedAt = performance.now();
    ctx.res.once('close', () => {
      const durationMs = performance.now() - startedAt;
      const route = routeLabel(ctx);
      const status = ctx.status;
      const method = ctx.method;
      metrics.httpDuration.observe({ route, method, status: String(status) }, durationMs / 1000);
      // Only these fields: never the URL (query strings), headers (Authorization) or bodies.
      if (log.isLevelEnabled('info')) {
        log.info(
          { reqId: ctx.state.reqId, method, route, status, durationMs: Math.round(durationMs * 100) / 100, ...(ctx.res.writableFinished ? {} : { aborted: true }) },
          'request',
        );
      }
    });
    return next();
  };
}
