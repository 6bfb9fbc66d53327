/**
 * Delivery of missed shares (src/core/secrets/delivery.ts; docs/operations.md, `secret-failures`):
 * the durable entry keeps only the members that missed their sealed share, a retry narrows it down and
 * deletes it once every member holds its share, and the operator sees members by address.
 */
import { describe, expect, it } from 'vitest';
import { afterAttempt, createShareDelivery, failureView, retryOutcome, undeliveredEntry } from '../../../../src/core/secrets/delivery.ts';
import type { PendingShares, PendingShareStore } from '../../../../src/core/secrets/ports.ts';
import type { MemberRpc, MembershipView } from '../../../../src/core/replication/ports.ts';
import { fromBase64 } from '../../../../src/crypto/index.ts';
import { captureLogger } from '../../../utils/log.ts';
import { unitCluster } from '../../../utils/evidence.ts';

const { descriptor } = unitCluster();
const addressOf = (slot: number) => descriptor.nodes[slot]!.nodeAddress;
const boxes = new Map([0, 1, 2, 3, 4].map((slot) => [slot, new Uint8Array([slot, slot + 1])]));
const T0 = Date.UTC(2026, 0, 1);

describe('pending shares', () => {
  it('nothing is kept when every member stored its share', () => {
    expect(undeliveredEntry(-1, 7, boxes, new Map(), T0)).toBeUndefined();
  });

  it('the entry keeps each missing member’s sealed share and error; a Web3 entry names its chain', () => {
    const errors = new Map([
      [3, 'unreachable'],
      [4, 'timeout'],
    ]);
    const web2 = undeliveredEntry(-1, 7, boxes, errors, T0)!;
    expect(web2).toEqual({ secretId: 7, createdAt: T0, retryCount: 0, missing: { '3': { box: 'AwQ=', error: 'unreachable' }, '4': { box: 'BAU=', error: 'timeout' } } });
    expect('chainId' in web2).toBe(false);
    expect(fromBase64(web2.missing['4']!.box)).toEqual(boxes.get(4));
    expect(undeliveredEntry(31337, 7, boxes, errors, T0)!.chainId).toBe(31337);
  });

  it('an attempt counts, keeps the boxes of the members that failed again with their new error, and drops the rest', () => {
    const entry = undeliveredEntry(-1, 7, boxes, new Map([[3, 'unreachable'], [4, 'timeout']]), T0)!;
    const next = afterAttempt(entry, new Map([[4, 'refused']]), T0 + 5_000);
    expect(next).toEqual({ secretId: 7, createdAt: T0, retryCount: 1, lastAttemptAt: T0 + 5_000, missing: { '4': { box: 'BAU=', error: 'refused' } } });
    expect(afterAttempt(next, new Map(), T0 + 9_000)).toMatchObject({ retryCount: 2, lastAttemptAt: T0 + 9_000, missing: {} });
    // The entry it came from is left as it was.
    expect(Object.keys(entry.missing)).toEqual(['3', '4']);
  });

  it('the operator sees the missing members by address, their errors and ISO times', () => {
    const entry = undeliveredEntry(31337, 7, boxes, new Map([[3, 'unreachable']]), T0)!;
    expect(failureView(entry, addressOf)).toEqual({
      secretId: 7,
      chainId: 31337,
      stage: 'share-delivery',
      failedNodeAddresses: [addressOf(3)],
      nodeErrors: { [addressOf(3)]: 'unreachable' },
      retryCount: 0,
      createdAt: '2026-01-01T00:00:00.000Z',
    });
    const retried = failureView(afterAttempt(entry, new Map([[3, 'again']]), T0 + 1_000), addressOf);
    expect(retried).toMatchObject({ retryCount: 1, lastAttemptAt: '2026-01-01T00:00:01.000Z', nodeErrors: { [addressOf(3)]: 'again' } });
  });

  it('a retry’s answer says whether every member now holds its share', () => {
    const entry = undeliveredEntry(-1, 7, boxes, new Map([[1, 'x'], [2, 'y']]), T0)!;
    expect(retryOutcome(afterAttempt(entry, new Map([[2, 'z']]), T0), addressOf)).toEqual({ message: '1 members still miss their share', stage: 'share-delivery', failedNodeAddresses: [addressOf(2)], retryCount: 1 });
    expect(retryOutcome(afterAttempt(entry, new Map(), T0), addressOf)).toEqual({ message: 'Every member now holds its share', stage: 'complete', failedNodeAddresses: [], retryCount: 1 });
  });
});

/** A pending store in memory. */
function memoryPending(): PendingShareStore & { entries: Map<string, PendingShares> } {
  const entries = new Map<string, PendingShares>();
  const keyOf = (secretId: number, chainId?: number) => `${chainId ?? -1}:${secretId}`;
  return {
    entries,
    get: async (secretId, chainId) => entries.get(keyOf(secretId, chainId)),
    put: async (entry) => void entries.set(keyOf(entry.secretId, entry.chainId), entry),
    delete: async (secretId, chainId) => void entries.delete(keyOf(secretId, chainId)),
    async *list() {
      yield* entries.values();
    },
  };
}

describe('share delivery with stub members', () => {
  it('stores what reached its member, keeps the rest, and an operator retry completes the entry', async () => {
    const reachable = new Set([0, 1, 2, 3]);
    const refusing = new Set([2]);
    const calls: Array<{ slot: number; body: unknown }> = [];
    const membership: MembershipView = { descriptor, self: descriptor.nodes[0]!, isReachable: (slot) => reachable.has(slot), reachableCount: () => reachable.size };
    const members: MemberRpc = {
      call: async (slot, _service, body) => {
        calls.push({ slot, body });
        if (refusing.has(slot)) throw new Error('member said no');
        return { stored: true };
      },
    };
    const pending = memoryPending();
    const log = captureLogger();
    let now = T0;
    const delivery = createShareDelivery({ shardTimeoutMs: 1_000, retryIntervalMs: 60_000 }, { membership, members, pending, clock: () => now, logger: log.logger });

    const { stored, errors } = await delivery.deliver(-1, 7, boxes);
    expect(stored.sort()).toEqual([0, 1, 3]);
    expect(errors).toEqual(new Map([[2, 'member said no'], [4, 'unreachable']]));
    // An unreachable member is not called at all.
    expect(calls.map((c) => c.slot).sort()).toEqual([0, 1, 2, 3]);
    expect(calls.find((c) => c.slot === 0)!.body).toEqual({ op: 'store', secretId: 7, box: 'AAE=' });

    await delivery.keepUndelivered(-1, 7, boxes, errors, now);
    expect((await delivery.listFailures()).map((f) => f.failedNodeAddresses)).toEqual([[addressOf(2), addressOf(4)]]);

    refusing.clear();
    now += 1_000;
    expect(await delivery.retryFailure('7')).toEqual({ message: '1 members still miss their share', stage: 'share-delivery', failedNodeAddresses: [addressOf(4)], retryCount: 1 });
    expect((await pending.get(7))!.missing['4']!.error).toBe('unreachable');

    reachable.add(4);
    expect(await delivery.retryFailure('7')).toMatchObject({ stage: 'complete', failedNodeAddresses: [], retryCount: 2 });
    expect(pending.entries.size).toBe(0);
    expect(log.lines().find((l) => l.msg === 'secret shares complete')).toMatchObject({ chainId: -1, secretId: 7, delivered: 1, retryCount: 2 });
    await expect(delivery.retryFailure('7')).rejects.toMatchObject({ code: 'NOT_FOUND', message: 'No undelivered shares for secret 7' });
    await expect(delivery.retryFailure('7', 'main')).rejects.toMatchObject({ code: 'BAD_REQUEST' });
  });
});

describe('share delivery deadlines', () => {
  it('a member that never answers fails with a timeout; an answered store’s signal is never aborted after its answer', async () => {
    const membership: MembershipView = { descriptor, self: descriptor.nodes[0]!, isReachable: () => true, reachableCount: () => 5 };
    const signals = new Map<number, AbortSignal>();
    const members: MemberRpc = {
      call: (slot, _service, _body, opts) => {
        signals.set(slot, opts!.signal!);
        // Slot 4 never answers: only its deadline ends the call.
        if (slot !== 4) return Promise.resolve({ stored: true });
        return new Promise((_, reject) => opts!.signal!.addEventListener('abort', () => reject(opts!.signal!.reason as Error), { once: true }));
      },
    };
    const delivery = createShareDelivery({ shardTimeoutMs: 50, retryIntervalMs: 60_000 }, { membership, members, pending: memoryPending(), clock: () => T0, logger: captureLogger().logger });
    const { stored, errors } = await delivery.deliver(-1, 7, boxes);
    expect(stored.sort()).toEqual([0, 1, 2, 3]);
    expect([...errors.keys()]).toEqual([4]);
    expect((signals.get(4)!.reason as DOMException).name).toBe('TimeoutError');
    // Slots 0-3's deadlines were set before slot 4's and ran as long: had their timers outlived their
    // answers (as `AbortSignal.timeout`'s do), they would have fired by now.
    expect([0, 1, 2, 3].map((s) => signals.get(s)!.aborted)).toEqual([false, false, false, false]);
  });
});
