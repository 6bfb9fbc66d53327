/**
 * Turns of the syncs with different peers (docs/architecture.md, "Sync (catch-up)"). Syncs with
 * several peers at once would each bring every missing record, and a member far behind would receive
 * and verify each several times: they take turns. A turn waits for the one before it while that one
 * makes progress — it has begun, and read a page within the last `idleMs` — and starts anyway once
 * it stalls (a slow or withholding peer) or after `maxWaitMs` in all (a peer that trickles pages).
 *
 * The wait is counted from the turn before it beginning, not from this one being asked for: turns
 * asked for together (the syncs a start or a reconnect sets off) start one after another, not all at
 * once when a first sync runs past `idleMs`.
 */

/** One sync's turn, as its holder reports on it. */
export interface SyncTurn {
  /** A page was read: the turn makes progress. */
  progress(): void;
  /** The turn is over (whatever its outcome); the next one starts. */
  release(): void;
}

/** Options of {@link createSyncTurns}. */
export interface SyncTurnsOptions {
  /** How long a turn may go without reading a page before the next one starts anyway, ms. */
  idleMs: number;
  /** Longest a turn waits for the one before it once that one has begun, however it progresses, ms. */
  maxWaitMs: number;
  /** Milliseconds clock. @default performance.now */
  now?: () => number;
  /** Resolves after `ms` (tests pass their own). @default a timer */
  sleep?: (ms: number) => Promise<void>;
}

interface TurnState extends SyncTurn {
  /** Resolves when the turn begins (its wait is over). */
  begun: Promise<void>;
  beganAt: number | undefined;
  lastProgressAt: number;
  /** Resolves when the turn is released. */
  done: Promise<void>;
  released: boolean;
}

/** Hands out turns in the order they are asked for. */
export function createSyncTurns(options: SyncTurnsOptions): { take(): Promise<SyncTurn> } {
  const now = options.now ?? (() => performance.now());
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  let last: TurnState | undefined;

  function newTurn(): { turn: TurnState; begin: () => void } {
    let begin!: () => void;
    let finish!: () => void;
    const turn: TurnState = {
      begun: new Promise<void>((resolve) => (begin = resolve)),
      beganAt: undefined,
      lastProgressAt: 0,
      done: new Promise<void>((resolve) => (finish = resolve)),
      released: false,
      progress() {
        turn.lastProgressAt = now();
      },
      release() {
        turn.released = true;
        finish();
      },
    };
    return {
      turn,
      begin: () => {
        turn.beganAt = turn.lastProgressAt = now();
        begin();
      },
    };
  }

  /** Wait until `before` is released, or has begun and then stalled for `idleMs` or run `maxWaitMs`. */
  async function waitFor(before: TurnState): Promise<void> {
    await Promise.race([before.begun, before.done]);
    while (!before.released) {
      const t = now();
      const sinceBegun = t - (before.beganAt ?? t);
      const idle = t - before.lastProgressAt;
      const wait = Math.min(options.idleMs - idle, options.maxWaitMs - sinceBegun);
      if (wait <= 0) return;
      await Promise.race([before.done, sleep(wait)]);
    }
  }

  return {
    async take() {
      const before = last;
      const { turn, begin } = newTurn();
      last = turn;
      if (before) await waitFor(before);
      begin();
      return turn;
    },
  };
}
