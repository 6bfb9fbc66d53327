/**
 * The coordinator's wait for another coordinator's consumption (src/core/permits/lease.ts): woken by
 * the replica's permit changes, not by polling, and ended by the lease's deadline.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createConsumeLeases } from '../../../../src/core/permits/lease.ts';
import type { PermitBody } from '../../../../src/core/permits/records.ts';
import { createLogger } from '../../../../src/log/index.ts';
import { waitFor } from '../../../../src/testing/wait.ts';
import { NOW, permitBody } from './fixtures.ts';

/** Leases over a replica of permits held in a map; counts the reads. */
function leasesOver(replica: Map<string, PermitBody>, leaseMs: number) {
  const reads = { count: 0 };
  const leases = createConsumeLeases(
    { leaseMs, coordinator: 'c1' },
    {
      creator: { register: () => undefined, call: async () => ({ granted: true }) },
      permits: {
        get: async (permitId) => {
          reads.count++;
          return replica.get(permitId);
        },
      },
      clock: () => NOW,
      logger: createLogger({ level: 'silent' }),
    },
  );
  return { leases, reads };
}

describe('awaitConsumed', () => {
  it('resolves with the consumed permit when the change arrives, reading once per change, without polling', async () => {
    const permitId = randomUUID();
    const other = randomUUID();
    const replica = new Map([[permitId, permitBody(permitId)]]);
    // A lease far longer than the test: only the change can end the wait.
    const { leases, reads } = leasesOver(replica, 60_000);
    let outcome: PermitBody | undefined | 'waiting' = 'waiting';
    const waiting = leases.awaitConsumed(permitId).then((p) => (outcome = p));
    await waitFor(() => reads.count === 1);

    // Another permit's change does not wake this wait; a change that is not a consumption reads once more.
    leases.permitChanged(other);
    leases.permitChanged(permitId);
    await waitFor(() => reads.count === 2);
    expect(outcome).toBe('waiting');

    const consumed = permitBody(permitId, true);
    replica.set(permitId, consumed);
    leases.permitChanged(permitId);
    expect(await waiting).toEqual(consumed);
    expect(reads.count).toBe(3);
  });

  it('resolves with a permit already consumed at once', async () => {
    const permitId = randomUUID();
    const consumed = permitBody(permitId, true);
    const { leases, reads } = leasesOver(new Map([[permitId, consumed]]), 60_000);
    expect(await leases.awaitConsumed(permitId)).toEqual(consumed);
    expect(reads.count).toBe(1);
  });

  it('resolves undefined at the end of the lease when no consumption arrives', async () => {
    const permitId = randomUUID();
    const { leases, reads } = leasesOver(new Map([[permitId, permitBody(permitId)]]), 30);
    const started = performance.now();
    expect(await leases.awaitConsumed(permitId)).toBeUndefined();
    expect(performance.now() - started).toBeGreaterThanOrEqual(25);
    // Once at the start, once at the deadline: nothing in between.
    expect(reads.count).toBe(2);
    // Its listener is gone: a later change reads nothing.
    leases.permitChanged(permitId);
    expect(reads.count).toBe(2);
  });
});
