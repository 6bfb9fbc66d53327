/**
 * Both sides of a catch-up round (docs/architecture.md, "Sync (catch-up)"): what this node asks a
 * peer for — its version vector, per origin with records stored beyond it the highest seq and the
 * seqs missing below it, per origin without gaps a fingerprint — and, for a peer's request, the
 * records that peer is missing, in pages.
 */
import type { LogIndex } from './log-index.ts';
import type { RecordStore, SyncRequest } from './ports.ts';
import type { ReplicatedRecord } from './record.ts';

/** Most missing seqs of one origin named in a sync request; beyond it, the peer resends from vv. */
export const MAX_SYNC_GAPS = 1000;

/** Dependencies of {@link createSyncSource}. */
export interface SyncSourceDeps {
  store: Pick<RecordStore, 'scanLog' | 'getLog'>;
  index: Pick<LogIndex, 'vv' | 'maxStored' | 'fingerprintHex'>;
}

/** The catch-up side of the engine. */
export interface SyncSource {
  /** What to ask a peer for in a catch-up round. */
  syncRequest(): Promise<SyncRequest>;
  /** Records a peer that sent `request` is missing, in pages of at most `limit`. */
  missingFor(request: SyncRequest, options: { limit: number }): AsyncGenerator<ReplicatedRecord[]>;
}

/**
 * The seqs above `contiguous` and up to `max` that are not in `have`, ascending; undefined when
 * there are more than `maxGaps` (the request then names none, and the peer resends from vv).
 */
export function missingSeqs(contiguous: number, max: number, have: ReadonlySet<number>, maxGaps: number = MAX_SYNC_GAPS): number[] | undefined {
  const gaps: number[] = [];
  for (let s = contiguous + 1; s <= max && gaps.length <= maxGaps; s++) if (!have.has(s)) gaps.push(s);
  return gaps.length > maxGaps ? undefined : gaps;
}

/** Create the sync source over the store and the engine's log index. */
export function createSyncSource(deps: SyncSourceDeps): SyncSource {
  const { store, index } = deps;
  return {
    async syncRequest() {
      const request: SyncRequest = { vv: { ...index.vv }, max: {}, gaps: {}, fp: {} };
      for (const [origin, max] of index.maxStored) {
        const contiguous = index.vv[origin] ?? 0;
        if (max <= contiguous) {
          request.fp![origin] = index.fingerprintHex(origin);
          continue;
        }
        if (max - contiguous > MAX_SYNC_GAPS * 4) continue;
        const have = new Set((await store.scanLog(origin, contiguous + 1, max - contiguous)).map((r) => r.seq));
        const gaps = missingSeqs(contiguous, max, have);
        if (!gaps) continue;
        request.max![origin] = max;
        request.gaps![origin] = gaps;
      }
      return request;
    },
    async *missingFor(request, { limit }) {
      const peer = request.vv;
      // Every origin stored is in the index (loaded at open, kept on commit): no store walk per round.
      for (const origin of [...index.maxStored.keys()].sort()) {
        const theirs = peer[origin] ?? 0;
        const mine = index.vv[origin] ?? 0;
        const fp = request.fp?.[origin];
        // Same records by count, different by content: send them all so the peer can compare.
        const differ = fp !== undefined && theirs === mine && mine === (index.maxStored.get(origin) ?? 0) && fp !== index.fingerprintHex(origin);
        const gaps = request.gaps?.[origin];
        const max = request.max?.[origin];
        if (!differ && gaps && max !== undefined) {
          // The peer holds everything up to `max` but these: send them, then what lies beyond.
          for (let i = 0; i < gaps.length; i += limit) {
            const page = (await Promise.all(gaps.slice(i, i + limit).map((s) => store.getLog(origin, s)))).filter((r): r is ReplicatedRecord => r !== undefined);
            if (page.length > 0) yield page;
          }
        }
        let from = differ ? 1 : (max ?? theirs) + 1;
        // Nothing stored past what the peer holds — the usual case, a round between members in step:
        // no log scan (a LevelDB iterator per origin per peer per round otherwise).
        if (from > (index.maxStored.get(origin) ?? 0)) continue;
        for (;;) {
          const page = await store.scanLog(origin, from, limit);
          if (page.length === 0) break;
          yield page;
          if (page.length < limit) break;
          from = page[page.length - 1]!.seq + 1;
        }
      }
    },
  };
}
