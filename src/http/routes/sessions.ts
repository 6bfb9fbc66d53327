/**
 * Web2 sessions (docs/http.md, "Sessions"): creating a session for an ephemeral wallet, granted by a
 * quorum of members, and asking whether a session is active.
 *
 * The routes check shapes only and hand named values to one {@link SessionsService} call; the
 * service checks the Ed25519 signature, the timestamp window, the address, the ttl range and the
 * signed data string, and throws the `AppError`s the error middleware maps to their status.
 * Unknown body fields are ignored (deployed SDKs send extras); the body is never spread.
 */
import { Router } from '@koa/router';
import { z } from 'zod';
import type { CreateSessionInput, SessionsService } from '../../core/sessions/types.ts';
import type { ApiRouter } from '../types.ts';
import { parseBody } from '../validate.ts';
import { optionalNumber, pick, PRINCIPAL_ID_MAX_CHARS, SIGNATURE_MAX_CHARS, signedBodySchema, text, textOrNumber } from '../fields.ts';

/** Longest session address accepted (a 0x address is 42 chars; the service checks the value). */
const SESSION_ADDRESS_MAX_CHARS = 128;
/** Longest timestamp accepted (Unix ms is 13 digits; the service checks the value). */
const TIMESTAMP_MAX_CHARS = 32;

const createSessionSchema = z.object({
  principalId: text(PRINCIPAL_ID_MAX_CHARS),
  // Unix ms as a string (docs/http.md, "Sessions"); a JSON number is passed on as its decimal string.
  timestamp: textOrNumber(TIMESTAMP_MAX_CHARS),
  signature: text(SIGNATURE_MAX_CHARS),
  sessionAddress: text(SESSION_ADDRESS_MAX_CHARS),
  // A number, or its decimal string; the 60000–2592000000 range is the service's rule.
  ttl: optionalNumber(),
});

const sessionStatusSchema = signedBodySchema();

/** Dependencies of {@link createSessionsRouter}. */
export interface SessionsDeps {
  sessions: SessionsService;
}

/** `POST /web2/session` and `POST /web2/session/status`. No auth header: the body carries the proof. */
export function createSessionsRouter(deps: SessionsDeps): ApiRouter {
  const { sessions } = deps;
  const router: ApiRouter = new Router();

  router.post('/web2/session', async (ctx) => {
    const body = parseBody(ctx, createSessionSchema);
    const input: CreateSessionInput = {
      principalId: body.principalId,
      timestamp: body.timestamp,
      signature: body.signature,
      sessionAddress: body.sessionAddress,
    };
    // Absent stays absent: the signed message has `:<ttl>` only when the client sent one.
    if (body.ttl !== undefined) input.ttl = body.ttl;
    const created = await sessions.createSession(input);
    ctx.status = 201;
    ctx.body = {
      ...pick(created, ['sessionToken', 'sessionAddress']),
      quorumProof: created.quorumProof.map((proof) => pick(proof, ['nodeAddress', 'signature'])),
      expiresAt: created.expiresAt,
    };
  });

  router.post('/web2/session/status', async (ctx) => {
    const { data, signature } = parseBody(ctx, sessionStatusSchema);
    // An inactive session is the service's 401 SESSION_INACTIVE, never a 200 with active: false.
    const status = await sessions.sessionStatus({ data, signature });
    ctx.body = { active: true, ...pick(status, ['principalId', 'sessionAddress', 'expiresAt']) };
  });

  return router;
}
