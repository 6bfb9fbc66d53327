/**
 * The types every part of the HTTP layer shares: the koa state and context of this node's apps, the
 * router and middleware types built on them, and the option shapes HTTP takes from its caller
 * (`src/node` passes config values in; HTTP never imports `src/config`).
 *
 * Types only: the app (./app.ts), the routers (./routes), the middleware (./middleware) and the
 * helpers (./body.ts, ./job-forward.ts, ./rate-limit.ts) all import from here, never from each other
 * for a type, so no import cycle runs through the app.
 */
import type Koa from 'koa';
import type { Router } from '@koa/router';
import type { Logger } from '../log/index.ts';

/** What the app's middleware puts in `ctx.state` for handlers. */
export interface HttpState {
  /** This request's id (echoed from `X-Request-Id` or generated). */
  reqId: string;
  /** Child logger bound to `{ module: "http", reqId }`: use it for every line about the request. */
  log: Logger;
  /**
   * The parsed JSON body (a plain object; `{}` when empty) for POST/PUT/PATCH, `undefined` otherwise
   * or on routes that take the raw stream. Never trust it: validate with `parseBody`.
   */
  body: unknown;
}

/** Context fields @koa/router sets that the app-level middleware reads (route labels). */
export interface HttpContext {
  /** Pattern of the route that handled the request, e.g. `/admin/probe/:key`. */
  _matchedRoute?: string | RegExp;
  /** Layers whose path matched (set even when the method did not: a 405). */
  matched?: ReadonlyArray<{ path: string | RegExp; methods: readonly string[] }>;
}

/** The koa application type the app factories (./app.ts, ./operator-app.ts) return. */
export type HttpApp = Koa<HttpState, HttpContext>;

/** A resource router (one per resource, under `src/http/routes`). */
export type ApiRouter = Router<HttpState, HttpContext>;

/** A koa middleware of this app. */
export type HttpMiddleware = Koa.Middleware<HttpState, HttpContext>;

/**
 * An enabled EVM chain as HTTP reports it (`GET /healthz` `supportedChains` and `configurations`):
 * the fields of a `chains[]` config entry the answer shows.
 */
export interface HttpChain {
  /** EIP-155 chain id. */
  chainId: number;
  /** Display name. */
  name: string;
  /** JSON-RPC endpoint, advertised as is. */
  rpcUrl: string;
  /** The secrets controller's address, when one is configured. */
  secretsControllerAddress?: string;
  /** Average block interval, ms. */
  blockTimeMs: number;
}

/**
 * How `GET /web2/confirm` behaves (`permits.confirmMode`): `link` consumes the permit on the GET;
 * `button` shows a page whose button POSTs the confirmation (./routes/permits.ts).
 */
export type PermitConfirmMode = 'link' | 'button';
