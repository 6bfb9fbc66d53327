/** The small LRU of src/crypto/lru.ts: capacity, recency, and the get/set/delete the job locator uses. */
import { describe, expect, it } from 'vitest';
import { createLruCache } from '../../../src/crypto/index.ts';

describe('createLruCache', () => {
  it('evicts the least recently used entry; get and set count as uses', () => {
    const lru = createLruCache<string>(2);
    lru.set('a', '1');
    lru.set('b', '2');
    expect(lru.get('a')).toBe('1');
    lru.set('c', '3');
    expect(lru.get('b')).toBeUndefined();
    expect(lru.get('a')).toBe('1');
    lru.set('c', '4');
    lru.set('d', '5');
    expect(lru.get('a')).toBeUndefined();
    expect(lru.get('c')).toBe('4');
    expect(lru.size()).toBe(2);
  });

  it('getOrCreate creates once per cached key; delete forgets', () => {
    const lru = createLruCache<number>(4);
    let made = 0;
    expect(lru.getOrCreate('k', () => ++made)).toBe(1);
    expect(lru.getOrCreate('k', () => ++made)).toBe(1);
    lru.delete('k');
    expect(lru.get('k')).toBeUndefined();
    expect(lru.getOrCreate('k', () => ++made)).toBe(2);
  });

  it('capacity 0 caches nothing', () => {
    const lru = createLruCache<number>(0);
    lru.set('a', 1);
    expect(lru.get('a')).toBeUndefined();
    expect(lru.getOrCreate('a', () => 2)).toBe(2);
    expect(lru.size()).toBe(0);
  });
});
