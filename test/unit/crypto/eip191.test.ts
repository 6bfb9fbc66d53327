import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { hashMessage, recoverMessageAddress, type Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { eip191Digest, fromHex, generatePrivateKey, recoverPersonalSigner, signPersonalMessage, toHex } from '../../../src/crypto/index.ts';

const N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
const privateKey = generatePrivateKey();
const account = privateKeyToAccount(`0x${toHex(privateKey)}`);
const address = account.address.toLowerCase();

/** The API's `data` shape (`<chainId>_<secretId>_<signer>_<fresh>_<text>`) and arbitrary text. */
const messageArb = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 80 }),
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.array(fc.string({ maxLength: 12 }), { minLength: 1, maxLength: 6 }).map((parts) => parts.join('_')),
);

/** `sig` with one byte replaced. */
function withByte(sig: string, index: number, value: number): string {
  const bytes = fromHex(sig);
  bytes[index] = value;
  return `0x${toHex(bytes)}`;
}

describe('EIP-191 personal_sign, cross-checked against viem', () => {
  it('digest, signature and recovery agree for random messages (UTF-8, `_`, empty)', async () => {
    await fc.assert(
      fc.asyncProperty(messageArb, async (message) => {
        expect(`0x${toHex(eip191Digest(message))}`).toBe(hashMessage(message));
        const ours = signPersonalMessage(message, privateKey);
        const theirs = await account.signMessage({ message });
        // RFC 6979 deterministic nonces and low-s on both sides: the same bytes.
        expect(ours).toBe(theirs);
        expect(recoverPersonalSigner(message, theirs)).toBe(address);
        expect((await recoverMessageAddress({ message, signature: ours as Hex })).toLowerCase()).toBe(address);
      }),
      { numRuns: 25 },
    );
  });

  it('the prefix counts UTF-8 bytes, not UTF-16 units', () => {
    for (const message of ['', '_', 'é', '🌍', '1_2_0xabc_1700000000_héllo', 'x'.repeat(1000)]) {
      expect(`0x${toHex(eip191Digest(message))}`).toBe(hashMessage(message));
    }
  });

  it('accepts a signature without 0x, in upper case, and with v as 0/1', () => {
    const message = '8453_7_0xabc_1700000000_hello';
    const sig = signPersonalMessage(message, privateKey);
    expect(recoverPersonalSigner(message, sig.slice(2))).toBe(address);
    expect(recoverPersonalSigner(message, `0x${sig.slice(2).toUpperCase()}`)).toBe(address);
    const v = fromHex(sig)[64]!;
    expect([27, 28]).toContain(v);
    expect(recoverPersonalSigner(message, withByte(sig, 64, v - 27))).toBe(address);
  });

  it('accepts a high-s signature as viem and ecrecover do', async () => {
    const message = 'high s';
    const sig = fromHex(signPersonalMessage(message, privateKey));
    const s = BigInt(`0x${toHex(sig.subarray(32, 64))}`);
    sig.set(fromHex((N - s).toString(16).padStart(64, '0')), 32);
    sig[64] = sig[64] === 27 ? 28 : 27;
    const highS = `0x${toHex(sig)}` as Hex;
    expect(recoverPersonalSigner(message, highS)).toBe(address);
    expect((await recoverMessageAddress({ message, signature: highS })).toLowerCase()).toBe(address);
  });

  it('another key or another message recovers another address', () => {
    const other = generatePrivateKey();
    const message = 'who signed this?';
    const otherSig = signPersonalMessage(message, other);
    expect(recoverPersonalSigner(message, otherSig)).toBe(privateKeyToAccount(`0x${toHex(other)}`).address.toLowerCase());
    expect(recoverPersonalSigner(message, otherSig)).not.toBe(address);
    expect(recoverPersonalSigner(`${message}!`, signPersonalMessage(message, privateKey))).not.toBe(address);
  });

  it('gives undefined, never throws, for malformed signatures', () => {
    const message = 'm';
    const sig = signPersonalMessage(message, privateKey);
    const zeros = '00'.repeat(32);
    const order = N.toString(16);
    const malformed = [
      '',
      '0x',
      sig.slice(0, -2), // 64 bytes
      `${sig}00`, // 66 bytes
      `${sig.slice(0, -1)}`, // odd length
      `${sig.slice(0, -2)}zz`, // not hex
      `0X${sig.slice(2)}`,
      ` ${sig}`,
      withByte(sig, 64, 26),
      withByte(sig, 64, 29),
      withByte(sig, 64, 2),
      withByte(sig, 64, 255),
      `0x${zeros}${sig.slice(66)}`, // r = 0
      `0x${sig.slice(2, 66)}${zeros}${sig.slice(-2)}`, // s = 0
      `0x${order}${sig.slice(66)}`, // r = n
      `0x${'ff'.repeat(64)}1b`,
    ];
    for (const bad of malformed) expect(recoverPersonalSigner(message, bad), bad).toBeUndefined();
    expect(recoverPersonalSigner(message, undefined as unknown as string)).toBeUndefined();
    expect(recoverPersonalSigner(message, 42 as unknown as string)).toBeUndefined();
    expect(recoverPersonalSigner(undefined as unknown as string, sig)).toBeUndefined();
  });
});
