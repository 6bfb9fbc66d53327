/**
 * The usage capability's record kinds (docs/architecture.md, "Usage and plan limits";
 * docs/security.md, "Who may write what"):
 *
 * - `usage` — one coordinator's count for one (principal, cycle, direction), keyed
 *   `<principalId>/<cycleType>/<cycleStart>/<direction>/<coordinatorAddress>`. Only the coordinator
 *   the key names writes it, and its four counts only grow: a pair of G-counters (counted, refunded)
 *   per coordinator; the cluster's total is the sum over coordinators of (counted − refunded).
 * - `plan` — the plan an operator assigned to a principal, keyed by the principal id; last writer
 *   (by HLC) wins.
 */
import { z } from 'zod';
import type { RecordKindDefinition } from '../replication/kinds.ts';
import { refusal } from '../replication/refusals.ts';
import { isCycleStart } from './cycles.ts';
import type { CycleType, UsageDirection } from './types.ts';

/** Principals usage is counted for: Web2 principal ids (UUIDv4) and, later, Web3 wallet addresses (lowercase). */
export const USAGE_PRINCIPAL_RE = /^(?:[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}|0x[0-9a-f]{40})$/;
/** Plan ids as the config allows them. */
export const PLAN_ID_RE = /^[A-Za-z0-9._-]{1,64}$/;

/** Largest count a record may carry: far above any cycle's usage, and sums of four stay exact in a double. */
export const MAX_COUNT = 2 ** 50;

const count = z.number().int().nonnegative().max(MAX_COUNT);

/** A coordinator's counts for one key: what it counted, and what it took back for work that failed. */
export const usageBodySchema = z.strictObject({
  /** Plaintext bytes admitted. */
  bytes: count,
  /** Requests admitted. */
  requests: count,
  /** Bytes taken back (failed work, or less used than admitted); ≤ bytes. */
  refundedBytes: count,
  /** Requests taken back (failed work); ≤ requests. */
  refundedRequests: count,
});
export type UsageCounts = z.infer<typeof usageBodySchema>;

/** Counts of nothing. */
export const ZERO_COUNTS: Readonly<UsageCounts> = Object.freeze({ bytes: 0, requests: 0, refundedBytes: 0, refundedRequests: 0 });

/** What the cluster has used, net of refunds. */
export interface NetUsage {
  bytes: number;
  requests: number;
}

/** A counter's key without its coordinator: one (principal, cycle, direction). */
export function usageKeyPrefix(principalId: string, cycleType: CycleType, cycleStart: number, direction: UsageDirection): string {
  return `${principalId}/${cycleType}/${cycleStart}/${direction}/`;
}

/** The key of `coordinator`'s counter for one (principal, cycle, direction). */
export function usageKey(principalId: string, cycleType: CycleType, cycleStart: number, direction: UsageDirection, coordinator: string): string {
  return usageKeyPrefix(principalId, cycleType, cycleStart, direction) + coordinator;
}

const USAGE_KEY_RE = /^([^/]+)\/(monthly|daily)\/(0|[1-9]\d{0,15})\/(encryption|decryption)\/(0x[0-9a-f]{40})$/;

/** A parsed counter key. */
export interface UsageKeyParts {
  principalId: string;
  cycleType: CycleType;
  cycleStart: number;
  direction: UsageDirection;
  coordinator: string;
}

/** Parse a counter key; undefined when malformed. */
export function parseUsageKey(key: string): UsageKeyParts | undefined {
  const m = USAGE_KEY_RE.exec(key);
  if (!m || !USAGE_PRINCIPAL_RE.test(m[1]!)) return undefined;
  return { principalId: m[1]!, cycleType: m[2] as CycleType, cycleStart: Number(m[3]), direction: m[4] as UsageDirection, coordinator: m[5]! };
}

/** Merge rank of a counter: the sum of its counts, which grows with every write its coordinator makes. */
export function counterRank(c: UsageCounts): number {
  return c.bytes + c.requests + c.refundedBytes + c.refundedRequests;
}

/** True when every count of `b` is at least `a`'s: `b` may follow `a`. */
export function countsCover(b: UsageCounts, a: UsageCounts): boolean {
  return b.bytes >= a.bytes && b.requests >= a.requests && b.refundedBytes >= a.refundedBytes && b.refundedRequests >= a.refundedRequests;
}

/** True when `a` and `b` hold the same counts. */
export function sameCounts(a: UsageCounts, b: UsageCounts): boolean {
  return countsCover(a, b) && countsCover(b, a);
}

/** Net usage of counts. */
export function netOf(c: UsageCounts): NetUsage {
  return { bytes: c.bytes - c.refundedBytes, requests: c.requests - c.refundedRequests };
}

/**
 * The G-counter join: per coordinator, the maximum of each count. Commutative, associative and
 * idempotent, so any order of delivery, with any repetition, gives the same state. (The engine keeps
 * one record per key, the one of highest {@link counterRank}; for the counts one coordinator writes,
 * which only grow, that record is this maximum.)
 */
export function mergeCounterStates(a: ReadonlyMap<string, UsageCounts>, b: ReadonlyMap<string, UsageCounts>): Map<string, UsageCounts> {
  const out = new Map(a);
  for (const [coordinator, theirs] of b) {
    const mine = out.get(coordinator);
    out.set(
      coordinator,
      mine
        ? {
            bytes: Math.max(mine.bytes, theirs.bytes),
            requests: Math.max(mine.requests, theirs.requests),
            refundedBytes: Math.max(mine.refundedBytes, theirs.refundedBytes),
            refundedRequests: Math.max(mine.refundedRequests, theirs.refundedRequests),
          }
        : { ...theirs },
    );
  }
  return out;
}

/** The cluster total of a G-counter state: the sum over coordinators of what each counted, net of refunds. */
export function totalOf(state: ReadonlyMap<string, UsageCounts>): NetUsage {
  const total = { bytes: 0, requests: 0 };
  for (const c of state.values()) {
    const net = netOf(c);
    total.bytes += net.bytes;
    total.requests += net.requests;
  }
  return total;
}

/**
 * `usage`: written only by the coordinator its key names (every member checks the key against the
 * record's origin), for a UTC-aligned cycle that has begun by the record's clock, with refunds never
 * above the counts, and — when it would replace the member's current record — no count lower than
 * that record's. A record with a lower sum never wins the merge, so it changes nothing when stored:
 * it is accepted as such, like any record that loses (otherwise a member that saw a later count
 * first would refuse an earlier one, and replicas would differ in which records they hold).
 */
export const usageKind: RecordKindDefinition<UsageCounts> = {
  name: 'usage',
  body: usageBodySchema,
  writers: ['coordinator'],
  key: (k) => parseUsageKey(k) !== undefined,
  rank: counterRank,
  validate(b, context) {
    const key = parseUsageKey(context.key);
    if (!key) return refusal('bad_usage_key');
    if (key.coordinator !== context.origin) return refusal('another_coordinator');
    if (!isCycleStart(key.cycleType, key.cycleStart)) return refusal('cycle_unaligned');
    if (key.cycleStart > context.atMs) return refusal('cycle_not_begun');
    if (b.refundedBytes > b.bytes || b.refundedRequests > b.requests) return refusal('refund_exceeds_count');
    return undefined;
  },
};

/** An operator's plan assignment. */
export const planBodySchema = z.strictObject({
  planId: z.string().regex(PLAN_ID_RE),
  /** Unix ms at the assigning coordinator. */
  assignedAt: z.number().int().nonnegative(),
});
export type PlanBody = z.infer<typeof planBodySchema>;

/**
 * `plan`, keyed by the principal id: written by coordinators for an operator holding their admin
 * token (POST /admin/usage/plan) — operator trust, like probes; no client evidence exists for it.
 * Members do not check the plan id against their own config (configs may differ for a while during a
 * rollout; a node that does not know a plan applies its default plan).
 */
export const planKind: RecordKindDefinition<PlanBody> = {
  name: 'plan',
  body: planBodySchema,
  writers: ['coordinator'],
  key: (k) => USAGE_PRINCIPAL_RE.test(k),
};

/** The usage capability's kinds, for the node's registry. */
export const usageKinds = [usageKind, planKind];
