/**
 * `NodeStore.snapshot()` (src/store/level-store.ts): one consistent point in time — the moment of the
 * call — across every sublevel, whatever is written while it is read.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { openStore, sublevelOf } from '../../../src/store/index.ts';
import { cleanupStack, tempDir } from '../../utils/temp.ts';

const stack = cleanupStack();
afterEach(() => stack.run());

describe('store snapshot', () => {
  it('sees what was written before the call and nothing written after it, in any sublevel', async () => {
    const store = await openStore({ location: await tempDir(stack) });
    stack.push(() => store.close());
    for (let i = 0; i < 300; i++) await store.claims.put(`before-${String(i).padStart(3, '0')}`, 'x');
    await store.shares.put(1, new Uint8Array([1]));

    const snapshot = store.snapshot();
    // Written after the call, before the first read, and while reading.
    await store.claims.put('after-0', 'y');
    await store.shares.put(2, new Uint8Array([2]));
    const keys: string[] = [];
    for await (const { key } of snapshot) {
      keys.push(Buffer.from(key).toString('utf8'));
      if (keys.length === 10) {
        await store.claims.put('zzz-after', 'z');
        await store.putMeta('after', 1);
      }
    }
    expect(keys.filter((k) => k.startsWith('!claims!before-'))).toHaveLength(300);
    expect(keys).toContain('!shares!000000000001');
    expect(keys.some((k) => k.includes('after'))).toBe(false);
    expect(keys).not.toContain('!shares!000000000002');
    expect(new Set(keys.map((k) => sublevelOf(Buffer.from(k))))).toEqual(new Set(['claims', 'shares', 'meta']));
  });
});
