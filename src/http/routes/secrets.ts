/**
 * Web2 secrets (docs/http.md, "Secrets"): creating a secret, listing a
 * principal's secrets, setting a delegate, and the operator view of secrets whose shares have not
 * reached every member yet.
 *
 * The session routes take `{ data, signature }` and pass exactly that to one {@link SecretsService}
 * call: parsing the signed string, freshness, the session lookup and signer recovery live once, in
 * the service's verifier. Unknown body fields are ignored; the body is never spread.
 */
import { Router } from '@koa/router';
import { z } from 'zod';
import type { CreatedSecret, RetryOutcome, SecretFailure, SecretsService, SecretView } from '../../core/secrets/types.ts';
import type { ApiRouter } from '../types.ts';
import { parseBody, parseParams } from '../validate.ts';
import { ID_MAX_CHARS, pick, signedBodySchema, text } from '../fields.ts';
import { requireBearer } from './admin.ts';

const signedSchema = signedBodySchema();
const retryParamsSchema = z.object({ secretId: text(ID_MAX_CHARS) });

// The documented fields of each answer (docs/http.md, "Secrets"), in wire order.
const CREATED_FIELDS = ['secretId', 'clusterId', 'publicKeyCid', 'status'] as const satisfies ReadonlyArray<keyof CreatedSecret>;
const SECRET_VIEW_FIELDS = ['secretId', 'ownerPrincipalId', 'delegatePrincipalId', 'isSyncing', 'clusterId', 'secretType', 'publicKeyCid', 'createdAt', 'updatedAt'] as const satisfies ReadonlyArray<keyof SecretView>;
const FAILURE_FIELDS = ['secretId', 'chainId', 'stage', 'failedNodeAddresses', 'nodeErrors', 'retryCount', 'createdAt', 'lastAttemptAt'] as const satisfies ReadonlyArray<keyof SecretFailure>;
const RETRY_FIELDS = ['message', 'stage', 'failedNodeAddresses', 'retryCount'] as const satisfies ReadonlyArray<keyof RetryOutcome>;

/** Dependencies of {@link createSecretsRouter} and {@link createSecretFailuresRouter}. */
export interface SecretsDeps {
  secrets: SecretsService;
}

/** `POST /web2/secret`, `POST /web2/secrets` and `POST /web2/setDelegate` (session-signed data). */
export function createSecretsRouter(deps: SecretsDeps): ApiRouter {
  const { secrets } = deps;
  const router: ApiRouter = new Router();

  router.post('/web2/secret', async (ctx) => {
    const { data, signature } = parseBody(ctx, signedSchema);
    const created = await secrets.createSecret({ data, signature });
    ctx.status = 201;
    ctx.body = { success: true, ...pick(created, CREATED_FIELDS) };
  });

  router.post('/web2/secrets', async (ctx) => {
    const { data, signature } = parseBody(ctx, signedSchema);
    const list = await secrets.listSecrets({ data, signature });
    ctx.body = { success: true, secrets: list.map((secret) => pick(secret, SECRET_VIEW_FIELDS)) };
  });

  router.post('/web2/setDelegate', async (ctx) => {
    const { data, signature } = parseBody(ctx, signedSchema);
    const result = await secrets.setDelegate({ data, signature });
    ctx.body = { success: true, secretId: result.secretId };
  });

  return router;
}

/** Options of {@link createSecretFailuresRouter}. */
export interface SecretFailuresOptions {
  /** The operators' bearer token (`admin.token`); must be non-empty. */
  token: string;
}

/**
 * Operator endpoints over secrets still propagating: `GET /web2/secret-failures` and
 * `POST /web2/secret-failures/:secretId/retry[?chainId=]`, behind the admin bearer token. Like `/admin`, mounted
 * only when a token is configured (404 otherwise).
 */
export function createSecretFailuresRouter(options: SecretFailuresOptions, deps: SecretsDeps): ApiRouter {
  if (options.token === '') throw new Error('createSecretFailuresRouter: an empty admin token would disable auth');
  const { secrets } = deps;
  const auth = requireBearer(options.token);
  const router: ApiRouter = new Router();

  router.get('/web2/secret-failures', auth, async (ctx) => {
    const failures = await secrets.listFailures();
    ctx.body = { success: true, failures: failures.map((failure) => pick(failure, FAILURE_FIELDS)) };
  });

  router.post('/web2/secret-failures/:secretId/retry', auth, async (ctx) => {
    const { secretId } = parseParams(ctx, retryParamsSchema);
    // A Web3 secret's entry is named by its chain too (`?chainId=8453`).
    const chainId = typeof ctx.query.chainId === 'string' ? ctx.query.chainId : undefined;
    const outcome = await secrets.retryFailure(secretId, chainId);
    ctx.body = { success: true, ...pick(outcome, RETRY_FIELDS) };
  });

  return router;
}
