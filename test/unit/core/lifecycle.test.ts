import { describe, expect, it } from 'vitest';
import { runPeriodic, stopAll } from '../../../src/core/lifecycle.ts';
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
