/**
 * Permits V2 (spec/PERMITS.md, "POST /web2/permit"): requesting an admin change — rotate, transfer or
 * delegate — confirmed later from an emailed link.
 *
 * The route checks shapes only (every field a string within a bound; `payload` must be the JSON
 * *text*, so the legacy object form is a 400 here) and hands named values to one
 * {@link PermitsService} call, which owns every rule of PERMITS.md. 201 for a new permit, 200 for an
 * exact replay.
 */
import { Router } from '@koa/router';
import { z } from 'zod';
import type { PermitRequestInput, PermitsService } from '../../core/permits/types.ts';
import type { ApiRouter } from '../app.ts';
import { parseBody } from '../validate.ts';
import { pick, SIGNATURE_MAX_CHARS, SIGNED_DATA_MAX_CHARS, text } from '../fields.ts';

/** Longest requestId or action accepted (the service checks the values). */
const SHORT_MAX_CHARS = 64;
/** Longest payload text accepted here (the service's own bound is tighter). */
const PAYLOAD_MAX_CHARS = 8192;
/** Longest email and password accepted (as for the accounts routes). */
const EMAIL_MAX_CHARS = 320;
const PASSWORD_MAX_CHARS = 1024;

const permitSchema = z.object({
  requestId: text(SHORT_MAX_CHARS),
  action: text(SHORT_MAX_CHARS),
  payload: text(PAYLOAD_MAX_CHARS),
  email: text(EMAIL_MAX_CHARS).optional(),
  password: text(PASSWORD_MAX_CHARS).optional(),
  data: text(SIGNED_DATA_MAX_CHARS).optional(),
  signature: text(SIGNATURE_MAX_CHARS).optional(),
});

/** Dependencies of {@link createPermitsRouter}. */
export interface PermitsRouterDeps {
  permits: PermitsService;
}

/** `POST /web2/permit`. */
export function createPermitsRouter(deps: PermitsRouterDeps): ApiRouter {
  const { permits } = deps;
  const router: ApiRouter = new Router();

  router.post('/web2/permit', async (ctx) => {
    const body = parseBody(ctx, permitSchema);
    const input: PermitRequestInput = { requestId: body.requestId, action: body.action, payload: body.payload };
    if (body.email !== undefined) input.email = body.email;
    if (body.password !== undefined) input.password = body.password;
    if (body.data !== undefined) input.data = body.data;
    if (body.signature !== undefined) input.signature = body.signature;
    const result = await permits.requestPermit(input);
    ctx.status = result.created ? 201 : 200;
    ctx.body = { success: true, ...pick(result, ['permitId', 'action', 'clusterId', 'expiresAt', 'message']) };
  });

  return router;
}
