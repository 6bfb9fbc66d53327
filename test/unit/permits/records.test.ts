/**
 * The record rules every member applies to permits and to the changes they make (PERMITS.md; the
 * `permit` and `principal` kinds): what a member refuses to store, whoever sent it.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { permitKind, type PermitBody } from '../../../src/core/permits/records.ts';
import { principalKind, keyRegistrationMessage, type PrincipalBody } from '../../../src/core/accounts/records.ts';
import { ed25519PublicKeyOf, signEd25519, toHex } from '../../../src/crypto/index.ts';

const permitId = randomUUID();
const pending: PermitBody = {
  permitId,
  requestId: randomUUID(),
  action: 'delegate',
  principalId: randomUUID(),
  secretId: 7,
  payload: '{"delegatePrincipalId":null}',
  payloadDigest: 'a'.repeat(64),
  tokenHash: 'b'.repeat(64),
  createdAt: 1000,
  expiresAt: 901_000,
  status: 'pending',
  consumedAt: null,
  result: null,
};
const consumed: PermitBody = { ...pending, status: 'consumed', consumedAt: 2000, result: { secretId: 7, delegatePrincipalId: null } };

const check = (b: PermitBody, originSlot: number | null = 0) => permitKind.validate!(b, { key: permitId, origin: '0x', originSlot });

describe('permit records', () => {
  it('a pending permit comes from slot 0 only; a consumption from any node', () => {
    expect(check(pending, 0)).toBeUndefined();
    expect(check(pending, 2)).toMatch(/slot 0/);
    expect(check(consumed, 3)).toBeUndefined();
    expect(check(consumed, null)).toBeUndefined();
  });

  it('a consumption carries its time and result; a pending permit neither', () => {
    expect(check({ ...consumed, result: null })).toMatch(/consumed/);
    expect(check({ ...consumed, consumedAt: null })).toMatch(/consumed/);
    expect(check({ ...pending, result: { secretId: 7, delegatePrincipalId: null } })).toMatch(/consumed/);
  });

  it('consumed outranks pending, so a late pending copy never revives a consumed permit', () => {
    expect(permitKind.rank!(consumed)).toBeGreaterThan(permitKind.rank!(pending));
  });

  it('rotate permits have secretId 0, the others a secret', () => {
    expect(check({ ...pending, action: 'rotate', secretId: 0, payload: '{"newPublicKey":"00"}' })).toBeUndefined();
    expect(check({ ...pending, action: 'rotate' })).toMatch(/secretId/);
    expect(check({ ...pending, secretId: 0 })).toMatch(/secretId/);
  });
});

describe('principal records: where a key may come from', () => {
  const seed = new Uint8Array(32).fill(7);
  const key = toHex(ed25519PublicKeyOf(seed));
  const base: PrincipalBody = { email: 'a@example.test', emailVerified: true, passwordHash: '$argon2id$x', ed25519PublicKey: null, keyProof: null, status: 'active', createdAt: 1, updatedAt: 1 };
  const validate = (b: PrincipalBody) => principalKind.validate!(b, { key: randomUUID(), origin: '0x', originSlot: 1 });

  it('a registered key needs its proof; a rotated key needs the permit that set it', () => {
    expect(validate(base)).toBeUndefined();
    expect(validate({ ...base, ed25519PublicKey: key, keyProof: toHex(signEd25519(seed, keyRegistrationMessage(key))) })).toBeUndefined();
    expect(validate({ ...base, ed25519PublicKey: key, keyProof: null, keyPermitId: permitId })).toBeUndefined();
    expect(validate({ ...base, ed25519PublicKey: key, keyProof: null })).toMatch(/without proof/);
    expect(validate({ ...base, ed25519PublicKey: key, keyProof: null, keyPermitId: null })).toMatch(/without proof/);
    expect(validate({ ...base, ed25519PublicKey: key, keyProof: 'c'.repeat(128), keyPermitId: permitId })).toMatch(/bad key signature/);
    expect(validate({ ...base, keyProof: 'c'.repeat(128) })).toMatch(/proof without key/);
  });
});
