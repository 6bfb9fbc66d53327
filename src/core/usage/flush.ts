/**
 * Flushing this coordinator's usage counters (docs/architecture.md, "Usage and plan limits"): each
 * dirty counter is written as this coordinator's own `usage` record carrying its absolute counts
 * (a G-counter, never a delta), one record per counter per round however many requests it counted.
 * A flush counts as acknowledged only with a quorum of acks and every reachable other coordinator
 * among them (so each of them already holds it); what a quorum has acknowledged is what bounds the
 * other coordinators' overshoot.
 */
import type { Logger } from '../../log/index.ts';
import type { ClusterNodeEntry, Replicator } from '../replication/ports.ts';
import { isDirty, type OwnCounter, type UsageCounters } from './counters.ts';
import { countsCover, usageKind } from './records.ts';

/** How a flush round went: every counter acknowledged by a quorum, some only by fewer, or some writes failed. */
export type FlushOutcome = 'ok' | 'below_quorum' | 'failed';

/** Flush rounds that may be in flight at once. */
const FLUSH_ROUNDS_IN_FLIGHT = 2;

/** What decides whether a flush's acks acknowledge it. */
export interface AckRule {
  /** Acks a flush needs (the cluster's threshold). */
  threshold: number;
  /** Members in the cluster, for the problem's text. */
  size: number;
  /** The other coordinators: each one reachable must be among the acks. */
  otherCoordinators: readonly ClusterNodeEntry[];
  /** Which members are reachable now; without it, only `threshold` acks are asked for. */
  membership?: { isReachable(slot: number): boolean };
}

/** Options of {@link createUsageFlusher}: the acknowledgement rule's data. */
export type UsageFlusherOptions = Omit<AckRule, 'membership'>;

/** Dependencies of {@link createUsageFlusher}. */
export interface UsageFlusherDeps {
  replicator: Pick<Replicator, 'replicate'>;
  counters: Pick<UsageCounters, 'held' | 'forgetIdle'>;
  membership?: AckRule['membership'];
  /** Wall clock, Unix ms: which counters' cycles have ended. */
  clock: () => number;
  /** Monotonic ms: which counters are idle. */
  now: () => number;
  /** The usage module's logger. */
  logger: Logger;
  /** `quorumkeep_usage_flush_duration_seconds`. */
  metrics?: { flushDuration: { observe(labels: { outcome: FlushOutcome }, seconds: number): void } };
}

/** The flushes of one coordinator. */
export interface UsageFlusher {
  /**
   * A flush round that starts after this call (a round in flight does not carry what came since);
   * never rejects. Up to two rounds overlap, so an admission waiting for one waits for one write,
   * not for the end of another first. Each round then forgets idle counters.
   */
  flush(): Promise<void>;
}

/**
 * Why a flush acknowledged by `acked` (node addresses) is not acknowledged yet, or undefined when it
 * is: fewer acks than the threshold, or a reachable other coordinator not among them (a slow ack:
 * it would judge without the flush meanwhile).
 */
export function ackProblem(acked: readonly string[], rule: AckRule): string | undefined {
  if (acked.length < rule.threshold) return `${acked.length} of ${rule.size} members acknowledged, ${rule.threshold} needed`;
  const ackedSet = new Set(acked);
  const lagging = rule.otherCoordinators.find((n) => n.slot !== null && rule.membership?.isReachable(n.slot) && !ackedSet.has(n.nodeAddress));
  return lagging ? `coordinator ${lagging.id} has not acknowledged` : undefined;
}

/** A round's outcome from its counters' outcomes: the worst of them. */
export function roundOutcome(outcomes: readonly FlushOutcome[]): FlushOutcome {
  return outcomes.includes('failed') ? 'failed' : outcomes.includes('below_quorum') ? 'below_quorum' : 'ok';
}

/** Create the flushes of one coordinator's counters. */
export function createUsageFlusher(options: UsageFlusherOptions, deps: UsageFlusherDeps): UsageFlusher {
  const log = deps.logger;
  const rule: AckRule = { ...options, membership: deps.membership };
  const rounds = new Set<Promise<void>>();
  let queued: Promise<void> | undefined;
  /** The last round's outcome: a lasting outage is logged once, not every round. */
  let lastOutcome: FlushOutcome = 'ok';

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
    const dirty = deps.counters.held().filter(isDirty);
    if (dirty.length > 0) {
      const startedAt = performance.now();
      // One record per counter, all in one event-loop turn: the engine commits them in one local
      // batch and the links carry them to each member in one message.
      const outcome = roundOutcome(await Promise.all(dirty.map((c) => flushCounter(c))));
      deps.metrics?.flushDuration.observe({ outcome }, (performance.now() - startedAt) / 1000);
      if (outcome !== lastOutcome) {
        if (outcome === 'ok') log.info('usage flushes acknowledged again');
        else log.warn({ counters: dirty.length, outcome }, 'usage flush did not reach a quorum for every counter');
      }
      lastOutcome = outcome;
    }
    deps.counters.forgetIdle(deps.clock(), deps.now());
  }

  async function flushCounter(c: OwnCounter): Promise<FlushOutcome> {
    const snapshot = { ...c.totals };
    c.sending = snapshot;
    try {
      // Written locally whatever the membership (requireQuorum false), so a restart keeps it and
      // sync spreads it; it only counts as acknowledged with a quorum of acks.
      const report = await deps.replicator.replicate({ kind: usageKind.name, key: c.key, body: snapshot }, { requireQuorum: false });
      // Below the threshold, or another coordinator reachable but not applied yet: not acknowledged
      // yet, the next round writes the counts again.
      const problem = ackProblem(report.acked, rule);
      if (problem !== undefined) {
        c.flushProblem = problem;
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

  return { flush };
}

