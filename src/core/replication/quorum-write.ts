/**
 * The quorum write path (docs/architecture.md, "Quorum writes"): check this node's own records
 * against the rules peers apply, sign and persist them locally (through the group commit), send them
 * to every member over `apply` with a deadline, and succeed at ≥ threshold acks; then gossip where it
 * helps. Also the resends of records already written.
 */
import { AppError, QuorumError, type MemberFailure } from '../../errors/index.ts';
import type { Logger } from '../../log/index.ts';
import type { NodeMetrics } from '../../metrics/index.ts';
import type { CommitQueue } from './group-commit.ts';
import type { KindRegistry } from './kinds.ts';
import { membersOf, PeerError, type BatchWriteReport, type ClusterNodeEntry, type MembershipView, type PeerTransport, type ReplicateOptions, type Replicator, type WriteIntent } from './ports.ts';
import type { HlcClock, ReplicatedRecord } from './record.ts';
import type { Sibling } from './kinds.ts';
import { reasonText, type RecordRefusal } from './refusals.ts';
import { bodyProblem, keyProblem, mayWrite, reasonLabel, UNNUMBERED, type EvidenceContextOf, type RecordSigner } from './validate.ts';

/**
 * This node's own write would be refused by its peers: nothing was written. A transient refusal (it
 * names a record this node does not hold yet) is 503 NOT_READY; any other is 403 with the code.
 */
export class RecordRefusedError extends AppError {
  readonly refusal: RecordRefusal;
  constructor(kind: string, refusal: RecordRefusal) {
    super(refusal.transient ? 'NOT_READY' : 'FORBIDDEN', `invalid ${kind} record: ${reasonText(refusal)}`, undefined, { reason: 'record_refused' });
    this.name = 'RecordRefusedError';
    this.refusal = refusal;
  }
}

/** How a member that had not acked once the quorum grace ran out is reported (its apply goes on). */
export const LATE_ACK = 'no ack within the quorum grace period';

/** Options of {@link createQuorumWriter}. */
export interface QuorumWriterOptions {
  /** Deadline for each member's `apply` ack, ms. */
  applyTimeoutMs: number;
  /** After quorum is reached, how long to keep waiting for the remaining members' acks, ms. */
  quorumGraceMs: number;
}

/** Dependencies of {@link createQuorumWriter}. */
export interface QuorumWriterDeps {
  membership: MembershipView;
  kinds: KindRegistry;
  /** Who may sign records, by node address: this node's own entry decides what it may write. */
  signers: ReadonlyMap<string, RecordSigner>;
  /** Late-bound: the cluster module is created after the engine. */
  transport: () => PeerTransport;
  /** This node's clock (`peek`: own records not signed yet are checked with the newest HLC). */
  hlc: Pick<HlcClock, 'peek'>;
  clock: () => number;
  /** The evidence contexts over this node's replica. */
  contextOf: EvidenceContextOf;
  /** Where own records are signed, numbered and persisted. */
  queue: Pick<CommitQueue, 'enqueueOwn'>;
  metrics: Pick<NodeMetrics, 'replicationDuration' | 'replicationFailures'>;
  logger: Logger;
}

/** Create the quorum writer: the {@link Replicator} half of the engine. */
export function createQuorumWriter(options: QuorumWriterOptions, deps: QuorumWriterDeps): Replicator {
  const { membership, kinds, logger: log } = deps;
  const { descriptor, self } = membership;
  const threshold = descriptor.threshold;
  const selfIsMember = self.slot !== null;
  const otherMembers = membersOf(descriptor).filter((m) => m.id !== self.id);

  async function replicateAll(intents: WriteIntent[], opts: ReplicateOptions = {}): Promise<BatchWriteReport> {
    const startedAt = performance.now();
    const requireQuorum = opts.requireQuorum ?? true;
    if (intents.length === 0) throw new Error('nothing to replicate');
    const label = intents.map((i) => i.kind).join('+');
    const reachable = membership.reachableCount();
    if (requireQuorum && reachable < threshold) {
      deps.metrics.replicationDuration.observe({ kind: label, outcome: 'quorum_failed' }, (performance.now() - startedAt) / 1000);
      const failed = otherMembers.filter((m) => !membership.isReachable(m.slot)).map((m) => ({ nodeAddress: m.nodeAddress, slot: m.slot, error: 'unreachable' }));
      throw new QuorumError(`Cluster membership failure: ${reachable} of ${descriptor.size} members reachable, ${threshold} needed`, [], failed);
    }
    // Our own records pass the rules peers apply: a record they would refuse must never get a seq
    // here, or it would leave a gap in every peer's version vector for this origin.
    const selfNode = deps.signers.get(self.nodeAddress)!;
    const siblings: Sibling[] = [];
    for (const intent of intents) {
      const kind = kinds.get(intent.kind);
      if (!kind) throw new Error(`unknown record kind ${intent.kind}`);
      if (!mayWrite(kind, selfNode)) throw new RecordRefusedError(intent.kind, { code: 'writer_not_allowed' });
      const hlc = [Math.max(deps.clock(), deps.hlc.peek()[0]), UNNUMBERED] as const;
      const pseudo: ReplicatedRecord = { kind: intent.kind, key: intent.key, origin: self.nodeAddress, seq: UNNUMBERED, hlc, body: intent.body, sig: '' };
      const problem = keyProblem(kind, intent.key) ?? (await bodyProblem(kind, intent.body, deps.contextOf(kind, pseudo, selfNode, [...siblings])));
      if (problem) throw new RecordRefusedError(intent.kind, problem);
      siblings.push({ kind: intent.kind, key: intent.key, body: intent.body, hlc });
    }

    // One local batch and one `apply` message per member: each member commits them together.
    const records = await deps.queue.enqueueOwn(intents);
    const { acked, failed, late } = await sendToMembers(records, otherMembers, selfIsMember, opts.signal);

    // Gossip reaches the members that missed the direct send and every gateway; when every member
    // acked directly, or the only ones that did not are known to be down (gossip cannot reach them
    // either; catch-up will), and there are no gateways, it would only repeat what everyone stored.
    // A member whose ack is merely late (its apply still on its way, past the quorum grace) gets it
    // by gossip only if that apply then fails: gossiping every write a busy member is slow to ack
    // added a gossip message's checks to every member just when they had the least to spare.
    const gossip = () => {
      for (const record of records) deps.transport().publish(record).catch((err: unknown) => log.debug({ err }, 'gossip publish failed'));
    };
    const missed = (fs: MemberFailure[]) => fs.some((f) => f.error !== 'unreachable' && f.error !== LATE_ACK);
    if (missed(failed) || descriptor.nodes.length > descriptor.size) gossip();
    else if (late) void late.then((fs) => missed(fs) && gossip());
    const ok = acked.length >= threshold;
    deps.metrics.replicationDuration.observe({ kind: label, outcome: ok ? 'ok' : 'quorum_failed' }, (performance.now() - startedAt) / 1000);
    if (!ok) {
      log.warn({ kind: label, acked: acked.length, failed: failed.length }, 'quorum write failed');
      if (requireQuorum) throw new QuorumError(`Cluster membership failure: ${acked.length} of ${descriptor.size} members acknowledged, ${threshold} needed`, acked, failed);
    }
    return { records, acked, failed };
  }

  /**
   * Apply `records` (one message) on `targets` with the deadline; collect who acked and who failed,
   * and why. Members still silent once the quorum grace ran out are reported as {@link LATE_ACK};
   * `late` then says how their applies ended (each still bounded by the apply deadline).
   */
  async function sendToMembers(
    records: ReplicatedRecord[],
    targets: Array<ClusterNodeEntry & { slot: number }>,
    includeSelf: boolean,
    signal?: AbortSignal,
  ): Promise<{ acked: string[]; failed: MemberFailure[]; late?: Promise<MemberFailure[]> }> {
    const acked: string[] = includeSelf ? [self.nodeAddress] : [];
    const failed: MemberFailure[] = [];
    const transport = deps.transport();
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(new Error('timeout')), options.applyTimeoutMs);
    const onAbort = () => controller.abort(signal?.reason);
    signal?.addEventListener('abort', onAbort, { once: true });
    // Each member's apply, settled: undefined when it acked, its failure otherwise.
    const outcomes = new Map<string, Promise<MemberFailure | undefined>>();
    let stopped = false;
    try {
      await new Promise<void>((resolve) => {
        let settled = 0;
        let graceTimer: NodeJS.Timeout | undefined;
        const done = () => {
          if (graceTimer) clearTimeout(graceTimer);
          stopped = true;
          resolve();
        };
        if (targets.length === 0) return done();
        for (const m of targets) {
          const send = membership.isReachable(m.slot)
            ? transport.sendApply(m.slot, records, { signal: controller.signal })
            : Promise.reject(new PeerError('unreachable'));
          const outcome = send.then(
            () => {
              if (!stopped) acked.push(m.nodeAddress);
              return undefined;
            },
            (err: unknown) => {
              const failure = { nodeAddress: m.nodeAddress, slot: m.slot, error: failureReason(err, controller.signal) };
              if (!stopped) failed.push(failure);
              return failure;
            },
          );
          outcomes.set(m.nodeAddress, outcome);
          void outcome.finally(() => {
            settled++;
            if (settled === targets.length) done();
            else if (acked.length >= threshold && !graceTimer) graceTimer = setTimeout(done, options.quorumGraceMs);
          });
        }
      });
    } finally {
      signal?.removeEventListener('abort', onAbort);
    }
    // Members whose ack had not arrived when we stopped waiting.
    const answered = new Set([...acked, ...failed.map((f) => f.nodeAddress)]);
    const stragglers = targets.filter((m) => !answered.has(m.nodeAddress));
    for (const m of stragglers) failed.push({ nodeAddress: m.nodeAddress, slot: m.slot, error: LATE_ACK });
    for (const f of failed) deps.metrics.replicationFailures.inc({ reason: reasonLabel(f.error) });
    if (stragglers.length === 0) {
      clearTimeout(timer);
      return { acked, failed };
    }
    // The stragglers' applies go on, until the apply deadline at most.
    const late = Promise.all(stragglers.map((m) => outcomes.get(m.nodeAddress)!)).then((fs) => fs.filter((f): f is MemberFailure => f !== undefined));
    void late.finally(() => clearTimeout(timer));
    return { acked, failed, late };
  }

  return {
    async replicate(intent, opts = {}) {
      const { records, acked, failed } = await replicateAll([intent], opts);
      return { record: records[0]!, acked, failed };
    },
    replicateAll,
    async resend(record, slots) {
      const targets = otherMembers.filter((m) => slots.includes(m.slot));
      const { acked, failed } = await sendToMembers([record], targets, false);
      return { record, acked, failed };
    },
    async resendAll(records, slots) {
      const targets = otherMembers.filter((m) => slots.includes(m.slot));
      const { acked, failed } = await sendToMembers(records, targets, false);
      return { records, acked, failed };
    },
  };
}

/** A member's failure as reported in `failedNodes`: the transport's {@link PeerError} kind (and detail), or `error: …`. */
export function failureReason(err: unknown, signal: AbortSignal): string {
  if (signal.aborted) return 'timeout';
  if (err instanceof PeerError) return err.kind === 'unreachable' || err.kind === 'timeout' ? err.kind : err.message;
  return `error: ${(err instanceof Error ? err.message : String(err)).slice(0, 200)}`;
}
