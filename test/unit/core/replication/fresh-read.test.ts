/**
 * fresh-read: a miss is settled by a catch-up that started after it; bursts share rounds; a miss
 * after catching up with enough members is a true "not found", with too few a 503.
 */
import { describe, expect, it } from 'vitest';
import { createFreshReader } from '../../../../src/core/replication/fresh-read.ts';
import type { ReplicatedRecord } from '../../../../src/core/replication/record.ts';
import { AppError } from '../../../../src/errors/index.ts';

function setup(covered = 3) {
  const held = new Map<string, ReplicatedRecord>();
  let now = 0;
  let rounds = 0;
  const releases: Array<() => void> = [];
  const reader = createFreshReader(
    { membersToAsk: 3 },
    {
      state: { get: async (kind, key) => held.get(`${kind}!${key}`) },
      catchUp: () =>
        new Promise<number>((resolve) => {
          rounds++;
          releases.push(() => resolve(covered));
        }),
      now: () => now,
    },
  );
  const release = async () => {
    await new Promise((r) => setImmediate(r));
    releases.shift()?.();
    await new Promise((r) => setImmediate(r));
  };
  return { held, reader, release, tick: () => (now += 1), rounds: () => rounds };
}

describe('fresh reads', () => {
  it('finds what the catch-up brought, and says "not found" only after enough members were asked', async () => {
    const s = setup();
    const found = s.reader.get('secret', 'a');
    s.held.set('secret!a', { kind: 'secret', key: 'a' } as ReplicatedRecord);
    await s.release();
    expect((await found)?.key).toBe('a');
    const missing = s.reader.get('secret', 'b');
    s.tick();
    await s.release();
    expect(await missing).toBeUndefined();
  });

  it('a burst of misses costs at most two rounds; a miss during a round waits for the next one', async () => {
    const s = setup();
    const first = s.reader.get('secret', 'x');
    await new Promise((r) => setImmediate(r));
    s.tick();
    const burst = Array.from({ length: 100 }, (_, i) => s.reader.get('secret', `y${i}`));
    await s.release();
    // The running round began before the burst: the burst waits for a second one, shared.
    expect(s.rounds()).toBe(2);
    await s.release();
    await Promise.all([first, ...burst]);
    expect(s.rounds()).toBe(2);
  });

  it('with too few members reached, a miss is 503 NOT_READY with Retry-After', async () => {
    const s = setup(2);
    const miss = s.reader.get('permit', 'p').catch((e: unknown) => e);
    await s.release();
    const err = await miss;
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).code).toBe('NOT_READY');
  });
});
