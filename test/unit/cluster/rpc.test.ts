/**
 * The RPC layer's length prefix (src/cluster/rpc.ts): the varint decoder that `lpStream` calls a byte
 * at a time reads what the stock decoder reads, asks for more without a new error per message, and
 * refuses a prefix longer than any message's instead of reading on.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { Uint8ArrayList } from 'uint8arraylist';
import * as varint from 'uint8-varint';
import { decodeLengthPrefix, PrefixTooLongError } from '../../../src/cluster/rpc.ts';
import { MAX_MESSAGE_BYTES } from '../../../src/cluster/protocols.ts';

/** Feed `bytes` one at a time, as lpStream does: the first length decoded, and the errors thrown before it. */
function byteAtATime(bytes: Uint8Array): { length: number; retries: unknown[] } {
  const list = new Uint8ArrayList();
  const retries: unknown[] = [];
  for (const b of bytes) {
    list.append(Uint8Array.of(b));
    try {
      return { length: decodeLengthPrefix(list), retries };
    } catch (err) {
      if (!(err instanceof RangeError)) throw err;
      retries.push(err);
    }
  }
  throw new Error('prefix never completed');
}

describe('RPC length prefix', () => {
  it('decodes every length up to the largest message as the stock varint does, a byte at a time or whole', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: MAX_MESSAGE_BYTES }), (n) => {
        const prefix = varint.encode(n);
        const { length, retries } = byteAtATime(prefix);
        expect(length).toBe(n);
        expect(retries).toHaveLength(prefix.byteLength - 1);
        expect(decodeLengthPrefix(prefix)).toBe(varint.decode(prefix));
      }),
    );
  });

  it('asks for more with one and the same RangeError, so lpStream reads on', () => {
    const { retries } = byteAtATime(varint.encode(MAX_MESSAGE_BYTES));
    expect(retries.length).toBeGreaterThan(1);
    expect(new Set(retries).size).toBe(1);
  });

  it('refuses a prefix longer than any message’s (lpStream would otherwise read on without end)', () => {
    expect(() => byteAtATime(new Uint8Array(64).fill(0xff))).toThrow(PrefixTooLongError);
  });
});
