/**
 * Ingesting records from any source (apply, gossip, sync; CONTRIBUTING.md rule 6): duplicates
 * recognised, the record rules of src/core/replication/validate.ts, signatures verified in one
 * batch, then the kinds' evidence checks against the replica, and the group commit. Applying is
 * idempotent. The two halves are apart so that a sync requester prepares the next page while the one
 * before is being stored (docs/architecture.md, "Sync (catch-up)").
 */
import type { VerifyItem } from '../../crypto/index.ts';
import type { Logger } from '../../log/index.ts';
import type { NodeMetrics } from '../../metrics/index.ts';
import type { IngestResult, RecordSource } from './applied-events.ts';
import type { CommitQueue } from './group-commit.ts';
import { createHeldBack } from './held-back.ts';
import type { RecordKindDefinition, Sibling } from './kinds.ts';
import type { LogIndex } from './log-index.ts';
import { createOriginSeqMap } from './origin-seq-map.ts';
import type { ClusterNodeEntry } from './ports.ts';
import type { ReplicatedRecord } from './record.ts';
import { verifyRecordSigs } from './record-sig.ts';
import type { RecordRefusal } from './refusals.ts';
import { bodyProblem, checkRecord, reasonLabel, refusalOf, type CheckedRecord, type EvidenceContextOf, type RecordRules, type Refusal, type UnverifiedRecord } from './validate.ts';

/** Records checked as far as they can be without the replica ({@link Ingest.prepareIngest}). */
export interface PreparedIngest {
  readonly source: RecordSource;
  /** Refused so far, by position in the batch. */
  readonly refusals: Array<Refusal & { at: number; authentic?: boolean }>;
  /** Passed structure and signature, by position in the batch. */
  readonly checked: ReadonlyArray<{ at: number; record: ReplicatedRecord; kind: RecordKindDefinition; node: { entry: ClusterNodeEntry; publicKey: Uint8Array; coordinator: boolean } }>;
  /** Duplicates of records stored lately. */
  readonly known: number;
  /** Copies of records being stored now: duplicates once those are durable. */
  readonly awaiting: ReadonlyArray<{ item: unknown; stored: Promise<boolean> }>;
}

/** Verifies record signatures in batches. */
export interface SignatureVerifier {
  verify(items: readonly VerifyItem[]): Promise<boolean[]>;
}

/** Dependencies of {@link createIngest}. */
export interface IngestDeps {
  /** The record rules (origins, kinds, skew) checked before the signature. */
  rules: RecordRules;
  /** This node's clock, Unix ms: records stamped too far ahead of it are refused. */
  clock: () => number;
  verifier: SignatureVerifier;
  index: Pick<LogIndex, 'recentSig' | 'noteDigest'>;
  /** The evidence contexts over this node's replica. */
  contextOf: EvidenceContextOf;
  queue: Pick<CommitQueue, 'enqueue'>;
  metrics: Pick<NodeMetrics, 'recordsRejected'>;
  logger: Logger;
  /** Where permanent refusals are noted (the catch-up gate does not wait for what this node refused). */
  refused?: { note(origin: string, seq: number): void };
  /** Most records held back at once, waiting for a record they name. @default 10000 */
  maxHeldBack?: number;
  /** Told of every record whose signature verified, before its evidence is checked (the applier's own seq, apply-batch.ts). */
  onSigned?(record: ReplicatedRecord): void;
  /**
   * Recover the signers of the strings records carry as evidence ({@link RecordKindDefinition.signedStrings}),
   * while their signatures are verified: the evidence checks then find them (src/core/sessions/signer-memo.ts).
   * @default none: each check recovers its own
   */
  prefetchSigners?(strings: ReadonlyArray<{ data: string; signature: string }>): Promise<void>;
}

/** The engine's ingest path. */
export interface Ingest {
  /** Validate and apply records: {@link prepareIngest} then {@link ingestPrepared}. */
  ingest(records: unknown[], source: RecordSource): Promise<IngestResult>;
  /** Duplicates recognised, structure and signatures checked (reads no state). */
  prepareIngest(records: unknown[], source: RecordSource): Promise<PreparedIngest>;
  /** Evidence checks against the replica, then the durable store. Call in page order. */
  ingestPrepared(prepared: PreparedIngest): Promise<IngestResult>;
}

/** A refusal at its place in the batch; `authentic` when the record's signature verified and the refusal is for good. */
type Positioned<T> = T & { at: number; authentic?: boolean };

/** Create the ingest path. */
export function createIngest(deps: IngestDeps): Ingest {
  const { rules, verifier, index, contextOf, logger: log } = deps;
  /** Records verified and queued by {@link ingest}, not durable yet, by (origin, seq). */
  const inFlight = createOriginSeqMap<{ sig: string; stored: Promise<boolean> }>();

  /** Records waiting for one they name (held-back.ts). */
  const held = createHeldBack({ maxRecords: deps.maxHeldBack ?? 10_000 });

  /**
   * Try again the records held back for any of `settled` (stored, or refused for good), in the
   * background: the caller's answer is about its own records.
   */
  function retryHeld(settled: ReadonlyArray<{ origin: string; seq: number }>): void {
    if (settled.length === 0) return;
    const released = held.release(settled);
    if (released.length === 0) return;
    void Promise.all(released.map(({ record, source }) => ingest([record], source))).catch((err: unknown) => log.warn({ err: (err as Error).message }, 'held-back records failed'));
  }

  /** A refusal: kept for the result, counted, logged. */
  function refuseInto(refusals: Array<Positioned<Refusal>>, source: RecordSource, at: number, v: Refusal, authentic = false): void {
    refusals.push({ at, ...v, ...(authentic && !v.transient ? { authentic } : {}) });
    // The label is the code, so its values stay a small closed set.
    deps.metrics.recordsRejected.inc({ reason: reasonLabel(v.reason) });
    if (v.transient) log.debug({ origin: v.origin, seq: v.seq, reason: v.reason, source }, 'record held back');
    else {
      // Only a record its origin really signed is refused for good under its (origin, seq): a forged
      // copy says nothing of the genuine record.
      if (authentic) deps.refused?.note(v.origin, v.seq);
      log.warn({ origin: v.origin, seq: v.seq, reason: v.reason, source }, 'record rejected');
    }
  }

  /**
   * The first half of {@link ingest}: duplicates recognised, structure checked, signatures verified
   * (off the event loop for a large batch). It reads no state, so the next sync page can be prepared
   * while the one before is checked and stored.
   */
  async function prepareIngest(raw: unknown[], source: RecordSource): Promise<PreparedIngest> {
    const refusals: Array<Positioned<Refusal>> = [];
    const refuse = (at: number, v: Refusal) => refuseInto(refusals, source, at, v);
    const checked: Array<Positioned<CheckedRecord>> = [];
    const unverified: Array<Positioned<UnverifiedRecord>> = [];
    // A record stored here lately, byte for byte the same signature under the same (origin, seq), is a
    // duplicate (catch-up from several peers at once brings each record several times): it is neither
    // verified nor checked again. Anything else under a stored (origin, seq) goes the whole way, so an
    // equivocation is still seen.
    // One that is being stored right now (verified, queued, not durable yet) is awaited: a duplicate
    // once that store is durable, checked the whole way if it failed.
    let known = 0;
    const awaiting: Array<{ item: unknown; stored: Promise<boolean> }> = [];
    // The clock is read once for the batch: the records are checked in one synchronous pass.
    const nowMs = deps.clock();
    raw.forEach((item, at) => {
      const r = item as Partial<ReplicatedRecord> | null;
      if (r !== null && typeof r === 'object' && typeof r.sig === 'string' && typeof r.origin === 'string' && typeof r.seq === 'number') {
        if (index.recentSig(r.origin, r.seq) === r.sig) {
          known++;
          return;
        }
        const pending = inFlight.get(r.origin, r.seq);
        if (pending?.sig === r.sig) {
          awaiting.push({ item, stored: pending.stored });
          return;
        }
      }
      const v = checkRecord(item, rules, nowMs);
      if ('record' in v) unverified.push({ ...v, at });
      else refuse(at, v);
    });
    // Signatures in one batch, each once (a batch-signed group shares one): a sync page's are verified
    // off the event loop (deps.verifier). Meanwhile the signers of the client strings the records carry
    // are recovered (records that passed the structural checks only).
    const strings = deps.prefetchSigners ? unverified.flatMap((u) => u.kind.signedStrings?.(u.record.body) ?? []) : [];
    const [signed] = await Promise.all([
      verifyRecordSigs(unverified.map((u) => ({ sig: u.sig, signed: u.signed, publicKey: u.node.publicKey })), (items) => verifier.verify(items)),
      strings.length > 0 ? deps.prefetchSigners!(strings) : undefined,
    ]);
    unverified.forEach((u, i) => {
      if (!signed[i]) return refuse(u.at, refusalOf({ code: 'bad_signature' }, u.record.origin, u.record.seq));
      index.noteDigest(u.record, u.digest);
      deps.onSigned?.(u.record);
      checked.push(u);
    });
    return { source, refusals, checked, known, awaiting };
  }

  async function ingest(raw: unknown[], source: RecordSource): Promise<IngestResult> {
    return ingestPrepared(await prepareIngest(raw, source));
  }

  /** The second half of {@link ingest}: evidence checks against the replica, then the store. */
  async function ingestPrepared(prepared: PreparedIngest): Promise<IngestResult> {
    const { source, refusals, checked, awaiting } = prepared;
    let known = prepared.known;
    const refuse = (at: number, v: Refusal) => refuseInto(refusals, source, at, v, true);
    const valid: ReplicatedRecord[] = [];
    // Evidence checks read the records travelling before this one that passed their own checks (a
    // consumed permit before the change it authorises, the version a version replaces) and this
    // node's log: a refused record is never evidence for another.
    const siblings: Sibling[] = [];
    const check = async (c: PreparedIngest['checked'][number]): Promise<Refusal | undefined> => {
      const r = c.record;
      let problem: RecordRefusal | undefined;
      try {
        problem = await bodyProblem(c.kind, r.body, contextOf(c.kind, r, c.node, siblings));
      } catch (err) {
        problem = { code: 'check_failed', detail: (err as Error).message.slice(0, 200) };
      }
      if (problem) return refusalOf(problem, r.origin, r.seq);
      valid.push(r);
      siblings.push({ kind: r.kind, key: r.key, body: r.body, origin: r.origin, seq: r.seq, hlc: r.hlc });
      return undefined;
    };
    // A record that waits for one later in the batch (a sync page is in origin order, not causal
    // order) is checked again once that one passed.
    let waiting: Array<{ c: PreparedIngest['checked'][number]; refused: Refusal }> = [];
    for (const c of checked) {
      const refused = await check(c);
      if (refused?.waitFor) waiting.push({ c, refused });
      else if (refused) refuse(c.at, refused);
    }
    for (let progress = true; progress && waiting.length > 0; ) {
      progress = false;
      const still: typeof waiting = [];
      for (const w of waiting) {
        const wf = w.refused.waitFor!;
        if (!siblings.some((s) => s.origin === wf.origin && s.seq === wf.seq)) {
          still.push(w);
          continue;
        }
        const refused = await check(w.c);
        if (!refused) progress = true;
        else if (refused.waitFor && (refused.waitFor.origin !== wf.origin || refused.waitFor.seq !== wf.seq)) still.push({ c: w.c, refused });
        else refuse(w.c.at, refused);
      }
      waiting = still;
    }
    for (const w of waiting) {
      refuse(w.c.at, w.refused);
      held.hold(w.refused.waitFor!, w.c.record, source);
    }
    // Records held back for one refused here for good are tried again: they are refused too.
    retryHeld(refusals.filter((r) => r.authentic === true));
    const rejected = refusals.sort((a, b) => a.at - b.at).map(({ reason, code, origin, seq, transient }) => ({ reason, code, origin, seq, ...(transient ? { transient } : {}) }));
    let res: IngestResult = { applied: 0, duplicates: 0, rejected: [] };
    if (valid.length > 0) {
      let settle!: (stored: boolean) => void;
      const stored = new Promise<boolean>((resolve) => (settle = resolve));
      const mine = valid.filter((r) => !inFlight.has(r.origin, r.seq));
      for (const r of mine) inFlight.set(r.origin, r.seq, { sig: r.sig, stored });
      try {
        res = await deps.queue.enqueue(valid, source);
        settle(true);
      } catch (err) {
        settle(false);
        throw err;
      } finally {
        for (const r of mine) inFlight.delete(r.origin, r.seq);
      }
      // Records held back for one of these are tried again now.
      retryHeld(valid);
    }
    const retry: unknown[] = [];
    for (const a of awaiting) {
      if (await a.stored) known++;
      else retry.push(a.item);
    }
    const again = retry.length > 0 ? await ingest(retry, source) : { applied: 0, duplicates: 0, rejected: [] };
    return { applied: res.applied + again.applied, duplicates: res.duplicates + known + again.duplicates, rejected: [...rejected, ...again.rejected] };
  }

  return { ingest, prepareIngest, ingestPrepared };
}
