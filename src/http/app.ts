/**
 * The HTTP app factory: koa middleware in a fixed order, then one router per resource.
 * It never listens (CONTRIBUTING.md rule 11) — `src/node` binds it with {@link listenHttp}, tests may drive
 * it through `app.callback()` or a bound port.
 *
 * Middleware order, outermost first (each under ./middleware unless named):
 * 1. error responses — every failure becomes `{ error, code, ...extra }` JSON (docs/http.md, "Errors"),
 *    installed by the base app every app of this node starts from (./base-app.ts);
 * 2. request id — echo or generate `X-Request-Id`, a per-request child logger;
 * 3. observation — access log line and latency histogram, once the response is done;
 * 4. security headers;
 * 5. CORS;
 * 6. JSON body parser (./body.ts);
 * 7. file-job forwarding (./job-forward.ts): a job another coordinator holds is answered by it;
 * 8. the API router, then its 405 handling. Per-route middleware inside it: the admin bearer check
 *    (`requireBearer`) and the abuse limits of the account routes (./rate-limit.ts).
 */
import { performance } from 'node:perf_hooks';
import { systemRandom, type RandomSource } from '../crypto/index.ts';
import type { Logger } from '../log/index.ts';
import type { NodeMetrics } from '../metrics/index.ts';
import type { HealthSource } from '../core/health/index.ts';
import type { ProbeService } from '../core/probe/index.ts';
import type { AccountsService } from '../core/accounts/types.ts';
import type { SessionsService } from '../core/sessions/types.ts';
import type { SecretsService } from '../core/secrets/types.ts';
import type { PayloadsService } from '../core/payloads/types.ts';
import type { HttpApp, HttpChain, PermitConfirmMode } from './types.ts';
import { combineRouters, createBaseApp } from './base-app.ts';
import { cors } from './middleware/cors.ts';
import { observe } from './middleware/observe.ts';
import { requestId } from './middleware/request-id.ts';
import { securityHeaders } from './middleware/security-headers.ts';
import { createJsonBodyParser, takesRawBody } from './body.ts';
import { createAuthRateLimit, type AuthRateLimit, type AuthRateLimitOptions } from './rate-limit.ts';
import { createDiscoveryRouter } from './routes/discovery.ts';
import { createOpenApiRouter } from './routes/openapi.ts';
import { shippedOpenApiDocument, type OpenApiDocument } from './openapi-document.ts';
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

/** Options of {@link createHttpApp} (from `NodeConfig.http`, `chains` and `admin`). */
export interface HttpAppOptions {
  /** Origins allowed by CORS: exact match, or `"*"` for any origin. */
  corsOrigins: string[];
  /** Largest JSON body accepted, in bytes (docs/http.md, "Request bodies": 1 MiB). */
  bodyLimitBytes: number;
  /** Honour `X-Forwarded-*` headers (behind one reverse proxy: `ctx.ip` is the last X-Forwarded-For entry). */
  trustProxy: boolean;
  /** Enabled EVM chains, advertised by `GET /healthz`. */
  chains: readonly HttpChain[];
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
  /** What `GET /openapi.json` and `GET /openapi.yaml` serve. @default the package's docs/openapi.yaml */
  openApi?: OpenApiDocument;
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

/**
 * Create the coordinator's HTTP app (docs/http.md). Returns the app; never listens.
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
    createOpenApiRouter({ document: options.openApi ?? shippedOpenApiDocument() }),
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
  app.use(observe(deps.metrics, log));
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

/** Route middleware when no limits are configured. */
const NO_RATE_LIMIT: AuthRateLimit = { email: (_ctx, next) => next(), principalId: (_ctx, next) => next() };
