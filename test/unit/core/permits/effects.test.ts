/**
 * The change a confirmed permit makes, computed from the replica (docs/permits.md, "GET /web2/confirm —
 * consumption", step 3), with the replica stubbed through deps.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { effectOf } from '../../../../src/core/permits/effects.ts';
import type { PermitActionName, PermitBody } from '../../../../src/core/permits/records.ts';
import { secretKey } from '../../../../src/core/secrets/records.ts';
import { NOW, ids, principal, replica, secret } from './fixtures.ts';

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
  };
}

describe('effectOf: rotate', () => {
  it('gives the principal the new key, marked as set by this permit, with no proof', async () => {
    const before = principal({ updatedAt: NOW + 5000 });
    const { intent, result } = await effectOf(permit('rotate', { newPublicKey: NEW_KEY }), NOW, replica({ [owner]: before }));
    expect(result).toEqual({ principalId: owner, newPublicKey: NEW_KEY });
    expect(intent).toEqual({ kind: 'principal', key: owner, body: { ...before, ed25519PublicKey: NEW_KEY, keyProof: null, keyPermitId: permitId, updatedAt: NOW + 5000 } });
    const later = await effectOf(permit('rotate', { newPublicKey: NEW_KEY }), NOW + 9000, replica({ [owner]: before }));
    expect(later.intent.body).toMatchObject({ updatedAt: NOW + 9000 });
  });

  it('409 once the account is deleted', async () => {
    for (const principals of [{ [owner]: principal({ status: 'deleted' }) }, {}]) {
      await expect(effectOf(permit('rotate', { newPublicKey: NEW_KEY }), NOW, replica(principals))).rejects.toMatchObject({ code: 'CONFLICT', message: 'This permit can no longer be applied: the account was deleted' });
    }
  });
});

describe('effectOf: transfer and delegate', () => {
  it('transfer: the new owner; a delegate equal to the new owner is cleared, another kept', async () => {
    const plain = await effectOf(permit('transfer', { newOwnerPrincipalId: other }), NOW, replica(owners, [secret(7, owner, { delegatePrincipalId: third })]));
    expect(plain.result).toEqual({ secretId: 7, newOwnerPrincipalId: other, delegatePrincipalId: third });
    expect(plain.intent).toEqual({
      kind: 'secret',
      key: secretKey(7),
      body: { ...secret(7, owner), ownerPrincipalId: other, delegatePrincipalId: third, updatedAt: NOW, auth: { by: 'permit', permitId } },
    });
    const toDelegate = await effectOf(permit('transfer', { newOwnerPrincipalId: other }), NOW, replica(owners, [secret(7, owner, { delegatePrincipalId: other })]));
    expect(toDelegate.result).toEqual({ secretId: 7, newOwnerPrincipalId: other, delegatePrincipalId: null });
    expect(toDelegate.intent.body).toMatchObject({ ownerPrincipalId: other, delegatePrincipalId: null });
  });

  it('delegate: set, or cleared for null; updatedAt never goes back', async () => {
    const set = await effectOf(permit('delegate', { delegatePrincipalId: other }), NOW, replica(owners, [secret(7, owner, { updatedAt: NOW + 5000 })]));
    expect(set.result).toEqual({ secretId: 7, delegatePrincipalId: other });
    expect(set.intent.body).toMatchObject({ ownerPrincipalId: owner, delegatePrincipalId: other, updatedAt: NOW + 5000, auth: { by: 'permit', permitId } });
    const cleared = await effectOf(permit('delegate', { delegatePrincipalId: null }), NOW, replica(owners, [secret(7, owner, { delegatePrincipalId: other })]));
    expect(cleared.result).toEqual({ secretId: 7, delegatePrincipalId: null });
    expect(cleared.intent.body).toMatchObject({ delegatePrincipalId: null });
  });

  it('503 NOT_READY for a secret this replica does not hold yet', async () => {
    await expect(effectOf(permit('delegate', { delegatePrincipalId: null }), NOW, replica(owners))).rejects.toMatchObject({
      code: 'NOT_READY',
      message: 'Secret 7 is not known to this coordinator yet; try again',
    });
  });

  it('409 when the state overtook the permit: the secret changed owner, the target was deleted or is unverified', async () => {
    await expect(effectOf(permit('transfer', { newOwnerPrincipalId: other }), NOW, replica(owners, [secret(7, third)]))).rejects.toMatchObject({
      code: 'CONFLICT',
      message: 'This permit can no longer be applied: secret 7 changed owner since it was requested',
    });
    for (const target of [gone, unverified, randomUUID()]) {
      for (const [action, payload] of [['transfer', { newOwnerPrincipalId: target }], ['delegate', { delegatePrincipalId: target }]] as const) {
        await expect(effectOf(permit(action, payload), NOW, replica(owners, [secret(7, owner)]))).rejects.toMatchObject({
          code: 'CONFLICT',
          message: 'This permit can no longer be applied: the target account was deleted',
        });
      }
    }
  });
});
