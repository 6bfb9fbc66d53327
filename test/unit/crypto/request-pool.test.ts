import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { createRequestCryptoPool, type RequestCryptoPool } from '../../../src/crypto/request-pool.ts';
import { combineShares, concatBytes, generatePrivateKey, sealPayload as sealPayloadInline, taggedHash, mlkemPublicKeyFromSeed, openPayloadWithSeed, openSealed, publicKeyOf, recoverPersonalSigner, sealTo, signPersonalMessage, toHex, utf8 } from '../../../src/crypto/index.ts';
import { runOwnedRequestOp, runRequestOp, type RequestOp } from '../../../src/crypto/request-ops.ts';

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

/**
 * Until the event loop has sat idle `ms` since the call: waited on, not slept, since a timer set
 * after a busy stretch can fire at once (the loop's clock is stale) and a busy machine stretches any.
 */
async function idleFor(ms: number): Promise<void> {
  const from = performance.eventLoopUtilization();
  while (performance.eventLoopUtilization(from).idle < ms) await new Promise((r) => setTimeout(r, 1));
}

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

  it('recovers and seals in one operation, on its thread and inline alike, answering as the two apart', async () => {
    const { p, runs } = pool();
    const messages = Array.from({ length: 20 }, (_, i) => `-1_${i}_0xabc_${Date.now()}_${'m'.repeat(i)}`);
    const signatures = messages.map((m) => signPersonalMessage(m, wallet));
    signatures[3] = signatures[4]!;
    const fused = await Promise.all(messages.map((m, i) => p.recoverAndSeal(m, signatures[i]!, publicKey, new TextEncoder().encode(m))));
    fused.forEach((f, i) => {
      expect(f!.signer).toBe(recoverPersonalSigner(messages[i]!, signatures[i]!));
      expect(new TextDecoder().decode(openPayloadWithSeed(seed, f!.sealed.cifer, f!.sealed.encryptedMessage))).toBe(messages[i]);
    });
    expect(runs).toEqual({ 'recover-seal:inline': 1, 'recover-seal:thread': 19 });
    // A seal that throws answers nothing (the caller takes the two steps apart and gets the seal's error).
    expect(await p.recoverAndSeal(messages[0]!, signatures[0]!, new Uint8Array(10), new Uint8Array(1))).toBeUndefined();
  });

  it('seals released shares to their coordinator and opens them with the node key, on its thread and inline alike', async () => {
    const coordinatorKey = generatePrivateKey();
    const openingKey = { privateKey: coordinatorKey, publicKey: publicKeyOf(coordinatorKey, true) };
    const { p, runs } = pool({ openingKey });
    const shares = Array.from({ length: 24 }, () => randomBytes(65));
    const aad = (i: number) => utf8(`release:${i}`);
    const boxes = await Promise.all(shares.map((share, i) => p.sealBox(openingKey.publicKey, share, aad(i))));
    // The caller's shares are untouched (the thread zeroes its own copies): the caller zeroes them.
    expect(shares.every((s) => s.some((b) => b !== 0))).toBe(true);
    boxes.forEach((box, i) => expect(toHex(openSealed(coordinatorKey, box, aad(i))!)).toBe(toHex(shares[i]!)));
    const opened = await Promise.all(boxes.map((box, i) => p.openBox(box, aad(i))));
    expect(opened.map((o) => toHex(o!))).toEqual(shares.map((s) => toHex(s)));
    // A box for another purpose, or sealed to another key, does not open — wherever it runs.
    expect(await Promise.all([p.openBox(boxes[0]!, aad(1)), p.openBox(sealTo(publicKeyOf(generatePrivateKey(), true), shares[0]!, aad(0)), aad(0))])).toEqual([undefined, undefined]);
    expect(runs['seal-box:thread']).toBe(23);
    expect(runs['open-box:thread']).toBeGreaterThanOrEqual(23);
    // The node key is the pool's own: the caller's stays whole.
    expect(toHex(coordinatorKey)).toBe(toHex(openingKey.privateKey));
    expect(coordinatorKey.some((b) => b !== 0)).toBe(true);
  });

  it('opens decrypts’ envelopes with their rebuilt seed on its thread as inline, telling a wrong seed from a bad envelope', async () => {
    const { p, runs } = pool();
    const messages = Array.from({ length: 12 }, (_, i) => `payload ${i} ${'x'.repeat(i * 10)}`);
    const sealed = messages.map((m) => sealPayloadInline(publicKey, utf8(m)));
    const opened = await Promise.all(sealed.map((s) => p.openPayload(seed, publicKey, s.cifer, s.encryptedMessage)));
    expect(opened.map((o) => (o.ok ? new TextDecoder().decode(o.plaintext) : o.reason))).toEqual(messages);
    const tampered = Uint8Array.from(sealed[0]!.encryptedMessage);
    tampered[0]! ^= 1;
    const [bad, wrong] = await Promise.all([p.openPayload(seed, publicKey, sealed[0]!.cifer, tampered), p.openPayload(randomBytes(64), publicKey, sealed[0]!.cifer, sealed[0]!.encryptedMessage)]);
    expect(bad).toEqual({ ok: false, reason: 'decryption-failed' });
    expect(wrong).toEqual({ ok: false, reason: 'wrong-seed' });
    expect(runs['open-payload:thread']).toBeGreaterThanOrEqual(11);
    // The caller's seed stays whole: the caller zeroes it.
    expect(seed.some((b) => b !== 0)).toBe(true);
  });

  it('zeroes the share a seal carried, and a seed opened or dealt with, once used; opens nothing without a node key', () => {
    const share = randomBytes(65);
    const op: RequestOp = { op: 'seal-box', recipient: publicKeyOf(generatePrivateKey(), true), share, aad: utf8('a') };
    expect('box' in runOwnedRequestOp(op)).toBe(true);
    expect(share.every((b) => b === 0)).toBe(true);
    expect(runRequestOp({ op: 'open-box', box: new Uint8Array(80), aad: utf8('a') })).toEqual({ error: 'no opening key' });
    const rebuilt = Uint8Array.from(seed);
    const envelope = sealPayloadInline(publicKey, utf8('m'));
    const open: RequestOp = { op: 'open-payload', seed: rebuilt, expectedPublicKey: publicKey, cifer: envelope.cifer, encryptedMessage: envelope.encryptedMessage };
    expect(runOwnedRequestOp(open)).toMatchObject({ checked: { ok: true } });
    expect(rebuilt.every((b) => b === 0)).toBe(true);
    // A deal's seed too, once its key is dealt.
    const dealSeed = Uint8Array.from(seed);
    const recipients = [0, 1].map((slot) => ({ slot, publicKey: publicKeyOf(generatePrivateKey(), true), aad: utf8('d'), digestPrefix: utf8('p') }));
    expect(runOwnedRequestOp({ op: 'deal', seed: dealSeed, threshold: 2, recipients, digestTag: 't' })).toMatchObject({ dealt: { publicKey } });
    expect(dealSeed.every((b) => b === 0)).toBe(true);
  });

  it('sends an operation to the thread after a busy stretch with no idle time, and runs one inline after the loop sat idle, however busy before', async () => {
    const { p, runs } = pool({ minThreadBatch: 1 });
    const m = `-1_3_0xabc_${Date.now()}`;
    const sig = signPersonalMessage(m, wallet);
    await p.recoverSigner(m, sig);
    expect(runs).toEqual({ 'recover:inline': 1 });
    // Busy for 20 ms without yielding: long since the last operation, but the loop never idled.
    const until = performance.now() + 20;
    while (performance.now() < until);
    await p.recoverSigner(m, sig);
    expect(runs).toEqual({ 'recover:inline': 1, 'recover:thread': 1 });
    // The loop has sat idle since (the thread's start, then a few ms more): the next one is a request at light load.
    await idleFor(5);
    await p.recoverSigner(m, sig);
    expect(runs).toEqual({ 'recover:inline': 2, 'recover:thread': 1 });
    // Busy 30 ms, then idle a few: a loop busy most of the time that still waits between requests (a
    // coordinator serving one client) runs the next at once too.
    const busyUntil = performance.now() + 30;
    while (performance.now() < busyUntil);
    await idleFor(3);
    await p.recoverSigner(m, sig);
    expect(runs).toEqual({ 'recover:inline': 3, 'recover:thread': 1 });
  });

  it('sends a lone deal to the thread on a busy loop (a lone recovery stays inline), and deals as inline', async () => {
    const { p, runs } = pool({ idleInlineMs: 0 });
    const m = `-1_4_0xabc_${Date.now()}`;
    await p.recoverSigner(m, signPersonalMessage(m, wallet));
    const keys = [generatePrivateKey(), generatePrivateKey(), generatePrivateKey()];
    const recipients = keys.map((k, slot) => ({ slot, publicKey: publicKeyOf(k, true), aad: utf8(`aad ${slot}`), digestPrefix: utf8(`prefix ${slot}\n`) }));
    const dealSeed = Uint8Array.from(seed);
    const dealt = await p.deal(dealSeed, 2, recipients, 'test/deal');
    expect(runs).toEqual({ 'recover:inline': 1, 'deal:thread': 1 });
    expect(dealSeed).toEqual(Uint8Array.from(seed));
    expect(toHex(dealt.publicKey)).toBe(toHex(publicKey));
    const shares = keys.map((k, i) => openSealed(k, dealt.boxes[i]!, utf8(`aad ${i}`))!);
    shares.forEach((share, i) => expect(toHex(dealt.digests[i]!)).toBe(toHex(taggedHash('test/deal', concatBytes(utf8(`prefix ${i}\n`), share)))));
    expect(toHex(await combineShares([shares[2]!, shares[0]!]))).toBe(toHex(seed));
  });

  it('refuses a bad public key with the inline TypeError, wherever it runs', async () => {
    const { p } = pool({ minThreadBatch: 1, idleInlineMs: 0 });
    await expect(p.seal(new Uint8Array(10), new Uint8Array(1))).rejects.toThrow(TypeError);
    await expect(p.seal(new Uint8Array(10), new Uint8Array(1))).rejects.toThrow(/1184/);
  });

  it('fails, never answers wrongly, an operation whose private copy went to a thread that stopped', async () => {
    const { p } = pool({ minThreadBatch: 1, idleInlineMs: 0 });
    const recipientKey = generatePrivateKey();
    const share = randomBytes(65);
    const sealing = p.sealBox(publicKeyOf(recipientKey, true), share, utf8('a'));
    // Flushed to the thread at the next turn, then the pool closes before it answers.
    await new Promise((r) => setImmediate(r));
    const closing = p.close();
    const outcome = await sealing.then(
      (box) => ({ box }),
      (err: unknown) => ({ err }),
    );
    await closing;
    // Either the thread answered before it stopped (a box that opens to the share) or the seal failed.
    if ('box' in outcome) expect(toHex(openSealed(recipientKey, outcome.box, utf8('a'))!)).toBe(toHex(share));
    else expect(outcome.err).toBeInstanceOf(TypeError);
    expect(share.some((b) => b !== 0)).toBe(true);
    // After the close, inline: the caller's share is sealed as given.
    const key = generatePrivateKey();
    const box = await p.sealBox(publicKeyOf(key, true), share, utf8('b'));
    expect(toHex(openSealed(key, box, utf8('b'))!)).toBe(toHex(share));
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
