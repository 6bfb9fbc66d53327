/**
 * Billing cycles aligned to UTC (issue 13): a monthly cycle runs from the 1st of a month 00:00:00.000
 * UTC to the 1st of the next; a daily one from 00:00 UTC to the next 00:00 UTC. Ends are exclusive
 * (the next cycle's start), so cycles tile time without gaps or overlaps.
 */
import type { Cycle, CycleType } from './types.ts';

const DAY_MS = 86_400_000;

/** The cycle of `type` containing the instant `atMs` (Unix ms). */
export function cycleOf(type: CycleType, atMs: number): Cycle {
  if (type === 'daily') {
    const start = Math.floor(atMs / DAY_MS) * DAY_MS;
    return { type, start, end: start + DAY_MS };
  }
  const d = new Date(atMs);
  const year = d.getUTCFullYear();
  const month = d.getUTCMonth();
  // Date.UTC rolls month 12 over into January of the next year.
  return { type, start: Date.UTC(year, month, 1), end: Date.UTC(year, month + 1, 1) };
}

/** True when `ms` is the first ms of a cycle of `type` (what a counter record's key must name). */
export function isCycleStart(type: CycleType, ms: number): boolean {
  return Number.isSafeInteger(ms) && cycleOf(type, ms).start === ms;
}

/** The current cycle of each type, as {@link createCurrentCycles} keeps it. */
export interface CurrentCycles {
  /** The cycle of `type` containing `atMs`: the one held while the clock is in it, else computed and held. */
  at(type: CycleType, atMs: number): Cycle;
}

/**
 * The current cycle of each type, kept while the clock is in it: one comparison per admission, no
 * date arithmetic. An instant outside the held cycle (the next one, or a clock set back) replaces it.
 */
export function createCurrentCycles(): CurrentCycles {
  const held = new Map<CycleType, Cycle>();
  return {
    at(type, atMs) {
      const cycle = held.get(type);
      if (cycle && cycle.start <= atMs && atMs < cycle.end) return cycle;
      const next = cycleOf(type, atMs);
      held.set(type, next);
      return next;
    },
  };
}
