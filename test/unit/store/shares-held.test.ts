/**
 * The share inventory's full scan reads which shares a member holds in one pass over the stored keys
 * (src/store/level-store.ts, `shares.heldLabels`): the same answer as a point read per label, for
 * Web2 (numeric) and Web3 (`<chainId>:<secretId>`) labels alike, as of the pass.
 */
import { afterEach, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { openStore } from '../../../src/store/index.ts';
import { cleanupStack, tempDir } from '../../utils/temp.ts';

const stack = cleanupStack();
afterEach(() => stack.run());

const label = fc.oneof(fc.integer({ min: 1, max: 2 ** 40 }), fc.tuple(fc.integer({ min: 1, max: 99_999 }), fc.integer({ min: 1, max: 2 ** 40 })).map(([c, s]) => `${c}:${s}`));

describe('held share labels', () => {
  it('answer as a point read per label does, for held and never-stored labels alike (property)', async () => {
    const store = await openStore({ location: await tempDir(stack) });
    stack.push(() => store.close());
    await fc.assert(
      fc.asyncProperty(fc.uniqueArray(label, { minLength: 1, maxLength: 40 }), fc.uniqueArray(label, { maxLength: 20 }), async (stored, asked) => {
        for (const l of stored) await store.shares.put(l, Uint8Array.of(1, 2, 3), { durable: false });
        const held = await store.shares.heldLabels!();
        for (const l of [...stored, ...asked]) expect(held.has(l), String(l)).toBe(await store.shares.has(l));
        for (const l of stored) expect(held.has(l)).toBe(true);
      }),
      { numRuns: 25 },
    );
  });

  it('answer get and has as the stored shares say, across reopens, with labels past the highest held read from memory (property)', async () => {
    const location = await tempDir(stack);
    let store = await openStore({ location });
    stack.push(() => store.close());
    const model = new Map<number | string, number>();
    await fc.assert(
      fc.asyncProperty(fc.array(fc.oneof(fc.record({ put: label, byte: fc.integer({ min: 0, max: 255 }) }), fc.record({ ask: label }), fc.constant('reopen' as const)), { maxLength: 30 }), async (ops) => {
        for (const op of ops) {
          if (op === 'reopen') {
            await store.close();
            store = await openStore({ location });
          } else if ('put' in op) {
            await store.shares.put(op.put, Uint8Array.of(op.byte));
            model.set(op.put, op.byte);
          } else {
            const held = model.get(op.ask);
            expect(await store.shares.get(op.ask), String(op.ask)).toEqual(held === undefined ? undefined : Uint8Array.of(held));
            expect(await store.shares.has(op.ask), String(op.ask)).toBe(held !== undefined);
          }
        }
        for (const [l, byte] of model) expect(await store.shares.get(l), String(l)).toEqual(Uint8Array.of(byte));
      }),
      { numRuns: 30 },
    );
    await store.close();
  });

  it('is a snapshot of the pass: a share stored after it is not in it, and a new pass has it', async () => {
    const store = await openStore({ location: await tempDir(stack) });
    stack.push(() => store.close());
    await store.shares.put(7, Uint8Array.of(1));
    const before = await store.shares.heldLabels!();
    await store.shares.put('31337:8', Uint8Array.of(2));
    expect([before.has(7), before.has('31337:8')]).toEqual([true, false]);
    expect((await store.shares.heldLabels!()).has('31337:8')).toBe(true);
  });

  it('cover every share past a page of keys (the pass reads a thousand at a time)', async () => {
    const store = await openStore({ location: await tempDir(stack) });
    stack.push(() => store.close());
    const labels = Array.from({ length: 2_345 }, (_, i) => (i % 3 === 0 ? `31337:${i + 1}` : i + 1));
    await Promise.all(labels.map((l) => store.shares.put(l, Uint8Array.of(1), { durable: false })));
    const held = await store.shares.heldLabels!();
    expect(labels.filter((l) => !held.has(l))).toEqual([]);
    expect(held.has(2_346)).toBe(false);
  });
});
