/**
 * This coordinator's usage counters in memory (docs/architecture.md, "Usage and plan limits"): one per
 * (principal, cycle, direction), holding its own exact count and the other coordinators' counts as
 * this replica holds them — loaded once, then merged from every `usage` record the engine applies (a
 * G-counter join, records.ts), so a limit is judged in one synchronous step. The plain rules on one
 * counter (what is seen, what is dirty, what may be forgotten, how a reservation settles) are
 * functions of the counter alone.
 */
import type { StateReader } from '../replication/ports.ts';
import type { ReplicatedRecord } from '../replication/record.ts';
import { stateView } from '../replication/views.ts';
import { mergeCounterStates, netOf, parseUsageKey, sameCounts, totalOf, usageKeyPrefix, usageKind, ZERO_COUNTS, type NetUsage, type UsageCounts } from './records.ts';
import type { Cycle, UsageDirection, UsageReservation } from './types.ts';

/** A clean counter unused this long is forgotten (it reloads from the replica when needed again). */
export const IDLE_COUNTER_MS = 10 * 60_000;

/** One (principal, cycle, direction) as this coordinator counts it: its own count, and the others' as seen here. */
export interface OwnCounter {
  principalId: string;
  direction: UsageDirection;
  cycle: Cycle;
  /** Key of this coordinator's record. */
  key: string;
  /** Everything counted here, flushed or not. */
  totals: UsageCounts;
  /** What a quorum has acknowledged (≤ totals). */
  confirmed: UsageCounts;
  /** The other coordinators' counts in this replica, by node address (a G-counter state). */
  others: Map<string, UsageCounts>;
  /** Resolves once the counter is loaded from the replica; nothing is counted before. */
  ready: Promise<void>;
  loaded: boolean;
  /** Admissions in progress and reservations not settled: the counter is kept in memory while any is. */
  holds: number;
  /** The counts a flush in flight is writing, if any. */
  sending?: UsageCounts;
  /** Why its last flush did not reach a quorum; undefined after a confirmed one. */
  flushProblem: string | undefined;
  /** Monotonic ms of its last admission. */
  usedAt: number;
}

/** Options of {@link createUsageCounters}. */
export interface UsageCountersOptions {
  /** This coordinator's node address: the origin of its counters. */
  selfAddress: string;
  /** The other coordinators' node addresses, whose counts are summed with this one's. */
  otherCoordinators: readonly string[];
}

/** Dependencies of {@link createUsageCounters}. */
export interface UsageCountersDeps {
  state: StateReader;
  /** Monotonic ms: when a counter was last used. */
  now: () => number;
}

/** The counters held in memory. */
export interface UsageCounters {
  /**
   * The counter of (principal, cycle, direction), created at once and loaded once from the replica:
   * this coordinator's own record (a restart resumes from it) and the others'. Records the engine
   * applies meanwhile are merged in too, so none is missed whatever the order.
   */
  counterFor(principalId: string, cycle: Cycle, direction: UsageDirection): OwnCounter;
  /** Every counter held now. */
  held(): OwnCounter[];
  /** Forget the counters {@link isForgettable} at wall clock `wallMs` and monotonic `monoMs`. */
  forgetIdle(wallMs: number, monoMs: number): void;
  /** Merge other coordinators' applied `usage` records into the counters held; any order, any repetition. */
  absorb(records: readonly ReplicatedRecord[]): void;
}

/** Create the counters of one coordinator. */
export function createUsageCounters(options: UsageCountersOptions, deps: UsageCountersDeps): UsageCounters {
  const { selfAddress, otherCoordinators } = options;
  const usage = stateView(deps.state, usageKind);
  const counters = new Map<string, OwnCounter>();

  return {
    counterFor(principalId, cycle, direction) {
      const prefix = usageKeyPrefix(principalId, cycle.type, cycle.start, direction);
      const held = counters.get(prefix);
      if (held) return held;
      const counter: OwnCounter = {
        principalId,
        direction,
        cycle,
        key: prefix + selfAddress,
        totals: { ...ZERO_COUNTS },
        confirmed: { ...ZERO_COUNTS },
        others: new Map(),
        ready: Promise.resolve(),
        loaded: false,
        holds: 0,
        flushProblem: undefined,
        usedAt: deps.now(),
      };
      counter.ready = (async () => {
        try {
          const [own, ...theirs] = await Promise.all([selfAddress, ...otherCoordinators].map((c) => usage.get(prefix + c)));
          // Our own record was written by us: treated as acknowledged (one that missed its quorum
          // before a crash still spreads by sync). Nothing is counted here before the load ends.
          if (own) {
            counter.totals = { ...own };
            counter.confirmed = { ...own };
          }
          const loaded = new Map<string, UsageCounts>();
          theirs.forEach((counts, i) => counts && loaded.set(otherCoordinators[i]!, counts));
          counter.others = mergeCounterStates(counter.others, loaded);
          counter.loaded = true;
        } catch (err) {
          counters.delete(prefix);
          throw err;
        }
      })();
      counters.set(prefix, counter);
      return counter;
    },

    held: () => [...counters.values()],

    forgetIdle(wallMs, monoMs) {
      for (const [prefix, c] of counters) if (isForgettable(c, wallMs, monoMs)) counters.delete(prefix);
    },

    absorb(records) {
      for (const r of records) {
        if (r.kind !== usageKind.name || r.origin === selfAddress) continue;
        const key = parseUsageKey(r.key);
        const counter = key && counters.get(usageKeyPrefix(key.principalId, key.cycleType, key.cycleStart, key.direction));
        // A counter not held here is read from the replica when it is next needed.
        if (counter) counter.others = mergeCounterStates(counter.others, new Map([[key.coordinator, r.body as UsageCounts]]));
      }
    },
  };
}

/** The cluster's usage as this coordinator sees it now: its own exact count plus the others'. Synchronous. */
export function seenUsage(counter: Pick<OwnCounter, 'totals' | 'others'>): NetUsage {
  const own = netOf(counter.totals);
  const others = totalOf(counter.others);
  return { bytes: own.bytes + others.bytes, requests: own.requests + others.requests };
}

/** True when a counter holds counts a quorum has not acknowledged. */
export function isUnconfirmed(counter: Pick<OwnCounter, 'totals' | 'confirmed'>): boolean {
  return !sameCounts(counter.totals, counter.confirmed);
}

/** True when a counter has counts neither acknowledged nor being written by a flush in flight: the next flush writes it. */
export function isDirty(counter: Pick<OwnCounter, 'totals' | 'confirmed' | 'sending'>): boolean {
  return isUnconfirmed(counter) && !(counter.sending && sameCounts(counter.totals, counter.sending));
}

/**
 * True when nothing refers to a counter any more: loaded, all acknowledged, nothing holding it, and
 * its cycle ended (by the wall clock) or unused for {@link IDLE_COUNTER_MS} (by the monotonic one).
 */
export function isForgettable(counter: Pick<OwnCounter, 'loaded' | 'holds' | 'totals' | 'confirmed' | 'cycle' | 'usedAt'>, wallMs: number, monoMs: number): boolean {
  return counter.loaded && counter.holds === 0 && !isUnconfirmed(counter) && (counter.cycle.end <= wallMs || monoMs - counter.usedAt > IDLE_COUNTER_MS);
}

/**
 * A reservation of `bytes` (and one request) admitted on `counter`; it takes over the hold of the
 * admission that made it, and gives it back when settled. A commit with fewer bytes refunds the
 * difference, with more adds it; a release refunds the bytes and the request.
 */
export function reservationOn(counter: Pick<OwnCounter, 'principalId' | 'direction' | 'totals' | 'holds'>, bytes: number): UsageReservation {
  let settled = false;
  const settle = (): boolean => {
    if (settled) return false;
    settled = true;
    counter.holds -= 1;
    return true;
  };
  return {
    principalId: counter.principalId,
    direction: counter.direction,
    bytes,
    commit(actualBytes = bytes) {
      if (!Number.isSafeInteger(actualBytes) || actualBytes < 0) throw new RangeError('actualBytes must be a non-negative integer');
      if (!settle()) return;
      if (actualBytes < bytes) counter.totals.refundedBytes += bytes - actualBytes;
      else counter.totals.bytes += actualBytes - bytes;
    },
    release() {
      if (!settle()) return;
      counter.totals.refundedBytes += bytes;
      counter.totals.refundedRequests += 1;
    },
  };
}
