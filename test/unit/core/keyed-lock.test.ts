/**
 * The keyed lock of slot 0's proposals (src/core/keyed-lock.ts): tasks that only share a key run
 * together (every create of one owner reads its principal); a task holding a key exclusively runs
 * alone on it, after the earlier holders and before the later ones; a failed task releases its keys.
 * A fast-check property runs random mixes and checks that no two conflicting tasks ever overlap and
 * that conflicting tasks start in the order they came.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { createKeyedLock } from '../../../src/core/keyed-lock.ts';

/** A promise and its resolver. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((r) => (open = r));
  return { promise, open };
}

const ticks = async (n: number) => {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
};

describe('the keyed lock', () => {
  it('runs tasks that only share a key together, and a task writing it after them, then the later readers', async () => {
    const lock = createKeyedLock();
    const started: string[] = [];
    const gates = new Map<string, ReturnType<typeof gate>>();
    const task = (name: string) => () => {
      started.push(name);
      const g = gate();
      gates.set(name, g);
      return g.promise.then(() => name);
    };
    const r1 = lock.run({ exclusive: ['secret!1'], shared: ['principal!p'] }, task('r1'));
    const r2 = lock.run({ exclusive: ['secret!2'], shared: ['principal!p'] }, task('r2'));
    const w = lock.run({ exclusive: ['principal!p'] }, task('w'));
    const r3 = lock.run({ exclusive: ['secret!3'], shared: ['principal!p'] }, task('r3'));
    await ticks(5);
    // Both readers in flight at once; the writer waits for them, the later reader for the writer.
    expect(started).toEqual(['r1', 'r2']);
    gates.get('r2')!.open();
    await ticks(5);
    expect(started).toEqual(['r1', 'r2']);
    gates.get('r1')!.open();
    await ticks(5);
    expect(started).toEqual(['r1', 'r2', 'w']);
    gates.get('w')!.open();
    await ticks(5);
    expect(started).toEqual(['r1', 'r2', 'w', 'r3']);
    gates.get('r3')!.open();
    expect(await Promise.all([r1, r2, w, r3])).toEqual(['r1', 'r2', 'w', 'r3']);
  });

  it('releases the keys of a failed task', async () => {
    const lock = createKeyedLock();
    await expect(lock.run({ exclusive: ['k'], shared: ['s'] }, () => Promise.reject(new Error('no')))).rejects.toThrow('no');
    await expect(lock.run({ exclusive: ['k', 's'] }, async () => 'next')).resolves.toBe('next');
  });

  it('holds a key named both ways exclusively', async () => {
    const lock = createKeyedLock();
    const g = gate();
    let second = false;
    const first = lock.run({ exclusive: ['k'], shared: ['k'] }, () => g.promise);
    const later = lock.run({ exclusive: [], shared: ['k'] }, async () => (second = true));
    await ticks(5);
    expect(second).toBe(false);
    g.open();
    await Promise.all([first, later]);
    expect(second).toBe(true);
  });

  it('never runs conflicting tasks at once, and starts them in arrival order (property)', async () => {
    const keys = fc.subarray(['a', 'b', 'c', 'd']);
    const op = fc.record({ exclusive: keys, shared: keys, work: fc.integer({ min: 0, max: 4 }), fails: fc.boolean(), gap: fc.integer({ min: 0, max: 2 }) });
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 25 }), async (ops) => {
        const lock = createKeyedLock();
        const modes = ops.map((o) => {
          const m = new Map<string, 'x' | 's'>();
          for (const k of o.shared) m.set(k, 's');
          for (const k of o.exclusive) m.set(k, 'x');
          return m;
        });
        const conflict = (i: number, j: number) => [...modes[i]!].some(([k, mode]) => modes[j]!.has(k) && (mode === 'x' || modes[j]!.get(k) === 'x'));
        const running = new Set<number>();
        const startedAt: number[] = [];
        let clock = 0;
        const runs: Array<Promise<unknown>> = [];
        for (const [i, o] of ops.entries()) {
          runs.push(
            lock
              .run({ exclusive: o.exclusive, shared: o.shared }, async () => {
                for (const j of running) expect(conflict(i, j), `task ${i} overlaps ${j}`).toBe(false);
                running.add(i);
                startedAt[i] = clock++;
                await ticks(o.work);
                running.delete(i);
                if (o.fails) throw new Error('task failed');
              })
              .catch(() => undefined),
          );
          await ticks(o.gap);
        }
        await Promise.all(runs);
        expect(startedAt.filter((t) => t !== undefined)).toHaveLength(ops.length);
        for (let i = 0; i < ops.length; i++) for (let j = i + 1; j < ops.length; j++) if (conflict(i, j)) expect(startedAt[i]!, `${i} before ${j}`).toBeLessThan(startedAt[j]!);
      }),
      { numRuns: 150 },
    );
  });
});
