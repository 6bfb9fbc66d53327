import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { createRequestCryptoPool, type RequestCryptoPool } from '../../../src/crypto/request-pool.ts';
import { mlkemPublicKeyFromSeed, openPayloadWithSeed, recoverPersonalSigner, signPersonalMessage } from '../../../src/crypto/index.ts';

const pools: RequestCryptoPool[] = [];
afterEach(async () => {
  await Promise.all(pools.splice(0).map((p) => p.close()));
});

/** A pool whose runs are tallied by kind and place. */
function pool(options: Parameters<typeof createRequestCryptoPool>[0] = {}) {
  const runs: Record<string, number> = {};
  const p = createRequestCryptoPool({ ...options, onRun: (op, where, n) => void (runs[`${op}:${where}`] = (runs[`${op}:${where}`] ?? 0) + n) });
  pools.push(p);
  return { p, runs };
}

const seed = randomBytes(64);
const publicKey = mlkemPublicKeyFromSeed(seed);
const wallet = randomBytes(32);

describe('request crypto pool', () => {
  it('answers concurrent recoveries and seals on its thread exactly as the inline functions do', async () => {
    const { p, runs } = pool();
    const messages = Array.from({ length: 40 }, (_, i) => `-1_${i}_0xabc_${Date.now()}_${'m'.repeat(i)}`);
    const signatures = messages.map((m) => signPersonalMessage(m, wallet));
    // One wrong signature among them: undefined or another address, as inline.
    signatures[7] = signatures[8]!;
    const [signers, sealed] = await Promise.all([
      Promise.all(messages.map((m, i) => p.recoverSigner(m, signatures[i]!))),
      Promise.all(messages.map((m) => p.seal(publicKey, new TextEncoder().encode(m)))),
    ]);
    expect(signers).toEqual(messages.map((m, i) => recoverPersonalSigner(m, signatures[i]!)));
    expect(signers[7]).not.toBe(signers[0]);
    sealed.forEach((s, i) => expect(new TextDecoder().decode(openPayloadWithSeed(seed, s.cifer, s.encryptedMessage))).toBe(messages[i]));
    // The first found the pool idle and ran at once; the rest, queued in one turn, went to the thread.
    expect(runs).toEqual({ 'recover:inline': 1, 'recover:thread': 39, 'seal:thread': 40 });
  });

  it('runs a lone operation at light load inline, without starting the thread', async () => {
    const { p, runs } = pool();
    const m = `-1_1_0xabc_${Date.now()}`;
    expect(await p.recoverSigner(m, signPersonalMessage(m, wallet))).toBe(recoverPersonalSigner(m, signPersonalMessage(m, wallet)));
    expect(runs).toEqual({ 'recover:inline': 1 });
  });

  it('refuses a bad public key with the inline TypeError, wherever it runs', async () => {
    const { p } = pool({ minThreadBatch: 1, idleInlineMs: 0 });
    await expect(p.seal(new Uint8Array(10), new Uint8Array(1))).rejects.toThrow(TypeError);
    await expect(p.seal(new Uint8Array(10), new Uint8Array(1))).rejects.toThrow(/1184/);
  });

  it('answers what is queued when it closes, and inline after', async () => {
    const { p, runs } = pool({ minThreadBatch: 1, idleInlineMs: 0 });
    const m = `-1_2_0xabc_${Date.now()}`;
    const sig = signPersonalMessage(m, wallet);
    const pending = Array.from({ length: 5 }, () => p.recoverSigner(m, sig));
    await p.close();
    expect(await Promise.all(pending)).toEqual(Array(5).fill(recoverPersonalSigner(m, sig)));
    expect(await p.recoverSigner(m, sig)).toBe(recoverPersonalSigner(m, sig));
    expect(runs['recover:inline']).toBe(6);
  });
});
