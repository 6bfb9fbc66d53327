/**
 * The operator port's app (issue 11): `GET /healthz`, `GET /readyz` and `GET /metrics` on every node,
 * member or coordinator, so a monitoring system can scrape nodes that serve no API. The routes are the
 * discovery router's own (./routes/discovery.ts), so `/healthz` gives the same cluster view as a
 * coordinator's; `/metrics` is served without a token, because this port is meant for a private
 * interface (docs/deployment.md). Like the API app it never listens: `src/node` binds it.
 *
 * With an admin token configured it also serves `GET /admin/backup` (./routes/backup.ts): a
 * consistent snapshot of the node's store for `quorumkeep backup`, behind that bearer token, and
 * `GET /admin/cluster` / `POST /admin/cluster/approve` (./routes/membership.ts) for `quorumkeep member replace`.
 *
 * Middleware: the error responses (JSON for 404 and 405), security headers, the router. No access
 * log: a scraper polls every few seconds, and those lines would drown the node's own.
 */
import type { HealthSource } from '../core/health/index.ts';
import type { Logger } from '../log/index.ts';
import type { NodeMetrics } from '../metrics/index.ts';
import type { HttpApp, HttpChain } from './types.ts';
import { combineRouters, createBaseApp } from './base-app.ts';
import { securityHeaders } from './middleware/security-headers.ts';
import { createBackupRouter, type BackupSource } from './routes/backup.ts';
import { createMembershipRouter } from './routes/membership.ts';
import type { EpochApprover } from '../core/membership/approve.ts';
import { createDiscoveryRouter } from './routes/discovery.ts';
import type { RecoveryProgress } from '../core/secrets/recovery.ts';

/** Options of {@link createOperatorApp}. */
export interface OperatorAppOptions {
  /** Enabled EVM chains, reported by `/healthz` as on the API. */
  chains: readonly HttpChain[];
  /** Bearer token of `GET /admin/backup`; empty: not served (404). @default "" */
  adminToken?: string;
}

/** Dependencies of {@link createOperatorApp}. */
export interface OperatorAppDeps {
  /** Root logger; the app takes a `{ module: "operator-http" }` child. */
  logger: Logger;
  /** Wall clock, Unix ms (`serverTime`). */
  clock: () => number;
  health: HealthSource;
  metrics: Pick<NodeMetrics, 'render' | 'contentType'>;
  /** A member's share recovery, for `/healthz` `recovery`. @default none */
  recovery?: () => RecoveryProgress;
  /** Snapshots for `GET /admin/backup`; without it (or without a token) the route is not served. */
  backup?: BackupSource;
  /** Membership epochs for `GET /admin/cluster` and `POST /admin/cluster/approve`; without it (or a token) not served. */
  membership?: EpochApprover;
}

/** Create the operator port's app: health, readiness, metrics (and backups with a token). Returns the app; never listens. */
export function createOperatorApp(options: OperatorAppOptions, deps: OperatorAppDeps): HttpApp {
  const log = deps.logger.child({ module: 'operator-http' });
  const token = options.adminToken ?? '';
  const routes = combineRouters([
    createDiscoveryRouter({ chains: options.chains, metrics: 'public' }, deps),
    token !== '' && deps.backup ? createBackupRouter({ token }, { backup: deps.backup, logger: deps.logger }) : undefined,
    token !== '' && deps.membership ? createMembershipRouter({ token }, { approver: deps.membership, logger: deps.logger }) : undefined,
  ]);
  const app = createBaseApp(log, { trustProxy: false });
  app.use(securityHeaders);
  app.use(routes.routes());
  app.use(routes.allowedMethods());
  return app;
}
