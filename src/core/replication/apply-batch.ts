/**
 * Applying one batch of the group commit against the replica (docs/architecture.md, "Records"): this
 * node's own writes are signed and numbered, duplicates recognised (and an equivocation among them),
 * the new winners of the keys touched found, and log, states and version vector written in one
 * durable batch; then the in-memory summaries are updated and the batch's listeners told.
 */
import type { NodeMetrics } from '../../metrics/index.ts';
import type { AppliedEvent, AppliedListeners, IngestResult, RecordSource } from './applied-events.ts';
import { inCanonicalKeyOrder } from './canonical-json.ts';
import type { Equivocations } from './equivocation.ts';
import type { PendingApply } from './group-commit.ts';
import { supersedes, type KindRegistry } from './kinds.ts';
import type { LogIndex } from './log-index.ts';
import { createOriginSeqMap } from './origin-seq-map.ts';
import type { RecordStore, VersionVector } from './ports.ts';
import { recordDigest, type HlcClock, type ReplicatedRecord } from './record.ts';
import { signRecordDigests } from './record-sig.ts';
import type { StateCache } from './state-cache.ts';

/** Options of {@link createBatchApplier}. */
export interface BatchApplierOptions {
  clusterId: string;
  /** This node's address: the origin of its own records. */
  selfAddress: string;
}

/** Dependencies of {@link createBatchApplier}. */
export interface BatchApplierDeps {
  store: Pick<RecordStore, 'hasRecord' | 'getLog' | 'getStates' | 'commit'>;
  kinds: KindRegistry;
  index: LogIndex;
  stateCache: Pick<StateCache, 'update' | 'peek'>;
  hlc: HlcClock;
  /** This node's secp256k1 private key (signs its records). */
  signingKey: Uint8Array;
  /**
   * Whether own records may be signed a batch at a time (./record-sig.ts): only once every node of
   * the cluster has said it checks that form. @default never
   */
  batchSignatures?: () => boolean;
  equivocations: Pick<Equivocations, 'resolve'>;
  listeners: Pick<AppliedListeners, 'listening' | 'emit'>;
  metrics: Pick<NodeMetrics, 'recordsApplied'>;
}

/** The commit step of the group commit. */
export interface BatchApplier {
  /** Continue this node's own sequence after the highest seq of its own in the log index (at open, once the index is loaded). */
  open(): void;
  /**
   * A record whose signature verified, stored or not (it may be held back or refused for its
   * evidence): when it is one of this node's own, its seq is taken — the next own record is numbered
   * above it, so this node never signs a second record under a seq its peers hold.
   */
  noteSigned(record: Pick<ReplicatedRecord, 'origin' | 'seq'>): void;
  /** Apply one batch durably and resolve each of its applies; on failure nothing of it is stored. */
  apply(batch: PendingApply[]): Promise<void>;
}

/** Create the batch applier. */
export function createBatchApplier(options: BatchApplierOptions, deps: BatchApplierDeps): BatchApplier {
  const { clusterId, selfAddress } = options;
  const { store, kinds, index, hlc } = deps;
  let ownSeq = 0;
  /** The highest seq of this node's own seen signed in an incoming record ({@link BatchApplier.noteSigned}). */
  let ownSeqSeen = 0;

  async function apply(batch: PendingApply[]): Promise<void> {
    const seqBefore = ownSeq;
    try {
      await commitBatch(batch);
    } catch (err) {
      // Nothing of this batch is stored: its own records give their seqs back.
      ownSeq = seqBefore;
      for (const p of batch) if (p.own) p.records = [];
      throw err;
    }
  }

  /** The winners of `pairs` now: cached ones from memory, the others from the store in one read. */
  async function currentStates(pairs: Array<{ kind: string; key: string }>): Promise<Array<ReplicatedRecord | undefined>> {
    const out: Array<ReplicatedRecord | undefined> = [];
    const missing: number[] = [];
    pairs.forEach((p, i) => {
      const cached = deps.stateCache.peek(p.kind, p.key);
      if (cached === undefined) missing.push(i);
      else out[i] = cached ?? undefined;
    });
    if (missing.length > 0) {
      const read = await store.getStates(missing.map((i) => pairs[i]!));
      missing.forEach((i, j) => (out[i] = read[j]));
    }
    return out;
  }

  async function commitBatch(batch: PendingApply[]): Promise<void> {
    if (ownSeqSeen > ownSeq) ownSeq = ownSeqSeen;
    // This batch's own records, numbered in order, signed together: one signature for up to
    // MAX_BATCH_LEAVES of them once every node can check the batch form (./record-sig.ts).
    // Bodies with their keys in canonical order: every member that checks the record serialises it natively.
    const unsigned = batch.flatMap((p) => (p.own ?? []).map((intent) => ({ kind: intent.kind, key: intent.key, origin: selfAddress, seq: ++ownSeq, hlc: hlc.now(), body: inCanonicalKeyOrder(intent.body) })));
    if (unsigned.length > 0) {
      const digests = unsigned.map((u) => recordDigest(clusterId, u));
      const sigs = signRecordDigests(clusterId, digests, deps.signingKey, deps.batchSignatures?.() ?? false);
      let next = 0;
      for (const p of batch) {
        if (!p.own) continue;
        p.records = p.own.map(() => {
          const at = next++;
          const record: ReplicatedRecord = { ...unsigned[at]!, sig: sigs[at]! };
          index.noteDigest(record, digests[at]!);
          return record;
        });
      }
    }
    /** This batch's new records by (origin, seq); its origins are those the batch touches. */
    const logged = createOriginSeqMap<ReplicatedRecord>();
    const results = batch.map<IngestResult>(() => ({ applied: 0, duplicates: 0, rejected: [] }));
    // Existence is known in memory for everything except seqs at or below the highest stored one
    // that arrived out of order, which are rare: only those cost a LevelDB read (and a promise).
    const has = (origin: string, seq: number): boolean | Promise<boolean> =>
      seq <= (index.vv[origin] ?? 0) || logged.has(origin, seq) || (seq <= (index.maxStored.get(origin) ?? 0) && store.hasRecord(origin, seq));

    const fresh: ReplicatedRecord[] = [];
    const conflicts: Array<{ stored: ReplicatedRecord; incoming: ReplicatedRecord }> = [];
    for (let i = 0; i < batch.length; i++) {
      const res = results[i]!;
      for (const r of batch[i]!.records) {
        const held = has(r.origin, r.seq);
        if (held === true || (held !== false && (await held))) {
          res.duplicates++;
          // A duplicate must be the same record: another one under the same (origin, seq) is an
          // equivocation (our own seqs are ours alone, and nobody else can sign for us).
          if (r.origin !== selfAddress && index.recentSig(r.origin, r.seq) !== r.sig) {
            const stored = logged.get(r.origin, r.seq) ?? (await store.getLog(r.origin, r.seq));
            if (stored && stored.sig !== r.sig && index.contentId(stored) !== index.contentId(r)) conflicts.push({ stored, incoming: r });
          }
          continue;
        }
        logged.set(r.origin, r.seq, r);
        fresh.push(r);
        res.applied++;
        hlc.observe(r.hlc);
      }
    }
    if (fresh.length === 0) {
      for (const c of conflicts) await deps.equivocations.resolve(c.stored, c.incoming);
      batch.forEach((p, i) => p.resolve(results[i]!));
      return;
    }

    // Current winners of every key touched: from the state cache where it holds them (it is updated
    // after every commit, and commits run one at a time, so what it holds is what the store holds),
    // the rest in one read.
    const stateKeys = fresh.map((r) => `${r.kind}!${r.key}`);
    const keys = [...new Map(fresh.map((r, i) => [stateKeys[i]!, { kind: r.kind, key: r.key }])).entries()];
    const currents = await currentStates(keys.map(([, v]) => v));
    const winners = new Map<string, ReplicatedRecord | undefined>(keys.map(([k], i) => [k, currents[i]]));
    const changed = new Map<string, ReplicatedRecord>();
    for (let i = 0; i < fresh.length; i++) {
      const r = fresh[i]!;
      const sk = stateKeys[i]!;
      if (supersedes(kinds.get(r.kind)!, winners.get(sk), r)) {
        winners.set(sk, r);
        changed.set(sk, r);
      }
    }
    const vvChange: VersionVector = {};
    for (const origin of logged.origins()) {
      let s = index.vv[origin] ?? 0;
      for (;;) {
        const held = has(origin, s + 1);
        if (held === true || (held !== false && (await held))) s++;
        else break;
      }
      if (s !== (index.vv[origin] ?? 0)) vvChange[origin] = s;
    }
    await store.commit({ log: fresh, states: [...changed.values()], vv: vvChange, fp: index.fingerprintsWith(fresh) });
    for (const r of fresh) {
      index.addFingerprint(r);
      index.rememberSig(r);
    }
    deps.stateCache.update(changed.values());
    for (const c of conflicts) await deps.equivocations.resolve(c.stored, c.incoming);
    index.vv = { ...index.vv, ...vvChange };
    for (const r of fresh) if (r.seq > (index.maxStored.get(r.origin) ?? 0)) index.maxStored.set(r.origin, r.seq);
    // Our own records can come back from peers (a node restored from a backup): a seq any of them
    // holds is used, whatever this node's log said at open.
    for (const r of fresh) if (r.origin === selfAddress && r.seq > ownSeq) ownSeq = r.seq;
    // One count per source (a writer's batch is one apply per write, all of them `local`).
    const appliedBySource = new Map<RecordSource, number>();
    for (let i = 0; i < batch.length; i++) {
      const { applied } = results[i]!;
      if (applied) appliedBySource.set(batch[i]!.source, (appliedBySource.get(batch[i]!.source) ?? 0) + applied);
    }
    for (const [source, applied] of appliedBySource) deps.metrics.recordsApplied.inc({ source }, applied);
    for (let i = 0; i < batch.length; i++) batch[i]!.resolve(results[i]!);
    if (deps.listeners.listening()) {
      const before = new Map(keys.map(([k], i) => [k, currents[i]]));
      const event: AppliedEvent = { records: fresh, source: batch[0]!.source, changes: [...changed].map(([k, after]) => ({ before: before.get(k), after })) };
      deps.listeners.emit(event);
    }
  }

  return {
    open() {
      ownSeq = Math.max(index.vv[selfAddress] ?? 0, index.maxStored.get(selfAddress) ?? 0);
    },
    noteSigned(record) {
      if (record.origin === selfAddress && record.seq > ownSeqSeen) ownSeqSeen = record.seq;
    },
    apply,
  };
}
