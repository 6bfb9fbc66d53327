/**
 * Slot 0's create service (src/core/replication/creator.ts): while slot 0 holds its own writes, not
 * knowing its own log yet (own-log.ts), it runs no operation — a coordinator's or its own: it waits
 * for the release up to half its deadline, then answers NOT_READY (retryable).
 */
import { describe, expect, it } from 'vitest';
import { createCreator } from '../../../../src/core/replication/creator.ts';
import { createLogger } from '../../../../src/log/index.ts';

const coordinator = { id: 'node-1', slot: 1, peerId: 'p1', nodeAddress: `0x${'1'.repeat(40)}`, signingPublicKey: '', multiaddrs: [], httpUrl: 'http://127.0.0.1:1' };

describe('slot 0 while it holds its own writes', () => {
  it('waits for the release, or refuses NOT_READY when it does not come in time', async () => {
    let held = true;
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const waits: number[] = [];
    let allocated = 0;
    const creator = createCreator(
      { timeoutMs: 1000 },
      {
        isCreator: true,
        counters: { next: async () => ++allocated },
        requestCreate: async () => undefined,
        ownWritesReleased: async (waitMs) => {
          waits.push(waitMs);
          return !held || (await Promise.race([released.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), 10))]));
        },
        logger: createLogger({ level: 'silent' }),
      },
    );
    creator.register('claimEmail', async () => ({ principalId: 'p' }));
    await expect(creator.allocate('secretId')).rejects.toMatchObject({ code: 'NOT_READY', extra: { retryAfterSeconds: 1 } });
    await expect(creator.handle({ op: 'claimEmail', params: {} }, coordinator)).rejects.toMatchObject({ code: 'NOT_READY' });
    expect(allocated).toBe(0);
    expect(waits).toEqual([500, 500]);
    // Released while it waits: the operation runs.
    const waiting = creator.allocate('secretId');
    release();
    held = false;
    expect(await waiting).toBe(1);
    expect(await creator.handle({ op: 'claimEmail', params: {} }, coordinator)).toEqual({ principalId: 'p' });
    expect(allocated).toBe(1);
  });
});
