/**
 * A consumption's way to every member (src/core/permits/delivery.ts): delivered again while some
 * member misses it — on the lifecycle's periodic loop, which ends once every member acked, or at
 * stop, which waits for the round in flight.
 */
import { describe, expect, it } from 'vitest';
import { createPermitDelivery } from '../../../../src/core/permits/delivery.ts';
import type { BatchWriteReport, MembershipView } from '../../../../src/core/replication/ports.ts';
import type { ReplicatedRecord } from '../../../../src/core/replication/record.ts';
import { createLogger } from '../../../../src/log/index.ts';
import { waitFor } from '../../../../src/testing/wait.ts';
import { unitCluster } from '../../../utils/evidence.ts';
import { stillPending } from '../pending.ts';
import { permitBody } from './fixtures.ts';

const { descriptor } = unitCluster();
const addresses = descriptor.nodes.map((n) => n.nodeAddress);
const membership: MembershipView = { descriptor, self: descriptor.nodes[0]!, isReachable: () => true, reachableCount: () => descriptor.size };
const records = [{ kind: 'permit', key: 'p1' }] as unknown as ReplicatedRecord[];
/** A write acknowledged by the first `n` members. */
const ackedBy = (n: number): BatchWriteReport => ({ records, acked: addresses.slice(0, n), failed: [] });

/** A delivery whose resends are answered by `answer` (slots asked → acking addresses). */
function deliveryWith(answer: (slots: number[]) => Promise<string[]>) {
  const resent: number[][] = [];
  const delivery = createPermitDelivery(
    { redeliverIntervalMs: 1 },
    {
      replicator: {
        resendAll: async (_records, slots) => {
          resent.push(slots);
          return { records, acked: await answer(slots), failed: [] };
        },
      },
      membership,
      permits: { record: async () => undefined },
      log: { logRecord: async () => undefined },
      logger: createLogger({ level: 'silent' }),
      signal: new AbortController().signal,
    },
  );
  return { delivery, resent };
}

describe('permit delivery', () => {
  it('delivers again to the members that miss a consumption until every one acked, then stops resending', async () => {
    const { delivery, resent } = deliveryWith(async (slots) => slots.slice(0, 1).map((s) => addresses[s]!));
    delivery.track('p1', ackedBy(3));
    // One member more per round: slots 3, then 4.
    await waitFor(() => resent.length === 2);
    expect(resent).toEqual([[3, 4], [4]]);
    expect(await delivery.consumedAnswer(permitBody('p1', true))).toMatchObject({ status: 'consumed' });
    await delivery.stop();
    expect(resent).toHaveLength(2);
  });

  it('stop waits for the round in flight', async () => {
    let release!: () => void;
    const { delivery, resent } = deliveryWith(() => new Promise<string[]>((r) => (release = () => r([]))));
    delivery.track('p1', ackedBy(3));
    await waitFor(() => resent.length === 1);
    const stopped = delivery.stop();
    expect(await stillPending(stopped)).toBe(true);
    release();
    await stopped;
    expect(resent).toHaveLength(1);
  });
});
