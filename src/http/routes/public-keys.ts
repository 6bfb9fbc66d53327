/**
 * Secret public keys (docs/http.md, "Public keys"): the ML-KEM-768 public key a client encrypts to.
 *
 * - `GET /secret-public-key/:chainId/:secretId` — no auth; the current form.
 * - `POST /secret-public-key` — the deprecated signed form older SDKs call. Same answer, plus
 *   `Deprecation: true` (the form deployed SDKs know, from the drafts of RFC 9745) and a `Link` to
 *   the GET form (`rel="successor-version"`, RFC 5829) so clients can see where to move.
 *
 * Shapes only here; the service parses the ids, checks the signed data and answers 400/403/404.
 */
import { Router } from '@koa/router';
import { z } from 'zod';
import type { PublicKeyView, SecretsService } from '../../core/secrets/types.ts';
import type { ApiRouter } from '../types.ts';
import { parseBody, parseParams } from '../validate.ts';
import { ID_MAX_CHARS, pick, signedBodySchema, text, textOrNumber } from '../fields.ts';

const paramsSchema = z.object({ chainId: text(ID_MAX_CHARS), secretId: text(ID_MAX_CHARS) });
// Older SDKs send the ids as JSON numbers or strings; both reach the service as strings.
const signedSchema = signedBodySchema().extend({ chainId: textOrNumber(ID_MAX_CHARS), secretId: textOrNumber(ID_MAX_CHARS) });

/** Dependencies of {@link createPublicKeysRouter}. */
export interface PublicKeysDeps {
  secrets: SecretsService;
}

/** The 200 body of both forms. */
function publicKeyBody(view: PublicKeyView) {
  return { success: true, ...pick(view, ['chainId', 'secretId', 'publicKey']) };
}

/** `GET /secret-public-key/:chainId/:secretId` and the deprecated `POST /secret-public-key`. */
export function createPublicKeysRouter(deps: PublicKeysDeps): ApiRouter {
  const { secrets } = deps;
  const router: ApiRouter = new Router();

  router.get('/secret-public-key/:chainId/:secretId', async (ctx) => {
    const { chainId, secretId } = parseParams(ctx, paramsSchema);
    ctx.body = publicKeyBody(await secrets.publicKey(chainId, secretId));
  });

  router.post('/secret-public-key', async (ctx) => {
    // Set first, so error responses are marked deprecated too.
    ctx.set('Deprecation', 'true');
    const { data, signature, chainId, secretId } = parseBody(ctx, signedSchema);
    const view = await secrets.publicKeySigned({ data, signature }, chainId, secretId);
    // Built from the service's parsed numeric ids, never the raw input: nothing a client sends can
    // reach a header.
    ctx.set('Link', `</secret-public-key/${view.chainId}/${view.secretId}>; rel="successor-version"`);
    ctx.body = publicKeyBody(view);
  });

  return router;
}
