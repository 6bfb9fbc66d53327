/** CORS (docs/http.md, "CORS": browser apps call coordinators directly). */
import { AppError } from '../../errors/index.ts';
import type { HttpMiddleware } from '../types.ts';

const CORS_ALLOW_METHODS = 'GET, POST, OPTIONS';
const CORS_ALLOW_HEADERS = 'Content-Type, Authorization, X-Request-Id';
// Retry-After is not a CORS-safelisted response header: a browser app could not read it otherwise.
const CORS_EXPOSE_HEADERS = 'X-Request-Id, Retry-After';
const CORS_MAX_AGE_S = 600;

/**
 * CORS with an exact-match allowlist. Disallowed origins get no CORS headers, so the browser
 * withholds the response; their preflights are refused outright.
 */
export function cors(allowedOrigins: readonly string[]): HttpMiddleware {
  const anyOrigin = allowedOrigins.includes('*');
  const allowed = new Set(allowedOrigins);
  // No origin allowed: no answer ever carries a CORS header, so none varies by Origin; a preflight
  // from any origin is refused.
  if (allowed.size === 0) {
    return (ctx, next) => {
      if (ctx.method === 'OPTIONS' && ctx.get('Origin') !== '' && ctx.get('Access-Control-Request-Method') !== '') throw new AppError('FORBIDDEN', 'Origin not allowed');
      return next();
    };
  }
  return (ctx, next) => {
    // The first middleware to set Vary (nothing before this one does): no header to parse and merge.
    ctx.set('Vary', 'Origin');
    const origin = ctx.get('Origin');
    if (origin === '') return next();
    const preflight = ctx.method === 'OPTIONS' && ctx.get('Access-Control-Request-Method') !== '';
    if (!anyOrigin && !allowed.has(origin)) {
      if (preflight) throw new AppError('FORBIDDEN', 'Origin not allowed');
      return next();
    }
    // Echo the origin (also under "*"): one code path, and the response stays per-origin (Vary).
    ctx.set('Access-Control-Allow-Origin', origin);
    if (preflight) {
      ctx.set({
        'Access-Control-Allow-Methods': CORS_ALLOW_METHODS,
        'Access-Control-Allow-Headers': CORS_ALLOW_HEADERS,
        'Access-Control-Max-Age': String(CORS_MAX_AGE_S),
      });
      ctx.status = 204;
      return Promise.resolve();
    }
    ctx.set('Access-Control-Expose-Headers', CORS_EXPOSE_HEADERS);
    return next();
  };
}
