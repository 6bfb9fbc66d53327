/**
 * The HTTP app factory: koa middleware in a fixed order, then one router per resource.
 * It never listens (STYLE.md rule 11) — `src/node` binds it with {@link listenHttp}, tests may drive
 * it through `app.callback()` or a bound port.
 *
 * Middleware order, outermost first:
 * 1. error responses — every failure becomes `{ error, code, ...extra }` JSON (API.md, Conventions);
 * 2. request id — echo or generate `X-Request-Id`, a per-request child logger;
 * 3. observation — access log line and latency histogram, once the response is done;
 * 4. security headers;
 * 5. CORS;
 * 6. JSON body parser;
 * 7. file-job forwarding (./job-forward.ts): a job another coordinator holds is answered by it;
 * 8. the API router, then its 405 handling. Per-route middleware inside it: the admin bearer check
 *    (`requireBearer`) and the abuse limits of the account routes (./rate-limit.ts).
 */
import { METHODS, STATUS_CODES } from 'node:http';
import { performance } from 'node:perf_hooks';
import Koa, { HttpError } from 'koa';
import { Router } from '@koa/router';
import { AppError, ERROR_CODES, isAppError, type ErrorCode } from '../errors/index.ts';
import { systemRandom, toHex, type RandomSource } from '../crypto/index.ts';
import type { Logger } from '../log/index.ts';
import type { NodeMetrics } from '../metrics/index.ts';
import type { HealthSource } from '../core/health/index.ts';
import type { ProbeService } from '../core/probe/index.ts';
import type { AccountsService } from '../core/accounts/types.ts';
import type { SessionsService } from '../core/sessions/types.ts';
import type { SecretsService } from '../core/secrets/types.ts';
import type { PayloadsService } from '../core/payloads/types.ts';
import type { ChainConfig, PermitConfirmMode } from '../config/schema.ts';
import { createJsonBodyParser, takesRawBody } from './body.ts';
import { createAuthRateLimit, type AuthRateLimit, type AuthRateLimitOptions } from './rate-limit.ts';
import { createDiscoveryRouter } from './routes/discovery.ts';
import { createAdminRouter } from './routes/admin.ts';
import { createMembersRouter } from './routes/members.ts';
import type { MemberAdmin, RecoveryProgress } from '../core/secrets/recovery.ts';
import { createWeb2AuthRouter } from './routes/web2-auth.ts';
import { createSessionsRouter } from './routes/sessions.ts';
import { createSecretFailuresRouter, createSecretsRouter } from './routes/secrets.ts';
import { createPublicKeysRouter } from './routes/public-keys.ts';
import { createPayloadsRouter } from './routes/payloads.ts';
import { createPermitsRouter } from './routes/permits.ts';
import type { PermitsService } from '../core/permits/types.ts';
import type { FilesService } from '../core/files/types.ts';
import { createFilesRouter } from './routes/files.ts';
import type { UsageService } from '../core/usage/types.ts';
import type { ChainStatusView } from '../core/web3/ports.ts';
import { createUsageAdminRouter, createUsageRouter } from './routes/usage.ts';
import { createJobForwarding, type JobForwardingOptions, type JobPeer } from './job-forward.ts';

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

/** The koa application type {@link createHttpApp} returns. */
export type HttpApp = Koa<HttpState, HttpContext>;

/** A resource router (one per resource, under `src/http/routes`). */
export type ApiRouter = Router<HttpState, HttpContext>;

/** A koa middleware of this app. */
export type HttpMiddleware = Koa.Middleware<HttpState, HttpContext>;

/** Options of {@link createHttpApp} (from `NodeConfig.http`, `chains` and `admin`). */
export interface HttpAppOptions {
  /** Origins allowed by CORS: exact match, or `"*"` for any origin. */
  corsOrigins: string[];
  /** Largest JSON body accepted, in bytes (API.md: 1 MiB). */
  bodyLimitBytes: number;
  /** Honour `X-Forwarded-*` headers (behind one reverse proxy: `ctx.ip` is the last X-Forwarded-For entry). */
  trustProxy: boolean;
  /** Enabled EVM chains, advertised by `GET /healthz`. */
  chains: ChainConfig[];
  /**
   * Bearer token of the operator endpoints (`/admin`, `/web2/secret-failures`); `""` disables them
   * (they answer 404).
   */
  adminToken: string;
  /** How `GET /web2/confirm` behaves (`permits.confirmMode`). @default "link" */
  permitConfirmMode?: PermitConfirmMode;
  /**
   * Serve `GET /metrics` without a token. Otherwise it needs the admin bearer token, and is not
   * served when `adminToken` is empty. @default false
   */
  metricsPublic?: boolean;
  /**
   * Abuse limits of the unauthenticated account routes (`http.rateLimits`).
   * @default none: no limits (the node always passes its config's)
   */
  rateLimits?: AuthRateLimitOptions;
  /** Timeouts and cache of file-job forwarding (./job-forward.ts). @default its defaults */
  jobForwarding?: JobForwardingOptions;
}

/** Live dependencies of {@link createHttpApp}. Each router declares the subset it uses. */
export interface HttpAppDeps {
  /** Root logger; the app takes a `{ module: "http" }` child. */
  logger: Logger;
  metrics: NodeMetrics;
  /** Wall clock, Unix ms. */
  clock: () => number;
  health: HealthSource;
  probe: ProbeService;
  /** Web2 accounts (`/web2/auth`, `/web2/principal/byEmail`). */
  accounts: AccountsService;
  /** Web2 sessions (`/web2/session`, `/web2/session/status`). */
  sessions: SessionsService;
  /** Secrets (`/web2/secret`, `/web2/secrets`, `/web2/setDelegate`, `/web2/secret-failures`, `/secret-public-key`). */
  secrets: SecretsService;
  /** Payload encryption (`/encrypt-payload`, `/decrypt-payload`). */
  payloads: PayloadsService;
  /** Permits V2 (`/web2/permit`, `/web2/confirm`). */
  permits: PermitsService;
  /** File jobs (`/encrypt-file`, `/jobs/:jobId/status`, `…/download`, `…/delete`, `POST /jobs`). */
  files: FilesService;
  /**
   * Usage and plans (`POST /jobs/dataConsumption`, `/admin/usage/plan`). The node always passes it.
   * @default none: those routes are not served (apps built to test other resources)
   */
  usage?: UsageService;
  /**
   * The other coordinators (cluster-file entries with an `httpUrl`, never this node): file jobs they
   * hold are forwarded to them (./job-forward.ts). @default none: every job is answered locally
   */
  jobPeers?: () => readonly JobPeer[];
  /** Each chain as last seen, for `/healthz` `chainStatus` (src/evm). @default none */
  chainStatus?: () => readonly ChainStatusView[];
  /** The member slots and their recovery (`/admin/members`). @default none: not mounted */
  members?: MemberAdmin;
  /** This member's share recovery, for `/healthz` `recovery`. @default none */
  recovery?: () => RecoveryProgress;
  /** Randomness for request ids and default probe keys. @default systemRandom */
  random?: RandomSource;
  /** Monotonic milliseconds for the rate limits. @default performance.now */
  now?: () => number;
}

/** Request ids we echo: 1–128 characters of `[A-Za-z0-9._:-]`, anything else is replaced. */
const REQUEST_ID_RE = /^[A-Za-z0-9._:-]{1,128}$/;
/** Bytes of randomness in a generated request id (32 hex chars). */
const REQUEST_ID_BYTES = 16;
/** Route label for requests no route handled (keeps metric labels a fixed set). */
const UNMATCHED_ROUTE = 'unmatched';

/** Headers on every response: the API serves JSON only, never anything a browser should render. */
const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'X-Content-Type-Options': 'nosniff',
  'X-Frame-Options': 'DENY',
  'Referrer-Policy': 'no-referrer',
  'Cache-Control': 'no-store',
  'Content-Security-Policy': "default-src 'none'; frame-ancestors 'none'",
  'Cross-Origin-Resource-Policy': 'same-site',
};

const CORS_ALLOW_METHODS = 'GET, POST, OPTIONS';
const CORS_ALLOW_HEADERS = 'Content-Type, Authorization, X-Request-Id';
// Retry-After is not a CORS-safelisted response header: a browser app could not read it otherwise.
const CORS_EXPOSE_HEADERS = 'X-Request-Id, Retry-After';
const CORS_MAX_AGE_S = 600;

/**
 * Create the coordinator's HTTP app (API.md). Returns the app; never listens.
 *
 * Adding a resource is one line in the router list below.
 */
export function createHttpApp(options: HttpAppOptions, deps: HttpAppDeps): HttpApp {
  const log = deps.logger.child({ module: 'http' });
  const random = deps.random ?? systemRandom;
  // Each router takes the few deps its factory declares from this set.
  const rateLimit: AuthRateLimit = options.rateLimits
    ? createAuthRateLimit(options.rateLimits, { now: deps.now ?? (() => performance.now()), metrics: deps.metrics })
    : NO_RATE_LIMIT;
  const routerDeps = { ...deps, random, rateLimit };
  const operator = options.adminToken !== '';
  // /metrics: public only when asked; else behind the admin token, and absent without one.
  const metricsAccess = options.metricsPublic ? 'public' : operator ? { token: options.adminToken } : 'off';
  const api = combineRouters([
    createDiscoveryRouter({ chains: options.chains, metrics: metricsAccess }, routerDeps),
    operator ? createAdminRouter({ token: options.adminToken }, routerDeps) : undefined,
    operator && deps.members ? createMembersRouter({ token: options.adminToken }, { members: deps.members }) : undefined,
    createWeb2AuthRouter(routerDeps),
    createSessionsRouter(routerDeps),
    createSecretsRouter(routerDeps),
    operator ? createSecretFailuresRouter({ token: options.adminToken }, routerDeps) : undefined,
    createPublicKeysRouter(routerDeps),
    createPayloadsRouter(routerDeps),
    createPermitsRouter({ confirmMode: options.permitConfirmMode ?? 'link' }, routerDeps),
    // Before the files router, whose `POST /jobs` does not match this path either (routes/usage.ts).
    deps.usage ? createUsageRouter({ usage: deps.usage }) : undefined,
    deps.usage && operator ? createUsageAdminRouter({ token: options.adminToken }, { usage: deps.usage }) : undefined,
    createFilesRouter(routerDeps),
  ]);

  const app = createBaseApp(log, { trustProxy: options.trustProxy });
  app.use(requestId(log, random));
  app.use(observe(deps.metrics));
  app.use(securityHeaders);
  app.use(cors(options.corsOrigins));
  app.use(createJsonBodyParser({ limitBytes: options.bodyLimitBytes, skip: takesRawBody(api) }));
  if (deps.jobPeers) {
    app.use(createJobForwarding(options.jobForwarding ?? {}, { files: deps.files, peers: deps.jobPeers, router: api, logger: deps.logger, metrics: deps.metrics }));
  }
  app.use(api.routes());
  app.use(api.allowedMethods());
  return app;
}

/**
 * A koa app with what every app of this node starts with (this one and the operator port's,
 * ./operator-app.ts): escaped errors logged as one line, and the error middleware first, so every
 * failure is answered `{ error, code }` (STYLE.md rule 7).
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

/** Route middleware when no limits are configured. */
const NO_RATE_LIMIT: AuthRateLimit = { email: (_ctx, next) => next(), principalId: (_ctx, next) => next() };

/** Mount resource routers under one router, so 405 handling and route matching see every route. */
export function combineRouters(routers: ReadonlyArray<ApiRouter | undefined>): ApiRouter {
  // Every method Node parses is "implemented": an unsupported method on a known path is a 405, not a 501.
  const api: ApiRouter = new Router({ methods: [...METHODS] });
  for (const router of routers) if (router) api.use(router.routes());
  return api;
}

// ---------------------------------------------------------------------------------------------
// Errors (STYLE.md rule 7)

/** An error response: status and JSON body. */
interface ErrorReply {
  status: number;
  body: { error: string; code: ErrorCode } & Record<string, unknown>;
}

/** The one answer to anything unexpected: it exposes nothing. */
const INTERNAL_REPLY: ErrorReply = { status: ERROR_CODES.INTERNAL, body: { error: 'Internal error', code: 'INTERNAL' } };

/** Status → code, the reverse of ERROR_CODES (the first, most generic code of each status). */
const CODE_BY_STATUS: ReadonlyMap<number, ErrorCode> = (() => {
  const map = new Map<number, ErrorCode>();
  for (const [code, status] of Object.entries(ERROR_CODES) as Array<[ErrorCode, number]>) {
    if (!map.has(status)) map.set(status, code);
  }
  return map;
})();

/**
 * Reply for a bare error status (koa's 404 when nothing answered, the router's 405, an http-errors
 * error). A status without a code of its own keeps its status and is labelled BAD_REQUEST (4xx) or
 * INTERNAL (5xx).
 */
function statusReply(status: number, message?: string): ErrorReply {
  const code = CODE_BY_STATUS.get(status) ?? (status >= 500 ? 'INTERNAL' : 'BAD_REQUEST');
  const text = STATUS_CODES[status] ?? 'Error';
  return { status, body: { error: message ?? text.charAt(0) + text.slice(1).toLowerCase(), code } };
}

/** The reply for a thrown value, or `undefined` when it is unexpected (a bug or an outage). */
function replyFor(err: unknown): ErrorReply | undefined {
  if (isAppError(err)) return { status: err.status, body: { error: err.message, code: err.code, ...err.extra } };
  // koa's and the router's own errors (ctx.throw, allowedMethods): only 4xx ones are meant for clients.
  if (err instanceof HttpError && err.expose && err.status >= 400 && err.status < 500) return statusReply(err.status, err.message);
  return undefined;
}

function errorResponses(log: Logger): HttpMiddleware {
  return async (ctx, next) => {
    let reply: ErrorReply | undefined;
    try {
      await next();
      // Nothing answered (koa's default 404) or a status without a body (the router's 405): shape
      // it like every other error so clients never see an empty or HTML error.
      if (ctx.status >= 400 && ctx.body == null) reply = statusReply(ctx.status);
    } catch (err) {
      reply = replyFor(err);
      if (reply === undefined) {
        // The request logger carries the reqId; it is missing only if request-id itself threw.
        (ctx.state.log ?? log).error({ err }, 'unhandled error');
        reply = INTERNAL_REPLY;
      }
    }
    if (reply === undefined || ctx.headerSent) return;
    ctx.status = reply.status;
    // RFC 9110 §10.2.3: 429 and 503 answers that know when to come back say so in the header too.
    const retryAfter = reply.body.retryAfterSeconds;
    if (typeof retryAfter === 'number' && retryAfter > 0) ctx.set('Retry-After', String(Math.ceil(retryAfter)));
    // Set explicitly: a handler may have set another type before it threw.
    ctx.type = 'application/json';
    ctx.body = reply.body;
  };
}

// ---------------------------------------------------------------------------------------------
// Request id, access log and metrics

function requestId(log: Logger, random: RandomSource): HttpMiddleware {
  // A random per-app prefix and a counter: unique, 32 hex chars, and no call into the CSPRNG per
  // request (node's randomFillSync for 16 bytes cost ~15 µs, a visible share of a cheap request).
  // Request ids correlate log lines; they are not secrets.
  const prefix = toHex(random(REQUEST_ID_BYTES / 2));
  let counter = 0;
  return (ctx, next) => {
    const incoming = ctx.get('X-Request-Id');
    const reqId = REQUEST_ID_RE.test(incoming) ? incoming : prefix + (counter++).toString(16).padStart(REQUEST_ID_BYTES, '0');
    ctx.state.reqId = reqId;
    ctx.state.log = log.child({ reqId });
    ctx.set('X-Request-Id', reqId);
    return next();
  };
}

/** The route pattern that handled the request, never the raw URL (metric labels stay a fixed set). */
function routeLabel(ctx: Koa.ParameterizedContext<HttpState, HttpContext>): string {
  const pattern = ctx._matchedRoute ?? ctx.matched?.find((layer) => layer.methods.length > 0)?.path;
  return pattern === undefined ? UNMATCHED_ROUTE : String(pattern);
}

/**
 * Access log line and latency histogram. Both are written when the response is done (`close`), so
 * they see the final status set by the error middleware outside this one.
 */
function observe(metrics: NodeMetrics): HttpMiddleware {
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

// ---------------------------------------------------------------------------------------------
// Security headers and CORS

/** The {@link SECURITY_HEADERS} on every response. */
export const securityHeaders: HttpMiddleware = (ctx, next) => {
  ctx.set(SECURITY_HEADERS);
  return next();
};

/**
 * CORS with an exact-match allowlist (API.md, Conventions: browser apps call coordinators directly).
 * Disallowed origins get no CORS headers, so the browser withholds the response; their preflights
 * are refused outright.
 */
function cors(allowedOrigins: readonly string[]): HttpMiddleware {
  const anyOrigin = allowedOrigins.includes('*');
  const allowed = new Set(allowedOrigins);
  return (ctx, next) => {
    ctx.vary('Origin');
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

/** Errors that mean the client went away or broke the framing mid-request. */
const CLIENT_FAULT_CODES = new Set(['ECONNRESET', 'EPIPE', 'ECONNABORTED', 'ERR_STREAM_PREMATURE_CLOSE', 'ECANCELED']);

function isClientFault(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown } | null;
  if (!e) return false;
  if (typeof e.code === 'string' && (CLIENT_FAULT_CODES.has(e.code) || e.code.startsWith('HPE_'))) return true;
  return e.message === 'aborted' || e.message === 'Parse Error' || e.message === 'request aborted';
}
