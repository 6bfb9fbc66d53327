/** Observation: the access log line and the latency histogram of each request. */
import { performance } from 'node:perf_hooks';
import type Koa from 'koa';
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
 * they see the final status set by the error middleware outside this one.
 */
export function observe(metrics: NodeMetrics): HttpMiddleware {
  return (ctx, next) => {
    const startedAt = performance.now();
    ctx.res.once('close', () => {
      const durationMs = performance.now() - startedAt;
      const route = routeLabel(ctx);
      const status = ctx.status;
      metrics.httpDuration.observe({ route, method: ctx.method, status: String(status) }, durationMs / 1000);
      // Only these fields: never the URL (query strings), headers (Authorization) or bodies.
      ctx.state.log.info(
        { method: ctx.method, route, status, durationMs: Math.round(durationMs * 100) / 100, ...(ctx.res.writableFinished ? {} : { aborted: true }) },
        'request',
      );
    });
    return next();
  };
}
