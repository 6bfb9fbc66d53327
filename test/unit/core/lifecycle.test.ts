import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { runPeriodic, stopAll, withDeadline } from '../../../src/core/lifecycle.ts';
import { createLogger } from '../../../src/log/index.ts';
import { waitFor } from '../../../src/testing/wait.ts';
import { stillPending } from './pending.ts';

const logger = createLogger({ level: 'silent' });

describe('runPeriodic', () => {
  it('repeats, never overlaps runs, and goes on after a run throws', async () => {
    let runs = 0;
    let inFlight = 0;
    let maxInFlight = 0;
    const loop = runPeriodic(
      async () => {
        runs++;
        inFlight++;
        maxInFlight = Math.max(maxInFlight, inFlight);
        await new Promise((r) => setImmediate(r));
        inFlight--;
        if (runs === 2) throw new Error('one bad run');
      },
      { intervalMs: 1, signal: new AbortController().signal, logger, name: 'test' },
    );
    void loop.kick();
    void loop.kick();
    await waitFor(() => runs >= 4);
    await loop.stop();
    expect(maxInFlight).toBe(1);
  });

  it('stop waits for the run in flight, and nothing runs after it', async () => {
    let release!: () => void;
    let finished = false;
    let runs = 0;
    const loop = runPeriodic(
      async () => {
        runs++;
        await new Promise<void>((r) => (release = r));
        finished = true;
      },
      { intervalMs: 1, signal: new AbortController().signal, logger, name: 'test', immediate: true },
    );
    await waitFor(() => runs === 1);
    const stopped = loop.stop();
    expect(await stillPending(stopped)).toBe(true);
    release();
    await stopped;
    expect(finished).toBe(true);
    await loop.kick();
    expect(runs).toBe(1);
    await loop.stop();
  });

  it("ends when the node's lifetime signal aborts", async () => {
    const lifetime = new AbortController();
    let runs = 0;
    const loop = runPeriodic(() => void runs++, { intervalMs: 1, signal: lifetime.signal, logger, name: 'test' });
    await waitFor(() => runs >= 1);
    lifetime.abort();
    const after = runs;
    await loop.kick();
    expect(runs).toBe(after);
  });
});

describe('stopAll', () => {
  it('stops every part in order even when one fails, then reports the first failure', async () => {
    const order: string[] = [];
    const part = (name: string, fail = false) => ({
      async stop() {
        order.push(name);
        if (fail) throw new Error(`${name} failed`);
      },
    });
    await expect(stopAll([part('a'), part('b', true), undefined, part('c', true), part('d')])).rejects.toThrow('b failed');
    expect(order).toEqual(['a', 'b', 'c', 'd']);
  });
});

describe('withDeadline', () => {
  /** A call that ends only when its signal aborts (or had), with the signal's reason, as the member calls do. */
  const untilAborted = (signal: AbortSignal) =>
    new Promise<never>((_, reject) => {
      if (signal.aborted) return reject(signal.reason as Error);
      signal.addEventListener('abort', () => reject(signal.reason as Error), { once: true });
    });
  const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;

  it('aborts the call with a TimeoutError once its deadline passes', async () => {
    const err = await withDeadline(20, undefined, untilAborted).catch((e: unknown) => e);
    expect((err as Error).name).toBe('TimeoutError');
  });

  it("aborts the call with the parent's reason when the parent aborts first, or already had", async () => {
    const parent = new AbortController();
    const call = withDeadline(60_000, parent.signal, untilAborted).catch((e: unknown) => e);
    parent.abort(new Error('node stopping'));
    expect(((await call) as Error).message).toBe('node stopping');
    const aborted = AbortSignal.abort(new Error('gone'));
    expect(((await withDeadline(60_000, aborted, untilAborted).catch((e: unknown) => e)) as Error).message).toBe('gone');
  });

  it('leaves no timer and no listener on the parent once the call ends, answered or failed', async () => {
    const parent = new AbortController();
    const before = timers();
    const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => withDeadline(60_000, parent.signal, async () => i)));
    expect(answers[49]).toBe(49);
    await expect(withDeadline(60_000, parent.signal, () => Promise.reject(new Error('refused')))).rejects.toThrow('refused');
    expect(getEventListeners(parent.signal, 'abort')).toHaveLength(0);
    expect(timers()).toBe(before);
  });
});
