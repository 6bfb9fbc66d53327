/**
 * What every member checks before storing a version of a principal (docs/security.md,
 * "Transitions"): coordinators vouch for Web2 identity (registration, verification, passwords,
 * deletion), a key is set once with its proof and replaced only by a confirmed rotate permit
 * consumed right before it, no transition removes a key, and deletion is final.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { keyRegistrationMessage, principalKind, type PrincipalBody } from '../../../../src/core/accounts/records.ts';
import type { ReplicatedRecord } from '../../../../src/core/replication/record.ts';
import { Slot0Writer, unitCluster } from '../../../utils/evidence.ts';
import { newEd25519 } from '../../../utils/web2.ts';

const c = unitCluster();
const kind = principalKind(c.descriptor);
const NOW = Date.now();

function scene() {
  const w = new Slot0Writer(c, NOW);
  const id = randomUUID();
  const base: Omit<PrincipalBody, 'v'> = { email: 'p@x.test', emailVerified: false, passwordHash: '$argon2id$one', ed25519PublicKey: null, keyProof: null, status: 'active', createdAt: NOW, updatedAt: NOW, registration: 1 };
  const version = (change: string, body: Omit<PrincipalBody, 'v'>, options: { prev?: ReplicatedRecord | null; vouchBy?: number } = { vouchBy: 1 }) => w.version<PrincipalBody>('principal', id, change, body, options);
  const check = (body: PrincipalBody) => kind.validate!(body, w.contextOf(w.record('principal', id, body as never, undefined, true)));
  const accept = async (body: PrincipalBody) => {
    const r = w.record('principal', id, body as never);
    expect(await kind.validate!(body, w.contextOf(r))).toBeUndefined();
    return w.put(r);
  };
  /** Registered and verified. */
  const verified = async () => {
    await accept(version('register', base));
    await accept(version('verifyEmail', { ...base, emailVerified: true }));
  };
  return { w, id, base, version, check, accept, verified };
}

const code = async (p: ReturnType<ReturnType<typeof scene>['check']>) => (await p)?.code;

/** A key and its registration proof. */
function keyWithProof() {
  const k = newEd25519();
  return { key: k.publicKey, proof: k.sign(keyRegistrationMessage(k.publicKey)) };
}

describe('principal: Web2 identity, vouched for by a coordinator', () => {
  it('registration, re-registration of an unverified email, verification, a password reset, deletion', async () => {
    const s = scene();
    expect(await code(s.check(s.version('register', s.base, {})))).toBe('bad_vouch');
    expect(await code(s.check(s.version('register', s.base, { vouchBy: 3 })))).toBe('bad_vouch');
    await s.accept(s.version('register', s.base));
    // A later registration only: slot 0 counts them.
    expect(await code(s.check(s.version('reregister', { ...s.base, passwordHash: '$argon2id$two' })))).toBe('registration_not_later');
    await s.accept(s.version('reregister', { ...s.base, passwordHash: '$argon2id$two', registration: 2 }));
    // Verification may not touch the email.
    expect(await code(s.check(s.version('verifyEmail', { ...s.base, registration: 2, emailVerified: true, email: 'q@x.test' })))).toBe('fields_changed');
    await s.accept(s.version('verifyEmail', { ...s.base, passwordHash: '$argon2id$two', registration: 2, emailVerified: true }));
    const verified = { ...s.base, passwordHash: '$argon2id$two', registration: 2, emailVerified: true };
    // Verified: no more re-registration.
    expect(await code(s.check(s.version('reregister', { ...verified, emailVerified: false, registration: 3 })))).toBe('terminal_state');
    await s.accept(s.version('resetPassword', { ...verified, passwordHash: '$argon2id$three' }));
    await s.accept(s.version('delete', { ...verified, passwordHash: '$argon2id$three', status: 'deleted' }));
    // Deletion is final: no transition from a deleted principal.
    const deleted = { ...verified, passwordHash: '$argon2id$three', status: 'deleted' as const };
    for (const [change, body] of [
      ['resetPassword', { ...deleted, passwordHash: '$argon2id$four' }],
      ['registerKey', { ...deleted, ...(() => { const k = keyWithProof(); return { ed25519PublicKey: k.key, keyProof: k.proof }; })() }],
      ['delete', deleted],
    ] as const) {
      expect(await code(s.check(s.version(change, body))), change).toBe('terminal_state');
    }
  });
});

describe('principal: keys', () => {
  it('a first key comes with its proof, where there was none', async () => {
    const s = scene();
    await s.verified();
    const k = keyWithProof();
    expect(await code(s.check(s.version('registerKey', { ...s.base, emailVerified: true, ed25519PublicKey: k.key, keyProof: keyWithProof().proof })))).toBe('key_proof_invalid');
    expect(await code(s.check(s.version('registerKey', { ...s.base, emailVerified: true, ed25519PublicKey: k.key, keyProof: k.proof }, {})))).toBe('bad_vouch');
    await s.accept(s.version('registerKey', { ...s.base, emailVerified: true, ed25519PublicKey: k.key, keyProof: k.proof }));
  });

  it('issue 27 #2: no transition removes a key, and a key with its own proof never replaces one', async () => {
    const s = scene();
    const k = keyWithProof();
    await s.verified();
    const keyed = { ...s.base, emailVerified: true, ed25519PublicKey: k.key, keyProof: k.proof };
    await s.accept(s.version('registerKey', keyed));
    // Step one of the attack: a version without the key, under any coordinator-trusted transition.
    for (const change of ['resetPassword', 'verifyEmail', 'reregister', 'delete'] as const) {
      const body = { ...keyed, ed25519PublicKey: null, keyProof: null, ...(change === 'delete' ? { status: 'deleted' as const } : {}), ...(change === 'reregister' ? { registration: 2 } : {}) };
      expect(['fields_changed', 'terminal_state']).toContain(await code(s.check(s.version(change, body))));
    }
    // Step two: the attacker's key with its own proof.
    const attacker = keyWithProof();
    expect(await code(s.check(s.version('registerKey', { ...keyed, ed25519PublicKey: attacker.key, keyProof: attacker.proof })))).toBe('key_change_refused');
  });

  it('a rotation is the consumed rotate permit right before it: this principal, its new key, once', async () => {
    const s = scene();
    const k = keyWithProof();
    await s.verified();
    const keyed = { ...s.base, emailVerified: true, ed25519PublicKey: k.key, keyProof: k.proof };
    await s.accept(s.version('registerKey', keyed));
    const permitId = randomUUID();
    const next = 'cd'.repeat(32);
    s.w.put(s.w.record('permit', permitId, { permitId, action: 'rotate', principalId: s.id, status: 'consumed', result: { principalId: s.id, newPublicKey: next }, v: { n: 2, prev: null, change: 'consume' } } as never));
    const rotated = { ...keyed, ed25519PublicKey: next, keyProof: null, keyPermitId: permitId };
    expect(await code(s.check(s.version('rotateKey', { ...rotated, ed25519PublicKey: 'ef'.repeat(32) }, {})))).toBe('result_mismatch');
    expect(await code(s.check(s.version('rotateKey', { ...rotated, keyPermitId: randomUUID() }, {})))).toBe('permit_not_adjacent');
    await s.accept(s.version('rotateKey', rotated, {}));
    // The same permit again, later: not right after its consumption.
    expect(await code(s.check(s.version('rotateKey', { ...rotated, updatedAt: NOW + 1 }, {})))).toBe('permit_not_adjacent');
  });

  it('a rotate permit of another principal, or one still pending, rotates nothing', async () => {
    for (const over of [{ principalId: randomUUID() }, { status: 'pending' }, { action: 'delegate' }]) {
      const s = scene();
      const k = keyWithProof();
      await s.verified();
      const keyed = { ...s.base, emailVerified: true, ed25519PublicKey: k.key, keyProof: k.proof };
      await s.accept(s.version('registerKey', keyed));
      const permitId = randomUUID();
      s.w.put(s.w.record('permit', permitId, { permitId, action: 'rotate', principalId: s.id, status: 'consumed', result: { principalId: s.id, newPublicKey: 'cd'.repeat(32) }, v: { n: 2, prev: null, change: 'consume' }, ...over } as never));
      expect(['permit_mismatch', 'permit_not_consumed']).toContain(await code(s.check(s.version('rotateKey', { ...keyed, ed25519PublicKey: 'cd'.repeat(32), keyProof: null, keyPermitId: permitId }, {}))));
    }
  });
});
