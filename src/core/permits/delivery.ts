/**
 * A consumption's way to every member (docs/permits.md, "GET /web2/confirm — consumption", step 5, and
 * "A consumed permit, asked again"): the consumptions this coordinator wrote are delivered again
 * every `redeliverIntervalMs` to the members that have not acknowledged them, and the answer for a
 * consumed permit is `consumed` only when ≥ threshold members are known to hold it.
 */
import { createAgeOrderedMap, setWithin } from '../../crypto/index.ts';
import type { Logger } from '../../log/index.ts';
import { runPeriodic, type Periodic, type Startable } from '../lifecycle.ts';
import type { BatchWriteReport, MembershipView, Replicator } from '../replication/ports.ts';
import { membersOf } from '../replication/ports.ts';
import type { ReplicatedRecord } from '../replication/record.ts';
import type { StateView } from '../replication/views.ts';
import type { PermitBody } from './records.ts';
import type { PermitConfirmation, PermitResult } from './types.ts';

/** Consumed permits a coordinator remembers as durable on a quorum (so re-clicks cost no round trip). */
const DURABLE_PERMITS_REMEMBERED = 10_000;

/** Options of {@link createPermitDelivery}. */
export interface PermitDeliveryOptions {
  /** While a consumed permit has not reached every member, how often to deliver it again, ms. */
  redeliverIntervalMs: number;
}

/** Dependencies of {@link createPermitDelivery}. */
export interface PermitDeliveryDeps {
  replicator: Pick<Replicator, 'resendAll'>;
  membership: MembershipView;
  permits: Pick<StateView<PermitBody>, 'record'>;
  /** The local log, to find the change stored with a consumption (it follows it in its origin's log). */
  log: { logRecord(origin: string, seq: number): Promise<ReplicatedRecord | undefined> };
  /** The permits module's logger. */
  logger: Logger;
  /** The node's lifetime: ends the redelivery when aborted. */
  signal: AbortSignal;
}

/** This coordinator's consumptions on their way to every member. */
export interface PermitDelivery extends Startable {
  /** A consumption this coordinator wrote: durable at ≥ threshold acks, delivered again until every member acked. */
  track(permitId: string, report: BatchWriteReport): void;
  /**
   * The answer for a consumed permit, true when given (docs/permits.md: 200 only at ≥ threshold acks).
   * This coordinator's own consumptions are tracked (one short of threshold is delivered again at
   * once to the reachable members that have not acked, then answered); any other (consumed through another coordinator,
   * or before a restart, and seen in this replica) is delivered again — the consumption and the
   * change stored with it — and the acks counted: duplicates ack, so this both measures and repairs.
   */
  consumedAnswer(permit: PermitBody): Promise<PermitConfirmation>;
  /** Stop background delivery (waits for a round in flight); idempotent. */
  stop(): Promise<void>;
}

/** Create the delivery of this coordinator's consumptions; its loop runs only while one is missing somewhere. */
export function createPermitDelivery(options: PermitDeliveryOptions, deps: PermitDeliveryDeps): PermitDelivery {
  const { membership, logger: log } = deps;
  const members = membersOf(membership.descriptor);
  const selfId = membership.self.id;
  const threshold = membership.descriptor.threshold;

  /** Consumptions this coordinator wrote that some member has not acked yet. */
  const deliveries = new Map<string, { records: ReplicatedRecord[]; acked: Set<string> }>();
  /** The redelivery loop, while a consumption is missing somewhere. */
  let redelivery: Periodic | undefined;
  /** Set by stop: no loop starts after it. */
  let stopped: Promise<void> | undefined;

  /** Permits whose consumption this coordinator saw acknowledged by ≥ threshold members. */
  const durable = createAgeOrderedMap<string, true>();
  const markDurable = (permitId: string) => void setWithin(durable, permitId, true, DURABLE_PERMITS_REMEMBERED);

  /** Deliver a consumption again to the reachable members that have not acked it; count their acks. */
  async function deliverAgain(d: { records: ReplicatedRecord[]; acked: Set<string> }): Promise<void> {
    const missing = members.filter((m) => !d.acked.has(m.nodeAddress) && membership.isReachable(m.slot));
    if (missing.length === 0) return;
    const report = await deps.replicator.resendAll(d.records, missing.map((m) => m.slot));
    for (const a of report.acked) d.acked.add(a);
  }

  async function redeliver(): Promise<void> {
    try {
      for (const [permitId, d] of deliveries) {
        await deliverAgain(d);
        if (d.acked.size >= members.length) {
          deliveries.delete(permitId);
          log.info({ permitId }, 'permit delivered to every member');
        }
      }
    } finally {
      // Every member has every consumption: the loop ends (the next track starts another).
      if (deliveries.size === 0 && redelivery) {
        void redelivery.stop();
        redelivery = undefined;
      }
    }
  }

  return {
    track(permitId, report) {
      if (report.acked.length >= threshold) markDurable(permitId);
      const acked = new Set(report.acked);
      if (acked.size >= members.length) return;
      deliveries.set(permitId, { records: report.records, acked });
      if (!stopped) redelivery ??= runPeriodic(redeliver, { intervalMs: options.redeliverIntervalMs, signal: deps.signal, logger: log, name: 'permit redelivery' });
    },

    async consumedAnswer(permit) {
      const pending = (successCount: number): PermitConfirmation => ({ status: 'pending', permitId: permit.permitId, action: permit.action, successCount, threshold });
      const consumed: PermitConfirmation = { status: 'consumed', permitId: permit.permitId, action: permit.action, result: permit.result as PermitResult };
      const d = deliveries.get(permit.permitId);
      if (d) {
        if (d.acked.size >= threshold) return consumed;
        // Asked again while pending: deliver now to the reachable members that have not acked, so
        // a retry after they return is answered from what they say, not from the last round.
        await deliverAgain(d);
        if (d.acked.size < threshold) return pending(d.acked.size);
        markDurable(permit.permitId);
        return consumed;
      }
      if (durable.has(permit.permitId)) return consumed;
      const record = await deps.permits.record(permit.permitId);
      if (!record || record.body.status !== 'consumed') return pending(0);
      const next = await deps.log.logRecord(record.origin, record.seq + 1);
      const change = next && (next.kind === 'secret' || next.kind === 'principal') ? [next] : [];
      const selfHolds = membership.self.slot !== null;
      const others = members.filter((m) => m.id !== selfId).map((m) => m.slot);
      const report = await deps.replicator.resendAll([record, ...change], others);
      const acked = report.acked.length + (selfHolds ? 1 : 0);
      if (acked < threshold) return pending(acked);
      markDurable(permit.permitId);
      return consumed;
    },

    stop() {
      stopped ??= (async () => {
        const loop = redelivery;
        redelivery = undefined;
        await loop?.stop();
      })();
      return stopped;
    },
  };
}
