/**
 * Writing the versions of sequenced kinds (src/core/replication/versions.ts; docs/architecture.md,
 * "Versions"). Both sides:
 *
 * - slot 0's `propose` operation: a coordinator proposes the next version(s); slot 0 writes them —
 *   one batch, one quorum write, under its own origin — only when each follows the version slot 0
 *   holds of its key, and only after checking them as every member will. Otherwise it answers with
 *   the versions it holds (a conflict), and writes nothing. Proposals that write one key run one at a
 *   time, so no two versions ever follow one; proposals that only read a key run together, and one
 *   that writes it waits for them (src/core/keyed-lock.ts).
 * - the coordinator's {@link VersionWriter}: build the next version from the one this replica holds,
 *   vouch for it, propose it; when slot 0 holds a later one, take that one into the replica and build
 *   again from it.
 */
import { z } from 'zod';
import { AppError, QuorumError } from '../../errors/index.ts';
import { createKeyedLock } from '../keyed-lock.ts';
import type { Logger } from '../../log/index.ts';
import { inCanonicalKeyOrder, type Json } from './canonical-json.ts';
import type { CreatorService } from './creator.ts';
import type { KindRegistry } from './kinds.ts';
import { membersOf, type BatchWriteReport, type ClusterNodeEntry, type MembershipView, type Replicator, type StateReader } from './ports.ts';
import type { ReplicatedRecord } from './record.ts';
import { logRefSchema, nextVersion, proposalDigest, type LogRef, type Version, type VersionedBody } from './versions.ts';

/** Most versions one proposal writes together (a permit's consumption and the change it makes). */
const MAX_PROPOSALS = 4;
/**
 * How long a coordinator keeps building a version again on slot 0's newer one before it answers 503,
 * ms. Slot 0 writes one proposal of a key at a time and each round writes one, so racing coordinators
 * all get through, a round each in turn: the budget is far above what a burst of changes to one key needs.
 */
const CONFLICT_BUDGET_MS = 10_000;

const proposeSchema = z.strictObject({
  proposals: z
    .array(z.strictObject({ kind: z.string().min(1).max(64), key: z.string().min(1).max(512), body: z.record(z.string(), z.unknown()) }))
    .min(1)
    .max(MAX_PROPOSALS),
  /** Records the versions were built from (other keys): written only while each is still current. */
  reads: z.array(z.strictObject({ kind: z.string().min(1).max(64), key: z.string().min(1).max(512), at: logRefSchema.nullable() })).max(MAX_PROPOSALS).optional(),
  requireQuorum: z.boolean().optional(),
});

/** One proposed version: its kind and key, and the whole body with its `v`. */
export interface Proposal {
  kind: string;
  key: string;
  body: VersionedBody;
}

/** A record a version was built from: it must still be the current one of its key when slot 0 writes. */
export interface ProposalRead {
  kind: string;
  key: string;
  /** Its place in its origin's log; null when the key had no record. */
  at: LogRef | null;
}

/** A record of a sequenced kind, typed. */
export type Versioned<B extends VersionedBody> = ReplicatedRecord & { body: B };

/** What a coordinator proposes: the transition and the body without its `v`. */
export interface Proposed<B extends VersionedBody> {
  change: B['v']['change'];
  body: Omit<B, 'v'>;
  /** The coordinator vouches for the version (transitions a coordinator is trusted for). @default true */
  vouch?: boolean;
  /** Other records the version was built from (e.g. the principal whose session signed it). */
  reads?: ProposalRead[];
}

/** Slot 0 holds later versions than a proposal followed: nothing was written. */
export class VersionConflict extends AppError {
  /** Slot 0's current record of each proposal's key, then of each read's, in order (undefined: none). */
  readonly current: Array<ReplicatedRecord | undefined>;
  constructor(current: Array<ReplicatedRecord | undefined>) {
    super('CONFLICT', 'The record changed meanwhile; build on the current version');
    this.name = 'VersionConflict';
    this.current = current;
  }
}

/** The outcome of {@link VersionWriter.update}. */
export type VersionWrite<B extends VersionedBody> =
  | { written: true; record: Versioned<B>; acked: string[]; failed: BatchWriteReport['failed'] }
  | { written: false; current: Versioned<B> | undefined };

/**
 * What slot 0 checks of a proposal beyond the transition itself, for one (kind, change): slot 0's own
 * records (a create string's claim on its id), or who may propose it at all. Throws to refuse.
 * `from` is the proposing coordinator, absent when slot 0 proposes for itself.
 */
export type ProposalGuard = (proposal: Proposal, from: ClusterNodeEntry | undefined) => Promise<void> | void;

/** A coordinator's writes of sequenced kinds. */
export interface VersionWriter {
  /**
   * Register slot 0's guard of the proposals of (kind, change). A transition no guard names is
   * written on its evidence alone; one registered as `selfOnly` only when slot 0 proposes it itself.
   */
  guard(kind: string, change: string, guard: ProposalGuard | 'selfOnly'): void;
  /**
   * Write the next version of (kind, key): `next` builds it from the current version (undefined when
   * the key has none) — it throws to refuse, returns undefined to write nothing — and is called again
   * with slot 0's version when this replica was behind.
   */
  update<B extends VersionedBody>(
    kind: { name: string; readonly __body?: B },
    key: string,
    next: (current: Versioned<B> | undefined) => Proposed<B> | undefined | Promise<Proposed<B> | undefined>,
    options?: { requireQuorum?: boolean },
  ): Promise<VersionWrite<B>>;
  /**
   * Write several versions as one batch (e.g. a permit's consumption and its change), each following
   * the current version of its key. {@link VersionConflict} when slot 0 holds later ones (its
   * versions are then in this replica too).
   */
  proposeAll(proposals: Proposal[], options?: { requireQuorum?: boolean; reads?: ProposalRead[] }): Promise<BatchWriteReport>;
  /**
   * {@link proposeAll} what `build` makes, built again — given slot 0's current records of the
   * proposal's keys and reads — while slot 0 holds later versions (10 s at most, then 503 NOT_READY;
   * slot 0 writes one proposal of a key at a time, so racing coordinators all get through). `build`
   * returns `{ done }` to write nothing and answer that instead.
   */
  proposeUntilWritten<T>(
    build: (slot0Current: Array<ReplicatedRecord | undefined> | undefined) => Promise<{ proposals: Proposal[]; reads?: ProposalRead[] } | { done: T }>,
    options?: { requireQuorum?: boolean },
  ): Promise<{ written: BatchWriteReport } | { done: T }>;
  /** The body of the version that follows `current` with `proposed` (vouched for unless told otherwise). */
  versionAfter<B extends VersionedBody>(kind: string, key: string, current: Versioned<B> | undefined, proposed: Proposed<B>): B;
  /**
   * Make sure a version this replica holds is durable on a quorum (a replay found its change already
   * made): send it to every other member again and count. 503 below threshold.
   */
  ensureDurable(record: ReplicatedRecord): Promise<void>;
}

/** Dependencies of {@link createSequencer}. */
export interface SequencerDeps {
  creator: Pick<CreatorService, 'register' | 'call'>;
  kinds: KindRegistry;
  /** The sequenced kinds' names. */
  sequenced: ReadonlySet<string>;
  membership: MembershipView;
  state: StateReader;
  replicator: Pick<Replicator, 'replicateAll' | 'resendAll'>;
  /** Take records slot 0 sent into this replica (they are checked like any record). */
  ingest(records: unknown[]): Promise<unknown>;
  /** This node's signature over a 32-byte digest, 0x-hex: its vouch. */
  signDigest(digest: Uint8Array): string;
  logger: Logger;
}

/** Register slot 0's `propose` operation and return this node's {@link VersionWriter}. */
export function createSequencer(deps: SequencerDeps): VersionWriter {
  const { membership, state } = deps;
  const { descriptor, self } = membership;
  const log = deps.logger.child({ module: 'sequencer' });
  const locks = createKeyedLock();
  const guards = new Map<string, ProposalGuard>();

  /** Slot 0's current record of each proposal's key. */
  const currentOf = (proposals: ReadonlyArray<{ kind: string; key: string }>) => Promise.all(proposals.map((p) => state.get(p.kind, p.key)));

  // Slot 0: write proposed versions that follow the ones it holds.
  deps.creator.register('propose', async (params, from) => {
    const parsed = proposeSchema.safeParse(params);
    if (!parsed.success) throw new AppError('BAD_REQUEST', 'malformed proposal');
    const proposals = parsed.data.proposals;
    for (const p of proposals) if (!deps.sequenced.has(p.kind) || !deps.kinds.get(p.kind)) throw new AppError('BAD_REQUEST', `${p.kind} is not a sequenced kind`);
    if (new Set(proposals.map((p) => `${p.kind}!${p.key}`)).size !== proposals.length) throw new AppError('BAD_REQUEST', 'one version per key');
    // Slot 0's vouch is made here, for its own proposals only: a proposal from another node that
    // names slot 0 in its vouch is a forgery. So a vouch in slot 0's name on the versions it writes
    // is its own, taken on its record signature (versions.ts, vouchedBy).
    const inSlot0sName = proposals.find((p) => (p.body as { v?: { vouch?: { nodeAddress?: unknown } } }).v?.vouch?.nodeAddress === self.nodeAddress);
    if (from && inSlot0sName) throw new AppError('FORBIDDEN', `invalid ${inSlot0sName.kind} record: bad_vouch (a vouch in slot 0's name is slot 0's own)`, undefined, { reason: 'record_refused' });
    for (const p of proposals) {
      const change = (p.body as { v?: { change?: unknown } }).v?.change;
      await guards.get(`${p.kind}/${typeof change === 'string' ? change : ''}`)?.(p as unknown as Proposal, from);
    }
    const reads = parsed.data.reads ?? [];
    for (const r of reads) if (!deps.sequenced.has(r.kind)) throw new AppError('BAD_REQUEST', `${r.kind} is not a sequenced kind`);
    // The keys written are held alone; the keys only read are shared: proposals that read one
    // record (every create of one owner reads its principal) are written together, and one that
    // writes it waits for them, then they for it.
    return locks.run(
      { exclusive: proposals.map((p) => `${p.kind}!${p.key}`), shared: reads.map((r) => `${r.kind}!${r.key}`) },
      async () => {
        const current = await currentOf(proposals);
        const readNow = await currentOf(reads);
        const follows = proposals.every((p, i) => {
          const v = (p.body as { v?: Partial<Version> }).v;
          const next = nextVersion(current[i]);
          return v?.n === next.n && (next.prev ? v.prev?.origin === next.prev.origin && v.prev.seq === next.prev.seq : v.prev === null);
        });
        const stillCurrent = reads.every((r, i) => {
          const cur = readNow[i];
          return cur ? r.at?.origin === cur.origin && r.at.seq === cur.seq : r.at === null;
        });
        if (!follows || !stillCurrent) return { conflict: true, current: [...current, ...readNow].map((c) => c ?? null) };
        // Checked as every member will check them (the engine refuses its own invalid writes).
        const report = await deps.replicator.replicateAll(
          proposals.map((p) => ({ kind: p.kind, key: p.key, body: p.body as Json })),
          { requireQuorum: parsed.data.requireQuorum ?? true },
        );
        return { records: report.records, acked: report.acked, failed: report.failed };
      },
    );
  });

  const writer: VersionWriter = {
    guard(kind, change, guard) {
      const id = `${kind}/${change}`;
      if (guards.has(id)) throw new Error(`proposal guard ${id} already registered`);
      guards.set(
        id,
        guard === 'selfOnly'
          ? (_p, from) => {
              if (from) throw new AppError('FORBIDDEN', `${kind} ${change} is slot 0's own operation`, undefined, { reason: 'not_proposable' });
            }
          : guard,
      );
    },

    versionAfter(kind, key, current, proposed) {
      // Every key in canonical order (the version's too, its vouch last): the vouch's digest here and
      // the record slot 0 writes serialise it natively, not piece by piece (./canonical-json.ts).
      const v: Version = { change: proposed.change, ...nextVersion(current) };
      const body = inCanonicalKeyOrder({ ...proposed.body, v }) as unknown as VersionedBody;
      if (proposed.vouch !== false) body.v.vouch = { nodeAddress: self.nodeAddress, signature: deps.signDigest(proposalDigest(descriptor.clusterId, kind, key, body)) };
      return body as never;
    },

    async proposeAll(proposals, options = {}) {
      const res = (await deps.creator.call('propose', { proposals, ...(options.reads?.length ? { reads: options.reads.map(({ kind, key, at }) => ({ kind, key, at })) } : {}), ...(options.requireQuorum === false ? { requireQuorum: false } : {}) })) as {
        conflict?: boolean;
        current?: Array<ReplicatedRecord | null>;
        records?: ReplicatedRecord[];
        acked?: string[];
        failed?: BatchWriteReport['failed'];
      };
      if (res.conflict) {
        const current = (res.current ?? []).map((c) => c ?? undefined);
        const held = current.filter((c): c is ReplicatedRecord => c !== undefined);
        // Slot 0's versions are genuine records: this replica takes them (checked as any record is).
        if (held.length > 0) await deps.ingest(held);
        throw new VersionConflict(current);
      }
      const records = res.records ?? [];
      // Read-your-writes on this coordinator at once, whatever gossip does.
      if (records.length > 0 && self.slot !== 0) await deps.ingest(records).catch((err: unknown) => log.warn({ err: (err as Error).message }, 'could not take the written versions'));
      return { records, acked: res.acked ?? [], failed: res.failed ?? [] };
    },

    async proposeUntilWritten(build, options = {}) {
      const until = performance.now() + CONFLICT_BUDGET_MS;
      let conflict: VersionConflict | undefined;
      do {
        const batch = await build(conflict?.current);
        if (!('proposals' in batch)) return batch;
        try {
          return { written: await writer.proposeAll(batch.proposals, { ...options, ...(batch.reads ? { reads: batch.reads } : {}) }) };
        } catch (err) {
          if (!(err instanceof VersionConflict)) throw err;
          conflict = err;
          log.debug({ keys: batch.proposals.map((p) => `${p.kind}!${p.key}`) }, "version conflict: building on slot 0's versions");
        }
      } while (performance.now() < until);
      throw new AppError('NOT_READY', 'The record is changing; try again shortly', { retryAfterSeconds: 1 });
    },

    async update(kind, key, next, options = {}) {
      let current = (await state.get(kind.name, key)) as Versioned<never> | undefined;
      const outcome = await writer.proposeUntilWritten<VersionWrite<never>>(async (slot0Current) => {
        if (slot0Current) current = slot0Current[0] as never;
        const proposed = await next(current as never);
        if (!proposed) return { done: { written: false, current: current as never } };
        return { proposals: [{ kind: kind.name, key, body: writer.versionAfter(kind.name, key, current as never, proposed) }], ...(proposed.reads ? { reads: proposed.reads } : {}) };
      }, options);
      if ('done' in outcome) return outcome.done;
      const report = outcome.written;
      return { written: true, record: report.records[0] as never, acked: report.acked, failed: report.failed };
    },

    async ensureDurable(record) {
      const others = membersOf(descriptor).filter((m) => m.id !== self.id);
      const report = await deps.replicator.resendAll([record], others.map((m) => m.slot));
      const acked = report.acked.length + (self.slot !== null ? 1 : 0);
      if (acked < descriptor.threshold) throw new QuorumError(`Cluster membership failure: ${acked} of ${descriptor.size} members acknowledged, ${descriptor.threshold} needed`, report.acked, report.failed);
    },
  };
  return writer;
}

/**
 * The current record of (kind, key) in `state` as a read a proposal depends on: slot 0 writes the
 * proposal only while it is still the current one. `at` is null when the key has no record.
 */
export async function currentRead(state: StateReader, kind: string, key: string): Promise<ProposalRead & { record: ReplicatedRecord | undefined }> {
  const record = await state.get(kind, key);
  return { kind, key, at: record ? { origin: record.origin, seq: record.seq } : null, record };
}
