/**
 * The change a confirmed permit makes, computed from the replica (docs/permits.md, "GET /web2/confirm —
 * consumption", step 3), with the replica stubbed through deps: the version it follows, the transition
 * and body it proposes (slot 0 numbers the version), and the result it reports.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { effectOf } from '../../../../src/core/permits/effects.ts';
import type { PermitActionName, PermitBody } from '../../../../src/core/permits/records.ts';
import { secretKey } from '../../../../src/core/secrets/records.ts';
import { NOW, SLOT0, ids, principal, replica, secret, versionRecord } from './fixtures.ts';

const { owner, other, third, gone, unverified, permitId } = ids('owner', 'other', 'third', 'gone', 'unverified', 'permitId');
const NEW_KEY = 'ef'.repeat(32);

const owners = { [owner]: principal(), [other]: principal(), [third]: principal(), [gone]: principal({ status: 'deleted' }), [unverified]: principal({ emailVerified: false }) };

/** A pending permit of `owner` for `action` with `payload`. */
function permit(action: PermitActionName, payload: object, secretId = action === 'rotate' ? 0 : 7): PermitBody {
  return {
    permitId,
    requestId: randomUUID(),
    action,
    principalId: owner,
    secretId,
    payload: JSON.stringify(payload),
    payloadDigest: '00'.repeat(32),
    tokenHash: '11'.repeat(32),
    createdAt: NOW - 1000,
    expiresAt: NOW + 900_000,
    status: 'pending',
    consumedAt: null,
    result: null,
    requestedBy: { nodeAddress: `0x${'1'.repeat(40)}`, signature: `0x${'22'.repeat(65)}` },
    auth: null,
    token: null,
    v: { n: 1, prev: null, change: 'request' },
  };
}

/** A body without its version envelope (what a proposal carries). */
function unversioned<B extends { v: unknown }>(b: B): Omit<B, 'v'> {
  const { v: _v, ...rest } = b;
  return rest;
}

describe('effectOf: rotate', () => {
  it('gives the principal the new key, marked as set by this permit, with no proof', async () => {
    const before = principal({ updatedAt: NOW + 5000 });
    const effect = await effectOf(permit('rotate', { newPublicKey: NEW_KEY }), NOW, replica({ [owner]: before }));
    expect(effect).toEqual({
      kind: 'principal',
      key: owner,
      // It follows the version this replica holds.
      current: versionRecord('principal', owner, before),
      proposed: { change: 'rotateKey', body: { ...unversioned(before), ed25519PublicKey: NEW_KEY, keyProof: null, keyPermitId: permitId, updatedAt: NOW + 5000 } },
      result: { principalId: owner, newPublicKey: NEW_KEY },
    });
    expect(effect.current.origin).toBe(SLOT0);
    const later = await effectOf(permit('rotate', { newPublicKey: NEW_KEY }), NOW + 9000, replica({ [owner]: before }));
    expect(later.proposed.body).toMatchObject({ updatedAt: NOW + 9000 });
  });

  it('409 once the account is deleted', async () => {
    for (const principals of [{ [owner]: principal({ status: 'deleted' }) }, {}]) {
      await expect(effectOf(permit('rotate', { newPublicKey: NEW_KEY }), NOW, replica(principals))).rejects.toMatchObject({ code: 'CONFLICT' });
    }
  });
});

describe('effectOf: transfer and delegate', () => {
  it('transfer: the new owner; a delegate equal to the new owner is cleared, another kept', async () => {
    const plain = await effectOf(permit('transfer', { newOwnerPrincipalId: other }), NOW, replica(owners, [secret(7, owner, { delegatePrincipalId: third })]));
    expect(plain.result).toEqual({ secretId: 7, newOwnerPrincipalId: other, delegatePrincipalId: third });
    const held = plain.current.body as ReturnType<typeof secret>;
    expect(plain).toMatchObject({ kind: 'secret', key: secretKey(7), current: { kind: 'secret', key: secretKey(7), origin: SLOT0 } });
    expect(plain.proposed).toEqual({
      change: 'permit',
      body: { ...unversioned(held), ownerPrincipalId: other, delegatePrincipalId: third, updatedAt: NOW, auth: { by: 'permit', permitId } },
    });
    const toDelegate = await effectOf(permit('transfer', { newOwnerPrincipalId: other }), NOW, replica(owners, [secret(7, owner, { delegatePrincipalId: other })]));
    expect(toDelegate.result).toEqual({ secretId: 7, newOwnerPrincipalId: other, delegatePrincipalId: null });
    expect(toDelegate.proposed.body).toMatchObject({ ownerPrincipalId: other, delegatePrincipalId: null });
  });

  it('delegate: set, or cleared for null; updatedAt never goes back', async () => {
    const set = await effectOf(permit('delegate', { delegatePrincipalId: other }), NOW, replica(owners, [secret(7, owner, { updatedAt: NOW + 5000 })]));
    expect(set.result).toEqual({ secretId: 7, delegatePrincipalId: other });
    expect(set.proposed).toMatchObject({ change: 'permit', body: { ownerPrincipalId: owner, delegatePrincipalId: other, updatedAt: NOW + 5000, auth: { by: 'permit', permitId } } });
    expect(set.proposed.body).not.toHaveProperty('v');
    const cleared = await effectOf(permit('delegate', { delegatePrincipalId: null }), NOW, replica(owners, [secret(7, owner, { delegatePrincipalId: other })]));
    expect(cleared.result).toEqual({ secretId: 7, delegatePrincipalId: null });
    expect(cleared.proposed.body).toMatchObject({ delegatePrincipalId: null });
  });

  it('503 NOT_READY for a secret this replica does not hold yet', async () => {
    await expect(effectOf(permit('delegate', { delegatePrincipalId: null }), NOW, replica(owners))).rejects.toMatchObject({ code: 'NOT_READY' });
  });

  it('409 when the state overtook the permit: the secret changed owner, the target was deleted or is unverified', async () => {
    await expect(effectOf(permit('transfer', { newOwnerPrincipalId: other }), NOW, replica(owners, [secret(7, third)]))).rejects.toMatchObject({ code: 'CONFLICT' });
    for (const target of [gone, unverified, randomUUID()]) {
      for (const [action, payload] of [['transfer', { newOwnerPrincipalId: target }], ['delegate', { delegatePrincipalId: target }]] as const) {
        await expect(effectOf(permit(action, payload), NOW, replica(owners, [secret(7, owner)]))).rejects.toMatchObject({ code: 'CONFLICT' });
      }
    }
  });
});
