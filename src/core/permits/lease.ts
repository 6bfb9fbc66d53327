/**
 * The consume lease (docs/permits.md, "GET /web2/confirm — consumption", step 2): slot 0 reserves a
 * permit's consumption for the coordinator that claimed it, so a second coordinator confirming the
 * same permit meanwhile waits for the first one's result instead of writing the change again. Both
 * sides: slot 0's `claimConsume` operation (a lease map in memory, not a durable record) and the
 * coordinator's claim and wait.
 */
import { isAppError } from '../../errors/index.ts';
import type { Logger } from '../../log/index.ts';
import type { CreatorService } from '../replication/creator.ts';
import type { StateView } from '../replication/views.ts';
import { createKeyedWakeups } from '../wakeups.ts';
import { bad } from './payload.ts';
import { UUID_V4_RE, permitBodySchema, type PermitBody } from './records.ts';

/** Options of {@link createConsumeLeases}. */
export interface ConsumeLeasesOptions {
  /** How long slot 0 reserves a consumption for the coordinator that claimed it, ms. */
  leaseMs: number;
  /** This node's id: the coordinator its claims are made for. */
  coordinator: string;
}

/** Dependencies of {@link createConsumeLeases}. */
export interface ConsumeLeasesDeps {
  creator: Pick<CreatorService, 'register' | 'call'>;
  permits: Pick<StateView<PermitBody>, 'get'>;
  clock: () => number;
  /** The permits module's logger. */
  logger: Logger;
}

/** The answer to a claim: granted, refused, or refused with the permit slot 0's replica holds consumed. */
export interface ConsumeClaim {
  granted: boolean;
  consumed?: PermitBody;
}

/** The coordinator's side of the lease. */
export interface ConsumeLeases {
  /**
   * Ask slot 0 for the right to consume. Granted when slot 0 cannot be asked (members still apply a
   * permit once); refused with the stored permit when slot 0's replica already has it consumed.
   */
  claim(permitId: string): Promise<ConsumeClaim>;
  /**
   * Wait up to the lease for another coordinator's consumption to reach this replica: resolves with
   * the consumed permit as soon as {@link permitChanged} tells of it, or undefined at the lease's end.
   */
  awaitConsumed(permitId: string): Promise<PermitBody | undefined>;
  /** The replica's record of `permitId` changed (the engine's applied event): wakes its waiters. */
  permitChanged(permitId: string): void;
}

/** Register slot 0's `claimConsume` operation and return this coordinator's side of the lease. */
export function createConsumeLeases(options: ConsumeLeasesOptions, deps: ConsumeLeasesDeps): ConsumeLeases {
  const { leaseMs } = options;

  // Slot 0: who is consuming which permit. A lease, not a durable record: it only keeps two
  // coordinators from writing the same change twice while the first one is at it.
  const consuming = new Map<string, { coordinator: string; until: number }>();
  deps.creator.register('claimConsume', async (params) => {
    const { permitId, coordinator } = params as { permitId?: unknown; coordinator?: unknown };
    if (typeof permitId !== 'string' || !UUID_V4_RE.test(permitId) || typeof coordinator !== 'string') throw bad('malformed consume claim');
    // A coordinator that missed the consumption (it was partitioned) must not write it again on
    // stale state: slot 0's replica knows, and answers the stored result.
    const stored = await deps.permits.get(permitId);
    if (stored?.status === 'consumed') return { granted: false, consumed: stored };
    const now = deps.clock();
    for (const [id, lease] of consuming) if (lease.until <= now) consuming.delete(id);
    const lease = consuming.get(permitId);
    if (lease && lease.coordinator !== coordinator) return { granted: false };
    consuming.set(permitId, { coordinator, until: now + leaseMs });
    return { granted: true };
  });

  /** Coordinator: who waits for a change of which permit. */
  const changes = createKeyedWakeups();

  return {
    async claim(permitId) {
      try {
        const res = (await deps.creator.call('claimConsume', { permitId, coordinator: options.coordinator })) as { granted: boolean; consumed?: unknown };
        const consumed = permitBodySchema.safeParse(res.consumed);
        return consumed.success && consumed.data.permitId === permitId && consumed.data.status === 'consumed' ? { granted: false, consumed: consumed.data } : { granted: res.granted === true };
      } catch (err) {
        if (!isAppError(err) || err.code !== 'SLOT0_UNAVAILABLE') throw err;
        deps.logger.warn({ permitId }, 'slot 0 unreachable: consuming without a claim');
        return { granted: true };
      }
    },

    async awaitConsumed(permitId) {
      // The lease's end: a timer wakes the wait then; a change seen after the clock passed it ends it too.
      const until = deps.clock() + leaseMs;
      const deadline = new AbortController();
      const timer = setTimeout(() => deadline.abort(), leaseMs);
      try {
        for (;;) {
          // Listening before the read: a change between the two is not missed.
          const changed = changes.next(permitId, deadline.signal);
          const p = await deps.permits.get(permitId);
          if (p?.status === 'consumed') return p;
          if (deadline.signal.aborted || deps.clock() >= until) return undefined;
          await changed;
        }
      } finally {
        clearTimeout(timer);
        // Releases the listener of the last round.
        deadline.abort();
      }
    },

    permitChanged(permitId) {
      changes.wake(permitId);
    },
  };
}
