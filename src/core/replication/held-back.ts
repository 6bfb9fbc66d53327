/**
 * Records held back (docs/architecture.md, "Versions"): a record a member cannot decide yet — it names
 * a record this member does not hold, such as the version it replaces — is neither stored nor refused
 * for good. It waits here, in memory, for the record it names; when that one is stored, it is checked
 * again. Sync asks for the missing records meanwhile (a held-back record leaves a gap that the next
 * round fills), so a lost waiter costs only time. Bounded: past `maxRecords` the oldest waiter goes.
 */
import type { RecordSource } from './applied-events.ts';
import type { ReplicatedRecord } from './record.ts';

/** Options of {@link createHeldBack}. */
export interface HeldBackOptions {
  /** Most records waiting at once. */
  maxRecords: number;
}

/** A record waiting for another, with where it came from. */
export interface HeldRecord {
  record: ReplicatedRecord;
  source: RecordSource;
}

/** The waiting room. */
export interface HeldBack {
  /** Keep `record` until the record at `waitFor` is stored. */
  hold(waitFor: { origin: string; seq: number }, record: ReplicatedRecord, source: RecordSource): void;
  /** The waiters of any of `settled` (stored, or refused for good), removed from the room. */
  release(settled: ReadonlyArray<{ origin: string; seq: number }>): HeldRecord[];
  /** Records waiting now. */
  size(): number;
}

/** Create the waiting room. */
export function createHeldBack(options: HeldBackOptions): HeldBack {
  /** Waiters by the record they wait for (`origin!seq`), in arrival order; object keys, not a churning Map. */
  let byAwaited: Record<string, HeldRecord[]> = Object.create(null) as Record<string, HeldRecord[]>;
  /** Arrival order of the awaited ids, for the bound (an id may repeat; stale entries are skipped). */
  let order: string[] = [];
  let count = 0;

  const idOf = (origin: string, seq: number) => `${origin}!${seq}`;

  function evictOldest(): void {
    while (count > options.maxRecords && order.length > 0) {
      const id = order.shift()!;
      const list = byAwaited[id];
      if (!list || list.length === 0) continue;
      list.shift();
      count--;
      if (list.length === 0) delete byAwaited[id];
    }
  }

  return {
    hold(waitFor, record, source) {
      const id = idOf(waitFor.origin, waitFor.seq);
      const list = (byAwaited[id] ??= []);
      // The same record offered twice (apply, then gossip) waits once.
      if (list.some((h) => h.record.origin === record.origin && h.record.seq === record.seq && h.record.sig === record.sig)) return;
      list.push({ record, source });
      order.push(id);
      count++;
      evictOldest();
      // Keep the order list from growing past what it indexes.
      if (order.length > 4 * options.maxRecords) order = order.filter((o) => byAwaited[o] !== undefined);
    },
    release(settled) {
      if (count === 0) return [];
      const out: HeldRecord[] = [];
      for (const r of settled) {
        const id = idOf(r.origin, r.seq);
        const list = byAwaited[id];
        if (!list) continue;
        delete byAwaited[id];
        count -= list.length;
        out.push(...list);
      }
      if (count === 0) {
        byAwaited = Object.create(null) as Record<string, HeldRecord[]>;
        order = [];
      }
      return out;
    },
    size: () => count,
  };
}
