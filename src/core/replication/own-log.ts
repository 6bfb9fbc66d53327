/**
 * No write before a node knows its own log (docs/architecture.md, "Failure model"; docs/operations.md,
 * "Lose a disk, keep the keys").
 *
 * A node numbers its own records (origin = this node, seq 1, 2, …) after the highest seq of its own it
 * holds. A node whose data dir is empty, wiped, or an older copy (a backup, a disk image) holds fewer
 * than its peers do, and would hand out a seq again for a different record: an equivocation every
 * member flags. Its data dir cannot tell which it is, so at every start the node:
 *
 * 1. holds its own writes (the engine's `holdOwnWrites`) before its cluster starts — records arriving
 *    by sync can trigger writes (a member acknowledging a key); a write meanwhile waits for the
 *    release up to `applyTimeoutMs`, then answers 503 NOT_READY (retryable), nothing numbered;
 * 2. once the cluster runs, in the background (`start()` is not held up: the first node of a cluster
 *    must not wait for the others to start), completes a sync round with enough members that every
 *    record of its own a quorum acknowledged is among them — an acknowledged record is held by at
 *    least `threshold − 1` other members, so any `size − threshold + 1` of the other members (fewer
 *    when the cluster has fewer others) include one of them — and tries each other member reachable
 *    meanwhile once. A sync round brings every record the peer holds that this node lacks, its own
 *    included; the engine's own seq follows them (stored or held back: apply-batch.ts);
 * 3. runs the `beforeRelease` steps (slot 0 raises its id counter past the ids in its replica; a
 *    restored node marks its restore caught up), then releases its writes.
 *
 * Why sync rounds rather than only asking peers for their version vectors: a vector's entry is the
 * contiguous seq, not the highest stored, and the records themselves are needed anyway (the node's
 * replica and its own log stay continuous). For an up-to-date node a round is one request and an
 * empty answer, and it joins the round its connection starts.
 *
 * A record of its own that only members unreachable during this hold stored (it failed its quorum)
 * may still have its seq reused; that is the equivocation members resolve alike (equivocation.ts).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '../../log/index.ts';
import type { Startable } from '../lifecycle.ts';
import { membersOf, type ClusterDescriptor, type ClusterNodeEntry, type MembershipView, type VersionVector } from './ports.ts';

/** Options of {@link createOwnLogCatchUp}. */
export interface OwnLogOptions {
  /** Between two attempts to reach enough members, ms. @default 250 */
  retryIntervalMs?: number;
  /** How often a catch-up that waits for members says so, ms. @default 10000 */
  progressLogIntervalMs?: number;
}

/** What the catch-up needs of the cluster once it has started. */
export interface OwnLogCluster {
  readonly membership: Pick<MembershipView, 'isReachable'>;
  /** One catch-up round with a node (joins the round in flight, if any). */
  syncWith(nodeId: string): Promise<unknown>;
}

/** Dependencies of {@link createOwnLogCatchUp}. */
export interface OwnLogDeps {
  engine: { holdOwnWrites(until: Promise<void>): void; versionVector(): VersionVector };
  descriptor: ClusterDescriptor;
  self: ClusterNodeEntry;
  /** Late-bound: the cluster is created after the hold begins, and started before {@link OwnLogCatchUp.start}. */
  cluster: () => OwnLogCluster;
  /**
   * Steps run once the own log is known, before the writes are released, in order. One that throws
   * is logged and the whole step is tried again after the retry interval (with another sync round).
   */
  beforeRelease?: ReadonlyArray<() => Promise<void>>;
  clock: () => number;
  logger: Logger;
  /** The node's lifetime: when it aborts before the release, own writes fail from then on. */
  signal: AbortSignal;
}

/** The start-time hold of own writes. */
export interface OwnLogCatchUp extends Startable {
  /** Other members this node must have completed a sync round with before it writes. */
  readonly membersNeeded: number;
  /** Resolves once own writes are released; rejects when the node stopped first. */
  readonly released: Promise<void>;
  /** Catch up in the background; call once the cluster has started. */
  start(): void;
  /** Wait for the catch-up in flight to end (after the lifetime signal aborted); idempotent. */
  stop(): Promise<void>;
}

/**
 * Other members a node must have completed a sync round with to know every record of its own that a
 * quorum acknowledged: `size − threshold + 1`, or every other member when there are fewer.
 */
export function membersToLearnOwnLog(descriptor: ClusterDescriptor, self: Pick<ClusterNodeEntry, 'id'>): number {
  const others = membersOf(descriptor).filter((m) => m.id !== self.id).length;
  return Math.min(others, descriptor.size - descriptor.threshold + 1);
}

/**
 * Whether the own log is known: at least `needed` rounds completed, and every other member reachable
 * now tried once (a record that failed its quorum may be on one of them).
 */
export function ownLogKnown(state: { completed: ReadonlySet<string>; tried: ReadonlySet<string>; reachable: readonly string[]; needed: number }): boolean {
  return state.completed.size >= state.needed && state.reachable.every((id) => state.tried.has(id));
}

/** Hold own writes now (call before the cluster starts) and return the catch-up that releases them. */
export function createOwnLogCatchUp(options: OwnLogOptions, deps: OwnLogDeps): OwnLogCatchUp {
  const retryIntervalMs = options.retryIntervalMs ?? 250;
  const progressLogIntervalMs = options.progressLogIntervalMs ?? 10_000;
  const { descriptor, self, signal } = deps;
  const log = deps.logger.child({ module: 'own-log' });
  const others = membersOf(descriptor).filter((m) => m.id !== self.id);
  const needed = membersToLearnOwnLog(descriptor, self);

  let release!: () => void;
  let fail!: (err: Error) => void;
  let settled = false;
  const released = new Promise<void>((resolve, reject) => {
    release = () => {
      settled = true;
      resolve();
    };
    fail = (err) => {
      settled = true;
      reject(err);
    };
  });
  // Whoever awaits it gets the rejection; none is left unhandled.
  released.catch(() => undefined);
  deps.engine.holdOwnWrites(released);
  log.debug({ membersNeeded: needed }, 'own writes held until this node has learnt its own log from its peers');

  async function run(): Promise<void> {
    const stopped = new Promise<undefined>((resolve) => {
      if (signal.aborted) resolve(undefined);
      else signal.addEventListener('abort', () => resolve(undefined), { once: true });
    });
    /** `p`, or undefined once the node's lifetime ends (a round in flight is not waited for). */
    const unlessStopped = <T>(p: Promise<T>): Promise<T | undefined> => Promise.race([p, stopped]);
    const startedAt = deps.clock();
    const completed = new Set<string>();
    const tried = new Set<string>();
    let lastProgressLog = startedAt;
    const cluster = deps.cluster();
    const reachable = () => others.filter((m) => cluster.membership.isReachable(m.slot)).map((m) => m.id);
    while (!signal.aborted) {
      const targets = reachable().filter((id) => !completed.has(id));
      const rounds = await unlessStopped(Promise.allSettled(targets.map((id) => cluster.syncWith(id))));
      if (!rounds) break;
      rounds.forEach((r, i) => {
        tried.add(targets[i]!);
        if (r.status === 'fulfilled') completed.add(targets[i]!);
      });
      if (ownLogKnown({ completed, tried, reachable: reachable(), needed })) {
        try {
          for (const step of deps.beforeRelease ?? []) await step();
          const ownSeq = deps.engine.versionVector()[self.nodeAddress] ?? 0;
          log.info({ caughtUpWith: [...completed], membersNeeded: needed, ownSeq, ms: deps.clock() - startedAt }, 'own log known: own writes released');
          release();
          return;
        } catch (err) {
          if (signal.aborted) break;
          log.warn({ err: (err as Error).message }, 'own log known, but a step before the release failed: trying again');
        }
      } else if (deps.clock() - lastProgressLog >= progressLogIntervalMs) {
        lastProgressLog = deps.clock();
        log.warn({ caughtUpWith: [...completed], membersNeeded: needed }, 'own writes held: the own-log catch-up is waiting for members to connect');
      }
      await sleep(retryIntervalMs, undefined, { signal }).catch(() => undefined);
    }
    fail(new Error('the node stopped before it had learnt its own log'));
  }

  let running: Promise<void> | undefined;
  return {
    membersNeeded: needed,
    released,
    start() {
      running ??= run().catch((err: unknown) => {
        log.error({ err: (err as Error).message }, 'own log catch-up failed: own writes refused until the next start');
        fail(err as Error);
      });
    },
    async stop() {
      await running;
      if (!settled) fail(new Error('the node stopped before it had learnt its own log'));
    },
  };
}
