/**
 * Operator endpoints over member slots (docs/operations.md, "Lose a disk"), behind the admin bearer
 * token and mounted only when one is configured:
 *
 * - `GET /admin/members` — every slot: node, status (`active` or `recovering`), since, reachable.
 * - `POST /admin/members/:slot/recover` — mark a slot `recovering` (replicated): its node, started
 *   empty on its own keys, then rebuilds its shares from `threshold` helpers (docs/security.md,
 *   "Share recovery") and marks itself `active` when it holds them all.
 */
import { Router } from '@koa/router';
import { z } from 'zod';
import type { MemberAdmin } from '../../core/secrets/recovery.ts';
import type { ApiRouter } from '../types.ts';
import { parseParams } from '../validate.ts';
import { text } from '../fields.ts';
import { requireBearer } from './admin.ts';

const paramsSchema = z.object({ slot: text(8) });

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
  return router;
}
