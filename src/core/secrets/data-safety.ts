/**
 * What the cluster knows about the safety of its secrets (docs/operations.md, "Data safety"), as one
 * node sees it: each member's inventory (inventory.ts: shares held and expected, recovering or not),
 * and from them the secrets held by only `threshold` members (at risk: one more loss and they are
 * gone) and by fewer (lost). Every node asks every member for its inventory every
 * {@link SAFETY_INTERVAL_MS}; a member's last answer is kept while it is unreachable (its disk may
 * well be fine: being down is reported as such). `/healthz`, `/metrics`, `quorumkeep status` and
 * `member status` read the result.
 *
 * A coordinator also records an operator's acknowledgement of a loss (`lostSecret`, lost-records.ts),
 * with the members' signed statements that they hold no share as its evidence.
 */
import { AppError } from '../../errors/index.ts';
import type { Logger } from '../../log/index.ts';
import { runPeriodic, type Periodic, type Startable } from '../lifecycle.ts';
import type { MemberRpc, MembershipView, Replicator, StateReader } from '../replication/ports.ts';
import { membersOf } from '../replication/ports.ts';
import type { InventoryReport } from './inventory.ts';
import { lostSecretKey, missingShareAttestationSchema, type LostSecretBody, type MissingShareAttestation } from './lost-records.ts';
import type { MemberStatusBody } from './member-records.ts';
import { attestMissingRequest, ATTEST_MAX_ITEMS, shareInventoryRequest, type SecretItem } from './shard-messages.ts';
import { z } from 'zod';

/** How often every member's inventory is asked for, ms. */
export const SAFETY_INTERVAL_MS = 5_000;
/** How soon a member whose shares are unknown is asked again, ms. */
const UNKNOWN_RETRY_MS = 1_000;
/** Most secrets `/healthz` names per list (the counts are whole). */
export const SAFETY_MAX_NAMED = 100;
/** Deadline of one member's answer, ms. */
const CALL_TIMEOUT_MS = 5_000;

/** One member slot's safety facts. */
export interface MemberSafety {
  slot: number;
  nodeId: string;
  reachable: boolean;
  /** Its own readiness (`GET /readyz`) when it last answered, or null when its shares are unknown. */
  ready: boolean | null;
  /** Its `memberStatus`: `recovering` while it rebuilds shares. */
  status: 'active' | 'recovering';
  /** When that status was set, Unix ms, or null when never set. */
  since: number | null;
  /** Its inventory, or null when not known now: never answered, not taken yet, or unreachable since. */
  shares: { at: number; expected: number; held: number; missing: number; pending: number; acknowledgedLost: number; complete: boolean } | null;
}

/** The cluster's data safety as this node sees it. */
export interface DataSafety {
  members: MemberSafety[];
  /** Secrets held by exactly `threshold` members. */
  secretsAtRisk: number;
  /** Secrets held by fewer than `threshold` members, loss not acknowledged. */
  secretsLost: number;
  /** Secrets whose loss was acknowledged. */
  secretsLostAcknowledged: number;
  /** The first {@link SAFETY_MAX_NAMED} of each. */
  atRisk: SecretItem[];
  lost: SecretItem[];
  /** False when a member never answered or listed only part of what it lacks: the counts are then a floor. */
  exact: boolean;
  /** When the last round ended, Unix ms, or null before the first. */
  checkedAt: number | null;
}

/** What an acknowledgement did. */
export interface LossAcknowledgement {
  /** Recorded lost now (or already). */
  acknowledged: SecretItem[];
  /** Not recorded: fewer than `size − threshold + 1` members stated that they hold no share. */
  notLost: SecretItem[];
}

/** Dependencies of {@link createDataSafety}. */
export interface DataSafetyDeps {
  membership: MembershipView;
  members: MemberRpc;
  state: StateReader;
  replicator: Replicator;
  clock: () => number;
  logger: Logger;
  signal: AbortSignal;
  /** Called after every round (the node sets its gauges). */
  onRound?(view: DataSafety): void;
}

/** The monitor. */
export interface DataSafetyMonitor extends Startable {
  view(): DataSafety;
  /** Ask every member now and answer the new view. */
  refresh(): Promise<DataSafety>;
  /**
   * Record the loss of `items` (default: every lost secret not yet acknowledged), each only with
   * `size − threshold + 1` members' signed statements that they hold no share of it.
   */
  acknowledge(items?: SecretItem[]): Promise<LossAcknowledgement>;
  start(): void;
  stop(): Promise<void>;
}

const reportSchema = z.object({
  slot: z.number().int(),
  at: z.number(),
  expected: z.number().int().nonnegative(),
  held: z.number().int().nonnegative(),
  missing: z.array(z.object({ chainId: z.number().int(), secretId: z.number().int().positive() })),
  missingTotal: z.number().int().nonnegative(),
  pending: z.number().int().nonnegative(),
  acknowledgedLost: z.number().int().nonnegative(),
  complete: z.boolean(),
  ready: z.boolean(),
});

const attestationsSchema = z.object({
  attestations: z.array(missingShareAttestationSchema.extend({ chainId: z.number().int(), secretId: z.number().int().positive() })),
});

const keyOf = (s: SecretItem) => lostSecretKey(s.chainId, s.secretId);
const itemOf = (key: string): SecretItem => {
  const [chainId, secretId] = key.split(':').map(Number) as [number, number];
  return { chainId, secretId };
};

/** Create the data-safety monitor of a node. */
export function createDataSafety(deps: DataSafetyDeps): DataSafetyMonitor {
  const { membership } = deps;
  const { descriptor } = membership;
  const members = membersOf(descriptor);
  const log = deps.logger.child({ module: 'data-safety' });
  /** Each member's last report, kept while it is unreachable (its disk may be fine) for the counts of holders. */
  const reports = new Map<number, InventoryReport & { ready: boolean; receivedAt: number }>();
  /**
   * Members whose shares are not known now: unreachable since their last report, or answering that
   * they have not taken their inventory yet (a node just restarted — perhaps on an empty disk). Their
   * last report still counts for the holders of a secret; their `shares` show as null.
   */
  const unknown = new Set<number>(members.map((m) => m.slot));
  let lastRoundEnd = 0;
  let current: DataSafety = { members: [], secretsAtRisk: 0, secretsLost: 0, secretsLostAcknowledged: 0, atRisk: [], lost: [], exact: false, checkedAt: null };
  let loop: Periodic | undefined;
  let round: Promise<DataSafety> | undefined;

  /**
   * A member unreachable now, or reachable again since its last answer (it reconnected: perhaps it
   * restarted on an empty disk): its shares are unknown until it answers again.
   */
  function isStale(slot: number): boolean {
    const since = membership.reachableSince?.(slot);
    const report = reports.get(slot);
    return !membership.isReachable(slot) || (since !== undefined && report !== undefined && since > report.receivedAt);
  }

  function markStale(): void {
    for (const m of members) if (isStale(m.slot)) unknown.add(m.slot);
  }

  /** From the members' last reports: the secrets held by exactly `threshold` members, and those held by fewer whose loss nobody acknowledged. */
  async function classify(): Promise<{ atRisk: string[]; lost: string[] }> {
    const missingBy = new Map<string, number>();
    for (const report of reports.values()) for (const s of report.missing) missingBy.set(keyOf(s), (missingBy.get(keyOf(s)) ?? 0) + 1);
    const atRisk: string[] = [];
    const lost: string[] = [];
    for (const [key, missing] of missingBy) {
      const holders = descriptor.size - missing;
      if (holders === descriptor.threshold) atRisk.push(key);
      else if (holders < descriptor.threshold && !(await deps.state.get('lostSecret', key))) lost.push(key);
    }
    return { atRisk, lost };
  }

  async function ask(slot: number): Promise<void> {
    try {
      const answer = reportSchema.parse(await deps.members.call(slot, 'shard', shareInventoryRequest(), { signal: AbortSignal.timeout(CALL_TIMEOUT_MS) }));
      if (answer.slot === slot) {
        reports.set(slot, { ...answer, receivedAt: Date.now() });
        unknown.delete(slot);
      }
    } catch (err) {
      // Not taken yet (a node just started: what its old report said may be gone with its disk): its
      // shares are unknown until it answers; its last report still counts as holders. A call that
      // merely failed (a busy member, a timeout) changes nothing: a restart shows in `reachableSince`.
      if (err instanceof AppError && err.code === 'NOT_READY') unknown.add(slot);
      else log.debug({ slot, err: (err as Error).message }, 'no inventory from member');
    }
  }

  async function compute(): Promise<DataSafety> {
    markStale();
    await Promise.all(members.filter((m) => membership.isReachable(m.slot)).map((m) => ask(m.slot)));
    let exact = true;
    const memberFacts: MemberSafety[] = [];
    for (const m of members) {
      const report = reports.get(m.slot);
      if (!report || report.missingTotal > report.missing.length) exact = false;
      const status = (await deps.state.get('memberStatus', String(m.slot)))?.body as MemberStatusBody | undefined;
      memberFacts.push({
        slot: m.slot,
        nodeId: m.id,
        reachable: membership.isReachable(m.slot),
        ready: report && !unknown.has(m.slot) ? report.ready : null,
        status: status?.status ?? 'active',
        since: status?.since ?? null,
        shares: report && !unknown.has(m.slot) ? { at: report.at, expected: report.expected, held: report.held, missing: report.missingTotal, pending: report.pending, acknowledgedLost: report.acknowledgedLost, complete: report.complete } : null,
      });
    }
    const { atRisk, lost } = await classify();
    let acknowledged = 0;
    for await (const _ of deps.state.list('lostSecret')) acknowledged++;
    const byId = (a: string, b: string) => a.localeCompare(b, 'en', { numeric: true });
    return {
      members: memberFacts,
      secretsAtRisk: atRisk.length,
      secretsLost: lost.length,
      secretsLostAcknowledged: acknowledged,
      atRisk: atRisk.sort(byId).slice(0, SAFETY_MAX_NAMED).map(itemOf),
      lost: lost.sort(byId).slice(0, SAFETY_MAX_NAMED).map(itemOf),
      exact,
      checkedAt: deps.clock(),
    };
  }

  function refresh(): Promise<DataSafety> {
    round ??= compute()
      .then(live)
      .then((view) => {
        if (view.secretsLost > current.secretsLost || view.secretsAtRisk > current.secretsAtRisk) log.warn({ atRisk: view.secretsAtRisk, lost: view.secretsLost }, 'secrets at risk or lost');
        current = view;
        lastRoundEnd = performance.now();
        deps.onRound?.(view);
        return view;
      })
      .finally(() => (round = undefined));
    return round;
  }

  /** Every lost secret not acknowledged yet, in full (not only the named ones). */
  async function lostNow(): Promise<SecretItem[]> {
    await refresh();
    return (await classify()).lost.map(itemOf);
  }

  async function acknowledge(items?: SecretItem[]): Promise<LossAcknowledgement> {
    const wanted = items ?? (await lostNow());
    const needed = descriptor.size - descriptor.threshold + 1;
    const result: LossAcknowledgement = { acknowledged: [], notLost: [] };
    for (let i = 0; i < wanted.length; i += ATTEST_MAX_ITEMS) {
      const batch = wanted.slice(i, i + ATTEST_MAX_ITEMS);
      const statements = new Map<string, MissingShareAttestation[]>();
      await Promise.all(
        members
          .filter((m) => membership.isReachable(m.slot))
          .map(async (m) => {
            try {
              const answer = attestationsSchema.parse(await deps.members.call(m.slot, 'shard', attestMissingRequest(batch), { signal: AbortSignal.timeout(CALL_TIMEOUT_MS) }));
              for (const a of answer.attestations) {
                if (a.slot !== m.slot) continue;
                const list = statements.get(keyOf(a)) ?? [];
                list.push({ slot: a.slot, at: a.at, signature: a.signature });
                statements.set(keyOf(a), list);
              }
            } catch (err) {
              log.warn({ slot: m.slot, err: (err as Error).message }, 'member gave no statements of missing shares');
            }
          }),
      );
      for (const item of batch) {
        const attestations = statements.get(keyOf(item)) ?? [];
        if (await deps.state.get('lostSecret', keyOf(item))) {
          result.acknowledged.push(item);
          continue;
        }
        if (attestations.length < needed) {
          result.notLost.push(item);
          continue;
        }
        const acknowledgedAt = deps.clock();
        await deps.replicator.replicate({ kind: 'lostSecret', key: keyOf(item), body: { chainId: item.chainId, secretId: item.secretId, acknowledgedAt, attestations } satisfies LostSecretBody });
        result.acknowledged.push(item);
      }
    }
    log.warn({ acknowledged: result.acknowledged.length, notLost: result.notLost.length }, 'loss of secrets acknowledged by an operator');
    await refresh();
    return result;
  }

  /**
   * The last round's view with what changed since applied: a member unreachable now, or reachable
   * again since its last answer, shows its shares unknown at once — not only after the next round
   * (which may be waiting on the call to a member that just went away).
   */
  function live(view: DataSafety): DataSafety {
    return {
      ...view,
      members: view.members.map((m) => {
        const reachable = membership.isReachable(m.slot);
        return isStale(m.slot) ? { ...m, reachable, ready: null, shares: null } : { ...m, reachable };
      }),
    };
  }

  return {
    view: () => live(current),
    refresh,
    acknowledge,
    start() {
      loop ??= runPeriodic(
        async () => {
          // Every SAFETY_INTERVAL_MS; every second while a reachable member is not ready or its shares are unknown — a
          // member seen unreachable is unknown from then on, so one that comes back (perhaps on an
          // empty disk) is asked at once, not at the next round.
          markStale();
          const waiting = members.some((m) => membership.isReachable(m.slot) && (unknown.has(m.slot) || reports.get(m.slot)?.ready === false));
          if (waiting || performance.now() - lastRoundEnd >= SAFETY_INTERVAL_MS) await refresh();
        },
        { intervalMs: UNKNOWN_RETRY_MS, signal: deps.signal, logger: log, name: 'data safety', immediate: true },
      );
    },
    async stop() {
      await loop?.stop();
      await round?.catch(() => undefined);
    },
  };
}
