/**
 * The app's conventions (docs/http.md, Conventions): JSON errors, request ids, access log, metrics,
 * security headers, CORS and the JSON body parser — driven through a bound port with fetch.
 */
import { describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, rawRequest, useTestServers, waitFor } from './helpers.ts';

const start = useTestServers();

const adminHeaders = { Authorization: `Bearer ${ADMIN_TOKEN}` };
const jsonHeaders = { ...adminHeaders, 'Content-Type': 'application/json' };

describe('errors', () => {
  it('answers an unknown route with a 404 JSON error', async () => {
    const { url } = await start();
    const res = await fetch(`${url}/no/such/route`);
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await res.json()).toEqual({ error: 'Not found', code: 'NOT_FOUND' });
  });

  it('answers a wrong method on a known path with a 405 JSON error and Allow', async () => {
    const { url } = await start();
    for (const method of ['POST', 'DELETE', 'PUT']) {
      const res = await fetch(`${url}/healthz`, { method });
      expect(res.status).toBe(405);
      expect(res.headers.get('allow')).toContain('GET');
      expect(await res.json()).toEqual({ error: 'Method not allowed', code: 'METHOD_NOT_ALLOWED' });
    }
  });

  it('answers an unexpected error with a generic 500, logged once with the request id', async () => {
    const app = await start();
    app.health.failure = new Error('db exploded at /var/lib/secret-path');
    const res = await fetch(`${app.url}/healthz`, { headers: { 'X-Request-Id': 'req-500' } });
    expect(res.status).toBe(500);
    const text = await res.text();
    expect(JSON.parse(text)).toEqual({ error: 'Internal error', code: 'INTERNAL' });
    expect(text).not.toContain('exploded');
    expect(text).not.toContain('at ');

    await waitFor(() => app.logLines().some((l) => l.msg === 'request' && l.reqId === 'req-500'));
    const errors = app.logLines().filter((l) => l.level === 50);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ reqId: 'req-500', err: { message: 'db exploded at /var/lib/secret-path' } });
    expect(app.logLines().find((l) => l.msg === 'request')).toMatchObject({ status: 500, route: '/healthz' });
  });
});

describe('request id', () => {
  it('echoes a valid incoming X-Request-Id', async () => {
    const { url } = await start();
    const id = 'Client.req-42:attempt_1';
    const res = await fetch(`${url}/healthz`, { headers: { 'X-Request-Id': id } });
    expect(res.headers.get('x-request-id')).toBe(id);
  });

  it('generates one when absent or invalid', async () => {
    const { url } = await start();
    const generated: string[] = [];
    for (const headers of [{}, {}, { 'X-Request-Id': 'has spaces' }, { 'X-Request-Id': 'x'.repeat(129) }, { 'X-Request-Id': '' }]) {
      const res = await fetch(`${url}/healthz`, { headers });
      const id = res.headers.get('x-request-id') ?? '';
      expect(id).toMatch(/^[0-9a-f]{32}$/);
      generated.push(id);
    }
    expect(new Set(generated).size).toBe(generated.length);
  });

  it('sets it on error responses too, and logs every line with it', async () => {
    const app = await start();
    const res = await fetch(`${app.url}/nope`, { headers: { 'X-Request-Id': 'req-404' } });
    expect(res.headers.get('x-request-id')).toBe('req-404');
    await waitFor(() => app.logLines().some((l) => l.reqId === 'req-404'));
  });
});

describe('access log', () => {
  it('writes one line per request with the route pattern, never the URL, headers or body', async () => {
    const app = await start();
    const res = await fetch(`${app.url}/admin/probe?token=query-secret`, {
      method: 'POST',
      headers: { ...jsonHeaders, 'X-Request-Id': 'req-log' },
      body: JSON.stringify({ key: 'probe-key-1', note: 'body-secret-note' }),
    });
    expect(res.status).toBe(201);
    await fetch(`${app.url}/admin/probe/probe-key-1`, { headers: { ...adminHeaders, 'X-Request-Id': 'req-log-2' } });
    await waitFor(() => app.logLines().filter((l) => l.msg === 'request').length === 2);

    const [post, get] = app.logLines().filter((l) => l.msg === 'request');
    expect(post).toMatchObject({ level: 30, module: 'http', reqId: 'req-log', method: 'POST', route: '/admin/probe', status: 201 });
    expect(typeof post?.durationMs).toBe('number');
    expect(get).toMatchObject({ reqId: 'req-log-2', method: 'GET', route: '/admin/probe/:key', status: 200 });

    const text = app.logText();
    for (const secret of [ADMIN_TOKEN, 'Bearer', 'body-secret-note', 'query-secret', 'probe-key-1']) expect(text).not.toContain(secret);
  });
});

describe('metrics', () => {
  it('observes request latency by route pattern, method and status', async () => {
    const app = await start();
    await fetch(`${app.url}/healthz`);
    await fetch(`${app.url}/admin/probe/some-key`, { headers: adminHeaders });
    await fetch(`${app.url}/unknown/abc123`);
    const series = (route: string, method: string, status: number) =>
      `quorumkeep_http_request_duration_seconds_count{route="${route}",method="${method}",status="${status}"} 1`;
    await waitFor(async () => (await app.metrics.render()).includes(series('unmatched', 'GET', 404)));

    const res = await fetch(`${app.url}/metrics`, { headers: adminHeaders });
    const text = await res.text();
    expect(text).toContain('# TYPE quorumkeep_http_request_duration_seconds histogram');
    expect(text).toContain(series('/healthz', 'GET', 200));
    expect(text).toContain(series('/admin/probe/:key', 'GET', 404));
    expect(text).not.toContain('some-key');
    expect(text).not.toContain('abc123');
  });
});

describe('security headers', () => {
  it('are on every response, success or error, and X-Powered-By is not', async () => {
    const { url } = await start();
    for (const path of ['/healthz', '/nope', '/metrics']) {
      const res = await fetch(`${url}${path}`);
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      expect(res.headers.get('x-frame-options')).toBe('DENY');
      expect(res.headers.get('referrer-policy')).toBe('no-referrer');
      expect(res.headers.get('cache-control')).toBe('no-store');
      expect(res.headers.get('content-security-policy')).toBe("default-src 'none'; frame-ancestors 'none'");
      expect(res.headers.get('cross-origin-resource-policy')).toBe('same-site');
      expect(res.headers.get('x-powered-by')).toBeNull();
    }
  });
});

describe('CORS', () => {
  const allowed = 'https://app.example';

  it('allows a listed origin and exposes X-Request-Id', async () => {
    const { url } = await start();
    const res = await fetch(`${url}/healthz`, { headers: { Origin: allowed } });
    expect(res.status).toBe(200);
    expect(res.headers.get('access-control-allow-origin')).toBe(allowed);
    expect(res.headers.get('access-control-expose-headers')).toBe('X-Request-Id, Retry-After');
    expect(res.headers.get('vary')).toContain('Origin');
  });

  it('keeps CORS headers on error responses so browsers can read them', async () => {
    const { url } = await start();
    const res = await fetch(`${url}/nope`, { headers: { Origin: allowed } });
    expect(res.status).toBe(404);
    expect(res.headers.get('access-control-allow-origin')).toBe(allowed);
  });

  it('gives a disallowed origin no CORS headers', async () => {
    const { url } = await start();
    const res = await fetch(`${url}/healthz`, { headers: { Origin: 'https://evil.example' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
    expect(res.headers.get('access-control-expose-headers')).toBeNull();
    expect(res.headers.get('vary')).toContain('Origin');
  });

  it('answers an allowed preflight with 204 and the allowed methods and headers', async () => {
    const { url } = await start();
    const res = await fetch(`${url}/admin/probe`, {
      method: 'OPTIONS',
      headers: { Origin: allowed, 'Access-Control-Request-Method': 'POST', 'Access-Control-Request-Headers': 'content-type' },
    });
    expect(res.status).toBe(204);
    expect(res.headers.get('access-control-allow-origin')).toBe(allowed);
    expect(res.headers.get('access-control-allow-methods')).toBe('GET, POST, OPTIONS');
    expect(res.headers.get('access-control-allow-headers')).toBe('Content-Type, Authorization, X-Request-Id');
    expect(res.headers.get('access-control-max-age')).toBe('600');
  });

  it('refuses a preflight from a disallowed origin with 403 JSON', async () => {
    const { url } = await start();
    const res = await fetch(`${url}/admin/probe`, {
      method: 'OPTIONS',
      headers: { Origin: 'https://evil.example', 'Access-Control-Request-Method': 'POST' },
    });
    expect(res.status).toBe(403);
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
    expect(await res.json()).toMatchObject({ code: 'FORBIDDEN' });
  });

  it('treats "*" as any origin', async () => {
    const { url } = await start({ corsOrigins: ['*'] });
    const res = await fetch(`${url}/healthz`, { headers: { Origin: 'https://anywhere.example' } });
    expect(res.headers.get('access-control-allow-origin')).toBe('https://anywhere.example');
  });
});

describe('JSON body parser', () => {
  const post = (url: string, body: string, headers: Record<string, string> = jsonHeaders) =>
    fetch(`${url}/admin/probe`, { method: 'POST', headers, body });

  it('answers 413 when Content-Length exceeds the limit, without reading the body', async () => {
    const { url } = await start({ bodyLimitBytes: 1024 });
    // The request never ends: the answer must come from the header alone.
    const res = await rawRequest(url, {
      method: 'POST',
      path: '/admin/probe',
      headers: { ...jsonHeaders, 'Content-Length': '10000000' },
      chunks: ['{"note":"'],
      end: false,
    });
    expect(res.status).toBe(413);
    expect(res.headers.connection).toBe('close');
    expect(JSON.parse(res.body)).toMatchObject({ code: 'PAYLOAD_TOO_LARGE' });
  });

  it('answers 413 for a complete body over the limit', async () => {
    const { url } = await start({ bodyLimitBytes: 1024 });
    const res = await post(url, JSON.stringify({ note: 'x'.repeat(2000) }));
    expect(res.status).toBe(413);
    expect(await res.json()).toMatchObject({ code: 'PAYLOAD_TOO_LARGE' });
  });

  it('answers 413 for a chunked body as soon as the limit is passed', async () => {
    const { url, probe } = await start({ bodyLimitBytes: 1024 });
    // No Content-Length: node sends Transfer-Encoding: chunked. The upload never ends.
    const res = await rawRequest(url, {
      method: 'POST',
      path: '/admin/probe',
      headers: jsonHeaders,
      chunks: ['{"note":"' + 'x'.repeat(600), 'x'.repeat(600)],
      end: false,
    });
    expect(res.status).toBe(413);
    expect(JSON.parse(res.body)).toMatchObject({ code: 'PAYLOAD_TOO_LARGE' });
    expect(probe.writes).toHaveLength(0);
  });

  it('accepts a chunked body under the limit', async () => {
    const { url } = await start();
    const res = await rawRequest(url, {
      method: 'POST',
      path: '/admin/probe',
      headers: jsonHeaders,
      chunks: ['{"key":"chunked",', '"note":"ok"}'],
      end: true,
    });
    expect(res.status).toBe(201);
  });

  it('answers 415 for a content type other than application/json', async () => {
    const { url, probe } = await start();
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/merge-patch+json', 'application/json; charset=latin1']) {
      const res = await post(url, '{}', { ...adminHeaders, 'Content-Type': type });
      expect(res.status).toBe(415);
      expect(await res.json()).toMatchObject({ code: 'UNSUPPORTED_MEDIA_TYPE' });
    }
    expect(probe.writes).toHaveLength(0);
    const ok = await post(url, '{}', { ...adminHeaders, 'Content-Type': 'application/json; charset=UTF-8' });
    expect(ok.status).toBe(201);
  });

  it('answers 400 INVALID_JSON for malformed JSON', async () => {
    const { url } = await start();
    for (const body of ['{"note":', '{note: 1}', 'nul']) {
      const res = await post(url, body);
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual({ error: 'Request body is not valid JSON', code: 'INVALID_JSON' });
    }
  });

  it('answers 400 VALIDATION_FAILED when the top level is not an object', async () => {
    const { url } = await start();
    for (const body of ['[1,2]', '"text"', '42', 'null', 'true']) {
      const res = await post(url, body);
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual({ error: 'Request body must be a JSON object', code: 'VALIDATION_FAILED' });
    }
  });

  it('treats an empty body as {}', async () => {
    const { url, probe } = await start();
    const res = await fetch(`${url}/admin/probe`, { method: 'POST', headers: adminHeaders });
    expect(res.status).toBe(201);
    expect(probe.writes[0]?.note).toBe('');
  });

  it('never lets a __proto__ key reach an object prototype', async () => {
    const { url } = await start();
    const res = await post(url, '{"__proto__":{"polluted":true},"note":"x"}');
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ code: 'VALIDATION_FAILED' });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});
