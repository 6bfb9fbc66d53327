/**
 * Payload encryption (docs/http.md, "Payload encryption"): encrypt a message to a
 * secret's public key, and threshold-decrypt it for the secret's owner or delegate.
 *
 * Shapes only here — the signed `data` (which carries the plaintext or the ciphertext), `cifer`, and
 * the name of the binary format; the service parses and verifies `data`, decodes the binary fields
 * and throws the `AppError`s the error middleware maps. Unknown body fields are ignored; the body is
 * never spread.
 */
import { Router } from '@koa/router';
import { z } from 'zod';
import type { BinaryFormat, EncryptedPayload, PayloadsService } from '../../core/payloads/types.ts';
import type { ApiRouter } from '../types.ts';
import { parseBody } from '../validate.ts';
import { pick, signedBodySchema, text } from '../fields.ts';

/**
 * Longest `data` accepted on these routes: it carries the message. The body limit (1 MiB by default)
 * binds first; this bound only matters if an operator raises that limit.
 */
const PAYLOAD_DATA_MAX_CHARS = 2_000_000;
/** Longest `cifer` accepted (1104 bytes is 2210 hex chars with `0x`, 1472 base64). */
const CIFER_MAX_CHARS = 8192;

const BINARY_FORMATS = ['hex', 'base64'] as const satisfies readonly BinaryFormat[];

/** `"hex"` (the default when absent) or `"base64"`. */
const binaryFormat = z.enum(BINARY_FORMATS, { error: 'must be "hex" or "base64"' }).default('hex');

const encryptSchema = signedBodySchema(PAYLOAD_DATA_MAX_CHARS).extend({ outputFormat: binaryFormat });
const decryptSchema = signedBodySchema(PAYLOAD_DATA_MAX_CHARS).extend({ cifer: text(CIFER_MAX_CHARS), inputFormat: binaryFormat });

/** The documented fields of the /encrypt-payload answer, in wire order. */
const ENCRYPTED_FIELDS = ['chainId', 'secretId', 'outputFormat', 'cifer', 'encryptedMessage'] as const satisfies ReadonlyArray<keyof EncryptedPayload>;

/** Dependencies of {@link createPayloadsRouter}. */
export interface PayloadsDeps {
  payloads: PayloadsService;
}

/** `POST /encrypt-payload` and `POST /decrypt-payload` (signed data, Web3 or Web2). */
export function createPayloadsRouter(deps: PayloadsDeps): ApiRouter {
  const { payloads } = deps;
  const router: ApiRouter = new Router();

  router.post('/encrypt-payload', async (ctx) => {
    const { data, signature, outputFormat } = parseBody(ctx, encryptSchema);
    const encrypted = await payloads.encrypt({ data, signature }, outputFormat);
    ctx.body = { success: true, ...pick(encrypted, ENCRYPTED_FIELDS) };
  });

  router.post('/decrypt-payload', async (ctx) => {
    const { data, signature, cifer, inputFormat } = parseBody(ctx, decryptSchema);
    const result = await payloads.decrypt({ data, signature }, cifer, inputFormat);
    ctx.body = { success: true, decryptedMessage: result.decryptedMessage };
  });

  return router;
}
