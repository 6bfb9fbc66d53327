/**
 * Usage (docs/http.md, Usage) and the operator's plan assignment.
 *
 * - `POST /jobs/dataConsumption` — the caller's plan and this cycle's usage, signed
 *   `<chainId>_0_<signer>_<fresh>`. Its own router, listed before the files router: `POST /jobs`
 *   (the job list) matches `/jobs` exactly and `/jobs/:jobId/…` needs three segments, so neither
 *   takes this path.
 * - `POST /admin/usage/plan`, `GET /admin/usage/plan/:principalId` — behind the admin bearer token.
 *
 * Shapes only here; the usage service verifies, reads and replicates.
 */
import { Router } from '@koa/router';
import { z } from 'zod';
import type { DirectionUsage, UsageReport, UsageService } from '../../core/usage/types.ts';
import type { ApiRouter } from '../types.ts';
import { parseBody, parseParams } from '../validate.ts';
import { pick, PRINCIPAL_ID_MAX_CHARS, signedBodySchema, text } from '../fields.ts';
import { requireBearer } from './admin.ts';

/** The documented fields of each direction, in wire order. */
const DIRECTION_FIELDS = ['limit', 'used', 'remaining', 'count', 'requestLimit', 'rateLimit', 'limitGB', 'usedGB', 'remainingGB'] as const satisfies ReadonlyArray<keyof DirectionUsage>;

/**
 * The report in wire order: the camelCase fields, then the snake_case copies that clients of release
 * 0.4–0.5.x read (docs/http.md, Usage: "send both"). Never a `wallet` field.
 */
export function reportBody(report: UsageReport) {
  return {
    success: true,
    userId: report.userId,
    userType: report.userType,
    planId: report.planId,
    cycleType: report.cycleType,
    periodStart: report.periodStart,
    periodEnd: report.periodEnd,
    encryption: pick(report.encryption, DIRECTION_FIELDS),
    decryption: pick(report.decryption, DIRECTION_FIELDS),
    user_id: report.userId,
    user_type: report.userType,
    plan_id: report.planId,
    cycle_type: report.cycleType,
    period_start: report.periodStart,
    period_end: report.periodEnd,
  };
}

/** Dependencies of {@link createUsageRouter} and {@link createUsageAdminRouter}. */
export interface UsageRouteDeps {
  usage: UsageService;
}

/** `POST /jobs/dataConsumption`. */
export function createUsageRouter(deps: UsageRouteDeps): ApiRouter {
  const router: ApiRouter = new Router();
  router.post('/jobs/dataConsumption', async (ctx) => {
    const request = parseBody(ctx, signedBodySchema());
    ctx.body = reportBody(await deps.usage.report(request));
  });
  return router;
}

const assignSchema = z.object({ principalId: text(PRINCIPAL_ID_MAX_CHARS), planId: text(64) });
const planParamsSchema = z.object({ principalId: text(PRINCIPAL_ID_MAX_CHARS) });

/** Options of {@link createUsageAdminRouter}. */
export interface UsageAdminOptions {
  /** Admin bearer token; must be non-empty (the router is mounted only when one is configured). */
  token: string;
}

/** `POST /admin/usage/plan` and `GET /admin/usage/plan/:principalId` (admin bearer token). */
export function createUsageAdminRouter(options: UsageAdminOptions, deps: UsageRouteDeps): ApiRouter {
  const auth = requireBearer(options.token);
  const router: ApiRouter = new Router();
  router.post('/admin/usage/plan', auth, async (ctx) => {
    const { principalId, planId } = parseBody(ctx, assignSchema);
    ctx.body = await deps.usage.assignPlan(principalId, planId);
  });
  router.get('/admin/usage/plan/:principalId', auth, async (ctx) => {
    const { principalId } = parseParams(ctx, planParamsSchema);
    ctx.body = await deps.usage.planOf(principalId);
  });
  return router;
}
