import { describe, expect, it } from 'vitest';
import { createCommitQueue, type PendingApply } from '../../../../src/core/replication/group-commit.ts';
import type { ReplicatedRecord } from '../../../../src/core/replication/record.ts';
import { createLogger } from '../../../../src/log/index.ts';

const logger = createLogger({ level: 'silent' });

/** `n` placeholder records (the queue never looks inside them). */
const records = (n: number, tag: string) => Array.from({ length: n }, (_, i) => ({ key: `${tag}${i}` }) as unknown as ReplicatedRecord);

/**
 * A queue whose commits wait for `release()`; each commit's batch is kept, and resolves every apply
 * with its record count (own writes get numbered placeholders).
 */
function gatedQueue(maxBatchRecords = 100, heldWriteWaitMs?: number) {
  const batches: PendingApply[][] = [];
  let gates: Array<() => void> = [];
  let failing: Error | undefined;
  const heldChanges: boolean[] = [];
  const queue = createCommitQueue(
    { maxBatchRecords, ...(heldWriteWaitMs === undefined ? {} : { heldWriteWaitMs }) },
    {
      logger,
      onHeldChange: (held) => void heldChanges.push(held),
      async commit(batch) {
        batches.push(batch);
        await new Promise<void>((resolve) => gates.push(resolve));
        if (failing) throw failing;
        for (const p of batch) {
          if (p.own) p.records = records(p.own.length, 'own');
          p.resolve({ applied: p.records.length, duplicates: 0, rejected: [] });
        }
      },
    },
  );
  /** Let the commit being written finish: waits (a few event-loop turns at most) until one is. */
  const release = async () => {
    for (let turn = 0; gates.length === 0; turn++) {
      if (turn === 20) throw new Error('no commit is being written');
      await tick();
    }
    const open = gates;
    gates = [];
    for (const g of open) g();
  };
  return { queue, batches, release, heldChanges, fail: (err: Error | undefined) => (failing = err) };
}

const tick = () => new Promise((r) => setImmediate(r));

/** Wait (a few event-loop turns at most) until `done()` holds. */
async function turnsUntil(done: () => boolean): Promise<void> {
  for (let turn = 0; !done(); turn++) {
    if (turn === 20) throw new Error('condition not reached');
    await tick();
  }
}

describe('group commit', () => {
  it('puts everything queued while a batch is being committed into the next single batch', async () => {
    const { queue, batches, release } = gatedQueue();
    const first = queue.enqueue(records(2, 'a'), 'apply');
    await tick();
    expect(batches).toHaveLength(1);
    // Three applies arrive while the first batch is being written.
    const waiting = [queue.enqueue(records(3, 'b'), 'gossip'), queue.enqueue(records(1, 'c'), 'sync'), queue.enqueueOwn([{ kind: 'note', key: 'x', body: { v: 1 } }])];
    await tick();
    expect(batches).toHaveLength(1);
    await release();
    expect(await first).toEqual({ applied: 2, duplicates: 0, rejected: [] });
    await turnsUntil(() => batches.length === 2);
    expect(batches[1]!.map((p) => p.source)).toEqual(['gossip', 'sync', 'local']);
    await release();
    const [b, c, own] = await Promise.all(waiting);
    expect(b).toMatchObject({ applied: 3 });
    expect(c).toMatchObject({ applied: 1 });
    expect(own).toHaveLength(1);
    expect(batches).toHaveLength(2);
  });

  it('takes everything queued in one event-loop turn into one batch, whatever microtasks it came over', async () => {
    const { queue, batches, release } = gatedQueue();
    // An answer, a message and a write arrive over several microtasks of one turn: the first does not
    // go alone with the others behind it.
    const first = queue.enqueue(records(1, 'a'), 'apply');
    await Promise.resolve();
    const second = queue.enqueue(records(2, 'b'), 'apply');
    await Promise.resolve();
    await Promise.resolve();
    const own = queue.enqueueOwn([{ kind: 'note', key: 'x', body: { v: 1 } }]);
    await release();
    await Promise.all([first, second, own]);
    expect(batches.map((b) => b.map((p) => p.source))).toEqual([['apply', 'apply', 'local']]);
  });

  it('takes at most maxBatchRecords into one batch, but never splits one apply', async () => {
    const { queue, batches, release } = gatedQueue(5);
    const first = queue.enqueue(records(1, 'a'), 'apply');
    await tick();
    const rest = [queue.enqueue(records(3, 'b'), 'sync'), queue.enqueue(records(2, 'c'), 'sync'), queue.enqueue(records(9, 'd'), 'sync')];
    for (let i = 0; i < 3; i++) await release();
    await Promise.all([first, ...rest]);
    expect(batches.map((b) => b.map((p) => p.records.length))).toEqual([[1], [3, 2], [9]]);
  });

  it('rejects every apply of a failed batch, and goes on with the next', async () => {
    const { queue, release, fail } = gatedQueue();
    const first = queue.enqueue(records(1, 'a'), 'apply');
    await tick();
    const second = queue.enqueue(records(1, 'b'), 'apply');
    const third = queue.enqueue(records(1, 'c'), 'apply');
    fail(new Error('disk full'));
    await release();
    await expect(first).rejects.toThrow('disk full');
    fail(undefined);
    await tick();
    await release();
    expect(await second).toMatchObject({ applied: 1 });
    expect(await third).toMatchObject({ applied: 1 });
  });

  it('holds own writes until the hold resolves, and fails them all when it rejects', async () => {
    const { queue, batches, release } = gatedQueue();
    let lift!: () => void;
    queue.holdOwnWrites(new Promise<void>((resolve) => (lift = resolve)));
    const own = queue.enqueueOwn([{ kind: 'note', key: 'x', body: { v: 1 } }]);
    // Peers' records are not held.
    const peer = queue.enqueue(records(1, 'p'), 'apply');
    await tick();
    await release();
    await peer;
    expect(batches.flat().some((p) => p.own)).toBe(false);
    lift();
    await tick();
    await release();
    expect(await own).toHaveLength(1);

    queue.holdOwnWrites(Promise.reject(new Error('restore failed')));
    await expect(queue.enqueueOwn([{ kind: 'note', key: 'y', body: { v: 2 } }])).rejects.toThrow('restore failed');
    await expect(queue.enqueueOwn([{ kind: 'note', key: 'z', body: { v: 3 } }])).rejects.toThrow('restore failed');
  });

  it('an own write waits for the release at most heldWriteWaitMs, then fails NOT_READY having taken no seq', async () => {
    const { queue, batches, release, heldChanges } = gatedQueue(100, 20);
    let lift!: () => void;
    queue.holdOwnWrites(new Promise<void>((resolve) => (lift = resolve)));
    expect(queue.ownWritesHeld()).toBe(true);
    await expect(queue.enqueueOwn([{ kind: 'note', key: 'x', body: { v: 1 } }])).rejects.toMatchObject({ code: 'NOT_READY' });
    expect(batches).toHaveLength(0);
    expect(await queue.ownWritesReleased(5)).toBe(false);
    // One released within the wait is written.
    const own = queue.enqueueOwn([{ kind: 'note', key: 'y', body: { v: 2 } }]);
    lift();
    await tick();
    await release();
    expect(await own).toHaveLength(1);
    expect(queue.ownWritesHeld()).toBe(false);
    expect(await queue.ownWritesReleased(5)).toBe(true);
    expect(heldChanges).toEqual([true, false]);
  });

  it('stop waits for every queued apply, and is idempotent', async () => {
    const { queue, release } = gatedQueue();
    const settled: string[] = [];
    void queue.enqueue(records(1, 'a'), 'apply').then(() => settled.push('a'));
    await tick();
    void queue.enqueue(records(1, 'b'), 'apply').then(() => settled.push('b'));
    let stopped = false;
    const stopping = queue.stop().then(() => (stopped = true));
    await tick();
    expect(stopped).toBe(false);
    await release();
    await tick();
    expect(stopped).toBe(false);
    await release();
    await stopping;
    expect(settled).toEqual(['a', 'b']);
    await queue.stop();
  });
});
