/**
 * What every member checks before storing a version of a secret (docs/security.md, "Transitions"):
 * each version is one named transition from the version it names, with the evidence that authorises
 * exactly that change, and everything else unchanged. The records are slot 0's (the only writer of
 * secrets); the checks hold whatever else the member holds, so a rogue coordinator that gets slot 0
 * to write, or slot 0 itself, can make no change no client signed for.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { PrincipalBody } from '../../../../src/core/accounts/records.ts';
import type { PermitBody } from '../../../../src/core/permits/records.ts';
import type { ReplicatedRecord } from '../../../../src/core/replication/record.ts';
import { secretKey, secretKind, type SecretBody } from '../../../../src/core/secrets/records.ts';
import { signedStringKey } from '../../../../src/core/sessions/evidence.ts';
import { evidence, grantedSession, Slot0Writer, unitCluster } from '../../../utils/evidence.ts';

const c = unitCluster();
const kind = secretKind(c.descriptor);
const NOW = Date.now();
const KEY = 'ab'.repeat(32);
const alice = randomUUID();
const bob = randomUUID();
const carol = randomUUID();
const aliceSession = grantedSession(c, alice, NOW);
const bobSession = grantedSession(c, bob, NOW);
const key = secretKey(7);

/** A fresh member log with Alice's and Bob's principals in it, and slot 0 writing. */
function scene() {
  const w = new Slot0Writer(c, NOW);
  const principal = (id: string, over: Partial<PrincipalBody> = {}) =>
    w.put(
      w.record(
        'principal',
        id,
        w.version<PrincipalBody>('principal', id, 'register', { email: `${id}@x.test`, emailVerified: true, passwordHash: '$argon2id$x', ed25519PublicKey: KEY, keyProof: null, status: 'active', createdAt: NOW, updatedAt: NOW, registration: 1, ...over }) as never,
      ),
    );
  const alicePrincipal = principal(alice);
  const bobPrincipal = principal(bob);
  const ref = (r: ReplicatedRecord) => ({ origin: r.origin, seq: r.seq });
  const genesis: Omit<SecretBody, 'v'> = {
    secretId: 7,
    ownerPrincipalId: alice,
    delegatePrincipalId: null,
    clusterId: c.descriptor.clusterId,
    secretType: 1,
    publicKeyCid: 'A'.repeat(1580),
    isSyncing: false,
    createdAt: NOW,
    updatedAt: NOW,
    auth: { by: 'create', evidence: evidence(aliceSession, `-1_0_${aliceSession.wallet.address}_${NOW}`), principal: ref(alicePrincipal) },
  };
  /** The member's verdict on `body` as slot 0's next record (not stored). */
  const check = (body: SecretBody, options: { atMs?: number } = {}) => {
    const r = w.record('secret', key, body as never, options.atMs, true);
    return kind.validate!(body, w.contextOf(r));
  };
  /** Store `body` as slot 0's next record (after checking it passes). */
  const accept = async (body: SecretBody) => {
    const r = w.record('secret', key, body as never);
    expect(await kind.validate!(body, w.contextOf(r))).toBeUndefined();
    return w.put(r);
  };
  const version = (change: string, body: Omit<SecretBody, 'v'>, options: { prev?: ReplicatedRecord | null; vouchBy?: number } = {}) => w.version<SecretBody>('secret', key, change, body, options);
  const delegateString = (s: typeof aliceSession, delegate: string, ts = NOW) => {
    const data = `-1_7_${s.wallet.address}_${ts}_${delegate}`;
    return { data, useKey: signedStringKey('setDelegate', data.split('_')), evidence: evidence(s, data) };
  };
  return { w, principal, alicePrincipal, bobPrincipal, ref, genesis, check, accept, version, delegateString };
}

const codeOf = async (p: ReturnType<ReturnType<typeof scene>['check']>) => (await p)?.code;

describe('secret: creation only creates', () => {
  it('a first version carries its creator’s create string (its principal owns it), dealt by a coordinator', async () => {
    const s = scene();
    expect(await s.check(s.version('create', s.genesis, { vouchBy: 1 }))).toBeUndefined();
    expect(await codeOf(s.check(s.version('create', { ...s.genesis, ownerPrincipalId: bob }, { vouchBy: 1 })))).toBe('not_owner');
    // No coordinator vouched for the key, or a member that is not one did.
    expect(await codeOf(s.check(s.version('create', s.genesis)))).toBe('bad_vouch');
    expect(await codeOf(s.check(s.version('create', s.genesis, { vouchBy: 3 })))).toBe('bad_vouch');
    // A string for another route (subject ≠ 0), or one signed 11 minutes before the version.
    const other = { ...s.genesis, auth: { ...s.genesis.auth, evidence: evidence(aliceSession, `-1_5_${aliceSession.wallet.address}_${NOW}`) } } as Omit<SecretBody, 'v'>;
    expect(await codeOf(s.check(s.version('create', other, { vouchBy: 1 })))).toBe('evidence_invalid');
    expect(await codeOf(s.check(s.version('create', s.genesis, { vouchBy: 1 }), { atMs: NOW + 11 * 60_000 }))).toBe('evidence_invalid');
    // A new secret has no delegate.
    expect(await codeOf(s.check(s.version('create', { ...s.genesis, delegatePrincipalId: bob }, { vouchBy: 1 })))).toBe('fields_changed');
  });

  it('issue 27 #1: a version that is not the first cannot be a creation, so no create string moves an owner', async () => {
    const s = scene();
    const first = await s.accept(s.version('create', s.genesis, { vouchBy: 1 }));
    // Bob's own genuine create string, over Alice's secret, with its key unchanged.
    const bobCreate = { ...s.genesis, ownerPrincipalId: bob, auth: { by: 'create' as const, evidence: evidence(bobSession, `-1_0_${bobSession.wallet.address}_${NOW}`), principal: s.ref(s.bobPrincipal) } };
    expect(await codeOf(s.check(s.version('create', bobCreate, { vouchBy: 1 })))).toBe('bad_version');
    // Nor as any other transition: a setDelegate-shaped version needs the owner's string.
    expect(await codeOf(s.check(s.version('setDelegate', bobCreate, { vouchBy: 1 })))).toBe('unknown_transition');
    // Nor does anything but the delegate change by the owner's string: not the syncing flag, the
    // type, the key or the share digests.
    const d = s.delegateString(aliceSession, bob);
    const delegated = (over: Partial<SecretBody>) => s.version('setDelegate', { ...s.genesis, delegatePrincipalId: bob, recentUses: [{ key: d.useKey, at: NOW }], auth: { by: 'setDelegate', evidence: d.evidence, principal: s.ref(s.alicePrincipal) }, ...over });
    for (const over of [{ isSyncing: true }, { secretType: 2 }, { publicKeyCid: 'C'.repeat(1580) }, { shareDigests: ['0'.repeat(64)] }, { ownerPrincipalId: carol }]) {
      expect(await codeOf(s.check(delegated(over))), JSON.stringify(Object.keys(over))).toBe('fields_changed');
    }
    expect(await s.check(delegated({}))).toBeUndefined();
    expect(first.seq).toBe(3);
  });
});

describe('secret: setDelegate', () => {
  it('the owner’s string naming exactly this secret and this delegate', async () => {
    const s = scene();
    await s.accept(s.version('create', s.genesis, { vouchBy: 1 }));
    const set = (str: ReturnType<typeof s.delegateString>, delegate: string | null, principal = s.alicePrincipal) =>
      s.version('setDelegate', { ...s.genesis, delegatePrincipalId: delegate, recentUses: [{ key: str.useKey, at: NOW }], auth: { by: 'setDelegate', evidence: str.evidence, principal: s.ref(principal) } });
    expect(await s.check(set(s.delegateString(aliceSession, bob), bob))).toBeUndefined();
    expect(await s.check(set(s.delegateString(aliceSession, ''), null))).toBeUndefined();
    expect(await codeOf(s.check(set(s.delegateString(bobSession, bob), bob, s.bobPrincipal)))).toBe('not_owner');
    expect(await codeOf(s.check(set(s.delegateString(aliceSession, bob), carol)))).toBe('names_another_value');
    const otherSecret = `-1_8_${aliceSession.wallet.address}_${NOW}_${bob}`;
    expect(await codeOf(s.check(set({ data: otherSecret, useKey: signedStringKey('setDelegate', otherSecret.split('_')), evidence: evidence(aliceSession, otherSecret) }, bob)))).toBe('names_another_secret');
    // A session of Alice's named with Bob's principal version.
    expect(await codeOf(s.check(set(s.delegateString(aliceSession, bob), bob, s.bobPrincipal)))).toBe('evidence_invalid');
  });

  it('issue 27 #10: a session whose key was rotated, or whose account was deleted, is dead evidence', async () => {
    const s = scene();
    await s.accept(s.version('create', s.genesis, { vouchBy: 1 }));
    const rotated = s.w.put(s.w.record('principal', alice, s.w.version<PrincipalBody>('principal', alice, 'rotateKey', { email: 'a@x.test', emailVerified: true, passwordHash: '$argon2id$x', ed25519PublicKey: 'cd'.repeat(32), keyProof: null, keyPermitId: randomUUID(), status: 'active', createdAt: NOW, updatedAt: NOW, registration: 1 }) as never));
    const d = s.delegateString(aliceSession, bob);
    const set = s.version('setDelegate', { ...s.genesis, delegatePrincipalId: bob, recentUses: [{ key: d.useKey, at: NOW }], auth: { by: 'setDelegate', evidence: d.evidence, principal: s.ref(rotated) } });
    expect(await codeOf(s.check(set))).toBe('session_ended');
    const deleted = s.w.put(s.w.record('principal', alice, s.w.version<PrincipalBody>('principal', alice, 'delete', { email: 'a@x.test', emailVerified: true, passwordHash: '$argon2id$x', ed25519PublicKey: KEY, keyProof: null, status: 'deleted', createdAt: NOW, updatedAt: NOW, registration: 1 }) as never));
    const afterDelete = s.version('setDelegate', { ...s.genesis, delegatePrincipalId: bob, recentUses: [{ key: d.useKey, at: NOW }], auth: { by: 'setDelegate', evidence: d.evidence, principal: s.ref(deleted) } });
    expect(await codeOf(s.check(afterDelete))).toBe('session_ended');
    // A principal version this member does not hold yet: held back, and what it waits for named.
    const unknown = s.version('setDelegate', { ...s.genesis, delegatePrincipalId: bob, recentUses: [{ key: d.useKey, at: NOW }], auth: { by: 'setDelegate', evidence: d.evidence, principal: { origin: s.w.origin, seq: 999 } } });
    expect(await s.check(unknown)).toMatchObject({ code: 'evidence_missing', transient: true, waitFor: { origin: s.w.origin, seq: 999 } });
  });

  it('one string, one change: the version records it, a replay over it is refused, and no version forgets it while it could be replayed', async () => {
    const s = scene();
    await s.accept(s.version('create', s.genesis, { vouchBy: 1 }));
    const d = s.delegateString(aliceSession, bob);
    const auth = { by: 'setDelegate' as const, evidence: d.evidence, principal: s.ref(s.alicePrincipal) };
    expect(await codeOf(s.check(s.version('setDelegate', { ...s.genesis, delegatePrincipalId: bob, auth })))).toBe('fields_changed');
    const applied = await s.accept(s.version('setDelegate', { ...s.genesis, delegatePrincipalId: bob, recentUses: [{ key: d.useKey, at: NOW }], auth }));
    // The same string again over the version it made.
    expect(await codeOf(s.check(s.version('setDelegate', { ...s.genesis, delegatePrincipalId: bob, recentUses: [{ key: d.useKey, at: NOW }], auth })))).toBe('string_used');
    // A later string must keep the fresh entry.
    const clear = s.delegateString(aliceSession, '', NOW + 1);
    const clearAuth = { by: 'setDelegate' as const, evidence: clear.evidence, principal: s.ref(s.alicePrincipal) };
    expect(await codeOf(s.check(s.version('setDelegate', { ...s.genesis, recentUses: [{ key: clear.useKey, at: NOW + 1 }], auth: clearAuth })))).toBe('use_dropped');
    expect(await s.check(s.version('setDelegate', { ...s.genesis, recentUses: [{ key: d.useKey, at: NOW }, { key: clear.useKey, at: NOW + 1 }], auth: clearAuth }))).toBeUndefined();
    // Nor may a version add an entry no string of its own made (a use that never happened).
    expect(await codeOf(s.check(s.version('setDelegate', { ...s.genesis, recentUses: [{ key: d.useKey, at: NOW }, { key: clear.useKey, at: NOW + 1 }, { key: 'f'.repeat(64), at: NOW }], auth: clearAuth })))).toBe('fields_changed');
    expect(applied.seq).toBeGreaterThan(0);
  });

  it('a version names the one it replaces: missing, it is held back; another key’s, or an older one, it is refused', async () => {
    const s = scene();
    const first = await s.accept(s.version('create', s.genesis, { vouchBy: 1 }));
    const d = s.delegateString(aliceSession, bob);
    const body = { ...s.genesis, delegatePrincipalId: bob, recentUses: [{ key: d.useKey, at: NOW }], auth: { by: 'setDelegate' as const, evidence: d.evidence, principal: s.ref(s.alicePrincipal) } };
    const missing = s.version('setDelegate', body, { prev: { ...first, seq: 99 } });
    expect(await s.check(missing)).toMatchObject({ code: 'prev_missing', transient: true, waitFor: { origin: first.origin, seq: 99 } });
    // Bob's principal named as the previous version of the secret.
    expect(await codeOf(s.check(s.version('setDelegate', body, { prev: s.bobPrincipal })))).toBe('prev_mismatch');
    // A version older than the one it replaces (a clock pin backwards).
    const r = s.w.record('secret', key, s.version('setDelegate', body) as never, first.hlc[0] - 1);
    expect((await kind.validate!(r.body as SecretBody, s.w.contextOf(r)))?.code).toBe('bad_time');
  });
});

describe('secret: a permit, once', () => {
  /** Alice's secret, Bob as delegate, then a consumed permit written right before the change. */
  async function withPermit(action: 'transfer' | 'delegate', value: string | null, over: Partial<PermitBody> = {}) {
    const s = scene();
    await s.accept(s.version('create', s.genesis, { vouchBy: 1 }));
    const permitId = randomUUID();
    const payload = JSON.stringify(action === 'transfer' ? { newOwnerPrincipalId: value } : { delegatePrincipalId: value });
    const consumed = s.w.put(
      s.w.record('permit', permitId, {
        permitId,
        action,
        principalId: alice,
        secretId: 7,
        payload,
        status: 'consumed',
        result: action === 'transfer' ? { secretId: 7, newOwnerPrincipalId: value, delegatePrincipalId: null } : { secretId: 7, delegatePrincipalId: value },
        v: { n: 2, prev: null, change: 'consume' },
        ...over,
      } as never),
    );
    return { s, permitId, consumed };
  }

  it('a transfer: the consumed permit the owner requested, right before; its payload fixes the owner', async () => {
    const { s, permitId } = await withPermit('transfer', bob);
    const moved = s.version('permit', { ...s.genesis, ownerPrincipalId: bob, auth: { by: 'permit', permitId } });
    expect(await s.check(moved)).toBeUndefined();
    expect(await codeOf(s.check(s.version('permit', { ...s.genesis, ownerPrincipalId: carol, auth: { by: 'permit', permitId } })))).toBe('result_mismatch');
    // The key, type or digests never move with an owner.
    expect(await codeOf(s.check(s.version('permit', { ...s.genesis, ownerPrincipalId: bob, publicKeyCid: 'C'.repeat(1580), auth: { by: 'permit', permitId } })))).toBe('fields_changed');
  });

  it('issue 27 #3: a consumed permit authorises the one change written right after it, never a later one', async () => {
    const { s, permitId } = await withPermit('delegate', carol);
    const changed = await s.accept(s.version('permit', { ...s.genesis, delegatePrincipalId: carol, auth: { by: 'permit', permitId } }));
    // Any later version backed by the same permit is not right after its consumption.
    expect(await codeOf(s.check(s.version('permit', { ...s.genesis, delegatePrincipalId: carol, updatedAt: NOW + 5, auth: { by: 'permit', permitId } })))).toBe('permit_not_adjacent');
    expect(changed.seq).toBeGreaterThan(0);
  });

  it('a pending permit, another secret’s, or one requested by someone who does not own the secret authorises nothing', async () => {
    for (const [over, code] of [
      [{ status: 'pending' }, 'permit_not_consumed'],
      [{ secretId: 8 }, 'permit_mismatch'],
      [{ principalId: bob }, 'not_owner'],
      [{ action: 'rotate' }, 'permit_mismatch'],
    ] as const) {
      const { s, permitId } = await withPermit('delegate', carol, over as Partial<PermitBody>);
      expect(await codeOf(s.check(s.version('permit', { ...s.genesis, delegatePrincipalId: carol, auth: { by: 'permit', permitId } }))), JSON.stringify(over)).toBe(code);
    }
  });

  it('a delegate permit sets the delegate its payload names and never the owner', async () => {
    const { s, permitId } = await withPermit('delegate', carol);
    expect(await codeOf(s.check(s.version('permit', { ...s.genesis, ownerPrincipalId: carol, delegatePrincipalId: null, auth: { by: 'permit', permitId } })))).toBe('result_mismatch');
    expect(await codeOf(s.check(s.version('permit', { ...s.genesis, delegatePrincipalId: bob, auth: { by: 'permit', permitId } })))).toBe('result_mismatch');
  });
});

describe('secret: the string a version carries, for its signer to be recovered ahead of the check', () => {
  it('is its evidence’s data and signature; a body without two strings there gives none', () => {
    const s = scene();
    const body = s.version('create', s.genesis, { vouchBy: 1 });
    const e = (body.auth as { evidence: { data: string; signature: string } }).evidence;
    expect(kind.signedStrings!(body as never)).toEqual([{ data: e.data, signature: e.signature }]);
    expect(kind.signedStrings!({ ...body, auth: { by: 'permit', permitId: 'p' } } as never)).toEqual([]);
    expect(kind.signedStrings!({ ...body, auth: { by: 'create', evidence: { data: e.data, signature: 7 } } } as never)).toEqual([]);
    expect(kind.signedStrings!(null)).toEqual([]);
    expect(kind.signedStrings!('junk')).toEqual([]);
  });
});
