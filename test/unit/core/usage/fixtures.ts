/** Shared fixtures of the usage unit tests. */
import { createUsageCounters, type OwnCounter } from '../../../../src/core/usage/counters.ts';
import { cycleOf } from '../../../../src/core/usage/cycles.ts';
import type { UsageCounts } from '../../../../src/core/usage/records.ts';

export const ALICE = '0b5b3c1e-5d4a-4e6f-9a7b-1c2d3e4f5a6b';
/** Three node addresses: this coordinator's first. */
export const ADDR = ['0x' + 'a'.repeat(40), '0x' + 'b'.repeat(40), '0x' + 'c'.repeat(40)] as const;
export const MAY = Date.parse('2026-05-01T00:00:00Z');

/** Counts of a `usage` record. */
export const counts = (bytes: number, requests: number, refundedBytes = 0, refundedRequests = 0): UsageCounts => ({ bytes, requests, refundedBytes, refundedRequests });

/**
 * A loaded counter of ALICE's May encryption on `ADDR[0]` with nothing counted, as createUsageCounters
 * makes it (over an empty replica), with `over` applied: for the rules on one counter.
 */
export function counterFixture(over: Partial<OwnCounter> = {}): OwnCounter {
  const empty = { get: async () => undefined, list: async function* () {} };
  const made = createUsageCounters({ selfAddress: ADDR[0], otherCoordinators: [] }, { state: empty, now: () => 0 }).counterFor(ALICE, cycleOf('monthly', MAY), 'encryption');
  return { ...made, ready: Promise.resolve(), loaded: true, ...over };
}
