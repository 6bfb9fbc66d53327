/**
 * Where a node sends its quorum reads (src/core/replication/gather.ts): its own slot first, then the
 * other reachable members by the calls in flight to each, fewest first, in turn among equals — so
 * share releases and session grants spread over every member instead of the lowest slots, and a
 * member that does not answer is asked last while its calls hang.
 */
import { describe, expect, it } from 'vitest';
import { createMemberLoad, gatherFromMembers } from '../../../../src/core/replication/gather.ts';
import type { ClusterDescriptor, ClusterNodeEntry, MembershipView } from '../../../../src/core/replication/ports.ts';
import { AppError } from '../../../../src/errors/index.ts';

function view(selfSlot: number | null, size = 5, unreachable: number[] = []): MembershipView {
  const nodes = Array.from({ length: size }, (_, slot) => ({ id: `n${slot}`, slot, nodeAddress: `0x${String(slot).repeat(40)}` }) as unknown as ClusterNodeEntry);
  if (selfSlot === null) nodes.push({ id: 'gw', slot: null, nodeAddress: '0x' + 'f'.repeat(40) } as unknown as ClusterNodeEntry);
  const descriptor = { clusterId: 'qk-gather', size, threshold: 3, nodes } as unknown as ClusterDescriptor;
  const self = selfSlot === null ? nodes[size]! : nodes[selfSlot]!;
  return {
    descriptor,
    self,
    isReachable: (slot) => !unreachable.includes(slot),
    reachableCount: () => size - unreachable.length,
  };
}

/** How often each slot is among the first `threshold` of `rounds` orders. */
function asked(load: ReturnType<typeof createMemberLoad>, membership: MembershipView, rounds: number): number[] {
  const counts = Array<number>(membership.descriptor.size).fill(0);
  for (let i = 0; i < rounds; i++) for (const slot of load.order(membership).slice(0, membership.descriptor.threshold)) counts[slot]!++;
  return counts;
}

describe('member load', () => {
  it('asks its own slot first and spreads the rest evenly over the other members', () => {
    const load = createMemberLoad();
    // 5 members, threshold 3, 40 sequential reads from slot 0: its own share every time, the other
    // two from slots 1–4 in turn — 20 each (the lowest-slot order asked slots 1 and 2 for all 40).
    expect(asked(load, view(0), 40)).toEqual([40, 20, 20, 20, 20]);
    const fromTwo = createMemberLoad();
    const orders = Array.from({ length: 4 }, () => fromTwo.order(view(2)));
    for (const o of orders) expect(o[0]).toBe(2);
    expect(asked(fromTwo, view(2), 40)).toEqual([20, 20, 40, 20, 20]);
  });

  it('a gateway (no slot of its own) spreads over every member', () => {
    expect(asked(createMemberLoad(), view(null), 50)).toEqual([30, 30, 30, 30, 30]);
  });

  it('skips unreachable members and answers 503 QUORUM_UNAVAILABLE below threshold', () => {
    const load = createMemberLoad();
    expect(asked(load, view(0, 5, [2]), 30)).toEqual([30, 20, 0, 20, 20]);
    expect(() => load.order(view(0, 5, [1, 2, 3]))).toThrow(AppError);
    try {
      load.order(view(0, 5, [1, 2, 3]));
    } catch (err) {
      expect((err as AppError).code).toBe('QUORUM_UNAVAILABLE');
    }
  });

  it('a member whose calls hang is asked last until they settle', async () => {
    const load = createMemberLoad();
    const membership = view(0);
    const hung: Array<() => void> = [];
    // Slot 3 does not answer: each gather that asks it waits, then asks the next candidate.
    const call = (slot: number) =>
      slot === 3 ? new Promise<string>((_, reject) => hung.push(() => reject(new Error('timeout')))) : Promise.resolve(`share ${slot}`);
    const gathers: Array<Promise<{ results: Array<{ slot: number }> }>> = [];
    const settled = () => new Promise((resolve) => setImmediate(resolve));
    for (let i = 0; i < 8; i++) {
      gathers.push(gatherFromMembers({ slots: load.order(membership), needed: 3, timeoutMs: 60_000, load, call }));
      await settled(); // the answered calls settle; slot 3's stay in flight
    }
    // Asked once in turn (its first gather hangs on it), slot 3 is last in every order after: one call held.
    expect(load.inFlight(3)).toBe(1);
    expect(load.order(membership).at(-1)).toBe(3);
    expect([1, 2, 4].map((slot) => load.inFlight(slot))).toEqual([0, 0, 0]);
    for (const fail of hung) fail();
    const done = await Promise.all(gathers);
    // Every read got three shares, none from slot 3; its calls no longer count.
    for (const d of done) {
      expect(d.results).toHaveLength(3);
      expect(d.results.map((r) => r.slot)).not.toContain(3);
    }
    expect(load.inFlight(3)).toBe(0);
    expect(load.inFlight(1) + load.inFlight(2) + load.inFlight(4)).toBe(0);
  });
});
