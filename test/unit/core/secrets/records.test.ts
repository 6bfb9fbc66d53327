/**
 * What every member checks before storing a version of a secret (docs/security.md, "Evidence in the
 * record"): who created it, who may change its delegate, which permit moved it.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { secretKey, secretKind, type SecretBody } from '../../../../src/core/secrets/records.ts';
import { signedStringKey } from '../../../../src/core/sessions/evidence.ts';
import { contextFor, evidence, grantedSession, unitCluster } from '../../../utils/evidence.ts';

const c = unitCluster();
const kind = secretKind(c.descriptor);
const NOW = Date.now();
const alice = randomUUID();
const bob = randomUUID();
const aliceSession = grantedSession(c, alice, NOW);
const bobSession = grantedSession(c, bob, NOW);
const key = secretKey(7);
const created: SecretBody = {
  secretId: 7,
  ownerPrincipalId: alice,
  delegatePrincipalId: null,
  clusterId: c.descriptor.clusterId,
  secretType: 1,
  publicKeyCid: 'A'.repeat(1580),
  isSyncing: false,
  createdAt: NOW,
  updatedAt: NOW,
  auth: { by: 'create', evidence: evidence(aliceSession, `-1_0_${aliceSession.wallet.address}_${NOW}`) },
};

const check = (b: SecretBody, held?: SecretBody, opts: { wins?: boolean; atMs?: number; siblings?: Array<{ kind: string; key: string; body: never }> } = {}) =>
  kind.validate!(b, contextFor(c, { key, origin: 0, atMs: opts.atMs ?? NOW + 500, held: new Map(held ? [[`secret!${key}`, held as never]] : []), wins: opts.wins ?? true, self: { kind: 'secret' }, ...(opts.siblings ? { siblings: opts.siblings } : {}) }));

describe('secret records', () => {
  it('a creation carries the creator’s create string; its session’s principal is the owner', async () => {
    expect(await check(created)).toBeUndefined();
    expect(await check({ ...created, ownerPrincipalId: bob })).toMatch(/owner is not the signing principal/);
    expect(await check({ ...created, auth: undefined }, created)).toMatch(/without authorisation/);
    expect(await check({ ...created, auth: { by: 'create', evidence: evidence(aliceSession, `-1_5_${aliceSession.wallet.address}_${NOW}`) } })).toMatch(/not a create string/);
    // A string signed 11 minutes before the record was written backs nothing.
    expect(await check(created, undefined, { atMs: NOW + 11 * 60_000 })).toMatch(/not fresh/);
    // A second creation over an existing secret with another key.
    expect(await check({ ...created, publicKeyCid: 'B'.repeat(1580) }, created)).toMatch(/already exists/);
  });

  it('a delegate change carries the owner’s setDelegate string naming that delegate', async () => {
    const set = (s: typeof aliceSession, delegate: string, body: Partial<SecretBody> = {}): SecretBody => {
      const data = `-1_7_${s.wallet.address}_${NOW}_${delegate}`;
      return {
        ...created,
        delegatePrincipalId: delegate === '' ? null : delegate,
        recentUses: [{ key: signedStringKey('setDelegate', data.split('_')), at: NOW }],
        ...body,
        auth: { by: 'setDelegate', evidence: evidence(s, data) },
      };
    };
    expect(await check(set(aliceSession, bob), created)).toBeUndefined();
    expect(await check(set(aliceSession, ''), created)).toBeUndefined();
    expect(await check(set(bobSession, bob), created)).toMatch(/signer is not the owner/);
    expect(await check({ ...set(aliceSession, bob), delegatePrincipalId: randomUUID() }, created)).toMatch(/another delegate/);
    // The owner's string cannot move the owner.
    expect(await check(set(aliceSession, bob, { ownerPrincipalId: bob, delegatePrincipalId: null }), created)).toMatch(/another delegate|signer is not the owner/);
    // Nor change the key.
    expect(await check(set(aliceSession, bob, { publicKeyCid: 'C'.repeat(1580) }), created)).toMatch(/more than the delegate/);
    // Unknown secret: refused until the creation arrives.
    expect(await check(set(aliceSession, bob))).toMatch(/unknown secret/);
  });

  it('a setDelegate string makes one change: the version records it, a replay over it is refused, and no change may forget it', async () => {
    const first = { ...created, delegatePrincipalId: bob, recentUses: [] } as SecretBody;
    const data = `-1_7_${aliceSession.wallet.address}_${NOW}_${bob}`;
    const key = signedStringKey('setDelegate', data.split('_'));
    const applied: SecretBody = { ...first, auth: { by: 'setDelegate', evidence: evidence(aliceSession, data) }, recentUses: [{ key, at: NOW }] };
    expect(await check({ ...applied, recentUses: [] }, created)).toMatch(/does not record its string/);
    expect(await check(applied, created)).toBeUndefined();
    // The same string again, over the version it made (or any later one that keeps it).
    expect(await check(applied, applied)).toMatch(/already used/);
    // A later change by another string must keep the fresh entry.
    const clearData = `-1_7_${aliceSession.wallet.address}_${NOW + 1}_`;
    const clearKey = signedStringKey('setDelegate', clearData.split('_'));
    const cleared: SecretBody = { ...applied, delegatePrincipalId: null, auth: { by: 'setDelegate', evidence: evidence(aliceSession, clearData) }, recentUses: [{ key: clearKey, at: NOW + 1 }] };
    expect(await check(cleared, applied)).toMatch(/drops a recent string use/);
    expect(await check({ ...cleared, recentUses: [{ key, at: NOW }, { key: clearKey, at: NOW + 1 }] }, applied)).toBeUndefined();
    // Twenty minutes on, the entry may go: no string that old passes the freshness check anyway.
    expect(await check({ ...cleared }, applied, { atMs: NOW + 21 * 60_000 })).toMatch(/not fresh/);
  });

  it('an owner change needs the consumed transfer permit whose result it is', async () => {
    const permitId = randomUUID();
    const moved: SecretBody = { ...created, ownerPrincipalId: bob, auth: { by: 'permit', permitId } };
    const permit = { status: 'consumed', action: 'transfer', secretId: 7, principalId: alice, result: { secretId: 7, newOwnerPrincipalId: bob, delegatePrincipalId: null } };
    const sib = (body: unknown) => [{ kind: 'permit', key: permitId, body: body as never }];
    expect(await check(moved, created, { siblings: sib(permit) })).toBeUndefined();
    expect(await check(moved, created)).toMatch(/unknown permit/);
    expect(await check(moved, created, { siblings: sib({ ...permit, status: 'pending' }) })).toMatch(/does not authorise/);
    expect(await check(moved, created, { siblings: sib({ ...permit, principalId: bob }) })).toMatch(/does not own/);
    expect(await check({ ...moved, ownerPrincipalId: randomUUID() }, created, { siblings: sib(permit) })).toMatch(/differs from the permit/);
    // A change that loses the merge changes nothing: only its own evidence is checked.
    const transferred = { ...created, ownerPrincipalId: bob };
    const lateData = `-1_7_${aliceSession.wallet.address}_${NOW}_${bob}`;
    const lateDelegate: SecretBody = { ...created, delegatePrincipalId: bob, auth: { by: 'setDelegate', evidence: evidence(aliceSession, lateData) }, recentUses: [{ key: signedStringKey('setDelegate', lateData.split('_')), at: NOW }] };
    expect(await check(lateDelegate, transferred, { wins: false })).toBeUndefined();
    expect(await check(lateDelegate, transferred, { wins: true })).toMatch(/more than the delegate/);
  });
});
