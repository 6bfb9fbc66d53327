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
import { createSignerMemo, SIGNER_MEMO_MAX_DATA_CHARS, type SignerMemo } from '../../../../src/core/sessions/signer-memo.ts';
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
});
