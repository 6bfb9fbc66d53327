/**
 * Admission (docs/http.md, Usage; docs/architecture.md, "Usage and plan limits"): every encrypt and
 * decrypt asks for one request of its plaintext bytes before doing the work. The request is judged
 * against the cluster's usage as this coordinator sees it, then counted, in one synchronous step;
 * when its counter already holds its cap of usage a quorum has not acknowledged, it waits for a flush
 * first, and answers 503 when flushes cannot reach a quorum. The rules are limits.ts'.
 */
import { AppError } from '../../errors/index.ts';
import type { CurrentCycles } from './cycles.ts';
import { reservationOn, seenUsage, type UsageCounters } from './counters.ts';
import { capOf, cycleLimitRefusal, limitExceeded, limitTypeOf, overCap, pendingOf, rateLimitDetail, reachesHalfCap, type CapOptions, type LimitKind } from './limits.ts';
import type { UsagePlans } from './plans.ts';
import { createTokenBuckets } from './token-bucket.ts';
import type { LimitType, UsageAdmission, UsageDirection } from './types.ts';

/** Flush rounds in a row that leave an admission's counter unacknowledged before it answers 503. */
const FLUSH_ROUNDS_BEFORE_503 = 3;

/** Options of {@link createUsageAdmission}: the caps, and the rate-limit buckets kept. */
export interface UsageAdmissionOptions extends CapOptions {
  /** Rate-limit buckets kept (least recently used forgotten first). @default 10000 */
  maxBuckets?: number;
}

/** Dependencies of {@link createUsageAdmission}. */
export interface UsageAdmissionDeps {
  plans: Pick<UsagePlans, 'planFor'>;
  counters: Pick<UsageCounters, 'counterFor'>;
  cycles: CurrentCycles;
  /** A flush round that starts after the call; never rejects. */
  flush(): Promise<void>;
  /** True once the service is stopping: nothing more is admitted. */
  stopping(): boolean;
  /** Wall clock, Unix ms: decides the cycle. */
  clock: () => number;
  /** Monotonic ms: the rate-limit buckets, and when a counter was last used. */
  now: () => number;
  /** `quorumkeep_usage_limit_refusals_total`, `quorumkeep_usage_flush_waits_total`. */
  metrics?: {
    refusals: { inc(labels: { limit_type: LimitType }): void };
    flushWaits: { inc(): void };
  };
}

/** Create the admission port of one coordinator. */
export function createUsageAdmission(options: UsageAdmissionOptions, deps: UsageAdmissionDeps): UsageAdmission {
  const buckets = createTokenBuckets({ maxBuckets: options.maxBuckets ?? 10_000 }, { now: deps.now });

  function refuse(direction: UsageDirection, what: LimitKind, detail: string, retryAfterMs: number): AppError {
    const limitType = limitTypeOf(direction, what);
    deps.metrics?.refusals.inc({ limit_type: limitType });
    return limitExceeded(limitType, detail, retryAfterMs);
  }

  return {
    async admit(principalId, direction, bytes) {
      if (!Number.isSafeInteger(bytes) || bytes < 0) throw new RangeError('bytes must be a non-negative integer');
      if (deps.stopping()) throw new AppError('NOT_READY', 'This coordinator is stopping');
      const { plan } = await deps.plans.planFor(principalId);
      const cycle = deps.cycles.at(plan.cycle, deps.clock());
      const limits = plan[direction];
      const cap = capOf(limits, options);
      const counter = deps.counters.counterFor(principalId, cycle, direction);
      counter.holds += 1;
      let admitted = false;
      try {
        await counter.ready;
        let waited = false;
        let failedRounds = 0;
        for (;;) {
          // From here to the count nothing awaits: the checks and the increment see one state.
          const refusal = cycleLimitRefusal(direction, limits, plan.cycle, seenUsage(counter), bytes);
          if (refusal) throw refuse(direction, refusal.what, refusal.detail, cycle.end - deps.clock());
          if (overCap(pendingOf(counter.totals, counter.confirmed), bytes, cap)) {
            // The cap of unacknowledged usage is what bounds other coordinators' overshoot: wait for
            // a flush round that carries this counter, then judge again.
            if (!waited) deps.metrics?.flushWaits.inc();
            waited = true;
            await deps.flush();
            // A slow ack clears on the next round; a missing quorum does not: give up after a few.
            failedRounds = counter.flushProblem !== undefined && overCap(pendingOf(counter.totals, counter.confirmed), bytes, cap) ? failedRounds + 1 : 0;
            if (failedRounds >= FLUSH_ROUNDS_BEFORE_503) throw new AppError('QUORUM_UNAVAILABLE', `Usage cannot be recorded: ${counter.flushProblem}`);
            continue;
          }
          const token = buckets.take(`${principalId}/${direction}`, limits.requestsPerSecond);
          if (!token.ok) throw refuse(direction, 'rate', rateLimitDetail(direction, limits), token.retryAfterMs);
          const pending = pendingOf(counter.totals, counter.confirmed);
          counter.totals.requests += 1;
          counter.totals.bytes += bytes;
          counter.usedAt = deps.now();
          // Half the cap: a flush starts early enough that admissions rarely reach the cap and wait.
          if (reachesHalfCap(pending, bytes, cap)) void deps.flush();
          admitted = true;
          return reservationOn(counter, bytes);
        }
      } finally {
        if (!admitted) counter.holds -= 1;
      }
    },
  };
}
