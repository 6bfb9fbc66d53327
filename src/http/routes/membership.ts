/**
 * Membership epochs on the operator port, behind the admin bearer token (docs/operations.md, "Replace
 * a member's identity"): `GET /admin/cluster` reports the epoch this node runs on and how far it holds
 * each origin's log; `POST /admin/cluster/approve` signs a proposed next epoch when this member finds
 * it one valid step (src/core/membership/approve.ts). `quorumkeep member replace` calls both.
 * Mounted only when a token is configured.
 */
import { Router } from '@koa/router';
import type { Logger } from '../../log/index.ts';
import type { EpochApprover } from '../../core/membership/approve.ts';
import type { ApiRouter } from '../types.ts';
import { createJsonBodyParser } from '../body.ts';
import { requireBearer } from './admin.ts';

/** Largest proposal accepted: a 64-node file with its retired identities. */
const PROPOSAL_LIMIT_BYTES = 512 * 1024;

/** `GET /admin/cluster` and `POST /admin/cluster/approve`. */
export function createMembershipRouter(options: { token: string }, deps: { approver: EpochApprover; logger: Logger }): ApiRouter {
  if (options.token === '') throw new Error('createMembershipRouter: an empty admin token would disable auth');
  const log = deps.logger.child({ module: 'membership' });
  const auth = requireBearer(options.token);
  const router: ApiRouter = new Router();
  router.get('/admin/cluster', auth, (ctx) => {
    ctx.set('Cache-Control', 'no-store');
    ctx.body = deps.approver.report();
  });
  router.post('/admin/cluster/approve', auth, createJsonBodyParser({ limitBytes: PROPOSAL_LIMIT_BYTES }), (ctx) => {
    // The approver parses the proposal with the cluster file's own rules (400 naming the field).
    const { approval, proposal } = deps.approver.approve(ctx.state.body);
    const retired = proposal.retired?.at(-1);
    log.warn({ epoch: proposal.epoch, retired: retired?.nodeAddress, nodeId: retired?.id }, 'membership epoch approved');
    ctx.body = { approval };
  });
  return router;
}
