/** Security headers on every response: the API serves JSON only, never anything a browser should render. */
import type { HttpMiddleware } from '../types.ts';

/** Headers on every response. */
const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'X-Content-Type-Options': 'nosniff',
  'X-Frame-Options': 'DENY',
  'Referrer-Policy': 'no-referrer',
  'Cache-Control': 'no-store',
  'Content-Security-Policy': "default-src 'none'; frame-ancestors 'none'",
  'Cross-Origin-Resource-Policy': 'same-site',
};

/** The {@link SECURITY_HEADERS} on every response. */
export const securityHeaders: HttpMiddleware = (ctx, next) => {
  ctx.set(SECURITY_HEADERS);
  return next();
};
