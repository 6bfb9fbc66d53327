/**
 * Usage counting and plan limits, across the whole cluster (docs/http.md, Usage; issue 13). How it works,
 * and what it guarantees: docs/architecture.md, "Usage and plan limits".
 *
 * - Each coordinator counts what it admits, per (principal, cycle, direction), in memory — that
 *   count is exact and enforced at once — and **flushes** it as its own `usage` record (the absolute
 *   counts, never a delta: a G-counter) every `flushIntervalMs`, or at once when half of its cap of
 *   unreplicated usage is reached. One record per dirty counter per flush, however many requests:
 *   counting adds no quorum write to a request.
 * - A limit is judged against this coordinator's own count plus every other coordinator's count as
 *   this replica holds it — kept in memory per counter (loaded once, then merged from every record
 *   the engine applies: a G-counter join), so the check and the count happen in one synchronous
 *   step. What another coordinator counted but this one has not seen yet is bounded: a coordinator
 *   never holds more than its counter's **cap** that a quorum has not acknowledged — past that,
 *   admission waits for its flush. The cap scales with the limit (plan direction): requests
 *   max(`maxUnflushedRequests`, ⌊`maxOvershootFraction` × requestsPerCycle⌋), bytes
 *   max(`maxUnflushedBytes`, ⌊`maxOvershootFraction` × bytesPerCycle⌋) (or one request, if larger).
 *   So a limit is overshot by at most (coordinators − 1) × cap, outside a partition between
 *   coordinators that both still reach a quorum (docs/architecture.md, "The margin").
 * - Work that fails after admission is taken back (refunded: the records also count refunds, which
 *   only grow, so the counter stays a pair of G-counters): usage counts when the work succeeded.
 *
 * This file composes the parts: plans.ts (which plan applies, assignments), counters.ts (the counters
 * in memory), flush.ts (writing them), admission.ts (judging and counting a request, with the rules
 * of limits.ts) and cycles.ts (the current cycle).
 */
import type { Logger } from '../../log/index.ts';
import { runPeriodic, type Periodic, type Startable } from '../lifecycle.ts';
import type { ClusterDescriptor, Replicator, StateReader } from '../replication/ports.ts';
import { isCoordinatorEntry } from '../replication/ports.ts';
import type { ReplicatedRecord } from '../replication/record.ts';
import type { SignedDataVerifier, SignedRequest } from '../sessions/types.ts';
import { createUsageAdmission } from './admission.ts';
import { createUsageCounters, isUnconfirmed, seenUsage } from './counters.ts';
import { createCurrentCycles } from './cycles.ts';
import { createUsageFlusher, type FlushOutcome } from './flush.ts';
import { directionUsageOf } from './limits.ts';
import { createUsagePlans } from './plans.ts';
import { USAGE_DIRECTIONS, type LimitType, type Plan, type UsageAdmission, type UsageReport, type UsageService } from './types.ts';

export type { FlushOutcome } from './flush.ts';

/** Options of {@link createUsageService} (from `usage` in the node config). */
export interface UsageOptions {
  /** The configured plans; at least one. */
  plans: readonly Plan[];
  /** Plan of principals without an assignment; `""` = the first of {@link plans}. */
  defaultPlan: string;
  /** How often dirty counters are flushed (replicated), ms. @default 1000 */
  flushIntervalMs: number;
  /**
   * Least cap of plaintext bytes one counter (principal, cycle, direction) may hold that a quorum has
   * not acknowledged; a flush starts at half the cap. A single larger request is still admitted when
   * nothing is pending. @default 8388608 (8 MiB)
   */
  maxUnflushedBytes: number;
  /** Least cap of requests one counter may hold that a quorum has not acknowledged; a flush starts at half the cap. @default 50 */
  maxUnflushedRequests: number;
  /**
   * The cap scaled with the limit: a counter's cap is the larger of the least cap and this fraction
   * of its plan direction's requestsPerCycle (bytesPerCycle), rounded down. 0 to 0.5; 0 = the least
   * caps only. @default 0.01
   */
  maxOvershootFraction: number;
  /** Rate-limit buckets kept (least recently used forgotten first). @default 10000 */
  maxBuckets?: number;
}

/** Dependencies of {@link createUsageService}. */
export interface UsageDeps {
  replicator: Pick<Replicator, 'replicate'>;
  state: StateReader;
  /** The cluster: its coordinators' counters are summed; `threshold` acks confirm a flush. */
  descriptor: ClusterDescriptor;
  /** This coordinator's node address: the origin of its counters. */
  selfAddress: string;
  /**
   * Which members are reachable now. A flush counts as acknowledged only once every other
   * coordinator that is a reachable member acked it too, so each of them already holds it.
   * @default only `threshold` acks are asked for
   */
  membership?: { isReachable(slot: number): boolean };
  verifier: SignedDataVerifier;
  /** Wall clock, Unix ms: decides the cycle. */
  clock: () => number;
  /** Monotonic ms for the rate-limit buckets. @default performance.now */
  now?: () => number;
  logger: Logger;
  /** `quorumkeep_usage_limit_refusals_total`, `quorumkeep_usage_flush_duration_seconds`, `quorumkeep_usage_flush_waits_total`. */
  metrics?: {
    refusals: { inc(labels: { limit_type: LimitType }): void };
    flushDuration: { observe(labels: { outcome: FlushOutcome }, seconds: number): void };
    flushWaits: { inc(): void };
  };
  /** The node's lifetime: ends the periodic flush when aborted ({@link UsageCapability.stop} still flushes once). @default only stop ends it */
  signal?: AbortSignal;
}

/** The usage capability: the HTTP port, the admission port, and its lifecycle. */
export interface UsageCapability extends UsageService, UsageAdmission, Startable {
  /** Start the periodic flush. */
  start(): void;
  /** Flush every dirty counter (a round that starts after this call); never rejects. */
  flush(): Promise<void>;
  /** Stop the periodic flush and flush one last time (a restart loses nothing that flush stores). Idempotent. */
  stop(): Promise<void>;
  /**
   * The engine's hook (after records are durably applied here): other coordinators' `usage` records
   * update the counters held in memory. Any order, any repetition: merged as a G-counter.
   */
  onRecordsApplied(records: readonly ReplicatedRecord[]): void;
}

/** Create the usage service. */
export function createUsageService(options: UsageOptions, deps: UsageDeps): UsageCapability {
  const log = deps.logger.child({ module: 'usage' });
  const now = deps.now ?? (() => performance.now());
  const plans = createUsagePlans(options, { replicator: deps.replicator, state: deps.state, clock: deps.clock, logger: log });
  const fraction = options.maxOvershootFraction;
  if (!(fraction >= 0 && fraction <= 0.5)) throw new RangeError('usage: maxOvershootFraction must be between 0 and 0.5');
  const otherCoordinators = deps.descriptor.nodes.filter((n) => isCoordinatorEntry(n) && n.nodeAddress !== deps.selfAddress);
  const counters = createUsageCounters({ selfAddress: deps.selfAddress, otherCoordinators: otherCoordinators.map((n) => n.nodeAddress) }, { state: deps.state, now });
  const { flush } = createUsageFlusher(
    { threshold: deps.descriptor.threshold, size: deps.descriptor.size, otherCoordinators },
    { replicator: deps.replicator, counters, membership: deps.membership, clock: deps.clock, now, logger: log, metrics: deps.metrics },
  );
  const cycles = createCurrentCycles();
  let flushing: Periodic | undefined;
  let stopped: Promise<void> | undefined;
  const admission = createUsageAdmission(options, { plans, counters, cycles, flush, stopping: () => stopped !== undefined, clock: deps.clock, now, metrics: deps.metrics });

  return {
    admit: admission.admit,

    async report(request: SignedRequest): Promise<UsageReport> {
      // Web3 principals too: their wallet address is their user id (docs/http.md, Usage).
      const caller = await deps.verifier.verify(request, { parts: 4, web3: true });
      const { plan } = await plans.planFor(caller.principalId);
      const cycle = cycles.at(plan.cycle, deps.clock());
      const held = USAGE_DIRECTIONS.map((d) => counters.counterFor(caller.principalId, cycle, d));
      await Promise.all(held.map((c) => c.ready));
      const [encryption, decryption] = held.map(seenUsage);
      return {
        userId: caller.principalId,
        userType: caller.userType,
        planId: plan.id,
        cycleType: plan.cycle,
        periodStart: String(cycle.start),
        periodEnd: String(cycle.end),
        encryption: directionUsageOf(encryption!, plan.encryption),
        decryption: directionUsageOf(decryption!, plan.decryption),
      };
    },

    assignPlan: plans.assignPlan,

    planOf: plans.planOf,

    start() {
      if (flushing || stopped) return;
      // A round with nothing dirty only forgets idle counters.
      flushing = runPeriodic(flush, { intervalMs: options.flushIntervalMs, signal: deps.signal ?? new AbortController().signal, logger: log, name: 'usage flush' });
    },

    flush,

    onRecordsApplied: counters.absorb,

    stop() {
      stopped ??= (async () => {
        await flushing?.stop();
        await flush();
        const unconfirmed = counters.held().filter(isUnconfirmed).length;
        if (unconfirmed > 0) log.warn({ counters: unconfirmed }, 'usage counters not acknowledged by a quorum at stop (stored locally; sync spreads them)');
      })();
      return stopped;
    },
  };
}
