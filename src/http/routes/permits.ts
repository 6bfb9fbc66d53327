/**
 * Permits V2 (docs/permits.md, "POST /web2/permit — request" and "GET /web2/confirm — consumption"): requesting an admin
 * change — rotate, transfer or delegate — and confirming it from the emailed link.
 *
 * The routes check shapes only (every field a string within a bound; `payload` must be the JSON
 * *text*, so the legacy object form is a 400 here) and hand named values to one
 * {@link PermitsService} call, which owns every rule of docs/permits.md. POST /web2/permit: 201 for a new
 * permit, 200 for an exact replay.
 *
 * Confirmation (`/web2/confirm`) answers JSON, or an HTML page (./confirm-page.ts) to a client that
 * prefers `text/html` — errors included, so a browser never shows raw JSON. How a GET behaves is
 * `permits.confirmMode`: `link` consumes the permit; `button` only checks the link and shows a page
 * whose button POSTs it, so a mail scanner that prefetches links consumes nothing. A POST always
 * consumes; it takes the button's form or a JSON body.
 */
import { Router } from '@koa/router';
import { z } from 'zod';
import type { PermitConfirmation, PermitConfirmInput, PermitRequestInput, PermitResult, PermitsService } from '../../core/permits/types.ts';
import { AppError, isAppError } from '../../errors/index.ts';
import type Koa from 'koa';
import type { ApiRouter, HttpContext, HttpState, PermitConfirmMode } from '../types.ts';
import type { AuthRateLimit } from '../rate-limit.ts';
import { decodeUtf8Body, parseJsonObject, payloadTooLarge, rawBodyRoute, readLimited } from '../body.ts';
import { parseBody, parseInput, parseQuery } from '../validate.ts';
import { pick, SIGNATURE_MAX_CHARS, SIGNED_DATA_MAX_CHARS, text } from '../fields.ts';
import { CONFIRM_PAGE_HEADERS, renderButtonPage, renderConfirmationPage, renderConsumedPage, renderErrorPage } from '../confirm-page.ts';

/** Longest requestId or action accepted (the service checks the values). */
const SHORT_MAX_CHARS = 64;
/** Longest payload text accepted here (the service's own bound is tighter). */
const PAYLOAD_MAX_CHARS = 8192;
/** Longest email and password accepted (as for the accounts routes). */
const EMAIL_MAX_CHARS = 320;
const PASSWORD_MAX_CHARS = 1024;

const permitSchema = z.object({
  // Optional and an object only in the legacy form (`permits.acceptLegacy`); the service decides.
  requestId: text(SHORT_MAX_CHARS).optional(),
  action: text(SHORT_MAX_CHARS),
  payload: z.union([text(PAYLOAD_MAX_CHARS), z.record(z.string(), z.unknown())]),
  email: text(EMAIL_MAX_CHARS).optional(),
  password: text(PASSWORD_MAX_CHARS).optional(),
  data: text(SIGNED_DATA_MAX_CHARS).optional(),
  signature: text(SIGNATURE_MAX_CHARS).optional(),
});

/** Longest permitId or token accepted on /web2/confirm (a UUID and a 256-bit token are far shorter). */
const CONFIRM_FIELD_MAX_CHARS = 128;
/** Largest POST /web2/confirm body, in bytes: two short fields, as a form or JSON. */
const CONFIRM_BODY_LIMIT_BYTES = 4096;
/** What a button-mode GET tells a non-HTML client. */
const BUTTON_MODE_MESSAGE = 'POST /web2/confirm with permitId and token to confirm';
/** Error pages blank out the token from a message; shorter "tokens" are not real and blanking them would garble it. */
const MIN_REDACTED_TOKEN_CHARS = 8;

const confirmSchema = z.object({
  permitId: text(CONFIRM_FIELD_MAX_CHARS),
  token: text(CONFIRM_FIELD_MAX_CHARS),
});

type ConfirmCtx = Koa.ParameterizedContext<HttpState, HttpContext>;

/** Options of {@link createPermitsRouter}. */
export interface PermitsRouterOptions {
  /** How GET /web2/confirm behaves (`permits.confirmMode`). @default "link" */
  confirmMode?: PermitConfirmMode;
}

/** Dependencies of {@link createPermitsRouter}. */
export interface PermitsRouterDeps {
  permits: PermitsService;
  /** Abuse limits of POST /web2/permit (a `rotate` request carries a password: an argon2 check). */
  rateLimit: AuthRateLimit;
}

/** `POST /web2/permit`, `GET /web2/confirm`, `POST /web2/confirm`. */
export function createPermitsRouter(options: PermitsRouterOptions, deps: PermitsRouterDeps): ApiRouter {
  const { permits, rateLimit } = deps;
  const confirmMode = options.confirmMode ?? 'link';
  const router: ApiRouter = new Router();

  router.post('/web2/permit', rateLimit.email, async (ctx) => {
    const body = parseBody(ctx, permitSchema);
    const input: PermitRequestInput = { action: body.action, payload: body.payload };
    if (body.requestId !== undefined) input.requestId = body.requestId;
    if (body.email !== undefined) input.email = body.email;
    if (body.password !== undefined) input.password = body.password;
    if (body.data !== undefined) input.data = body.data;
    if (body.signature !== undefined) input.signature = body.signature;
    const result = await permits.requestPermit(input);
    ctx.status = result.created ? 201 : 200;
    ctx.body = { success: true, ...pick(result, ['permitId', 'action', 'clusterId', 'expiresAt', 'message']) };
  });

  router.get('/web2/confirm', async (ctx) => {
    const html = prefersHtml(ctx);
    let token: string | undefined;
    try {
      const input = parseQuery(ctx, confirmSchema);
      token = input.token;
      // HEAD never consumes, whatever the mode: it must stay free of side effects (link checkers).
      if (confirmMode === 'link' && ctx.method === 'GET') {
        answerConfirmation(ctx, await permits.confirmPermit(toConfirmInput(input)), html);
        return;
      }
      const preview = await permits.previewPermit(toConfirmInput(input));
      if (preview.status === 'expired') throw new AppError('CONFLICT', 'This permit has expired');
      if (preview.status === 'consumed') {
        answerConsumed(ctx, preview.permitId, preview.action, preview.result, html);
      } else if (html) {
        answerPage(ctx, 200, renderButtonPage(preview, input.token));
      } else {
        ctx.body = { success: false, ...pick(preview, ['permitId', 'status', 'action', 'expiresAt']), message: BUTTON_MODE_MESSAGE };
      }
    } catch (err) {
      answerError(ctx, err, html, token);
    }
  });

  router.post('/web2/confirm', rawBodyRoute, async (ctx) => {
    const html = prefersHtml(ctx);
    let token: string | undefined;
    try {
      const input = parseInput(await readConfirmBody(ctx), confirmSchema);
      token = input.token;
      answerConfirmation(ctx, await permits.confirmPermit(toConfirmInput(input)), html);
    } catch (err) {
      answerError(ctx, err, html, token);
    }
  });

  return router;
}

// ---------------------------------------------------------------------------------------------
// Confirmation answers

/** A browser (`Accept: text/html,…`) gets pages; anything else, including no Accept, gets JSON. */
function prefersHtml(ctx: ConfirmCtx): boolean {
  return ctx.accepts('json', 'html') === 'html';
}

/** Named values only: nothing else of the parsed input reaches the service. */
function toConfirmInput(input: { permitId: string; token: string }): PermitConfirmInput {
  return { permitId: input.permitId, token: input.token };
}

/** 200 consumed or 202 pending (docs/permits.md, "GET /web2/confirm — consumption"). */
function answerConfirmation(ctx: ConfirmCtx, confirmation: PermitConfirmation, html: boolean): void {
  if (confirmation.status === 'consumed') {
    answerConsumed(ctx, confirmation.permitId, confirmation.action, confirmation.result, html);
    return;
  }
  if (html) {
    answerPage(ctx, 202, renderConfirmationPage(confirmation));
    return;
  }
  ctx.status = 202;
  ctx.body = { success: false, ...pick(confirmation, ['permitId', 'status', 'successCount', 'threshold']) };
}

function answerConsumed(ctx: ConfirmCtx, permitId: string, action: string, result: PermitResult | undefined, html: boolean): void {
  if (html) {
    answerPage(ctx, 200, renderConsumedPage(permitId, action, result));
    return;
  }
  ctx.status = 200;
  ctx.body = { success: true, permitId, status: 'consumed', action, result };
}

/**
 * Expected failures become a page with the same status for a browser; JSON clients, and anything
 * unexpected (→ the app's generic 500), go to the app's error middleware.
 */
function answerError(ctx: ConfirmCtx, err: unknown, html: boolean, token: string | undefined): void {
  if (!html || !isAppError(err)) throw err;
  // AppError messages are client-safe and never carry the token; the page makes sure of it.
  const message = token !== undefined && token.length >= MIN_REDACTED_TOKEN_CHARS ? err.message.replaceAll(token, '…') : err.message;
  answerPage(ctx, err.status, renderErrorPage(err.status, message));
}

function answerPage(ctx: ConfirmCtx, status: number, html: string): void {
  ctx.status = status;
  // Replaces the app's JSON-only CSP, which would block the page's inline style.
  ctx.set(CONFIRM_PAGE_HEADERS);
  ctx.body = html;
}

// ---------------------------------------------------------------------------------------------
// POST /web2/confirm bodies (the app's parser takes JSON only; a form post is urlencoded)

/**
 * The body as a plain object: `application/x-www-form-urlencoded` (the button page's form; a
 * repeated key becomes an array, which validation refuses) or `application/json`. Empty → `{}`.
 * 413 past {@link CONFIRM_BODY_LIMIT_BYTES}, 415 for other types, 400 for malformed UTF-8 or JSON —
 * the same codes and messages as the app's JSON parser (src/http/body.ts).
 */
async function readConfirmBody(ctx: ConfirmCtx): Promise<unknown> {
  const declaredLength = ctx.request.length;
  if (declaredLength !== undefined && declaredLength > CONFIRM_BODY_LIMIT_BYTES) throw payloadTooLarge(ctx, CONFIRM_BODY_LIMIT_BYTES);
  if (ctx.get('Transfer-Encoding') === '' && !declaredLength) return {};
  const form = ctx.is('application/x-www-form-urlencoded') !== false;
  if (!form && !(ctx.is('application/json') !== false && /^utf-?8$/.test(ctx.request.charset || 'utf-8'))) {
    throw new AppError('UNSUPPORTED_MEDIA_TYPE', 'Content-Type must be application/x-www-form-urlencoded or application/json');
  }
  const raw = await readLimited(ctx.req, CONFIRM_BODY_LIMIT_BYTES, () => payloadTooLarge(ctx, CONFIRM_BODY_LIMIT_BYTES));
  return form ? parseForm(decodeUtf8Body(raw)) : parseJsonObject(raw);
}

/** Form fields as own properties (`Object.fromEntries`, so a `__proto__` key stays inert). */
function parseForm(text: string): Record<string, string | string[]> {
  const fields = new Map<string, string[]>();
  for (const [key, value] of new URLSearchParams(text)) fields.set(key, [...(fields.get(key) ?? []), value]);
  return Object.fromEntries([...fields].map(([key, values]) => [key, values.length === 1 ? values[0]! : values]));
}
