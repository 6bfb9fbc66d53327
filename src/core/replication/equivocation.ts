/**
 * Equivocation (docs/security.md, "Replication integrity"): two valid records under one (origin,
 * seq). The origin is flagged, and every member keeps the one with the lower content id — a rule
 * every member applies alike, so all replicas end up holding the same record whatever order they saw
 * the two in. The states of both keys are recomputed from the log.
 */
import type { Logger } from '../../log/index.ts';
import type { NodeMetrics } from '../../metrics/index.ts';
import { supersedes, type KindRegistry } from './kinds.ts';
import type { LogIndex } from './log-index.ts';
import type { RecordStore } from './ports.ts';
import type { ReplicatedRecord } from './record.ts';
import type { StateCache } from './state-cache.ts';

/** An origin seen sending two different records under one seq, and when this node first saw it. */
export interface Equivocation {
  origin: string;
  seq: number;
  at: number;
}

/** Dependencies of {@link createEquivocations}. */
export interface EquivocationDeps {
  store: Pick<RecordStore, 'allLog' | 'commit'>;
  kinds: KindRegistry;
  index: Pick<LogIndex, 'contentId' | 'xorFingerprint' | 'fingerprintHex'>;
  stateCache: Pick<StateCache, 'update' | 'forget'>;
  clock: () => number;
  metrics: Pick<NodeMetrics, 'equivocations'>;
  logger: Logger;
}

/** Equivocations seen, and their resolution. */
export interface Equivocations {
  /**
   * `incoming` arrived under the (origin, seq) of `stored` with other content: flag the origin, and
   * when `incoming` has the lower content id, store it in place of `stored` and recompute both keys.
   */
  resolve(stored: ReplicatedRecord, incoming: ReplicatedRecord): Promise<void>;
  /** Every (origin, seq) seen equivocating, first seen first. */
  list(): Equivocation[];
}

/** True when `incomingId` replaces `storedId` under one (origin, seq): the lower content id is kept. */
export function replacesEquivocated(storedId: bigint, incomingId: bigint): boolean {
  return incomingId < storedId;
}

/**
 * The winners of the keys of `stored` and `incoming` once `incoming` takes the place of the record of
 * its (origin, seq) in `log` (every log record, in any order).
 */
export async function winnersWithReplacement(log: AsyncIterable<ReplicatedRecord>, stored: ReplicatedRecord, incoming: ReplicatedRecord, kinds: KindRegistry): Promise<ReplicatedRecord[]> {
  const winners = new Map<string, ReplicatedRecord | undefined>([
    [`${stored.kind}!${stored.key}`, undefined],
    [`${incoming.kind}!${incoming.key}`, undefined],
  ]);
  for await (const r of log) {
    const candidate = r.origin === incoming.origin && r.seq === incoming.seq ? incoming : r;
    const k = `${candidate.kind}!${candidate.key}`;
    if (!winners.has(k)) continue;
    const kind = kinds.get(candidate.kind);
    if (kind && supersedes(kind, winners.get(k), candidate)) winners.set(k, candidate);
  }
  return [...winners.values()].filter((r): r is ReplicatedRecord => r !== undefined);
}

/** Create the equivocation tracker. */
export function createEquivocations(deps: EquivocationDeps): Equivocations {
  const { store, kinds, index, logger: log } = deps;
  const seen = new Map<string, Equivocation>();
  return {
    async resolve(stored, incoming) {
      const key = `${incoming.origin}!${incoming.seq}`;
      if (!seen.has(key)) {
        seen.set(key, { origin: incoming.origin, seq: incoming.seq, at: deps.clock() });
        deps.metrics.equivocations.inc({ origin: incoming.origin });
        log.error({ origin: incoming.origin, seq: incoming.seq }, 'origin equivocates: two different records with one seq');
      }
      const storedId = index.contentId(stored);
      const incomingId = index.contentId(incoming);
      if (!replacesEquivocated(storedId, incomingId)) return;
      const states = await winnersWithReplacement(store.allLog(), stored, incoming, kinds);
      await store.commit({ log: [incoming], states, vv: {}, fp: { [incoming.origin]: index.fingerprintHex(incoming.origin, storedId ^ incomingId) } });
      index.xorFingerprint(incoming.origin, storedId ^ incomingId);
      deps.stateCache.update(states);
      // A key left with no winner (the replaced record was its only one) reads as none from the
      // store now: the cache must not keep serving the replaced record, to readers or to apply.
      for (const r of [stored, incoming]) if (!states.some((s) => s.kind === r.kind && s.key === r.key)) deps.stateCache.forget(r.kind, r.key);
      log.warn({ origin: incoming.origin, seq: incoming.seq }, 'equivocation resolved: kept the record with the lower content id');
    },
    list: () => [...seen.values()],
  };
}
