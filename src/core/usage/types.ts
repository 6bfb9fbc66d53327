/**
 * The usage capability's ports (docs/http.md, Usage — POST /jobs/dataConsumption): plans, per-principal
 * limits enforced on every encrypt and decrypt, and the usage report. How counting works across
 * coordinators, and the margin by which a limit can be overshot: docs/architecture.md, "Usage and
 * plan limits".
 */
import type { SignedRequest } from '../sessions/types.ts';

/** What is counted: plaintext bytes encrypted, or plaintext bytes decrypted. */
export type UsageDirection = 'encryption' | 'decryption';

/** The two directions, in report order. */
export const USAGE_DIRECTIONS: readonly UsageDirection[] = ['encryption', 'decryption'];

/** Length of a plan's billing cycle; cycles are aligned to UTC (a month from its 1st 00:00 UTC, a day from 00:00 UTC). */
export type CycleType = 'monthly' | 'daily';

/** Which limit refused a request (docs/http.md, Usage: the `limitType` of a 429). */
export type LimitType = `${UsageDirection}_${'data' | 'request' | 'rate'}_limit`;

/** One direction's limits in a plan. */
export interface PlanLimits {
  /** Plaintext bytes per cycle. */
  bytesPerCycle: number;
  /** Requests per cycle. */
  requestsPerCycle: number;
  /** Requests per second, per coordinator (a token bucket holding max(1, this) requests). */
  requestsPerSecond: number;
}

/** A plan (`usage.plans` in the config). */
export interface Plan {
  id: string;
  cycle: CycleType;
  encryption: PlanLimits;
  decryption: PlanLimits;
}

/** A billing cycle: [start, end) in Unix ms. */
export interface Cycle {
  type: CycleType;
  /** First ms of the cycle (UTC-aligned). */
  start: number;
  /** First ms of the next cycle (exclusive end). */
  end: number;
}

/**
 * Usage admitted and counted for one operation. The bytes and the request are counted (and
 * enforced, and replicated) from the moment of admission; the caller then says how it ended:
 *
 * - {@link commit} — the work succeeded: the usage stays counted (with `actualBytes` when the amount
 *   turned out different from what was admitted);
 * - {@link release} — the work failed or was abandoned: the usage is taken back (refunded), as if
 *   the request had never been admitted (its rate-limit token stays spent).
 *
 * Exactly one of them should be called; a second call of either is a no-op. A reservation never
 * settled stays counted (it errs on the side of the limit).
 */
export interface UsageReservation {
  /** The principal, direction and plaintext bytes admitted. */
  readonly principalId: string;
  readonly direction: UsageDirection;
  readonly bytes: number;
  /**
   * Keep the usage. `actualBytes` (a non-negative integer) replaces the admitted amount: less is
   * refunded, more is added without a limit check (the work is done). @default the admitted bytes
   */
  commit(actualBytes?: number): void;
  /** Take the usage back: the operation did not happen. */
  release(): void;
}

/**
 * The admission port: what every encrypt and decrypt calls before doing the work
 * (src/core/payloads today; file jobs the same way — docs/architecture.md, "Usage and plan limits").
 */
export interface UsageAdmission {
  /**
   * Admit one `direction` request of `bytes` plaintext bytes for `principalId`, or refuse it with
   * 429 `LIMIT_EXCEEDED` (`{ error: "Limit exceeded", detail, limitType, retryAfterSeconds }`) —
   * a refused request counts nothing. Resolves to a reservation the caller settles. May wait for a
   * flush of this coordinator's counter (a few ms) when its unreplicated part is at its cap, and
   * rejects with 503 `QUORUM_UNAVAILABLE` when that flush cannot reach a quorum.
   */
  admit(principalId: string, direction: UsageDirection, bytes: number): Promise<UsageReservation>;
}

/** One direction of the usage report (docs/http.md, Usage). Bytes, requests per cycle, requests per second. */
export interface DirectionUsage {
  /** Plaintext bytes allowed this cycle. */
  limit: number;
  /** Plaintext bytes counted this cycle (operations in progress included). */
  used: number;
  /** max(0, limit − used). */
  remaining: number;
  /** Requests counted this cycle. */
  count: number;
  /** Requests allowed this cycle. */
  requestLimit: number;
  /** Requests per second allowed (per coordinator). */
  rateLimit: number;
  /** `limit` in GiB (2^30 bytes), unrounded. */
  limitGB: number;
  /** `used` in GiB. */
  usedGB: number;
  /** `remaining` in GiB; equals limitGB − usedGB whenever used ≤ limit. */
  remainingGB: number;
}

/** The usage report of POST /jobs/dataConsumption (without `success` and the snake_case copies). */
export interface UsageReport {
  /** The principal id (Web2), or the wallet address, lowercase (Web3). */
  userId: string;
  userType: 'web2' | 'web3';
  planId: string;
  cycleType: CycleType;
  /** Unix ms as a decimal string: the cycle's first ms. */
  periodStart: string;
  /** Unix ms as a decimal string: the next cycle's first ms (exclusive end). */
  periodEnd: string;
  encryption: DirectionUsage;
  decryption: DirectionUsage;
}

/** A principal's plan as an operator sees it. */
export interface PlanAssignmentView {
  principalId: string;
  planId: string;
  /** False when no plan was assigned: the default plan applies. */
  assigned: boolean;
  /** ISO-8601 UTC of the assignment, or null. */
  assignedAt: string | null;
}

/** The usage service (HTTP port). */
export interface UsageService {
  /** POST /jobs/dataConsumption: data `<chainId>_0_<signer>_<fresh>` (the second part is ignored). */
  report(request: SignedRequest): Promise<UsageReport>;
  /** Operator: assign a configured plan to a principal (replicated). 400 unknown plan, 404 unknown principal. */
  assignPlan(principalId: string, planId: string): Promise<PlanAssignmentView>;
  /** Operator: the plan that applies to a principal. */
  planOf(principalId: string): Promise<PlanAssignmentView>;
}
