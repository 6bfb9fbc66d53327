/**
 * The requester side of the request/response protocols (src/cluster/requests.ts), over a stub peer
 * table: applies queued in one event-loop turn go as one message, and a member's refusal keeps its
 * code and reason (docs/architecture.md, "Network"; docs/security.md, "Member refusals").
 */
import { describe, expect, it } from 'vitest';
import { createRequests } from '../../../src/cluster/requests.ts';
import { PROTOCOLS } from '../../../src/cluster/protocols.ts';
import type { Peer } from '../../../src/cluster/peers.ts';
import { isAppError } from '../../../src/errors/index.ts';
import type { ReplicatedRecord } from '../../../src/core/replication/record.ts';
import { PeerError } from '../../../src/core/replication/ports.ts';

const member = { entry: { id: 'node-1', slot: 1 } } as unknown as Peer;
const record = (seq: number) => ({ origin: '0xaa', seq }) as unknown as ReplicatedRecord;

function harness(answer: (protocol: string, body: unknown) => unknown, options: { connected?: boolean } = {}) {
  const sent: Array<{ protocol: string; body: unknown }> = [];
  const requests = createRequests({
    peers: {
      get: (nodeId) => (nodeId === 'node-1' ? member : undefined),
      ofSlot: (slot) => {
        if (slot !== 1) throw new Error(`no peer at slot ${slot}`);
        return member;
      },
      connected: () => options.connected ?? true,
      request: async (_p, protocol, body) => {
        sent.push({ protocol, body });
        return answer(protocol, body);
      },
    },
  });
  return { requests, sent };
}

describe('apply requests', () => {
  it('sends the applies of one turn as one message, and a rejected record fails only its caller', async () => {
    const { requests, sent } = harness(() => ({ rejected: [{ origin: '0xaa', seq: 2, reason: 'bad signature' }] }));
    const signal = AbortSignal.timeout(5000);
    const first = requests.sendApply(1, [record(1)], { signal });
    const second = requests.sendApply(1, [record(2)], { signal });
    await expect(first).resolves.toBeUndefined();
    await expect(second).rejects.toThrow('rejected: bad signature');
    expect(sent).toEqual([{ protocol: PROTOCOLS.apply, body: { records: [record(1), record(2)] } }]);
  });

  it('throws at once for a slot with no peer', () => {
    const { requests } = harness(() => ({}));
    expect(() => requests.sendApply(2, [record(1)], { signal: AbortSignal.timeout(5000) })).toThrow('no peer at slot 2');
  });
});

describe('member calls', () => {
  it('keeps a known refusal code as an AppError, and a refusal without one as a refused PeerError', async () => {
    const signal = AbortSignal.timeout(5000);
    const coded = harness(() => ({ ok: false, error: 'behind', code: 'NOT_READY' }));
    const err = await coded.requests.callMember(1, 'grant', {}, { signal }).catch((e: unknown) => e);
    expect(isAppError(err) && err.code).toBe('NOT_READY');
    const plain = harness(() => ({ ok: false, error: 'member service failed', code: 'NO_SUCH_CODE' }));
    const other = await plain.requests.callMember(1, 'shard', {}, { signal }).catch((e: unknown) => e);
    expect(isAppError(other)).toBe(false);
    expect(other).toBeInstanceOf(PeerError);
    expect((other as PeerError).kind).toBe('refused');
    expect((other as Error).message).toBe('refused: member service failed');
    expect(coded.sent[0]?.protocol).toBe(PROTOCOLS.grant);
    expect(plain.sent[0]?.protocol).toBe(PROTOCOLS.shard);
  });

  it('keeps a refusal reason of the closed set next to its code, and drops one it does not know', async () => {
    const signal = AbortSignal.timeout(5000);
    const reasoned = harness(() => ({ ok: false, error: 'spent', code: 'FORBIDDEN', reason: 'string_used' }));
    const err = await reasoned.requests.callMember(1, 'shard', {}, { signal }).catch((e: unknown) => e);
    expect(isAppError(err) && { code: err.code, reason: err.reason }).toEqual({ code: 'FORBIDDEN', reason: 'string_used' });
    const unknown = harness(() => ({ ok: false, error: 'spent', code: 'FORBIDDEN', reason: 'because' }));
    const other = await unknown.requests.callMember(1, 'shard', {}, { signal }).catch((e: unknown) => e);
    expect(isAppError(other) && { code: other.code, reason: other.reason }).toEqual({ code: 'FORBIDDEN', reason: undefined });
  });

  it('fails at once, without a request, when the member is unreachable', async () => {
    const { requests, sent } = harness(() => ({ ok: true }), { connected: false });
    await expect(requests.callMember(1, 'grant', {}, { signal: AbortSignal.timeout(5000) })).rejects.toThrow('unreachable');
    expect(sent).toEqual([]);
  });
});
