/**
 * Operator endpoints under `/admin`, behind a bearer token. Mounted only when a token is configured
 * (an empty `admin.token` disables them: they answer 404 like any unknown route).
 *
 * - `POST /admin/probe` — replicate a probe record: an end-to-end check of the quorum write path.
 * - `GET /admin/probe/:key` — read a probe back from this node's replica.
 */
import { Router } from '@koa/router';
import { z } from 'zod';
import { AppError } from '../../errors/index.ts';
import { constantTimeEqual, toHex, type RandomSource } from '../../crypto/index.ts';
import { PROBE_KEY_RE, probeBodySchema, type ProbeService } from '../../core/probe/index.ts';
import type { ApiRouter, HttpMiddleware } from '../types.ts';
import { parseBody, parseParams } from '../validate.ts';

/** Bytes of randomness in a generated probe key (`probe-<16 hex>`). */
const PROBE_KEY_RANDOM_BYTES = 8;

const probeKey = z.string().regex(PROBE_KEY_RE, 'must be 1-128 characters of A-Z a-z 0-9 . _ : -');

const probeWriteSchema = z.strictObject({
  /** @default a random `probe-…` key */
  key: probeKey.optional(),
  /** Same limit as the record kind. @default "" */
  note: probeBodySchema.shape.note.default(''),
});

const probeParamsSchema = z.object({ key: probeKey });

/** Options of {@link createAdminRouter}. */
export interface AdminOptions {
  /** Bearer token operators send; must be non-empty. */
  token: string;
}

/** Dependencies of {@link createAdminRouter}. */
export interface AdminDeps {
  probe: ProbeService;
  /** Randomness for default probe keys. */
  random: RandomSource;
}

/** Routes of the operator endpoints. */
export function createAdminRouter(options: AdminOptions, deps: AdminDeps): ApiRouter {
  if (options.token === '') throw new Error('createAdminRouter: an empty admin token would disable auth');
  const { probe, random } = deps;
  // Per route rather than `router.use`: router-level middleware would also run for other
  // resources' routes once the routers are combined.
  const auth = requireBearer(options.token);
  const router: ApiRouter = new Router();

  router.post('/admin/probe', auth, async (ctx) => {
    const input = parseBody(ctx, probeWriteSchema);
    const key = input.key ?? `probe-${toHex(random(PROBE_KEY_RANDOM_BYTES))}`;
    // A QuorumError propagates: 503 with `failedNodes`.
    const report = await probe.write(key, input.note);
    ctx.status = 201;
    ctx.body = {
      key,
      origin: report.record.origin,
      seq: report.record.seq,
      acked: report.acked,
      failed: report.failed.map(({ nodeAddress, slot, error }) => ({ nodeAddress, slot, error })),
    };
  });

  router.get('/admin/probe/:key', auth, async (ctx) => {
    const { key } = parseParams(ctx, probeParamsSchema);
    const record = await probe.read(key);
    if (record === undefined) throw new AppError('NOT_FOUND', 'Probe not found');
    // Stored records passed the kind's validator; a mismatch here is a bug (500), not bad input.
    const { note, writtenAt } = probeBodySchema.parse(record.body);
    ctx.body = { key: record.key, note, writtenAt, origin: record.origin, seq: record.seq };
  });

  return router;
}

/** `Authorization: Bearer <token>`; the scheme is case-insensitive (RFC 9110 §11.1). */
const BEARER_RE = /^Bearer +(\S+) *$/i;

/**
 * 401 unless the request carries `Authorization: Bearer <token>`; compared in constant time. Used by
 * every operator endpoint (also `/web2/secret-failures`). Put it per route, not in `router.use`.
 */
export function requireBearer(token: string): HttpMiddleware {
  return (ctx, next) => {
    const presented = BEARER_RE.exec(ctx.get('Authorization'))?.[1];
    if (presented === undefined || !constantTimeEqual(presented, token)) {
      ctx.set('WWW-Authenticate', 'Bearer realm="quorumkeep-admin"');
      throw new AppError('UNAUTHORIZED', 'Missing or invalid admin token');
    }
    return next();
  };
}
