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
 */
import { AppError } from '../../errors/index.ts';
import type { Logger } from '../../log/index.ts';
import type { ClusterDescriptor, Replicator, StateReader } from '../replication/ports.ts';
import { isCoordinatorEntry } from '../replication/ports.ts';
import type { SignedDataVerifier, SignedRequest } from '../sessions/types.ts';
import { cycleOf } from './cycles.ts';
import type { ReplicatedRecord } from '../replication/record.ts';
import { countsCover, mergeCounterStates, netOf, parseUsageKey, planKind, totalOf, usageKeyPrefix, usageKind, USAGE_PRINCIPAL_RE, ZERO_COUNTS, type NetUsage, type PlanBody, type UsageCounts } from './records.ts';
import { createTokenBuckets } from './token-bucket.ts';
import { USAGE_DIRECTIONS, type Cycle, type CycleType, type DirectionUsage, type LimitType, type Plan, type PlanAssignmentView, type UsageAdmission, type UsageDirection, type UsageReport, type UsageReservation, type UsageService } from './types.ts';

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
}

/** How a flush round went: every counter acknowledged by a quorum, some only by fewer, or some writes failed. */
export type FlushOutcome = 'ok' | 'below_quorum' | 'failed';

/** The usage capability: the HTTP port, the admission port, and its lifecycle. */
export interface UsageCapability extends UsageService, UsageAdmission {
  /** Start the periodic flush. */
  start(): void;
  /** Flush every dirty counter (a round that starts after this call); never rejects. */
  flush(): Promise<void>;
  /** Stop the timer and flush one last time (a restart loses nothing that flush stores). Idempotent. */
  stop(): Promise<void>;
  /**
   * The engine's hook (after records are durably applied here): other coordinators' `usage` records
   * update the counters held in memory. Any order, any repetition: merged as a G-counter.
   */
  onRecordsApplied(records: readonly ReplicatedRecord[]): void;
}

/** GiB: the unit of `limitGB`, `usedGB` and `remainingGB` (division by a power of two is exact). */
const BYTES_PER_GB = 2 ** 30;
/** Flush rounds that may be in flight at once. */
const FLUSH_ROUNDS_IN_FLIGHT = 2;
/** Flush rounds in a row that leave an admission's counter unacknowledged before it answers 503. */
const FLUSH_ROUNDS_BEFORE_503 = 3;
/** A clean counter unused this long is forgotten (it reloads from the replica when needed again). */
const IDLE_COUNTER_MS = 10 * 60_000;

/** One (principal, cycle, direction) as this coordinator counts it: its own count, and the others' as seen here. */
interface OwnCounter {
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

const sameCounts = (a: UsageCounts, b: UsageCounts) => countsCover(a, b) && countsCover(b, a);

/** A counter's cap of usage not acknowledged by a quorum, for one plan direction. */
interface Cap {
  requests: number;
  bytes: number;
}

/** `encryption_data_limit` etc. */
const limitTypeOf = (direction: UsageDirection, what: 'data' | 'request' | 'rate'): LimitType => `${direction}_${what}_limit`;

/** `Encryption` / `Decryption`, for the refusals' details. */
const DIRECTION_NAMES: Readonly<Record<UsageDirection, string>> = { encryption: 'Encryption', decryption: 'Decryption' };

/** Create the usage service. */
export function createUsageService(options: UsageOptions, deps: UsageDeps): UsageCapability {
  if (options.plans.length === 0) throw new Error('usage: at least one plan is needed');
  const log = deps.logger.child({ module: 'usage' });
  const now = deps.now ?? (() => performance.now());
  const plansById = new Map(options.plans.map((p) => [p.id, p]));
  const defaultPlan = options.defaultPlan === '' ? options.plans[0]! : plansById.get(options.defaultPlan);
  if (!defaultPlan) throw new Error(`usage: defaultPlan "${options.defaultPlan}" is not a configured plan`);
  const fraction = options.maxOvershootFraction;
  if (!(fraction >= 0 && fraction <= 0.5)) throw new RangeError('usage: maxOvershootFraction must be between 0 and 0.5');
  const threshold = deps.descriptor.threshold;
  const otherCoordinatorEntries = deps.descriptor.nodes.filter((n) => isCoordinatorEntry(n) && n.nodeAddress !== deps.selfAddress);
  const otherCoordinators = otherCoordinatorEntries.map((n) => n.nodeAddress);
  const buckets = createTokenBuckets({ maxBuckets: options.maxBuckets ?? 10_000 }, { now });
  const counters = new Map<string, OwnCounter>();
  const unknownPlansLogged = new Set<string>();
  let timer: NodeJS.Timeout | undefined;
  let stopped: Promise<void> | undefined;

  /** The current cycle of each type, kept while the clock is in it: one comparison per admission, no date arithmetic. */
  const currentCycles = new Map<CycleType, Cycle>();
  function cycleAt(type: CycleType, atMs: number): Cycle {
    const held = currentCycles.get(type);
    if (held && held.start <= atMs && atMs < held.end) return held;
    const cycle = cycleOf(type, atMs);
    currentCycles.set(type, cycle);
    return cycle;
  }

  async function planFor(principalId: string): Promise<{ plan: Plan; assignment: PlanBody | undefined }> {
    const record = await deps.state.get(planKind.name, principalId);
    const assignment = record?.body as PlanBody | undefined;
    if (!assignment) return { plan: defaultPlan!, assignment };
    const plan = plansById.get(assignment.planId);
    if (!plan && !unknownPlansLogged.has(assignment.planId)) {
      unknownPlansLogged.add(assignment.planId);
      log.warn({ planId: assignment.planId }, 'assigned plan is not configured on this node; the default plan applies');
    }
    return { plan: plan ?? defaultPlan!, assignment };
  }

  /**
   * The counter of (principal, cycle, direction), created at once and loaded once from the replica:
   * this coordinator's own record (a restart resumes from it) and the others'. Records the engine
   * applies meanwhile are merged in too, so none is missed whatever the order.
   */
  function counterFor(principalId: string, cycle: Cycle, direction: UsageDirection): OwnCounter {
    const prefix = usageKeyPrefix(principalId, cycle.type, cycle.start, direction);
    const held = counters.get(prefix);
    if (held) return held;
    const counter: OwnCounter = {
      principalId,
      direction,
      cycle,
      key: prefix + deps.selfAddress,
      totals: { ...ZERO_COUNTS },
      confirmed: { ...ZERO_COUNTS },
      others: new Map(),
      ready: Promise.resolve(),
      loaded: false,
      holds: 0,
      flushProblem: undefined,
      usedAt: now(),
    };
    counter.ready = (async () => {
      try {
        const [own, ...theirs] = await Promise.all([deps.selfAddress, ...otherCoordinators].map((c) => deps.state.get(usageKind.name, prefix + c)));
        // Our own record was written by us: treated as acknowledged (one that missed its quorum
        // before a crash still spreads by sync). Nothing is counted here before the load ends.
        if (own) {
          counter.totals = { ...(own.body as UsageCounts) };
          counter.confirmed = { ...(own.body as UsageCounts) };
        }
        const loaded = new Map<string, UsageCounts>();
        theirs.forEach((r, i) => r && loaded.set(otherCoordinators[i]!, r.body as UsageCounts));
        counter.others = mergeCounterStates(counter.others, loaded);
        counter.loaded = true;
      } catch (err) {
        counters.delete(prefix);
        throw err;
      }
    })();
    counters.set(prefix, counter);
    return counter;
  }

  /** The cluster's usage as this coordinator sees it now: its own exact count plus the others'. Synchronous. */
  function seenUsage(counter: OwnCounter): NetUsage {
    const own = netOf(counter.totals);
    const others = totalOf(counter.others);
    return { bytes: own.bytes + others.bytes, requests: own.requests + others.requests };
  }

  function refuse(direction: UsageDirection, what: 'data' | 'request' | 'rate', detail: string, retryAfterMs: number): AppError {
    const limitType = limitTypeOf(direction, what);
    deps.metrics?.refusals.inc({ limit_type: limitType });
    return new AppError('LIMIT_EXCEEDED', 'Limit exceeded', { detail, limitType, retryAfterSeconds: Math.max(1, Math.ceil(retryAfterMs / 1000)) });
  }

  // ---------------------------------------------------------------------------------------------
  // Flushing

  const rounds = new Set<Promise<void>>();
  let queued: Promise<void> | undefined;
  /** The last round's outcome: a lasting outage is logged once, not every round. */
  let lastOutcome: FlushOutcome = 'ok';

  /**
   * A flush round that starts after this call (a round in flight does not carry what came since).
   * Up to {@link FLUSH_ROUNDS_IN_FLIGHT} overlap, so an admission waiting for one waits for one
   * write, not for the end of another first.
   */
  function flush(): Promise<void> {
    if (rounds.size < FLUSH_ROUNDS_IN_FLIGHT) {
      const round: Promise<void> = flushRound().finally(() => rounds.delete(round));
      rounds.add(round);
      return round;
    }
    queued ??= Promise.race(rounds).then(() => {
      queued = undefined;
      return flush();
    });
    return queued;
  }

  async function flushRound(): Promise<void> {
    // Counters with counts neither acknowledged nor being written by a round in flight.
    const dirty = [...counters.values()].filter((c) => !sameCounts(c.totals, c.confirmed) && !(c.sending && sameCounts(c.totals, c.sending)));
    if (dirty.length > 0) {
      const startedAt = performance.now();
      // One record per counter, all in one event-loop turn: the engine commits them in one local
      // batch and the links carry them to each member in one message.
      const outcomes = await Promise.all(dirty.map((c) => flushCounter(c)));
      const outcome: FlushOutcome = outcomes.includes('failed') ? 'failed' : outcomes.includes('below_quorum') ? 'below_quorum' : 'ok';
      deps.metrics?.flushDuration.observe({ outcome }, (performance.now() - startedAt) / 1000);
      if (outcome !== lastOutcome) {
        if (outcome === 'ok') log.info('usage flushes acknowledged again');
        else log.warn({ counters: dirty.length, outcome }, 'usage flush did not reach a quorum for every counter');
      }
      lastOutcome = outcome;
    }
    forgetIdle();
  }

  async function flushCounter(c: OwnCounter): Promise<FlushOutcome> {
    const snapshot = { ...c.totals };
    c.sending = snapshot;
    try {
      // Written locally whatever the membership (requireQuorum false), so a restart keeps it and
      // sync spreads it; it only counts as acknowledged with a quorum of acks.
      const report = await deps.replicator.replicate({ kind: usageKind.name, key: c.key, body: snapshot }, { requireQuorum: false });
      if (report.acked.length < threshold) {
        c.flushProblem = `${report.acked.length} of ${deps.descriptor.size} members acknowledged, ${threshold} needed`;
        return 'below_quorum';
      }
      // Another coordinator that is reachable but has not applied it yet (a slow ack) would judge
      // without it: not acknowledged yet, the next round writes the counts again.
      const acked = new Set(report.acked);
      const lagging = otherCoordinatorEntries.find((n) => n.slot !== null && deps.membership?.isReachable(n.slot) && !acked.has(n.nodeAddress));
      if (lagging) {
        c.flushProblem = `coordinator ${lagging.id} has not acknowledged`;
        return 'below_quorum';
      }
      // Rounds overlap: an older snapshot acknowledged last must not move `confirmed` back.
      if (countsCover(snapshot, c.confirmed)) c.confirmed = snapshot;
      c.flushProblem = undefined;
      return 'ok';
    } catch (err) {
      c.flushProblem = err instanceof Error ? err.message : String(err);
      log.error({ err }, 'usage flush failed');
      return 'failed';
    } finally {
      if (c.sending === snapshot) c.sending = undefined;
    }
  }

  /** Forget counters nothing refers to any more: loaded, all acknowledged, nothing holding them, and ended or idle. */
  function forgetIdle(): void {
    const wall = deps.clock();
    const mono = now();
    for (const [prefix, c] of counters) {
      if (c.loaded && c.holds === 0 && sameCounts(c.totals, c.confirmed) && (c.cycle.end <= wall || mono - c.usedAt > IDLE_COUNTER_MS)) counters.delete(prefix);
    }
  }

  /** A reservation on `counter`; it takes over the hold of the admission that made it. */
  function reservation(counter: OwnCounter, bytes: number): UsageReservation {
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

  /**
   * The cap of a plan direction: scaled with its limits, never below the configured least caps. A
   * few arithmetic operations, computed at each admission: a plan assigned mid-cycle applies at once.
   */
  function capOf(limits: Plan['encryption']): Cap {
    return {
      requests: Math.max(options.maxUnflushedRequests, Math.floor(fraction * limits.requestsPerCycle)),
      bytes: Math.max(options.maxUnflushedBytes, Math.floor(fraction * limits.bytesPerCycle)),
    };
  }

  /**
   * True when admitting `bytes` more would leave `counter` holding more unacknowledged usage than
   * `cap` (a single request larger than the byte cap passes when nothing else is pending).
   */
  function overCap(counter: OwnCounter, bytes: number, cap: Cap): boolean {
    const pendingRequests = counter.totals.requests - counter.confirmed.requests;
    const pendingBytes = counter.totals.bytes - counter.confirmed.bytes;
    return pendingRequests + 1 > cap.requests || (pendingBytes > 0 && pendingBytes + bytes > cap.bytes);
  }

  async function admit(principalId: string, direction: UsageDirection, bytes: number): Promise<UsageReservation> {
    if (!Number.isSafeInteger(bytes) || bytes < 0) throw new RangeError('bytes must be a non-negative integer');
    if (stopped) throw new AppError('NOT_READY', 'This coordinator is stopping');
    const { plan } = await planFor(principalId);
    const cycle = cycleAt(plan.cycle, deps.clock());
    const limits = plan[direction];
    const cap = capOf(limits);
    const counter = counterFor(principalId, cycle, direction);
    counter.holds += 1;
    let admitted = false;
    try {
      await counter.ready;
      let waited = false;
      let failedRounds = 0;
      for (;;) {
        // From here to the count nothing awaits: the checks and the increment see one state.
        const used = seenUsage(counter);
        const untilCycleEnd = cycle.end - deps.clock();
        const Direction = DIRECTION_NAMES[direction];
        if (used.bytes + bytes > limits.bytesPerCycle) {
          throw refuse(direction, 'data', `${Direction} data limit of ${limits.bytesPerCycle} bytes per ${plan.cycle} cycle reached: ${used.bytes} used, this request needs ${bytes}`, untilCycleEnd);
        }
        if (used.requests + 1 > limits.requestsPerCycle) {
          throw refuse(direction, 'request', `${Direction} request limit of ${limits.requestsPerCycle} requests per ${plan.cycle} cycle reached`, untilCycleEnd);
        }
        if (overCap(counter, bytes, cap)) {
          // The cap of unacknowledged usage is what bounds other coordinators' overshoot: wait for
          // a flush round that carries this counter, then judge again.
          if (!waited) deps.metrics?.flushWaits.inc();
          waited = true;
          await flush();
          // A slow ack clears on the next round; a missing quorum does not: give up after a few.
          failedRounds = counter.flushProblem !== undefined && overCap(counter, bytes, cap) ? failedRounds + 1 : 0;
          if (failedRounds >= FLUSH_ROUNDS_BEFORE_503) throw new AppError('QUORUM_UNAVAILABLE', `Usage cannot be recorded: ${counter.flushProblem}`);
          continue;
        }
        const token = buckets.take(`${principalId}/${direction}`, limits.requestsPerSecond);
        if (!token.ok) throw refuse(direction, 'rate', `${Direction} rate limit of ${limits.requestsPerSecond} requests per second reached`, token.retryAfterMs);
        const pendingRequests = counter.totals.requests - counter.confirmed.requests;
        const pendingBytes = counter.totals.bytes - counter.confirmed.bytes;
        counter.totals.requests += 1;
        counter.totals.bytes += bytes;
        counter.usedAt = now();
        // Half the cap: a flush starts early enough that admissions rarely reach the cap and wait.
        if (2 * (pendingRequests + 1) >= cap.requests || 2 * (pendingBytes + bytes) >= cap.bytes) void flush();
        admitted = true;
        return reservation(counter, bytes);
      }
    } finally {
      if (!admitted) counter.holds -= 1;
    }
  }

  function usageView(used: NetUsage, limits: Plan['encryption']): DirectionUsage {
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

  function assignmentView(principalId: string, plan: Plan, assignment: PlanBody | undefined): PlanAssignmentView {
    return { principalId, planId: plan.id, assigned: assignment !== undefined, assignedAt: assignment ? new Date(assignment.assignedAt).toISOString() : null };
  }

  function checkPrincipalId(principalId: string): void {
    if (!USAGE_PRINCIPAL_RE.test(principalId)) throw new AppError('BAD_REQUEST', 'principalId must be a principal id (UUIDv4)');
  }

  return {
    admit,

    async report(request: SignedRequest): Promise<UsageReport> {
      // Web3 principals too: their wallet address is their user id (docs/http.md, Usage).
      const caller = await deps.verifier.verify(request, { parts: 4, web3: true });
      const { plan } = await planFor(caller.principalId);
      const cycle = cycleAt(plan.cycle, deps.clock());
      const counters = USAGE_DIRECTIONS.map((d) => counterFor(caller.principalId, cycle, d));
      await Promise.all(counters.map((c) => c.ready));
      const [encryption, decryption] = counters.map(seenUsage);
      return {
        userId: caller.principalId,
        userType: caller.userType,
        planId: plan.id,
        cycleType: plan.cycle,
        periodStart: String(cycle.start),
        periodEnd: String(cycle.end),
        encryption: usageView(encryption!, plan.encryption),
        decryption: usageView(decryption!, plan.decryption),
      };
    },

    async assignPlan(principalId, planId) {
      checkPrincipalId(principalId);
      const plan = plansById.get(planId);
      if (!plan) throw new AppError('BAD_REQUEST', `Unknown plan "${planId.slice(0, 64)}"; configured: ${[...plansById.keys()].join(', ')}`);
      // Web2 principals must exist; wallet addresses (Web3) have no principal record.
      if (!principalId.startsWith('0x') && !(await deps.state.get('principal', principalId))) throw new AppError('NOT_FOUND', 'Principal not found');
      const body: PlanBody = { planId, assignedAt: deps.clock() };
      await deps.replicator.replicate({ kind: planKind.name, key: principalId, body });
      log.info({ planId }, 'plan assigned');
      return assignmentView(principalId, plan, body);
    },

    async planOf(principalId) {
      checkPrincipalId(principalId);
      const { plan, assignment } = await planFor(principalId);
      return assignmentView(principalId, plan, assignment);
    },

    start() {
      if (timer || stopped) return;
      // A round with nothing dirty only forgets idle counters.
      timer = setInterval(() => void flush(), options.flushIntervalMs);
      timer.unref();
    },

    flush,

    onRecordsApplied(records) {
      for (const r of records) {
        if (r.kind !== usageKind.name || r.origin === deps.selfAddress) continue;
        const key = parseUsageKey(r.key);
        const counter = key && counters.get(usageKeyPrefix(key.principalId, key.cycleType, key.cycleStart, key.direction));
        // A counter not held here is read from the replica when it is next needed.
        if (counter) counter.others = mergeCounterStates(counter.others, new Map([[key.coordinator, r.body as UsageCounts]]));
      }
    },

    stop() {
      stopped ??= (async () => {
        if (timer) clearInterval(timer);
        timer = undefined;
        await flush();
        const unconfirmed = [...counters.values()].filter((c) => !sameCounts(c.totals, c.confirmed)).length;
        if (unconfirmed > 0) log.warn({ counters: unconfirmed }, 'usage counters not acknowledged by a quorum at stop (stored locally; sync spreads them)');
      })();
      return stopped;
    },
  };
}
