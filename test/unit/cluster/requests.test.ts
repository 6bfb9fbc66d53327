/**
 * The requester side of the request/response protocols (src/cluster/requests.ts), over a stub peer
 * table: applies queued in one event-loop turn go as one message, and so do those queued while one is
 * in flight to the same member, each caller answered for its own records and at its own deadline; a
 * member's refusal keeps its code and reason; share stores to a member that takes them in batches
 * travel as applies do, each answered on its own (docs/architecture.md, "Network" and "Quorum writes";
 * docs/security.md, "Member refusals").
 */
import { describe, expect, it } from 'vitest';
import { createRequests } from '../../../src/cluster/requests.ts';
import { PROTOCOLS } from '../../../src/cluster/protocols.ts';
import type { Peer } from '../../../src/cluster/peers.ts';
import { isAppError } from '../../../src/errors/index.ts';
import type { ReplicatedRecord } from '../../../src/core/replication/record.ts';
import { PeerError } from '../../../src/core/replication/ports.ts';
import { waitFor } from 'quorumkeep/testing';

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

/** A peer table whose apply answers the test gives, message by message. */
function heldHarness() {
  const sent: Array<{ records: ReplicatedRecord[]; signal: AbortSignal; answer(res: unknown): void; fail(err: Error): void }> = [];
  const requests = createRequests({
    peers: {
      get: () => member,
      ofSlot: () => member,
      connected: () => true,
      request: (_p, _protocol, body, signal) =>
        new Promise((resolve, reject) => {
          signal.addEventListener('abort', () => reject(signal.reason as Error), { once: true });
          sent.push({ records: (body as { records: ReplicatedRecord[] }).records, signal, answer: resolve, fail: reject });
        }),
    },
  });
  return { requests, sent };
}

/** Settled state of a promise, without waiting for it. */
function track(p: Promise<void>) {
  const state: { outcome?: 'resolved' | Error } = {};
  p.then(
    () => (state.outcome = 'resolved'),
    (err: Error) => (state.outcome = err),
  );
  return state;
}

describe('apply batching while a message is in flight', () => {
  it('queues the applies sent while one message is in flight and sends them together in the next', async () => {
    const { requests, sent } = heldHarness();
    const signal = AbortSignal.timeout(5000);
    const first = requests.sendApply(1, [record(1)], { signal });
    await waitFor(() => sent.length === 1);
    const later = [2, 3, 4].map((seq) => requests.sendApply(1, [record(seq)], { signal }));
    await new Promise((r) => setImmediate(r));
    expect(sent).toHaveLength(1);
    sent[0]!.answer({ rejected: [] });
    await first;
    await waitFor(() => sent.length === 2);
    expect(sent[1]!.records).toEqual([record(2), record(3), record(4)]);
    sent[1]!.answer({ rejected: [] });
    await Promise.all(later);
  });

  it('fails only the caller whose record the member refused, in a coalesced message', async () => {
    const { requests, sent } = heldHarness();
    const signal = AbortSignal.timeout(5000);
    const first = requests.sendApply(1, [record(1)], { signal });
    await waitFor(() => sent.length === 1);
    const a = requests.sendApply(1, [record(2), record(3)], { signal });
    const b = requests.sendApply(1, [record(4)], { signal });
    sent[0]!.answer({ rejected: [] });
    await first;
    await waitFor(() => sent.length === 2);
    sent[1]!.answer({ rejected: [{ origin: '0xaa', seq: 3, reason: 'bad signature' }] });
    const err = await a.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PeerError);
    expect((err as PeerError).kind).toBe('rejected');
    await expect(b).resolves.toBeUndefined();
  });

  it('fails a caller at its own deadline and leaves its records out of the next message; the others are answered', async () => {
    const { requests, sent } = heldHarness();
    const long = AbortSignal.timeout(5000);
    const short = new AbortController();
    const inFlight = [requests.sendApply(1, [record(1)], { signal: long }), requests.sendApply(1, [record(2)], { signal: short.signal })];
    await waitFor(() => sent.length === 1);
    const waitingShort = requests.sendApply(1, [record(3)], { signal: short.signal });
    const waitingLong = requests.sendApply(1, [record(4)], { signal: long });
    short.abort(new PeerError('timeout'));
    const timedOut = await Promise.all([inFlight[1]!, waitingShort].map((p) => p.catch((e: unknown) => e)));
    expect(timedOut.map((e) => e instanceof PeerError && e.kind)).toEqual(['timeout', 'timeout']);
    // The message in flight still has a caller waiting for it: it is not given up.
    expect(sent[0]!.signal.aborted).toBe(false);
    sent[0]!.answer({ rejected: [] });
    await inFlight[0];
    await waitFor(() => sent.length === 2);
    expect(sent[1]!.records).toEqual([record(4)]);
    sent[1]!.answer({ rejected: [] });
    await waitingLong;
  });

  it('gives up the message in flight once every caller of it did, and sends what waits', async () => {
    const { requests, sent } = heldHarness();
    const gone = new AbortController();
    const stuck = track(requests.sendApply(1, [record(1)], { signal: gone.signal }));
    await waitFor(() => sent.length === 1);
    const next = requests.sendApply(1, [record(2)], { signal: AbortSignal.timeout(5000) });
    gone.abort(new PeerError('timeout'));
    await waitFor(() => sent.length === 2);
    expect(sent[0]!.signal.aborted).toBe(true);
    expect(stuck.outcome instanceof PeerError && stuck.outcome.kind).toBe('timeout');
    expect(sent[1]!.records).toEqual([record(2)]);
    sent[1]!.answer({ rejected: [] });
    await next;
  });

  it('a message left unanswered holds the next one back only briefly: what waits goes while it is still awaited, and each is answered on its own', async () => {
    const { requests, sent } = heldHarness();
    const signal = AbortSignal.timeout(10_000);
    const stuck = track(requests.sendApply(1, [record(1)], { signal }));
    await waitFor(() => sent.length === 1);
    const heldAt = performance.now();
    const next = requests.sendApply(1, [record(2)], { signal });
    await new Promise((r) => setImmediate(r));
    expect(sent).toHaveLength(1);
    // A member that stopped answering without dropping the link, or a silent partition that healed:
    // the next message goes without waiting for the callers' deadlines.
    await waitFor(() => sent.length === 2, { timeoutMs: 5000 });
    expect(performance.now() - heldAt).toBeGreaterThanOrEqual(200);
    expect(sent[0]!.signal.aborted).toBe(false);
    expect(sent[1]!.records).toEqual([record(2)]);
    sent[1]!.answer({ rejected: [] });
    await expect(next).resolves.toBeUndefined();
    expect(stuck.outcome).toBeUndefined();
    sent[0]!.answer({ rejected: [] });
    await waitFor(() => stuck.outcome === 'resolved');
  });

  it.each([
    { end: 'the peer is found gone', kind: 'unreachable', stop: (h: ReturnType<typeof heldHarness>) => h.requests.abortInFlight(member, 'peer not answering') },
    { end: 'the message fails as a whole', kind: 'refused', stop: (h: ReturnType<typeof heldHarness>) => h.sent[0]!.fail(new PeerError('refused', 'commit failed')) },
  ])('when $end, every caller of the message in flight fails ($kind) and the next message goes', async ({ kind, stop }) => {
    const h = heldHarness();
    const signal = AbortSignal.timeout(5000);
    const stuck = h.requests.sendApply(1, [record(1)], { signal });
    await waitFor(() => h.sent.length === 1);
    const next = h.requests.sendApply(1, [record(2)], { signal });
    stop(h);
    const err = await stuck.catch((e: unknown) => e);
    expect(err instanceof PeerError && err.kind).toBe(kind);
    await waitFor(() => h.sent.length === 2);
    expect(h.sent[1]!.records).toEqual([record(2)]);
    h.sent[1]!.answer({ rejected: [] });
    await expect(next).resolves.toBeUndefined();
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

describe('share stores to a member that takes them in batches', () => {
  /** A member whose last ping named `share-store-many/1` (or not), answering each shard message as the test says. */
  function storeHarness(storesShareBatches: boolean) {
    const peer = { entry: { id: 'node-1', slot: 1 }, storesShareBatches } as unknown as Peer;
    const sent: Array<{ body: { op: string; items?: unknown[] }; answer(res: unknown): void }> = [];
    const requests = createRequests({
      peers: {
        get: () => peer,
        ofSlot: () => peer,
        connected: () => true,
        request: (_p, protocol, body) =>
          new Promise((resolve) => {
            expect(protocol).toBe(PROTOCOLS.shard);
            sent.push({ body: body as { op: string; items?: unknown[] }, answer: resolve });
          }),
      },
    });
    return { requests, sent };
  }
  const store = (secretId: number) => ({ op: 'store', secretId, box: 'AAE=' });
  const signal = () => AbortSignal.timeout(5000);
  /**
   * A store of `first` that goes alone and is answered once `ids` are made behind it: their calls
   * (a refusal as its value), once the message carrying them is sent.
   */
  async function behindOne(h: ReturnType<typeof storeHarness>, first: number, ids: number[]): Promise<Array<Promise<unknown>>> {
    const sentBefore = h.sent.length;
    const lone = h.requests.callMember(1, 'shard', store(first), { signal: signal() });
    await waitFor(() => h.sent.length === sentBefore + 1);
    const later = ids.map((id) => h.requests.callMember(1, 'shard', store(id), { signal: signal() }).catch((e: unknown) => e));
    h.sent[sentBefore]!.answer({ ok: true, result: { stored: true } });
    await lone;
    await waitFor(() => h.sent.length === sentBefore + 2);
    return later;
  }

  it('sends one store alone as `store`, and those made while it is in flight as one `storeMany`, each caller answered on its own', async () => {
    const { requests, sent } = storeHarness(true);
    const first = requests.callMember(1, 'shard', store(1), { signal: signal() });
    await waitFor(() => sent.length === 1);
    expect(sent[0]!.body).toEqual(store(1));
    const later = [2, 3, 4].map((id) => requests.callMember(1, 'shard', store(id), { signal: signal() }).catch((e: unknown) => e));
    await new Promise((r) => setImmediate(r));
    expect(sent).toHaveLength(1);
    sent[0]!.answer({ ok: true, result: { stored: true } });
    await expect(first).resolves.toEqual({ stored: true });
    await waitFor(() => sent.length === 2);
    expect(sent[1]!.body).toEqual({ op: 'storeMany', items: [store(2), store(3), store(4)] });
    sent[1]!.answer({ ok: true, result: { results: [{ ok: true, result: { stored: true } }, { ok: false, error: 'no', code: 'FORBIDDEN', reason: 'share_mismatch' }, { ok: true, result: { stored: true } }] } });
    const [a, b, c] = await Promise.all(later);
    expect(a).toEqual({ stored: true });
    expect(isAppError(b) && { code: b.code, reason: b.reason }).toEqual({ code: 'FORBIDDEN', reason: 'share_mismatch' });
    expect(c).toEqual({ stored: true });
  });

  it('a storeMany refused as a whole fails each of its callers with that refusal; a missing answer fails its caller', async () => {
    const h = storeHarness(true);
    const { sent } = h;
    const refused = await behindOne(h, 1, [2, 3]);
    sent[1]!.answer({ ok: false, error: 'not a member', code: 'FORBIDDEN', reason: 'not_member' });
    for (const err of await Promise.all(refused)) expect(isAppError(err) && { code: err.code, reason: err.reason }).toEqual({ code: 'FORBIDDEN', reason: 'not_member' });
    const short = await behindOne(h, 4, [5, 6]);
    sent[3]!.answer({ ok: true, result: { results: [{ ok: true, result: { stored: true } }] } });
    const [five, six] = await Promise.all(short);
    expect(five).toEqual({ stored: true });
    expect(six instanceof PeerError && six.kind).toBe('refused');
  });

  it('a member that cannot read storeMany (an older build since its last ping) gets each share again as store, and no batch until it says it takes them', async () => {
    const h = storeHarness(true);
    const { requests, sent } = h;
    const later = await behindOne(h, 1, [2, 3]);
    expect(sent[1]!.body.op).toBe('storeMany');
    sent[1]!.answer({ ok: false, error: 'malformed shard request: op', code: 'BAD_REQUEST', reason: 'malformed' });
    await waitFor(() => sent.length === 4);
    expect(sent.slice(2).map((s) => s.body)).toEqual([store(2), store(3)]);
    sent[2]!.answer({ ok: true, result: { stored: true } });
    sent[3]!.answer({ ok: false, error: 'no', code: 'FORBIDDEN', reason: 'share_mismatch' });
    const [two, three] = await Promise.all(later);
    expect(two).toEqual({ stored: true });
    expect(isAppError(three) && three.reason).toBe('share_mismatch');
    // Stores meanwhile and after go one message each.
    const next = [4, 5].map((id) => requests.callMember(1, 'shard', store(id), { signal: signal() }));
    await waitFor(() => sent.length === 6);
    expect(sent.slice(4).map((s) => s.body)).toEqual([store(4), store(5)]);
    sent.slice(4).forEach((s) => s.answer({ ok: true, result: { stored: true } }));
    await Promise.all(next);
  });

  it('to a member that has not said it takes batches, and for any other shard call, every call is its own message', async () => {
    const old = storeHarness(false);
    const calls = [1, 2, 3].map((id) => old.requests.callMember(1, 'shard', store(id), { signal: signal() }));
    await waitFor(() => old.sent.length === 3);
    expect(old.sent.map((s) => s.body)).toEqual([store(1), store(2), store(3)]);
    old.sent.forEach((s) => s.answer({ ok: true, result: { stored: true } }));
    await Promise.all(calls);
    const batching = storeHarness(true);
    const releases = [1, 2].map((id) => batching.requests.callMember(1, 'shard', { op: 'release', secretId: id }, { signal: signal() }));
    await waitFor(() => batching.sent.length === 2);
    expect(batching.sent.map((s) => s.body.op)).toEqual(['release', 'release']);
    batching.sent.forEach((s) => s.answer({ ok: true, result: {} }));
    await Promise.all(releases);
  });
});
