/**
 * Permit confirmation (docs/permits.md, "GET /web2/confirm — consumption"; docs/http.md, "Permits (V2) — confirmation") through the real app with
 * a stub PermitsService: the JSON answers (200 consumed, 202 pending), the HTML pages a browser gets
 * (headers, a CSP whose hash matches the inline style, escaping, errors as pages), `link` vs
 * `button` mode, POST bodies (form and JSON, 413, 415) and query checks. The token never reaches a
 * page other than the button page's hidden field, nor the log.
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { AppError } from '../../../src/errors/index.ts';
import type { PermitConfirmation } from '../../../src/core/permits/types.ts';
import { PERMIT_ID, PERMIT_PREVIEW, SECRET_ID, useTestServers, type TestServer } from './helpers.ts';
import { json, SERVICE_ERRORS } from './body-routes.ts';

const start = useTestServers();

const PATH = '/web2/confirm';
const TOKEN = 'tok_9f8e7d6c5b4a39281706f5e4d3c2b1a0';
/** What a browser sends when it follows a link or submits a form. */
const BROWSER_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';
const FORM_TYPE = 'application/x-www-form-urlencoded';

const CONSUMED_JSON = {
  success: true,
  permitId: PERMIT_ID,
  status: 'consumed',
  action: 'transfer',
  result: { secretId: SECRET_ID, newOwnerPrincipalId: 'principal-0002', delegatePrincipalId: null },
};
const PENDING: PermitConfirmation = { status: 'pending', permitId: PERMIT_ID, action: 'transfer', successCount: 1, threshold: 2 };

function query(params: Record<string, string | string[]>): string {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) for (const v of [value].flat()) search.append(key, v);
  return `?${search.toString()}`;
}

function confirmGet(server: TestServer, params: Record<string, string | string[]> = { permitId: PERMIT_ID, token: TOKEN }, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${server.url}${PATH}${query(params)}`, { headers });
}

function browserGet(server: TestServer, params?: Record<string, string | string[]>): Promise<Response> {
  return confirmGet(server, params, { Accept: BROWSER_ACCEPT });
}

function confirmPost(server: TestServer, body: string, contentType: string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${server.url}${PATH}`, { method: 'POST', headers: { 'Content-Type': contentType, ...headers }, body });
}

/** The body of an HTML page, after checking every header a page must carry (and that its CSP allows exactly its style). */
async function page(res: Response): Promise<string> {
  expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
  expect(res.headers.get('cache-control')).toBe('no-store');
  expect(res.headers.get('referrer-policy')).toBe('no-referrer');
  expect(res.headers.get('x-content-type-options')).toBe('nosniff');
  const html = await res.text();
  const styles = [...html.matchAll(/<style>([\s\S]*?)<\/style>/g)].map((match) => match[1]!);
  expect(styles).toHaveLength(1);
  const hash = createHash('sha256').update(styles[0]!, 'utf8').digest('base64');
  const csp = (res.headers.get('content-security-policy') ?? '').split(';').map((directive) => directive.trim());
  expect(csp).toEqual(expect.arrayContaining(["default-src 'none'", `style-src 'sha256-${hash}'`, "form-action 'self'", "frame-ancestors 'none'"]));
  // Self-contained: no scripts, no external resources, no inline style attributes.
  const tags = html.match(/<[^>]*>/g) ?? [];
  for (const tag of tags) expect(tag).not.toMatch(/^<\/?(script|link|img|iframe|object|embed|base)\b|\s(src|href|style|on\w+)=/i);
  expect(html).toMatch(/^<!doctype html>/);
  expect(html).toContain('<meta name="viewport"');
  return html;
}

describe('GET /web2/confirm, link mode: JSON', () => {
  it('consumes the permit and answers 200 consumed', async () => {
    const server = await start();
    const res = await confirmGet(server);
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual(CONSUMED_JSON);
    expect(server.permits.calls).toEqual([{ method: 'confirmPermit', args: [{ permitId: PERMIT_ID, token: TOKEN }] }]);
  });

  it('answers 202 pending while members are still being reached', async () => {
    const server = await start();
    server.permits.confirmation = PENDING;
    const res = await confirmGet(server);
    expect(res.status).toBe(202);
    expect(await json(res)).toEqual({ success: false, permitId: PERMIT_ID, status: 'pending', successCount: 1, threshold: 2 });
  });

  it('answers JSON to clients that do not prefer HTML', async () => {
    const server = await start();
    for (const accept of ['application/json', '*/*', 'application/json, text/html;q=0.5', 'text/plain']) {
      const res = await confirmGet(server, undefined, { Accept: accept });
      expect(res.status).toBe(200);
      expect(await json(res)).toEqual(CONSUMED_JSON);
    }
    // No Accept header at all.
    const res = await fetch(`${server.url}${PATH}${query({ permitId: PERMIT_ID, token: TOKEN })}`, { headers: { Accept: '' } });
    expect(await json(res)).toEqual(CONSUMED_JSON);
  });

  it('maps every error to its status and JSON body', async () => {
    const server = await start();
    for (const { error, status, body } of SERVICE_ERRORS) {
      server.permits.failure = error;
      const res = await confirmGet(server);
      expect(res.status).toBe(status);
      expect(await json(res)).toEqual(body);
    }
  });

  it('never answers to HEAD by consuming: it only checks the link', async () => {
    const server = await start();
    const res = await fetch(`${server.url}${PATH}${query({ permitId: PERMIT_ID, token: TOKEN })}`, { method: 'HEAD' });
    expect(res.status).toBe(200);
    expect(server.permits.calls.map((call) => call.method)).toEqual(['previewPermit']);
  });
});

describe('GET /web2/confirm: query checks', () => {
  it('answers 400 naming a missing, repeated or too long field, and calls nothing', async () => {
    const server = await start();
    const cases: Array<[Record<string, string | string[]>, string]> = [
      [{ token: TOKEN }, 'permitId: Required'],
      [{ permitId: PERMIT_ID }, 'token: Required'],
      [{}, 'permitId: Required'],
      [{ permitId: [PERMIT_ID, PERMIT_ID], token: TOKEN }, 'permitId: Expected string'],
      [{ permitId: PERMIT_ID, token: [TOKEN, 'x'] }, 'token: Expected string'],
      [{ permitId: 'p'.repeat(129), token: TOKEN }, 'permitId: Too big: expected string to have <=128 characters'],
      [{ permitId: PERMIT_ID, token: 't'.repeat(129) }, 'token: Too big: expected string to have <=128 characters'],
    ];
    for (const [params, error] of cases) {
      const res = await confirmGet(server, params);
      expect(res.status).toBe(400);
      expect(await json(res)).toEqual({ error, code: 'VALIDATION_FAILED' });
    }
    expect(server.permits.calls).toEqual([]);
  });

  it('accepts both fields at 128 characters', async () => {
    const server = await start();
    const res = await confirmGet(server, { permitId: 'p'.repeat(128), token: 't'.repeat(128) });
    expect(res.status).toBe(200);
    expect(server.permits.calls).toEqual([{ method: 'confirmPermit', args: [{ permitId: 'p'.repeat(128), token: 't'.repeat(128) }] }]);
  });

  it('renders a 400 page for a browser, without the token', async () => {
    const server = await start();
    const token = `${'T0k3n'.repeat(26)}`;
    const res = await browserGet(server, { permitId: PERMIT_ID, token });
    expect(res.status).toBe(400);
    const html = await page(res);
    expect(html).toContain('This link is malformed');
    expect(html).toContain('token: Too big');
    expect(html).not.toContain('T0k3n');
  });
});

describe('GET /web2/confirm, link mode: pages', () => {
  it('renders the consumed page with the result and the required headers', async () => {
    const server = await start();
    const res = await browserGet(server);
    expect(res.status).toBe(200);
    const html = await page(res);
    expect(html).toContain('<h1>Change confirmed</h1>');
    expect(html).toContain(PERMIT_ID);
    expect(html).toContain(`Secret ${SECRET_ID} now belongs to principal principal-0002.`);
    expect(html).not.toContain(TOKEN);
    expect(html).not.toContain('<form');
    expect(server.permits.calls.map((call) => call.method)).toEqual(['confirmPermit']);
  });

  it('renders the pending page for a 202', async () => {
    const server = await start();
    server.permits.confirmation = PENDING;
    const res = await browserGet(server);
    expect(res.status).toBe(202);
    const html = await page(res);
    expect(html).toContain('Waiting for 1 of 2 members; it will complete automatically.');
  });

  it('describes each kind of result', async () => {
    const server = await start();
    const cases: Array<[PermitConfirmation, string]> = [
      [{ status: 'consumed', permitId: PERMIT_ID, action: 'rotate', result: { principalId: 'principal-0001', newPublicKey: 'ab'.repeat(32) } }, 'Your Ed25519 key was replaced; all sessions were ended.'],
      [{ status: 'consumed', permitId: PERMIT_ID, action: 'delegate', result: { secretId: 12, delegatePrincipalId: null } }, 'Delegate removed from secret 12.'],
      [{ status: 'consumed', permitId: PERMIT_ID, action: 'delegate', result: { secretId: 12, delegatePrincipalId: 'principal-0003' } }, 'Principal principal-0003 is now the delegate of secret 12.'],
    ];
    for (const [confirmation, line] of cases) {
      server.permits.confirmation = confirmation;
      const html = await page(await browserGet(server));
      expect(html).toContain(line);
    }
  });

  it('escapes every value it shows', async () => {
    const server = await start();
    server.permits.confirmation = {
      status: 'consumed',
      permitId: '<img src=x onerror=alert(1)>',
      action: '"><script>alert(1)</script>',
      result: { secretId: 12, newOwnerPrincipalId: "<b>mallory</b>&'", delegatePrincipalId: null },
    };
    const html = await page(await browserGet(server));
    expect(html).toContain('&#60;img src=x onerror=alert(1)&#62;');
    expect(html).toContain('&#60;b&#62;mallory&#60;/b&#62;&#38;&#39;');
    expect(html).not.toContain('<b>');
  });

  it('renders each expected error as a page with its status, never with the token', async () => {
    const server = await start();
    const cases: Array<[AppError, number, string]> = [
      [new AppError('BAD_REQUEST', 'Malformed permitId'), 400, 'This link is malformed'],
      [new AppError('FORBIDDEN', 'Invalid token'), 403, 'This link is not valid'],
      [new AppError('NOT_FOUND', 'Permit not found'), 404, 'Unknown permit'],
      [new AppError('CONFLICT', 'Permit expired'), 409, 'Permit expired'],
      [new AppError('CONFLICT', 'The secret changed owner since this permit was requested'), 409, 'The secret changed owner since this permit was requested'],
      [new AppError('QUORUM_UNAVAILABLE', 'Quorum not reached (1 of 2 acks)'), 503, 'The cluster is unavailable'],
      // A (buggy) message that echoes the token: the page blanks it out.
      [new AppError('FORBIDDEN', `Token ${TOKEN} does not match`), 403, 'This link is not valid'],
    ];
    for (const [error, status, heading] of cases) {
      server.permits.failure = error;
      const res = await browserGet(server);
      expect(res.status).toBe(status);
      const html = await page(res);
      expect(html).toContain(`<h1>${heading}</h1>`);
      expect(html).not.toContain(TOKEN);
    }
  });

  it('answers an unexpected error with the generic JSON 500, also to a browser', async () => {
    const server = await start();
    server.permits.failure = new Error('db exploded: /var/lib/secret');
    const res = await browserGet(server);
    expect(res.status).toBe(500);
    expect(await json(res)).toEqual({ error: 'Internal error', code: 'INTERNAL' });
  });
});

describe('GET /web2/confirm, button mode', () => {
  const startButton = () => start({ permitConfirmMode: 'button' });

  it('renders the button page without consuming, the hidden fields escaped', async () => {
    const server = await startButton();
    server.permits.preview = { ...PERMIT_PREVIEW, permitId: 'id"<x>' };
    const token = 'a"b<c>&d\'e';
    const res = await browserGet(server, { permitId: 'id"<x>', token });
    expect(res.status).toBe(200);
    const html = await page(res);
    expect(html).toContain('<form method="post" action="/web2/confirm">');
    expect(html).toContain('<input type="hidden" name="permitId" value="id&#34;&#60;x&#62;">');
    expect(html).toContain('<input type="hidden" name="token" value="a&#34;b&#60;c&#62;&#38;d&#39;e">');
    expect(html.match(/<button/g)).toHaveLength(1);
    expect(html).toContain('<button type="submit">Confirm</button>');
    expect(html).toContain(PERMIT_PREVIEW.summary);
    expect(html).toContain('2026-01-01 00:15 UTC');
    // The token appears once: in the hidden field.
    expect(html.split('a&#34;b&#60;c&#62;&#38;d&#39;e')).toHaveLength(2);
    expect(server.permits.calls).toEqual([{ method: 'previewPermit', args: [{ permitId: 'id"<x>', token }] }]);
  });

  it('answers JSON clients how to confirm, without consuming', async () => {
    const server = await startButton();
    const res = await confirmGet(server);
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual({
      success: false,
      permitId: PERMIT_ID,
      status: 'pending',
      action: 'transfer',
      expiresAt: PERMIT_PREVIEW.expiresAt,
      message: 'POST /web2/confirm with permitId and token to confirm',
    });
    expect(server.permits.calls.map((call) => call.method)).toEqual(['previewPermit']);
  });

  it('answers a permit consumed before like a consumption', async () => {
    const server = await startButton();
    server.permits.preview = { ...PERMIT_PREVIEW, status: 'consumed', result: CONSUMED_JSON.result };
    expect(await json(await confirmGet(server))).toEqual(CONSUMED_JSON);
    const html = await page(await browserGet(server));
    expect(html).toContain('Change confirmed');
    expect(html).not.toContain('<form');
    expect(server.permits.calls.map((call) => call.method)).toEqual(['previewPermit', 'previewPermit']);
  });

  it('answers an expired permit 409, as JSON and as a page', async () => {
    const server = await startButton();
    server.permits.preview = { ...PERMIT_PREVIEW, status: 'expired' };
    const res = await confirmGet(server);
    expect(res.status).toBe(409);
    expect(await json(res)).toEqual({ error: 'This permit has expired', code: 'CONFLICT' });
    const pageRes = await browserGet(server);
    expect(pageRes.status).toBe(409);
    expect(await page(pageRes)).toContain('<h1>This permit has expired</h1>');
    expect(server.permits.calls.map((call) => call.method)).toEqual(['previewPermit', 'previewPermit']);
  });

  it('renders preview errors as pages', async () => {
    const server = await startButton();
    server.permits.failure = new AppError('FORBIDDEN', 'Invalid token');
    const res = await browserGet(server);
    expect(res.status).toBe(403);
    const html = await page(res);
    expect(html).toContain('This link is not valid');
    expect(html).not.toContain(TOKEN);
  });
});

describe('POST /web2/confirm', () => {
  const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();

  it.each(['link', 'button'] as const)('consumes a form post and renders the outcome page (%s mode)', async (mode) => {
    const server = await start({ permitConfirmMode: mode });
    const res = await confirmPost(server, form({ permitId: PERMIT_ID, token: TOKEN }), FORM_TYPE, { Accept: BROWSER_ACCEPT });
    expect(res.status).toBe(200);
    const html = await page(res);
    expect(html).toContain(`Secret ${SECRET_ID} now belongs to principal principal-0002.`);
    expect(html).not.toContain(TOKEN);
    expect(server.permits.calls).toEqual([{ method: 'confirmPermit', args: [{ permitId: PERMIT_ID, token: TOKEN }] }]);
  });

  it('consumes a JSON body and answers JSON', async () => {
    const server = await start({ permitConfirmMode: 'button' });
    const res = await confirmPost(server, JSON.stringify({ permitId: PERMIT_ID, token: TOKEN, extra: 1 }), 'application/json; charset=utf-8');
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual(CONSUMED_JSON);
    server.permits.confirmation = PENDING;
    const pending = await confirmPost(server, JSON.stringify({ permitId: PERMIT_ID, token: TOKEN }), 'application/json');
    expect(pending.status).toBe(202);
    expect(await json(pending)).toEqual({ success: false, permitId: PERMIT_ID, status: 'pending', successCount: 1, threshold: 2 });
    expect(server.permits.calls).toHaveLength(2);
  });

  it('answers a form post from a non-browser client with JSON', async () => {
    const server = await start();
    const res = await confirmPost(server, form({ permitId: PERMIT_ID, token: TOKEN }), FORM_TYPE);
    expect(await json(res)).toEqual(CONSUMED_JSON);
  });

  it('reads bodies up to 4 KiB, beyond the app JSON limit of the test server (1 KiB)', async () => {
    const server = await start();
    const body = form({ permitId: PERMIT_ID, token: TOKEN, padding: 'x'.repeat(3000) });
    const res = await confirmPost(server, body, FORM_TYPE);
    expect(res.status).toBe(200);
  });

  it('answers 413 past 4 KiB, as JSON and as a page', async () => {
    const server = await start();
    const body = form({ permitId: PERMIT_ID, token: TOKEN, padding: 'x'.repeat(4096) });
    const res = await confirmPost(server, body, FORM_TYPE);
    expect(res.status).toBe(413);
    expect(await json(res)).toEqual({ error: 'Request body exceeds 4096 bytes', code: 'PAYLOAD_TOO_LARGE' });
    const pageRes = await confirmPost(server, body, FORM_TYPE, { Accept: BROWSER_ACCEPT });
    expect(pageRes.status).toBe(413);
    expect(await page(pageRes)).not.toContain(TOKEN);
    expect(server.permits.calls).toEqual([]);
  });

  it('answers 413 to a chunked body as soon as it passes 4 KiB', async () => {
    const server = await start();
    const chunks = [form({ permitId: PERMIT_ID, token: TOKEN }), `&padding=${'x'.repeat(5000)}`];
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (const chunk of chunks) controller.enqueue(new TextEncoder().encode(chunk));
        controller.close();
      },
    });
    const res = await fetch(`${server.url}${PATH}`, { method: 'POST', headers: { 'Content-Type': FORM_TYPE }, body: stream, duplex: 'half' } as RequestInit);
    expect(res.status).toBe(413);
    expect((await json(res))['code']).toBe('PAYLOAD_TOO_LARGE');
    expect(server.permits.calls).toEqual([]);
  });

  it('answers 415 to other content types', async () => {
    const server = await start();
    for (const type of ['text/plain', 'multipart/form-data; boundary=x', 'application/json; charset=latin1']) {
      const res = await confirmPost(server, form({ permitId: PERMIT_ID, token: TOKEN }), type);
      expect(res.status).toBe(415);
      expect((await json(res))['code']).toBe('UNSUPPORTED_MEDIA_TYPE');
    }
    expect(server.permits.calls).toEqual([]);
  });

  it('answers 400 to malformed bodies and fields', async () => {
    const server = await start();
    const cases: Array<[string, string, { error: string; code: string }]> = [
      ['', FORM_TYPE, { error: 'permitId: Required', code: 'VALIDATION_FAILED' }],
      [form({ permitId: PERMIT_ID }), FORM_TYPE, { error: 'token: Required', code: 'VALIDATION_FAILED' }],
      [`permitId=${PERMIT_ID}&token=a&token=b`, FORM_TYPE, { error: 'token: Expected string', code: 'VALIDATION_FAILED' }],
      [`__proto__[permitId]=x&__proto__=y&token=${TOKEN}`, FORM_TYPE, { error: 'permitId: Required', code: 'VALIDATION_FAILED' }],
      [form({ permitId: PERMIT_ID, token: 't'.repeat(129) }), FORM_TYPE, { error: 'token: Too big: expected string to have <=128 characters', code: 'VALIDATION_FAILED' }],
      ['{"permitId":', 'application/json', { error: 'Request body is not valid JSON', code: 'INVALID_JSON' }],
      ['[]', 'application/json', { error: 'Request body must be a JSON object', code: 'VALIDATION_FAILED' }],
      [JSON.stringify({ permitId: 1, token: TOKEN }), 'application/json', { error: 'permitId: Expected string', code: 'VALIDATION_FAILED' }],
    ];
    for (const [body, type, expected] of cases) {
      const res = await confirmPost(server, body, type);
      expect(res.status).toBe(400);
      expect(await json(res)).toEqual(expected);
    }
    expect(server.permits.calls).toEqual([]);
    expect(({} as Record<string, unknown>)['permitId']).toBeUndefined();
  });

  it('renders service errors as pages for a form post', async () => {
    const server = await start();
    server.permits.failure = new AppError('NOT_FOUND', 'Permit not found');
    const res = await confirmPost(server, form({ permitId: PERMIT_ID, token: TOKEN }), FORM_TYPE, { Accept: BROWSER_ACCEPT });
    expect(res.status).toBe(404);
    const html = await page(res);
    expect(html).toContain('<h1>Unknown permit</h1>');
    expect(html).not.toContain(TOKEN);
  });
});

describe('the token stays out of the log', () => {
  it('logs no request detail that carries it', async () => {
    const server = await start();
    await confirmGet(server);
    await browserGet(server);
    await confirmPost(server, new URLSearchParams({ permitId: PERMIT_ID, token: TOKEN }).toString(), FORM_TYPE);
    server.permits.failure = new Error('boom');
    await confirmGet(server);
    expect(server.logLines().filter((line) => line['msg'] === 'request')).toHaveLength(4);
    expect(server.logText()).not.toContain(TOKEN);
  });
});
