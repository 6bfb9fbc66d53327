/**
 * The client's transport (src/client/http.ts): which failures it retries, how long it waits, and how
 * an error answer becomes an ApiError. The server is a stub fetch here (the answers are docs/http.md's
 * bodies); test/integration/client.test.ts runs the client against real coordinators.
 */
import { describe, expect, it } from 'vitest';
import { ApiError } from 'quorumkeep/client';
import { createTransport, type RetryPolicy } from '../../../src/client/http.ts';

type Answer = { status: number; body?: unknown; headers?: Record<string, string> } | Error;

/** A transport whose fetch gives `answers` in turn; what it sent and waited is recorded. */
function stubbed(answers: Answer[], retry?: { attempts?: number; maxWaitMs?: number }) {
  const sent: string[] = [];
  const waits: number[] = [];
  const fetchStub: typeof fetch = async (input, init) => {
    sent.push(`${init?.method} ${String(input)}`);
    const next = answers.shift();
    if (!next) throw new Error('no more answers');
    if (next instanceof Error) throw next;
    return new Response(next.body === undefined ? null : JSON.stringify(next.body), { status: next.status, headers: next.headers ?? {} });
  };
  const transport = createTransport({ url: 'http://coordinator:3010/', ...(retry ? { retry } : {}) }, { fetch: fetchStub, sleep: async (ms) => void waits.push(ms) });
  return { transport, sent, waits };
}

const overloaded = { status: 503, body: { error: 'Server busy; retry shortly', code: 'OVERLOADED', retryAfterSeconds: 1 }, headers: { 'retry-after': '1' } };
const quorum = { status: 503, body: { error: 'Quorum not reached (1 of 2 acks)', code: 'QUORUM_UNAVAILABLE', failedNodes: ['0xabc'] } };
const refused = Object.assign(new TypeError('fetch failed'), { cause: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }) });
const call = (transport: ReturnType<typeof stubbed>['transport'], retry?: RetryPolicy) => transport.json({ method: 'POST', path: '/web2/secret', json: { data: 'd', signature: 's' }, ...(retry ? { retry } : {}) });

describe('client transport', () => {
  it('a 503 with retryAfterSeconds is retried after it, on any route', async () => {
    const { transport, sent, waits } = stubbed([overloaded, { status: 200, body: { ok: true } }]);
    await expect(call(transport)).resolves.toEqual({ ok: true });
    expect(sent).toEqual(['POST http://coordinator:3010/web2/secret', 'POST http://coordinator:3010/web2/secret']);
    expect(waits).toEqual([1000]);
  });

  it('a 503 without it, or a refused connection, only for an idempotent request', async () => {
    for (const failure of [quorum, refused]) {
      const plain = stubbed([failure, { status: 200, body: {} }]);
      await expect(call(plain.transport)).rejects.toMatchObject(failure instanceof Error ? { code: 'UNREACHABLE' } : { status: 503, code: 'QUORUM_UNAVAILABLE' });
      expect(plain.sent).toHaveLength(1);
      const idempotent = stubbed([failure, { status: 200, body: { ok: 1 } }]);
      await expect(call(idempotent.transport, 'idempotent')).resolves.toEqual({ ok: 1 });
      expect(idempotent.waits).toEqual([1000]);
    }
  });

  it('never a 429, a 4xx, or past the attempts; a long Retry-After is cut to maxWaitMs', async () => {
    const limited = stubbed([{ status: 429, body: { error: 'Limit exceeded', code: 'LIMIT_EXCEEDED', retryAfterSeconds: 1209600, limitType: 'encryption_data_limit' } }]);
    const err = await call(limited.transport, 'idempotent').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(err).toMatchObject({ status: 429, code: 'LIMIT_EXCEEDED', retryAfterSeconds: 1209600, route: 'POST /web2/secret', body: { limitType: 'encryption_data_limit' } });
    expect(limited.sent).toHaveLength(1);

    const busy = stubbed([{ ...overloaded, body: { ...overloaded.body, retryAfterSeconds: 60 } }, overloaded, overloaded], { attempts: 3, maxWaitMs: 2500 });
    await expect(call(busy.transport)).rejects.toMatchObject({ code: 'OVERLOADED' });
    expect(busy.sent).toHaveLength(3);
    expect(busy.waits).toEqual([2500, 1000]);
  });

  it('an error body that is not JSON keeps its status; Retry-After is read from the header too', async () => {
    const { transport } = stubbed([{ status: 502, body: undefined, headers: { 'retry-after': '7' } }]);
    await expect(call(transport, 'never')).rejects.toMatchObject({ status: 502, code: 'HTTP_502', retryAfterSeconds: 7 });
  });
});
