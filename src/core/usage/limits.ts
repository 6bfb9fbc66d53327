/**
 * The plan limits' plain rules (docs/architecture.md, "Usage and plan limits"; docs/http.md, Usage):
 * a counter's cap of usage a quorum has not acknowledged, the checks of a request against its plan
 * direction's cycle limits, the 429 a refusal answers, and what is left of a limit (the report). No
 * I/O and no state: admission.ts and service.ts call these.
 */
import { AppError } from '../../errors/index.ts';
import type { NetUsage, UsageCounts } from './records.ts';
import type { CycleType, DirectionUsage, LimitType, PlanLimits, UsageDirection } from './types.ts';

/** GiB: the unit of `limitGB`, `usedGB` and `remainingGB` (division by a power of two is exact). */
export const BYTES_PER_GB = 2 ** 30;

/** The least caps and the fraction that scales them (from the usage options). */
export interface CapOptions {
  /** Least cap of requests one counter may hold that a quorum has not acknowledged. */
  maxUnflushedRequests: number;
  /** Least cap of plaintext bytes one counter may hold that a quorum has not acknowledged. */
  maxUnflushedBytes: number;
  /** The fraction of a plan direction's limits a cap scales to, 0 to 0.5. */
  maxOvershootFraction: number;
}

/** A counter's cap of usage not acknowledged by a quorum, for one plan direction. */
export interface Cap {
  requests: number;
  bytes: number;
}

/** Usage a counter holds that a quorum has not acknowledged. */
export interface PendingUsage {
  requests: number;
  bytes: number;
}

/** What the refusals name: the data limit, the request limit or the rate limit of a direction. */
export type LimitKind = 'data' | 'request' | 'rate';

/** A cycle limit a request would exceed, and the detail its 429 answers. */
export interface CycleLimitRefusal {
  what: Extract<LimitKind, 'data' | 'request'>;
  detail: string;
}

/** `Encryption` / `Decryption`, for the refusals' details. */
const DIRECTION_NAMES: Readonly<Record<UsageDirection, string>> = { encryption: 'Encryption', decryption: 'Decryption' };

/**
 * The cap of a plan direction: scaled with its limits, never below the configured least caps. A few
 * arithmetic operations, computed at each admission: a plan assigned mid-cycle applies at once.
 */
export function capOf(limits: PlanLimits, options: CapOptions): Cap {
  return {
    requests: Math.max(options.maxUnflushedRequests, Math.floor(options.maxOvershootFraction * limits.requestsPerCycle)),
    bytes: Math.max(options.maxUnflushedBytes, Math.floor(options.maxOvershootFraction * limits.bytesPerCycle)),
  };
}

/** What `totals` holds beyond `confirmed` (what a quorum has acknowledged). */
export function pendingOf(totals: UsageCounts, confirmed: UsageCounts): PendingUsage {
  return { requests: totals.requests - confirmed.requests, bytes: totals.bytes - confirmed.bytes };
}

/**
 * True when admitting one request of `bytes` more would leave a counter holding more unacknowledged
 * usage than `cap` (a single request larger than the byte cap passes when nothing else is pending).
 */
export function overCap(pending: PendingUsage, bytes: number, cap: Cap): boolean {
  return pending.requests + 1 > cap.requests || (pending.bytes > 0 && pending.bytes + bytes > cap.bytes);
}

/**
 * True when admitting one request of `bytes` brings a counter to half its cap or beyond: a flush
 * starts early enough that admissions rarely reach the cap and wait. `pending` is before the request.
 */
export function reachesHalfCap(pending: PendingUsage, bytes: number, cap: Cap): boolean {
  return 2 * (pending.requests + 1) >= cap.requests || 2 * (pending.bytes + bytes) >= cap.bytes;
}

/**
 * The cycle limit one more request of `bytes` would exceed, given the cluster's usage as seen here
 * (`used`), or undefined when it fits: the data limit first, then the request limit.
 */
export function cycleLimitRefusal(direction: UsageDirection, limits: PlanLimits, cycleType: CycleType, used: NetUsage, bytes: number): CycleLimitRefusal | undefined {
  const name = DIRECTION_NAMES[direction];
  if (used.bytes + bytes > limits.bytesPerCycle) {
    return { what: 'data', detail: `${name} data limit of ${limits.bytesPerCycle} bytes per ${cycleType} cycle reached: ${used.bytes} used, this request needs ${bytes}` };
  }
  if (used.requests + 1 > limits.requestsPerCycle) return { what: 'request', detail: `${name} request limit of ${limits.requestsPerCycle} requests per ${cycleType} cycle reached` };
  return undefined;
}

/** The detail of a rate-limit refusal. */
export function rateLimitDetail(direction: UsageDirection, limits: PlanLimits): string {
  return `${DIRECTION_NAMES[direction]} rate limit of ${limits.requestsPerSecond} requests per second reached`;
}

/** `encryption_data_limit` etc. */
export function limitTypeOf(direction: UsageDirection, what: LimitKind): LimitType {
  return `${direction}_${what}_limit`;
}

/** The 429 of a refusal (docs/http.md, Usage): `retryAfterSeconds` rounds up, and is at least 1. */
export function limitExceeded(limitType: LimitType, detail: string, retryAfterMs: number): AppError {
  return new AppError('LIMIT_EXCEEDED', 'Limit exceeded', { detail, limitType, retryAfterSeconds: Math.max(1, Math.ceil(retryAfterMs / 1000)) });
}

/** One direction of the usage report: the cluster's usage as seen here against its plan direction. */
export function directionUsageOf(used: NetUsage, limits: PlanLimits): DirectionUsage {
  const remaining = Math.max(0, limits.bytesPerCycle - used.bytes);
  return {
    limit: limits.bytesPerCycle,
    used: used.bytes,
    remaining,
    count: used.requests,
    requestLimit: limits.requestsPerCycle,
    rateLimit: limits.requestsPerSecond,
    limitGB: limits.bytesPerCycle / BYTES_PER_GB,
    usedGB: used.bytes / BYTES_PER_GB,
    remainingGB: remaining / BYTES_PER_GB,
  };
}
