/**
 * Reads after writes made elsewhere (issue 11: "Permit not found" from one coordinator milliseconds
 * after the other acknowledged it). A write acknowledged to a client is on ≥ threshold members, so any
 * `size − threshold + 1` members include one that holds it. On a local miss, this node catches up with
 * every member it reaches and reads again: still missing after catching up with that many members,
 * the record does not exist (404 is true); with fewer reached, nobody can tell yet — 503 with
 * Retry-After, never a 404 that may be false.
 */
import { AppError } from '../../errors/index.ts';
import type { ReplicatedRecord } from './record.ts';
import type { StateReader } from './ports.ts';

/** Options of {@link createFreshReader}. */
export interface FreshReaderOptions {
  /** Members that must have been caught up with for a miss to be definitive: size − threshold + 1. */
  membersToAsk: number;
}

/** Dependencies of {@link createFreshReader}. */
export interface FreshReaderDeps {
  state: Pick<StateReader, 'get'>;
  /** One catch-up round with every reachable member; resolves with how many members it covered (self included). */
  catchUp(): Promise<number>;
  /** Monotonic clock, ms. */
  now(): number;
}

/** Reads that look beyond this node's replica before answering "not found". */
export interface FreshReader {
  /** The record, or undefined when it does not exist; 503 NOT_READY when that cannot be known yet. */
  get(kind: string, key: string): Promise<ReplicatedRecord | undefined>;
  /** The record after a catch-up that started now (when the local one may be out of date). */
  reread(kind: string, key: string): Promise<ReplicatedRecord | undefined>;
}

export function createFreshReader(options: FreshReaderOptions, deps: FreshReaderDeps): FreshReader {
  let running: { startedAt: number; covered: Promise<number> } | undefined;
  let next: Promise<number> | undefined;

  function start(): Promise<number> {
    const round = { startedAt: deps.now(), covered: deps.catchUp().catch(() => 0) };
    running = round;
    void round.covered.finally(() => {
      if (running === round) running = undefined;
    });
    return round.covered;
  }

  // A miss must be settled by a catch-up that started after it: a round already running when the
  // lookup began may have missed the write. Misses share rounds — one running, at most one queued —
  // so a burst of lookups for unknown ids costs two rounds, not one each.
  function catchUpAfter(missedAt: number): Promise<number> {
    if (!running) return start();
    if (running.startedAt >= missedAt) return running.covered;
    next ??= running.covered.then(() => {
      next = undefined;
      return running && running.startedAt >= missedAt ? running.covered : start();
    });
    return next;
  }

  return {
    async get(kind, key) {
      const missedAt = deps.now();
      const local = await deps.state.get(kind, key);
      if (local) return local;
      const covered = await catchUpAfter(missedAt);
      const after = await deps.state.get(kind, key);
      if (after) return after;
      if (covered >= options.membersToAsk) return undefined;
      throw new AppError('NOT_READY', 'This coordinator cannot reach enough members to tell whether it exists; try again', { retryAfterSeconds: 1 });
    },
    async reread(kind, key) {
      await catchUpAfter(deps.now());
      return deps.state.get(kind, key);
    },
  };
}
