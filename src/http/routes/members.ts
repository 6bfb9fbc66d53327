/**
 * Operator endpoints over member slots (docs/operations.md, "Lose a disk"), behind the admin bearer
 * token and mounted only when one is configured:
 *
 * - `GET /admin/members` — every slot: node, status (`active` or `recovering`), since, reachable.
 * - `POST /admin/members/:slot/recover` — mark a slot `recovering` (replicated): its node, started
 *   empty on its own keys, then rebuilds its shares from `threshold` helpers (docs/security.md,
 *   "Share recovery") and marks itself `active` when it holds them all.
 * - `GET /admin/secrets/safety` — the secrets at risk and lost, freshly asked of the members
 *   (docs/operations.md, "Data safety").
 * - `POST /admin/secrets/acknowledge-loss` — record the loss of the named secrets (`{ secrets: [{
 *   chainId, secretId }] }`), or of every lost one (`{}`): each only with the statements of
 *   `size − threshold + 1` members that they hold no share of it.
 */
import { Router } from '@koa/router';
import { z } from 'zod';
import type { MemberAdmin } from '../../core/secrets/recovery.ts';
import type { ApiRouter } from '../types.ts';
import { parseBody, parseParams } from '../validate.ts';
import { text } from '../fields.ts';
import { requireBearer } from './admin.ts';

const paramsSchema = z.object({ slot: text(8) });
/** Most secrets one acknowledgement names. */
const ACKNOWLEDGE_MAX_SECRETS = 10_000;
const acknowledgeSchema = z.strictObject({
  secrets: z
    .array(z.strictObject({ chainId: z.union([z.literal(-1), z.int().positive()]), secretId: z.int().positive() }))
    .min(1)
    .max(ACKNOWLEDGE_MAX_SECRETS)
    .optional(),
});

/** Options of {@link createMembersRouter}. */
export interface MembersOptions {
  /** The operators' bearer token (`admin.token`); must be non-empty. */
  token: string;
}

/** Routes of the member endpoints. */
export function createMembersRouter(options: MembersOptions, deps: { members: MemberAdmin }): ApiRouter {
  if (options.token === '') throw new Error('createMembersRouter: an empty admin token would disable auth');
  const auth = requireBearer(options.token);
  const router: ApiRouter = new Router();
  router.get('/admin/members', auth, async (ctx) => {
    ctx.body = { success: true, members: await deps.members.list() };
  });
  router.post('/admin/members/:slot/recover', auth, async (ctx) => {
    const { slot } = parseParams(ctx, paramsSchema);
    ctx.body = { success: true, member: await deps.members.markRecovering(slot) };
  });
  router.get('/admin/secrets/safety', auth, async (ctx) => {
    ctx.body = { success: true, ...(await deps.members.dataSafety()) };
  });
  router.post('/admin/secrets/acknowledge-loss', auth, async (ctx) => {
    const { secrets } = parseBody(ctx, acknowledgeSchema);
    ctx.body = { success: true, ...(await deps.members.acknowledgeLoss(secrets)) };
  });
  return router;
}
