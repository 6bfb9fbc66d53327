/**
 * Sync turns (src/cluster/sync-turns.ts; docs/architecture.md, "Sync (catch-up)"): a sync waits
 * while the one before it reads pages, starts once that one stalls for `idleMs` or has run
 * `maxWaitMs`, and turns asked for together start one after another — the catch-up that once
 * started three duplicate streams at once when a first sync ran past a second.
 */
import { describe, expect, it } from 'vitest';
import { createSyncTurns, type SyncTurn } from '../../../src/cluster/sync-turns.ts';

/** A clock the test moves; sleepers wake when it passes their time. */
function manualClock() {
  let t = 0;
  const sleepers: Array<{ at: number; wake: () => void }> = [];
  return {
    now: () => t,
    sleep: (ms: number) => new Promise<void>((wake) => sleepers.push({ at: t + ms, wake })),
    async advance(ms: number) {
      t += ms;
      for (const s of sleepers.splice(0)) {
        if (s.at <= t) s.wake();
        else sleepers.push(s);
      }
      // Let woken waiters run and go back to sleep.
      for (let i = 0; i < 20; i++) await Promise.resolve();
    },
  };
}

async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await Promise.resolve();
}

describe('sync turns', () => {
  const options = { idleMs: 1_000, maxWaitMs: 10_000 };

  /** A first turn taken, and a second asked for behind it: `second()` is it once it has started. */
  async function firstAndNext() {
    const clock = manualClock();
    const turns = createSyncTurns({ ...options, now: clock.now, sleep: clock.sleep });
    const first = await turns.take();
    let next: SyncTurn | undefined;
    void turns.take().then((t) => (next = t));
    return { clock, first, second: () => next };
  }

  it('the first turn starts at once; the next waits while the first reads pages, and starts when it is released', async () => {
    const { clock, first, second } = await firstAndNext();
    for (let i = 0; i < 5; i++) {
      await clock.advance(900);
      first.progress();
    }
    expect(second(), 'waits while pages arrive (4.5 s, never 1 s without one)').toBeUndefined();
    first.release();
    await settle();
    expect(second()).toBeDefined();
  });

  it('a turn whose holder reads no page for idleMs lets the next one start', async () => {
    const { clock, first, second } = await firstAndNext();
    await clock.advance(600);
    first.progress();
    await clock.advance(999);
    expect(second()).toBeUndefined();
    await clock.advance(1);
    expect(second(), '1 s after the last page').toBeDefined();
  });

  it('turns asked for together start one after another: the third waits for the second to begin and stall, not for the first alone', async () => {
    const clock = manualClock();
    const turns = createSyncTurns({ ...options, now: clock.now, sleep: clock.sleep });
    await turns.take(); // a withholding peer: never a page, never released
    const started: number[] = [];
    void turns.take().then(() => started.push(clock.now()));
    void turns.take().then(() => started.push(clock.now()));
    await clock.advance(1_000);
    expect(started).toEqual([1_000]);
    await clock.advance(1_000);
    expect(started).toEqual([1_000, 2_000]);
  });

  it('a turn that trickles pages holds the next one back at most maxWaitMs', async () => {
    const { clock, first, second } = await firstAndNext();
    for (let elapsed = 0; elapsed < 9_500; elapsed += 500) {
      await clock.advance(500);
      first.progress();
    }
    expect(second()).toBeUndefined();
    await clock.advance(500);
    expect(second(), 'after 10 s in all').toBeDefined();
  });
});
