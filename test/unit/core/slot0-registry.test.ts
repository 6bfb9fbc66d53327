/**
 * Slot 0's registry (src/core/slot0-registry.ts) over an in-memory store whose writes the test lets
 * through or fails one at a time: concurrent allocations get distinct ids in few writes, none answered
 * before it is durable; a failed write answers its operations and the ones staged after it with an
 * error and hands none of their ids out again; a claim read while its batch is written waits for it.
 */
import { describe, expect, it } from 'vitest';
import { waitFor } from '../../../src/testing/index.ts';
import { createSlot0Registry, type RegistryChange } from '../../../src/core/slot0-registry.ts';

/** A store held in maps; each write waits until the test settles it. */
function gatedStore() {
  const counters = new Map<string, number>();
  const claims = new Map<string, string>();
  const writes: Array<{ change: RegistryChange; ok(): void; fail(err: Error): void }> = [];
  return {
    counters,
    claims,
    writes,
    store: {
      getClaim: async (name: string) => claims.get(name),
      getCounter: async (name: string) => counters.get(name) ?? 0,
      write: (change: RegistryChange) =>
        new Promise<void>((resolve, reject) => {
          writes.push({
            change,
            ok() {
              for (const [k, v] of change.counters) counters.set(k, v);
              for (const [k, v] of change.claims) claims.set(k, v);
              resolve();
            },
            fail: reject,
          });
        }),
    },
  };
}

/** Tracks when a promise settles, for assertions on what has been answered so far. */
function watched<T>(p: Promise<T>) {
  const w = { settled: false, value: undefined as T | undefined, error: undefined as unknown };
  p.then(
    (v) => Object.assign(w, { settled: true, value: v }),
    (e: unknown) => Object.assign(w, { settled: true, error: e }),
  );
  return w;
}

describe('slot 0 registry', () => {
  it('gives concurrent allocations distinct ids, several in one write, each answered only once its write is durable', async () => {
    const { store, writes, claims } = gatedStore();
    const registry = createSlot0Registry({ store });
    const run = registry.serialised();
    const ops = Array.from({ length: 10 }, (_, i) => watched(run((tx) => tx.nextWithClaim('secretId', `c${i}`, (id) => String(id)))));
    // The first write is in flight with the first claim; the others are decided and wait, staged, for the next one.
    await waitFor(async () => writes.length === 1 && (await Promise.all(ops.map((_, i) => registry.get(`c${i}`)))).every((v) => v !== undefined));
    expect(writes[0]!.change.claims.size).toBe(1);
    expect(ops.some((o) => o.settled)).toBe(false);
    writes[0]!.ok();
    await waitFor(() => ops[0]!.settled && writes.length === 2);
    expect(ops.slice(1).some((o) => o.settled)).toBe(false);
    writes[1]!.ok();
    await waitFor(() => ops.every((o) => o.settled));
    expect(writes.length).toBe(2);
    expect(writes[1]!.change.claims.size).toBe(9);
    const ids = ops.map((o) => o.value);
    expect(new Set(ids).size).toBe(10);
    for (const [i, id] of ids.entries()) expect(claims.get(`c${i}`)).toBe(String(id));
    expect(await store.getCounter('secretId')).toBe(10);
  });

  it('fails the operations of a failed write and of those staged after it, and hands none of their ids out twice', async () => {
    const { store, writes, claims } = gatedStore();
    const failures: unknown[] = [];
    const registry = createSlot0Registry({ store, onWriteFailed: (err) => failures.push(err) });
    const run = registry.serialised();
    const first = watched(run((tx) => tx.nextWithClaim('secretId', 'a', (id) => String(id))));
    await waitFor(() => writes.length === 1);
    writes[0]!.ok();
    await waitFor(() => first.settled);
    expect(first.value).toBe(1);

    const inFailed = watched(run((tx) => tx.nextWithClaim('secretId', 'b', (id) => String(id))));
    await waitFor(() => writes.length === 2);
    // Staged while the failing write is in flight: it rests on it, so it fails too, unwritten.
    const staged = watched(run((tx) => tx.nextWithClaim('secretId', 'c', (id) => String(id))));
    await waitFor(async () => (await registry.get('c')) !== undefined);
    writes[1]!.fail(new Error('disk gone'));
    await waitFor(() => inFailed.settled && staged.settled);
    expect(inFailed.error).toMatchObject({ code: 'NOT_READY' });
    expect(staged.error).toMatchObject({ code: 'NOT_READY' });
    expect(failures).toHaveLength(1);
    expect(await registry.get('b')).toBeUndefined();
    expect(await registry.get('c')).toBeUndefined();

    // The next allocation decides from what is durable: above every durable claim, and answered once durable.
    const next = watched(run((tx) => tx.nextWithClaim('secretId', 'd', (id) => String(id))));
    await waitFor(() => writes.length === 3);
    expect(writes.length).toBe(3);
    writes[2]!.ok();
    await waitFor(() => next.settled);
    expect(next.value).toBe(2);
    expect([...claims.values()]).toEqual(['1', '2']);
  });

  it('answers an operation that read a claim still being written only once that claim is durable', async () => {
    const { store, writes } = gatedStore();
    const registry = createSlot0Registry({ store });
    const claimsQueue = registry.serialised();
    const other = registry.serialised();
    const put = watched(claimsQueue(async (tx) => tx.put('email:ab', 'p1')));
    await waitFor(() => writes.length === 1);
    // Another queue reads it meanwhile, and writes nothing itself.
    const read = watched(other((tx) => tx.get('email:ab')));
    const outside = await registry.get('email:ab');
    expect(outside).toBe('p1');
    await new Promise((r) => setImmediate(r));
    expect(read.settled).toBe(false);
    writes[0]!.ok();
    await waitFor(() => read.settled && put.settled);
    expect(read.value).toBe('p1');
    // A read of a durable claim needs no write.
    expect(await other((tx) => tx.get('email:ab'))).toBe('p1');
    expect(writes).toHaveLength(1);
  });
});
