/**
 * The abuse limits of the account routes (src/http/rate-limit.ts): token buckets with an injected
 * clock, bounded memory, client-address keys; then through the real app — 429 JSON with
 * Retry-After before the service is called, per address and per account, X-Forwarded-For only
 * behind `trustProxy` and only its last entry, the metric.
 */
import { describe, expect, it } from 'vitest';
import { addressKey, createTokenBuckets } from '../../../src/http/rate-limit.ts';
import type { HttpAppOptions } from '../../../src/http/index.ts';
import { ADMIN_TOKEN, useTestServers } from './helpers.ts';
import { json, post } from './body-routes.ts';

describe('createTokenBuckets', () => {
  const clock = () => {
    let now = 1_000;
    return { now: () => now, advance: (ms: number) => void (now += ms), set: (ms: number) => void (now = ms) };
  };

  it('allows a burst, then refuses with the wait until the next token, then refills at the rate', () => {
    const c = clock();
    const buckets = createTokenBuckets({ perMinute: 60, burst: 3, maxKeys: 10 }, c);
    expect([buckets.take('a'), buckets.take('a'), buckets.take('a')]).toEqual([0, 0, 0]);
    expect(buckets.take('a')).toBe(1000);
    c.advance(400);
    // Refusals take nothing: the wait shrinks with time only.
    expect(buckets.take('a')).toBe(600);
    c.advance(600);
    expect(buckets.take('a')).toBe(0);
    expect(buckets.take('a')).toBe(1000);
    // Other keys have their own buckets.
    expect(buckets.take('b')).toBe(0);
    // Never more than the burst, however long idle.
    c.advance(3_600_000);
    expect([buckets.take('a'), buckets.take('a'), buckets.take('a'), buckets.take('a')]).toEqual([0, 0, 0, 1000]);
  });

  it('perMinute 0 is no limit and tracks nothing', () => {
    const buckets = createTokenBuckets({ perMinute: 0, burst: 1, maxKeys: 10 }, clock());
    for (let i = 0; i < 100; i++) expect(buckets.take('a')).toBe(0);
    expect(buckets.size()).toBe(0);
  });

  it('a clock that steps back refills nothing, and refilling resumes from the new reading', () => {
    const c = clock();
    const buckets = createTokenBuckets({ perMinute: 60, burst: 1, maxKeys: 10 }, c);
    expect(buckets.take('a')).toBe(0);
    c.set(-50_000);
    expect(buckets.take('a')).toBe(1000);
    c.advance(1000);
    expect(buckets.take('a')).toBe(0);
  });

  it('keeps at most maxKeys, forgetting the least recently used: rotating keys costs bounded memory', () => {
    const c = clock();
    const buckets = createTokenBuckets({ perMinute: 1, burst: 1, maxKeys: 100 }, c);
    expect(buckets.take('victim')).toBe(0);
    for (let i = 0; i < 10_000; i++) {
      buckets.take(`attacker-${i}`);
      if (i % 10 === 0) expect(buckets.take('victim')).toBeGreaterThan(0); // recently used: kept, still empty
      expect(buckets.size()).toBeLessThanOrEqual(100);
    }
    expect(buckets.size()).toBe(100);
  });

  it('drops buckets that are full again as new keys arrive, so memory follows the active set', () => {
    const c = clock();
    const buckets = createTokenBuckets({ perMinute: 60, burst: 2, maxKeys: 1000 }, c);
    for (let i = 0; i < 500; i++) buckets.take(`old-${i}`);
    expect(buckets.size()).toBe(500);
    c.advance(60_000);
    for (let i = 0; i < 250; i++) buckets.take(`new-${i}`);
    // Each new key swept up to two idle ones.
    expect(buckets.size()).toBe(250);
  });

  it('refuses bad options', () => {
    expect(() => createTokenBuckets({ perMinute: -1, burst: 1, maxKeys: 1 }, clock())).toThrow(RangeError);
    expect(() => createTokenBuckets({ perMinute: 1, burst: 0, maxKeys: 1 }, clock())).toThrow(RangeError);
    expect(() => createTokenBuckets({ perMinute: 1, burst: 1, maxKeys: 0 }, clock())).toThrow(RangeError);
  });
});

describe('addressKey', () => {
  it('is the IPv4 address, also when IPv4-mapped', () => {
    expect(addressKey('203.0.113.7')).toBe('203.0.113.7');
    expect(addressKey('::ffff:203.0.113.7')).toBe('203.0.113.7');
    expect(addressKey('::FFFF:203.0.113.7')).toBe('203.0.113.7');
  });

  it('is the /64 of an IPv6 address, whatever its spelling', () => {
    const key = addressKey('2001:db8:1:2::1');
    expect(key).toBe('2001:db8:1:2::/64');
    for (const same of ['2001:db8:1:2:ffff:ffff:ffff:ffff', '2001:0db8:0001:0002::abcd', '2001:DB8:1:2:0:0:0:9', '2001:db8:1:2::1%eth0', '2001:db8:1:2::1.2.3.4']) {
      expect(addressKey(same)).toBe(key);
    }
    expect(addressKey('2001:db8:1:3::1')).not.toBe(key);
    expect(addressKey('::1')).toBe('0:0:0:0::/64');
    expect(addressKey('2001:db8::')).toBe('2001:db8:0:0::/64');
  });

  it('keeps anything else short', () => {
    expect(addressKey('')).toBe('');
    expect(addressKey('x'.repeat(1000))).toHaveLength(64);
  });
});

describe('the limits on the account routes', () => {
  const start = useTestServers();
  const limits = (overrides: Partial<NonNullable<HttpAppOptions['rateLimits']>> = {}): Partial<HttpAppOptions> => ({
    rateLimits: { perIpPerMinute: 60, perIpBurst: 5, perAccountPerMinute: 6, perAccountBurst: 2, maxTrackedKeys: 1000, ...overrides },
  });
  const creds = (email: string) => ({ email, password: 'correct horse battery' });

  it('per address: the burst passes, then 429 RATE_LIMITED JSON with Retry-After before the service runs; the rate refills it', async () => {
    const server = await start(limits({ perAccountPerMinute: 0 }));
    for (let i = 0; i < 5; i++) expect((await post(server.url, '/web2/auth/verify-credentials', creds(`u${i}@example.test`))).status).toBe(200);
    const res = await post(server.url, '/web2/auth/verify-credentials', creds('next@example.test'));
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('1');
    expect(await json(res)).toEqual({ error: 'Too many requests', code: 'RATE_LIMITED', retryAfterSeconds: 1 });
    expect(server.accounts.calls).toHaveLength(5);

    // Every POST of the resource shares the address's bucket; the GETs are not limited.
    expect((await post(server.url, '/web2/auth/register', creds('other@example.test'))).status).toBe(429);
    expect((await fetch(`${server.url}/web2/principal/byEmail?email=a@b.c`)).status).toBe(200);
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);

    server.advance(1000);
    expect((await post(server.url, '/web2/auth/register', creds('other@example.test'))).status).toBe(201);
    expect((await post(server.url, '/web2/auth/register', creds('other@example.test'))).status).toBe(429);
    const metrics = await (await fetch(`${server.url}/metrics`, { headers: { Authorization: `Bearer ${ADMIN_TOKEN}` } })).text();
    expect(metrics).toMatch(/quorumkeep_http_rate_limited_total\{limit="address"\} 3/);
  });

  it('per account: one email however it is spelled, across routes; other emails unaffected', async () => {
    const server = await start(limits({ perIpBurst: 1000 }));
    expect((await post(server.url, '/web2/auth/verify-credentials', creds('Alice@Example.com'))).status).toBe(200);
    expect((await post(server.url, '/web2/auth/resend-otp', { email: '  alice@example.COM ' })).status).toBe(200);
    const res = await post(server.url, '/web2/auth/forgot-password', { email: 'ALICE@example.com' });
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('10');
    expect(await json(res)).toMatchObject({ code: 'RATE_LIMITED', retryAfterSeconds: 10 });
    expect((await post(server.url, '/web2/auth/verify-credentials', creds('bob@example.com'))).status).toBe(200);
    // POST /web2/permit with credentials counts against the same account.
    const permit = await post(server.url, '/web2/permit', { action: 'rotate', payload: '{}', ...creds('alice@example.com') });
    expect(permit.status).toBe(429);
    server.advance(10_000);
    expect((await post(server.url, '/web2/auth/verify-credentials', creds('alice@example.com'))).status).toBe(200);
    expect(server.accounts.calls.map((c) => c.method)).toEqual(['verifyCredentials', 'resendOtp', 'verifyCredentials', 'verifyCredentials']);
    const metrics = await server.metrics.render();
    expect(metrics).toMatch(/quorumkeep_http_rate_limited_total\{limit="account"\} 2/);
  });

  it('per account by principalId on register-key and retry-node-registration', async () => {
    const server = await start(limits({ perIpBurst: 1000 }));
    const body = { principalId: 'P-1', password: 'correct horse battery', publicKey: 'ab'.repeat(32), signature: 'cd'.repeat(64) };
    expect((await post(server.url, '/web2/auth/register-key', body)).status).toBe(201);
    expect((await post(server.url, '/web2/auth/retry-node-registration', { principalId: 'p-1' })).status).toBe(200);
    expect((await post(server.url, '/web2/auth/register-key', body)).status).toBe(429);
    expect((await post(server.url, '/web2/auth/register-key', { ...body, principalId: 'P-2' })).status).toBe(201);
  });

  it('bodies without a usable account value only count per address, and still get their 400', async () => {
    const server = await start(limits({ perIpBurst: 1000, perAccountBurst: 1 }));
    for (const body of [{}, { email: 42 }, { email: 'x'.repeat(400) }, { email: '   ' }]) {
      for (let i = 0; i < 3; i++) {
        const res = await post(server.url, '/web2/auth/verify-credentials', body);
        expect(res.status).toBe(400);
      }
    }
    expect(server.accounts.calls).toHaveLength(0);
  });

  it('without trustProxy, X-Forwarded-For is ignored: every request is the socket address', async () => {
    const server = await start(limits({ perIpBurst: 2, perAccountPerMinute: 0 }));
    const from = (ip: string) => ({ 'X-Forwarded-For': ip });
    expect((await post(server.url, '/web2/auth/verify-credentials', creds('a@b.c'), from('198.51.100.1'))).status).toBe(200);
    expect((await post(server.url, '/web2/auth/verify-credentials', creds('a@b.c'), from('198.51.100.2'))).status).toBe(200);
    expect((await post(server.url, '/web2/auth/verify-credentials', creds('a@b.c'), from('198.51.100.3'))).status).toBe(429);
  });

  it('behind trustProxy, the client is the last X-Forwarded-For entry (the one the proxy appended)', async () => {
    const server = await start({ ...limits({ perIpBurst: 2, perAccountPerMinute: 0 }), trustProxy: true });
    const from = (xff: string) => ({ 'X-Forwarded-For': xff });
    const send = (xff: string) => post(server.url, '/web2/auth/verify-credentials', creds('a@b.c'), from(xff));
    expect((await send('203.0.113.9')).status).toBe(200);
    expect((await send('203.0.113.9')).status).toBe(200);
    expect((await send('203.0.113.9')).status).toBe(429);
    // What the client wrote before the proxy's entry changes nothing.
    expect((await send('10.0.0.1, 203.0.113.9')).status).toBe(429);
    expect((await send('10.0.0.2, 10.0.0.3,203.0.113.9')).status).toBe(429);
    // Another client, and the same client's /64 over IPv6.
    expect((await send('203.0.113.10')).status).toBe(200);
    expect((await send('2001:db8:1:2::1')).status).toBe(200);
    expect((await send('2001:db8:1:2::2')).status).toBe(200);
    expect((await send('2001:db8:1:2::3')).status).toBe(429);
  });

  it('no rateLimits option: no limits', async () => {
    const server = await start();
    for (let i = 0; i < 30; i++) expect((await post(server.url, '/web2/auth/verify-credentials', creds('a@b.c'))).status).toBe(200);
  });
});
