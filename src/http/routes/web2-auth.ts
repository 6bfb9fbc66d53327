/**
 * Web2 accounts (docs/http.md, "Web2 accounts" and
 * "GET /web2/principal/byEmail"): registration, email verification, password reset, credential
 * checks, key registration and account deletion.
 *
 * The routes check shapes only — every field present, a string, within a length bound — and hand
 * the values to one {@link AccountsService} call. Every rule about what the values mean (email
 * normalisation and `@`, the 8-character password minimum, OTPs, cooldowns, statuses) is the
 * service's, which throws `AppError`s the error middleware maps to their status.
 *
 * Every POST passes the abuse limits first (`rateLimit`, ./rate-limit.ts): per client address, and
 * per account named in the body (email, or principalId where that is how the route names it).
 *
 * Unknown body fields are ignored rather than rejected: deployed SDKs (0.4–0.5.6) send extras. The
 * parsed body is never spread or copied: each handler passes named, validated strings, so a
 * `__proto__` or `constructor` key in a body can reach nothing.
 */
import { Router } from '@koa/router';
import { z } from 'zod';
import type { AccountsService } from '../../core/accounts/types.ts';
import type { ApiRouter } from '../types.ts';
import type { AuthRateLimit } from '../rate-limit.ts';
import { parseBody, parseQuery } from '../validate.ts';
import { pick, PRINCIPAL_ID_MAX_CHARS, SIGNATURE_MAX_CHARS, text } from '../fields.ts';

/** Longest email accepted: a 64-character local part, `@`, a 255-character domain (RFC 3696). */
const EMAIL_MAX_CHARS = 320;
/** Longest password or newPassword accepted; bounds the hashing work a request can ask for. */
const PASSWORD_MAX_CHARS = 1024;
/** Longest OTP accepted (OTPs are 6 digits; the service checks the value). */
const OTP_MAX_CHARS = 16;
/** Longest Ed25519 public key accepted (64 hex chars expected; the service checks the value). */
const PUBLIC_KEY_MAX_CHARS = 4096;
/** Longest `emailHex` accepted (hex of the UTF-8 bytes of an email: 2 chars per byte). */
const EMAIL_HEX_MAX_CHARS = 1024;

/** One or more whole bytes of hex, either case. */
const HEX_BYTES_RE = /^(?:[0-9a-fA-F]{2})+$/;

const email = text(EMAIL_MAX_CHARS);
const password = text(PASSWORD_MAX_CHARS);
const otp = text(OTP_MAX_CHARS);
const principalId = text(PRINCIPAL_ID_MAX_CHARS);

// z.object (not strictObject): unknown keys are dropped from the output, never rejected.
const credentialsSchema = z.object({ email, password });
const emailSchema = z.object({ email });
const emailOtpSchema = z.object({ email, otp });
const resetPasswordSchema = z.object({ email, otp, newPassword: password });
const registerKeySchema = z.object({
  principalId,
  password,
  publicKey: text(PUBLIC_KEY_MAX_CHARS),
  signature: text(SIGNATURE_MAX_CHARS),
});
const principalSchema = z.object({ principalId });
const requestDeletionSchema = z.object({ email, password, principalId });
const byEmailQuerySchema = z
  .object({
    emailHex: text(EMAIL_HEX_MAX_CHARS).regex(HEX_BYTES_RE, 'must be an even number of hex characters').optional(),
    // Clients of release 0.5.x send the plain address instead of its hex (docs/http.md, "Web2 accounts").
    email: email.optional(),
  })
  .refine((query) => query.emailHex !== undefined || query.email !== undefined, 'emailHex or email is required');

/** Dependencies of {@link createWeb2AuthRouter}. */
export interface Web2AuthDeps {
  accounts: AccountsService;
  /** Abuse limits, put on every POST. */
  rateLimit: AuthRateLimit;
}

/** Routes under `/web2/auth` and `GET /web2/principal/byEmail`. No auth: the body carries the credentials. */
export function createWeb2AuthRouter(deps: Web2AuthDeps): ApiRouter {
  const { accounts, rateLimit } = deps;
  const router: ApiRouter = new Router();

  router.post('/web2/auth/register', rateLimit.email, async (ctx) => {
    const input = parseBody(ctx, credentialsSchema);
    const result = await accounts.register(input.email, input.password);
    // 201 for a new principal, 200 when an unverified registration was renewed (docs/http.md, "Web2 accounts").
    ctx.status = result.created ? 201 : 200;
    ctx.body = { principalId: result.principalId, message: result.message };
  });

  router.post('/web2/auth/verify-email', rateLimit.email, async (ctx) => {
    const input = parseBody(ctx, emailOtpSchema);
    const result = await accounts.verifyEmail(input.email, input.otp);
    ctx.body = { principalId: result.principalId, emailVerified: true };
  });

  router.post('/web2/auth/resend-otp', rateLimit.email, async (ctx) => {
    const input = parseBody(ctx, emailSchema);
    const result = await accounts.resendOtp(input.email);
    ctx.body = { message: result.message };
  });

  router.post('/web2/auth/forgot-password', rateLimit.email, async (ctx) => {
    const input = parseBody(ctx, emailSchema);
    const result = await accounts.forgotPassword(input.email);
    ctx.body = { message: result.message };
  });

  router.post('/web2/auth/reset-password', rateLimit.email, async (ctx) => {
    const input = parseBody(ctx, resetPasswordSchema);
    const result = await accounts.resetPassword(input.email, input.otp, input.newPassword);
    ctx.body = { message: result.message };
  });

  router.post('/web2/auth/verify-credentials', rateLimit.email, async (ctx) => {
    const input = parseBody(ctx, credentialsSchema);
    const result = await accounts.verifyCredentials(input.email, input.password);
    ctx.body = { valid: true, principalId: result.principalId };
  });

  router.post('/web2/auth/register-key', rateLimit.principalId, async (ctx) => {
    const input = parseBody(ctx, registerKeySchema);
    const result = await accounts.registerKey(input.principalId, input.password, input.publicKey, input.signature);
    ctx.status = 201;
    ctx.body = pick(result, ['principalId', 'emailHex', 'nodeRegistrationStatus', 'failedNodes', 'nodeErrors']);
  });

  router.post('/web2/auth/retry-node-registration', rateLimit.principalId, async (ctx) => {
    const input = parseBody(ctx, principalSchema);
    const result = await accounts.retryNodeRegistration(input.principalId);
    // An absent message stays out of the JSON.
    ctx.body = pick(result, ['principalId', 'nodeRegistrationStatus', 'failedNodes', 'message']);
  });

  router.get('/web2/auth/node-registration-status', async (ctx) => {
    const input = parseQuery(ctx, principalSchema);
    const view = await accounts.nodeRegistrationStatus(input.principalId);
    ctx.body = pick(view, ['principalId', 'nodeRegistrationStatus', 'successNodes', 'failedNodes']);
  });

  router.post('/web2/auth/request-deletion', rateLimit.email, async (ctx) => {
    const input = parseBody(ctx, requestDeletionSchema);
    const result = await accounts.requestDeletion(input.email, input.password, input.principalId);
    ctx.body = { message: result.message };
  });

  router.post('/web2/auth/confirm-deletion', rateLimit.email, async (ctx) => {
    const input = parseBody(ctx, emailOtpSchema);
    const result = await accounts.confirmDeletion(input.email, input.otp);
    ctx.body = { success: true, message: result.message };
  });

  router.get('/web2/principal/byEmail', async (ctx) => {
    const input = parseQuery(ctx, byEmailQuerySchema);
    // Both forms are passed on when both are given: which one wins is the service's rule.
    const query: { emailHex?: string; email?: string } = {};
    if (input.emailHex !== undefined) query.emailHex = input.emailHex;
    if (input.email !== undefined) query.email = input.email;
    const result = await accounts.findByEmail(query);
    ctx.body = { principalId: result.principalId, emailHex: result.emailHex };
  });

  return router;
}
