/**
 * Slot 0's counters (src/store/level-store.ts, through slot 0's registry, src/core/slot0-registry.ts)
 * and the reverse state listing the id floor reads: a counter raised to a value never hands out one
 * at or below it, is never lowered, survives a reopen, and is serialised with the allocations;
 * `listState` in reverse yields the last key first.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { openStore, type NodeStore } from '../../../src/store/index.ts';
import { createSlot0Registry } from '../../../src/core/slot0-registry.ts';
import type { ReplicatedRecord } from '../../../src/core/replication/record.ts';
import { cleanupStack, tempDir } from '../../utils/temp.ts';

const stack = cleanupStack();
afterEach(() => stack.run());

const state = (kind: string, key: string, seq: number): ReplicatedRecord => ({ kind, key, origin: `0x${'1'.repeat(40)}`, seq, hlc: [1, 0], body: { key }, sig: '0x' });

/** The registry over a real store, as the node wires it, and one queue of its operations. */
function registryOf(store: NodeStore) {
  const registry = createSlot0Registry({ store: { getClaim: (n) => store.claims.get(n), getCounter: (n) => store.counters.current(n), write: (c) => store.claims.commit(c) } });
  return registry.serialised();
}

describe('slot 0 counters', () => {
  it('raiseTo lifts the last value allocated, never lowers it, survives a reopen, and is serialised with allocations', async () => {
    const location = await tempDir(stack);
    let store = await openStore({ location });
    let run = registryOf(store);
    expect(await run((tx) => tx.next('secretId'))).toBe(1);
    expect(await run((tx) => tx.raiseTo('secretId', 40))).toBe(1);
    expect(await run((tx) => tx.raiseTo('secretId', 7))).toBe(40);
    expect(await store.counters.current('secretId')).toBe(40);
    // An allocation queued behind a raise gets a value above it.
    const [, next] = await Promise.all([run((tx) => tx.raiseTo('secretId', 50)), run((tx) => tx.nextWithClaim('secretId', 'claim', (id) => String(id)))]);
    expect(next).toBe(51);
    expect(await store.claims.get('claim')).toBe('51');
    await store.close();
    store = await openStore({ location });
    stack.push(() => store.close());
    run = registryOf(store);
    expect(await run((tx) => tx.next('secretId'))).toBe(52);
  });

  it('listState in reverse yields the last key first', async () => {
    const store = await openStore({ location: await tempDir(stack) });
    stack.push(() => store.close());
    // A state names its record's place in the log: the winners are logged in the same batch.
    const winners = ['000000000002', '000000000010', '000000000009'].map((k, i) => state('secret', k, i + 1)).concat(state('sessions', 'zzz', 4));
    await store.records.commit({ log: winners, states: winners, vv: {} });
    const keys = async (o: { limit?: number; reverse?: boolean }) => {
      const out: string[] = [];
      for await (const r of store.records.listState('secret', o)) out.push(r.key);
      return out;
    };
    expect(await keys({})).toEqual(['000000000002', '000000000009', '000000000010']);
    expect(await keys({ reverse: true, limit: 1 })).toEqual(['000000000010']);
  });
});
