/**
 * The API's own description (docs/http.md, "Discovery"): `GET /openapi.json` and `GET /openapi.yaml`,
 * no auth. The document is fixed for the life of the process (../openapi-document.ts), so both answers
 * may be cached: for {@link OPENAPI_MAX_AGE_S}, then revalidated by ETag (a `304` when unchanged).
 */
import { Router } from '@koa/router';
import type { OpenApiBody, OpenApiDocument } from '../openapi-document.ts';
import type { ApiRouter, HttpMiddleware } from '../types.ts';

/** How long a client or proxy may reuse an answer without asking again: an upgrade shows within it. */
export const OPENAPI_MAX_AGE_S = 300;

/** Options of {@link createOpenApiRouter}. */
export interface OpenApiRouterOptions {
  /** The document to serve (the shipped one: `shippedOpenApiDocument()`). */
  document: OpenApiDocument;
}

/** Routes `GET /openapi.json` and `GET /openapi.yaml`. */
export function createOpenApiRouter(options: OpenApiRouterOptions): ApiRouter {
  const router: ApiRouter = new Router();
  router.get('/openapi.json', serve(options.document.json, 'application/json; charset=utf-8'));
  // application/yaml: RFC 9512.
  router.get('/openapi.yaml', serve(options.document.yaml, 'application/yaml; charset=utf-8'));
  return router;
}

function serve(form: OpenApiBody, type: string): HttpMiddleware {
  return (ctx) => {
    // Over the security headers' `no-store`: this answer is public and fixed for the process.
    ctx.set('Cache-Control', `public, max-age=${OPENAPI_MAX_AGE_S}`);
    ctx.status = 200;
    ctx.etag = form.etag;
    if (ctx.fresh) {
      ctx.status = 304;
      return;
    }
    ctx.type = type;
    ctx.body = form.body;
  };
}
