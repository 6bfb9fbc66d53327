/**
 * Signers recovered on a node, shared by its signed-data verifier and its evidence checks
 * (src/core/sessions/signer-memo.ts): a string the coordinator verified is not recovered again when
 * the record carrying it is checked on the same node; the memo answers only for the same signature
 * over the same string, and a string with another signature, or a signature over another string, is
 * recovered and judged on its own.
 */
import { describe, expect, it } from 'vitest';
import { createEvidenceChecker } from '../../../../src/core/sessions/evidence.ts';
import { createSignedDataVerifier, WEB2_CHAIN_ID } from '../../../../src/core/sessions/signed-data.ts';
import { createSignerMemo, SIGNER_MEMO_MAX_DATA_CHARS, SIGNER_PREFETCH_MAX, signerPrefetch, type SignerMemo } from '../../../../src/core/sessions/signer-memo.ts';
import type { StateReader } from '../../../../src/core/replication/ports.ts';
import { recoverPersonalSigner, signPersonalMessage } from '../../../../src/crypto/index.ts';
import { evidence, grantedSession, unitCluster } from '../../../utils/evidence.ts';

/** A memo that counts what it was asked and told. */
function counted(memo: SignerMemo = createSignerMemo()) {
  const counts = { hits: 0, misses: 0, sets: 0 };
  const wrapped: SignerMemo = {
    get(data, signature) {
      const v = memo.get(data, signature);
      counts[v === null ? 'misses' : 'hits']++;
      return v;
    },
    set(data, signature, signer) {
      counts.sets++;
      memo.set(data, signature, signer);
    },
  };
  return { memo: wrapped, counts };
}

describe('signer memo', () => {
  it("a string the node's verifier recovered passes as a record's evidence without a second recovery", async () => {
    const c = unitCluster();
    const now = Date.now();
    const s = grantedSession(c, '22222222-2222-4222-8222-222222222222', now);
    const { memo, counts } = counted();
    let recoveries = 0;
    const state = {
      get: async (kind: string, key: string) => (kind === 'session' && key === s.session.sessionAddress ? { body: s.session } : kind === 'principal' ? { body: { status: 'active' } } : undefined),
    } as unknown as StateReader;
    const verifier = createSignedDataVerifier({ state, recoverSigner: (m, sig) => (recoveries++, recoverPersonalSigner(m, sig)), clock: () => now, signers: memo });
    const data = `${WEB2_CHAIN_ID}_0_${s.wallet.address}_${now}`;
    const signed = evidence(s, data);
    await verifier.verify({ data, signature: signed.signature }, { parts: 4 }).catch(() => undefined);
    expect(recoveries).toBe(1);
    expect(counts.sets).toBe(1);
    const check = createEvidenceChecker(c.descriptor, memo);
    expect(check(signed, { parts: 4, atMs: now })).toMatchObject({ principalId: s.session.principalId });
    expect(counts.hits).toBe(1);
    expect(counts.sets).toBe(1);
  });

  it('answers only for the same signature over the same string', () => {
    const c = unitCluster();
    const now = Date.now();
    const s = grantedSession(c, '33333333-3333-4333-8333-333333333333', now);
    const { memo, counts } = counted();
    const check = createEvidenceChecker(c.descriptor, memo);
    const data = `${WEB2_CHAIN_ID}_0_${s.wallet.address}_${now}`;
    const genuine = evidence(s, data);
    expect(check(genuine, { parts: 4, atMs: now })).toMatchObject({ principalId: s.session.principalId });
    expect(check(genuine, { parts: 4, atMs: now })).toMatchObject({ principalId: s.session.principalId });
    expect(counts).toMatchObject({ hits: 1, misses: 1, sets: 1 });
    // Its signature over another string: recovered afresh, and refused.
    const other = `${WEB2_CHAIN_ID}_0_${s.wallet.address}_${now + 1}`;
    expect(check({ ...genuine, data: other }, { parts: 4, atMs: now })).toBe('evidence: signature is not the session wallet');
    // Another key's signature over the string: refused; the genuine pair still passes after both.
    const forged = { ...genuine, signature: signPersonalMessage(data, c.keys[0]!) };
    expect(check(forged, { parts: 4, atMs: now })).toBe('evidence: signature is not the session wallet');
    // (The entry under its signature now holds the other string: recovered again.)
    expect(check(genuine, { parts: 4, atMs: now })).toMatchObject({ principalId: s.session.principalId });
    expect(counts).toMatchObject({ hits: 1, misses: 4, sets: 4 });
  });

  it('keeps at most its entries, oldest out first, and no string past the size bound', () => {
    const memo = createSignerMemo(2);
    memo.set('a', '0x1', 'x');
    memo.set('b', '0x2', undefined);
    memo.set('c', '0x3', 'z');
    expect(memo.get('a', '0x1')).toBeNull();
    expect(memo.get('b', '0x2')).toBeUndefined();
    expect(memo.get('c', '0x3')).toBe('z');
    const long = 'd'.repeat(SIGNER_MEMO_MAX_DATA_CHARS + 1);
    memo.set(long, '0x4', 'w');
    expect(memo.get(long, '0x4')).toBeNull();
  });

  it('a prefetch recovers, all at once, only what the memo lacks, and what it gets is what a check then finds', async () => {
    const c = unitCluster();
    const now = Date.now();
    const s = grantedSession(c, '44444444-4444-4444-8444-444444444444', now);
    const memo = createSignerMemo();
    const strings = [0, 1, 2].map((i) => {
      const data = `${WEB2_CHAIN_ID}_0_${s.wallet.address}_${now - i}`;
      return { data, signature: evidence(s, data).signature };
    });
    memo.set(strings[0]!.data, strings[0]!.signature, s.wallet.address.toLowerCase());
    const asked: string[] = [];
    let inFlight = 0;
    let most = 0;
    const prefetch = signerPrefetch(memo, async (data, signature) => {
      asked.push(data);
      most = Math.max(most, ++inFlight);
      await new Promise((resolve) => setImmediate(resolve));
      inFlight--;
      return data === strings[2]!.data ? Promise.reject(new Error('thread lost')) : recoverPersonalSigner(data, signature);
    });
    await prefetch([...strings, { data: 'x'.repeat(SIGNER_MEMO_MAX_DATA_CHARS + 1), signature: strings[1]!.signature }]);
    // The held one and the one too long to keep are not asked for; the others at once.
    expect(asked).toEqual([strings[1]!.data, strings[2]!.data]);
    expect(most).toBe(2);
    expect(memo.get(strings[1]!.data, strings[1]!.signature)).toBe(recoverPersonalSigner(strings[1]!.data, strings[1]!.signature));
    // A failed recovery is a hint lost, not a verdict: nothing is remembered, the check recovers it.
    expect(memo.get(strings[2]!.data, strings[2]!.signature)).toBeNull();
    const { memo: watched, counts } = counted(memo);
    const check = createEvidenceChecker(c.descriptor, watched);
    expect(check({ ...evidence(s, strings[1]!.data), signature: strings[1]!.signature }, { parts: 4, atMs: now })).toMatchObject({ principalId: s.session.principalId });
    expect(counts).toMatchObject({ hits: 1, sets: 0 });
  });

  it('a prefetch of a batch larger than the memo holds well recovers its first strings only (the rest are left to the check)', async () => {
    const memo = createSignerMemo();
    const asked: string[] = [];
    const prefetch = signerPrefetch(memo, async (data) => (asked.push(data), undefined));
    const strings = Array.from({ length: SIGNER_PREFETCH_MAX + 10 }, (_, i) => ({ data: `string ${i}`, signature: `0x${i}` }));
    await prefetch(strings);
    expect(asked).toEqual(strings.slice(0, SIGNER_PREFETCH_MAX).map((s) => s.data));
    // Every one recovered is still remembered when its check comes.
    for (const s of strings.slice(0, SIGNER_PREFETCH_MAX)) expect(memo.get(s.data, s.signature)).toBeUndefined();
  });
});
