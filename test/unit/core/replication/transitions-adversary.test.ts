/**
 * The property-based adversary of issue 27 (docs/security.md, "Transitions"; "Order never matters").
 *
 * A genuine history is built the way the cluster builds it: principals registered, verified and
 * keyed; Alice's secret created; delegate changes by her strings; a delegate permit and a transfer
 * permit requested and confirmed; a key rotation; a transfer to Mallory requested but never
 * confirmed. From it, every piece of evidence the cluster has seen is pooled — every signed string,
 * every session, every consumed permit with its token, every version — together with Mallory's own
 * strings (her account is the attacker's). The adversary composes versions out of the pool, varying
 * every field, the version it names, the transition, the vouch and the clock:
 *
 * 1. proposed to slot 0 by a coordinator (the real sequencer and its guards, slot 0 checking its own
 *    writes as members do): nothing is written that is not a genuine transition — an owner changes
 *    only by a confirmed transfer its owner requested, a delegate only by the owner's own live string
 *    naming it or a confirmed delegate permit, a key only by its first registration or a confirmed
 *    rotation, a permit's status and result only by its emailed token into what its payload fixed;
 *    and a consumed permit or a deleted principal never changes again;
 * 2. written with slot 0's own key and offered to members: members refuse the same;
 * 3. any set of records, genuine and forged, offered to two replicas in two orders: the same records
 *    stored, the same refused, the same states, and nothing left waiting for a record it holds;
 * 4. vouches: a vouch may also name slot 0 while the rogue signed it. Slot 0 writes no version whose
 *    vouch the named coordinator did not make (1), so members take a vouch by the record's own origin
 *    on the record's signature: the same verdict as its genuine vouch, and one in another
 *    coordinator's name is checked (`bad_vouch`).
 *
 * Runs: `QK_PROPERTY_RUNS` (default 60 per property in `npm test`; e.g. `QK_PROPERTY_RUNS=2000 npx
 * vitest run test/unit/core/replication/transitions-adversary.test.ts` for a long run).
 */
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { keyRegistrationMessage, principalKind, type PrincipalBody } from '../../../../src/core/accounts/records.ts';
import { permitIdFor, permitKind, permitRequestDigest, type PermitBody } from '../../../../src/core/permits/records.ts';
import { createCreator } from '../../../../src/core/replication/creator.ts';
import { createKindRegistry, type KindRegistry } from '../../../../src/core/replication/kinds.ts';
import type { ReplicatedRecord } from '../../../../src/core/replication/record.ts';
import { createSequencer, type VersionWriter } from '../../../../src/core/replication/sequencer.ts';
import { bodyProblem, UNNUMBERED } from '../../../../src/core/replication/validate.ts';
import { proposalDigest, type VersionedBody } from '../../../../src/core/replication/versions.ts';
import { secretKey, secretKind, type SecretBody } from '../../../../src/core/secrets/records.ts';
import { signedStringKey, type SignedEvidence } from '../../../../src/core/sessions/evidence.ts';
import { fromHex, sha256Hex, signDigest, toHex, verifyDigest } from '../../../../src/crypto/index.ts';
import { AppError } from '../../../../src/errors/index.ts';
import { createLogger } from '../../../../src/log/index.ts';
import { contextFor, evidence, grantedSession, Slot0Writer, unitCluster, type UnitCluster } from '../../../utils/evidence.ts';
import { ModelReplica } from '../../../utils/model-replica.ts';
import { newEd25519 } from '../../../utils/web2.ts';

const RUNS = Number(process.env.QK_PROPERTY_RUNS ?? 60);
/** A forgery's vouch naming slot 0 (coordinator 0) but signed by the rogue coordinator 1. */
const FORGED_AS_SLOT0 = -1;
/** Slot0Writer's vouch options for a forgery's `vouch`. */
const vouchOptions = (vouch: number | undefined) => (vouch === undefined ? {} : vouch === FORGED_AS_SLOT0 ? { vouchBy: 1, vouchAs: 0 } : { vouchBy: vouch });
const NOW = Date.now();
const SECRET = 7;
const SKEY = secretKey(SECRET);

type Body = SecretBody | PrincipalBody | PermitBody;
const CHANGES = {
  secret: ['create', 'setDelegate', 'permit'],
  principal: ['register', 'reregister', 'verifyEmail', 'resetPassword', 'registerKey', 'rotateKey', 'delete'],
  permit: ['request', 'reissue', 'consume'],
} as const;
type Kind = keyof typeof CHANGES;

/** The genuine history, the evidence pool, and the genuine authorisations it holds. */
interface World {
  c: UnitCluster;
  kinds: KindRegistry;
  w: Slot0Writer;
  /** Every genuine record, in slot 0's order. */
  history: ReplicatedRecord[];
  ids: { alice: string; bob: string; carol: string; mallory: string };
  /** Per kind: bodies seen (versions of any key). */
  bodies: Record<Kind, Body[]>;
  /** Values the adversary draws from, per field name. */
  values: Record<string, unknown[]>;
  /** Genuine setDelegate strings: useKey → what it says and who signed it with which key. */
  delegateStrings: Map<string, { signer: string; secretId: number; delegate: string | null; sessionKey: string }>;
  /** Confirmed permits (consumed genuinely): permitId → its pending body. */
  confirmed: Map<string, PermitBody>;
  /** Tokens of consumed permits (what a rogue coordinator may have read). */
  tokens: string[];
  /** Every setDelegate string signed, with what it says. */
  delegateEvidence: Array<{ ev: SignedEvidence; useKey: string; delegate: string | null; ts: number }>;
  /** Every create string signed. */
  createEvidence: SignedEvidence[];
  /** Every principal version's place in the log. */
  principalRefs: Array<{ origin: string; seq: number }>;
  /** Keys with their registration proofs (the principals', and the attacker's own). */
  keyProofs: Array<{ key: string; proof: string }>;
}

async function buildWorld(): Promise<World> {
  const c = unitCluster();
  const kinds = createKindRegistry([principalKind(c.descriptor), secretKind(c.descriptor), permitKind(c.descriptor)] as never);
  const w = new Slot0Writer(c, NOW - 60_000);
  const history: ReplicatedRecord[] = [];
  const bodies: World['bodies'] = { secret: [], principal: [], permit: [] };
  const delegateStrings: World['delegateStrings'] = new Map();
  const confirmed = new Map<string, PermitBody>();
  const tokens: string[] = [];
  const strings: unknown[] = [];
  const sessions: Record<string, ReturnType<typeof grantedSession>[]> = {};
  const keys: Record<string, Array<{ key: string; proof: string }>> = {};

  /** Slot 0 writes a version after checking it as a member would; it must pass. */
  const write = async (kind: Kind, key: string, change: string, body: object, vouchBy: number | undefined = 0) => {
    const b = w.version<VersionedBody>(kind, key, change, body as never, { vouchBy });
    const r = w.record(kind, key, b as never);
    const problem = await bodyProblem(kinds.get(kind)!, r.body, w.contextOf(r));
    if (problem) throw new Error(`genuine ${kind} ${change} refused: ${JSON.stringify(problem)}`);
    w.put(r);
    history.push(r);
    bodies[kind].push(b as unknown as Body);
    return r;
  };
  const ref = (r: ReplicatedRecord) => ({ origin: r.origin, seq: r.seq });
  const ids = { alice: randomUUID(), bob: randomUUID(), carol: randomUUID(), mallory: randomUUID() };
  const principals: Record<string, Omit<PrincipalBody, 'v'>> = {};
  const principalRec: Record<string, ReplicatedRecord> = {};

  // Principals: registered, verified, keyed; a session each.
  for (const [name, id] of Object.entries(ids)) {
    const k = newEd25519();
    keys[id] = [{ key: k.publicKey, proof: k.sign(keyRegistrationMessage(k.publicKey)) }];
    const base: Omit<PrincipalBody, 'v'> = { email: `${name}@x.test`, emailVerified: false, passwordHash: `$argon2id$${name}`, ed25519PublicKey: null, keyProof: null, status: 'active', createdAt: NOW, updatedAt: NOW, registration: 1 };
    await write('principal', id, 'register', base);
    await write('principal', id, 'verifyEmail', { ...base, emailVerified: true });
    principals[id] = { ...base, emailVerified: true, ed25519PublicKey: k.publicKey, keyProof: keys[id]![0]!.proof, keyPermitId: null };
    principalRec[id] = await write('principal', id, 'registerKey', principals[id]);
    sessions[id] = [grantedSession(c, id, NOW, [0, 1, 2], k.publicKey)];
  }
  const s = (id: string) => sessions[id]!.at(-1)!;
  const sign = (id: string, data: string) => {
    const e = evidence(s(id), data);
    strings.push(e);
    return e;
  };
  const delegateEvidence: World['delegateEvidence'] = [];
  const createEvidence: SignedEvidence[] = [];
  const delegateString = (id: string, delegate: string, ts: number) => {
    const data = `-1_${SECRET}_${s(id).wallet.address}_${ts}_${delegate}`;
    delegateStrings.set(signedStringKey('setDelegate', data.split('_')), { signer: id, secretId: SECRET, delegate: delegate === '' ? null : delegate, sessionKey: s(id).session.publicKey });
    const d = { ev: sign(id, data), useKey: signedStringKey('setDelegate', data.split('_')), delegate: delegate === '' ? null : delegate, ts };
    delegateEvidence.push(d);
    return d;
  };
  const createString = (id: string, ts: number) => {
    const e = sign(id, `-1_0_${s(id).wallet.address}_${ts}`);
    createEvidence.push(e);
    return e;
  };

  // Alice's secret.
  const secret: Omit<SecretBody, 'v'> = {
    secretId: SECRET,
    ownerPrincipalId: ids.alice,
    delegatePrincipalId: null,
    clusterId: c.descriptor.clusterId,
    secretType: 1,
    publicKeyCid: 'A'.repeat(1580),
    isSyncing: false,
    createdAt: NOW,
    updatedAt: NOW,
    auth: { by: 'create', evidence: createString(ids.alice, NOW), principal: ref(principalRec[ids.alice]!) },
  };
  let cur = secret;
  await write('secret', SKEY, 'create', cur);
  const setDelegate = async (id: string, delegate: string, ts: number) => {
    const d = delegateString(id, delegate, ts);
    cur = { ...cur, delegatePrincipalId: delegate === '' ? null : delegate, recentUses: [...(cur.recentUses ?? []), { key: d.useKey, at: ts }], auth: { by: 'setDelegate', evidence: d.ev, principal: ref(principalRec[id]!) } };
    await write('secret', SKEY, 'setDelegate', cur);
  };
  await setDelegate(ids.alice, ids.bob, NOW + 1);

  // A permit: requested by `by` (vouched by coordinator 1), optionally consumed with its change.
  const permit = async (action: 'delegate' | 'transfer' | 'rotate', by: string, value: string | null, consume: ((p: PermitBody) => Promise<void>) | undefined, ts: number) => {
    const requestId = randomUUID();
    const permitId = permitIdFor(c.descriptor.clusterId, requestId);
    const payload = JSON.stringify(action === 'rotate' ? { newPublicKey: value } : action === 'transfer' ? { newOwnerPrincipalId: value } : { delegatePrincipalId: value });
    const token = randomUUID() + randomUUID();
    const data = ['-1', SECRET, s(by).wallet.address, ts, 'permit', requestId, action, sha256Hex(payload)].join('_');
    const bare = {
      permitId,
      requestId,
      action,
      principalId: by,
      secretId: action === 'rotate' ? 0 : SECRET,
      payload,
      payloadDigest: sha256Hex(payload),
      tokenHash: sha256Hex(token),
      createdAt: ts,
      expiresAt: ts + 900_000,
      status: 'pending' as const,
      consumedAt: null,
      result: null,
      auth: action === 'rotate' ? null : sign(by, data),
      authPrincipal: action === 'rotate' ? null : ref(principalRec[by]!),
      token: null,
    };
    const pending: Omit<PermitBody, 'v'> = { ...bare, requestedBy: { nodeAddress: c.descriptor.nodes[1]!.nodeAddress, signature: '0x' + toHex(signDigest(permitRequestDigest(c.descriptor.clusterId, bare), c.keys[1]!)) } };
    await write('permit', permitId, 'request', pending, undefined);
    if (!consume) return;
    const result = action === 'rotate' ? { principalId: by, newPublicKey: value } : action === 'transfer' ? { secretId: SECRET, newOwnerPrincipalId: value, delegatePrincipalId: cur.delegatePrincipalId === value ? null : cur.delegatePrincipalId } : { secretId: SECRET, delegatePrincipalId: value };
    await write('permit', permitId, 'consume', { ...pending, status: 'consumed', consumedAt: ts + 10, result, token }, undefined);
    confirmed.set(permitId, pending as PermitBody);
    tokens.push(token);
    await consume(pending as PermitBody);
  };
  await permit('delegate', ids.alice, ids.carol, async (p) => {
    cur = { ...cur, delegatePrincipalId: ids.carol, auth: { by: 'permit', permitId: p.permitId } };
    await write('secret', SKEY, 'permit', cur, undefined);
  }, NOW + 2);
  await setDelegate(ids.alice, '', NOW + 3);
  await permit('transfer', ids.alice, ids.bob, async (p) => {
    cur = { ...cur, ownerPrincipalId: ids.bob, auth: { by: 'permit', permitId: p.permitId } };
    await write('secret', SKEY, 'permit', cur, undefined);
  }, NOW + 4);
  await setDelegate(ids.bob, ids.carol, NOW + 5);
  // Bob names Alice by a confirmed permit, then removes every delegate by his string: a replay of
  // either would bring a revoked delegate back.
  await permit('delegate', ids.bob, ids.alice, async (p) => {
    cur = { ...cur, delegatePrincipalId: ids.alice, auth: { by: 'permit', permitId: p.permitId } };
    await write('secret', SKEY, 'permit', cur, undefined);
  }, NOW + 5);
  await setDelegate(ids.bob, '', NOW + 6);
  // Alice rotates her key: her old session is dead from here on.
  const k2 = newEd25519();
  await permit('rotate', ids.alice, k2.publicKey, async (p) => {
    principals[ids.alice] = { ...principals[ids.alice]!, ed25519PublicKey: k2.publicKey, keyProof: null, keyPermitId: p.permitId };
    principalRec[ids.alice] = await write('principal', ids.alice, 'rotateKey', principals[ids.alice]!, undefined);
  }, NOW + 6);
  // Alice's old session still signs (the attacker kept it): strings from a dead session.
  delegateString(ids.alice, ids.mallory, NOW + 7);
  sessions[ids.alice]!.push(grantedSession(c, ids.alice, NOW, [0, 1, 2], k2.publicKey));
  // Alice, now no owner, asks to transfer to Mallory (a genuine string, never confirmed: no token).
  await permit('transfer', ids.alice, ids.mallory, undefined, NOW + 8);
  // Bob (the owner) asks to transfer to Mallory, never confirms.
  await permit('transfer', ids.bob, ids.mallory, undefined, NOW + 9);
  // Mallory's own strings: a create, setDelegates naming herself, a transfer request.
  createString(ids.mallory, NOW + 10);
  delegateString(ids.mallory, ids.mallory, NOW + 11);
  delegateString(ids.mallory, ids.bob, NOW + 12);
  sign(ids.mallory, ['-1', SECRET, s(ids.mallory).wallet.address, NOW + 13, 'permit', randomUUID(), 'transfer', sha256Hex(JSON.stringify({ newOwnerPrincipalId: ids.mallory }))].join('_'));

  // Bob, the owner now, signs a setDelegate that nobody applied yet (what a coordinator may apply).
  delegateString(ids.bob, ids.alice, NOW + 14);

  const attacker = newEd25519();
  const allPrincipals = [...Object.values(ids), randomUUID()];
  const refs = history.map(ref);
  const values: World['values'] = {
    ownerPrincipalId: allPrincipals,
    delegatePrincipalId: [...allPrincipals, null],
    publicKeyCid: ['A'.repeat(1580), 'B'.repeat(1580)],
    isSyncing: [true, false],
    secretType: [1, 2],
    shareDigests: [undefined, ['0'.repeat(64)]],
    recentUses: [undefined, [], ...bodies.secret.map((b) => (b as SecretBody).recentUses).filter(Boolean), [{ key: [...delegateStrings.keys()][0]!, at: NOW }]],
    auth: [
      ...bodies.secret.map((b) => (b as SecretBody).auth),
      ...strings.map((e) => ({ by: 'setDelegate', evidence: e, principal: refs[0] })),
      ...strings.flatMap((e) => Object.values(principalRec).map((r) => ({ by: 'setDelegate', evidence: e, principal: ref(r) }))),
      ...strings.map((e) => ({ by: 'create', evidence: e, principal: ref(principalRec[ids.mallory]!) })),
      ...bodies.permit.map((p) => ({ by: 'permit', permitId: (p as PermitBody).permitId })),
    ],
    ed25519PublicKey: [null, attacker.publicKey, k2.publicKey, ...Object.values(keys).map((k) => k[0]!.key)],
    keyProof: [null, attacker.sign(keyRegistrationMessage(attacker.publicKey)), ...Object.values(keys).map((k) => k[0]!.proof)],
    keyPermitId: [null, ...bodies.permit.map((p) => (p as PermitBody).permitId)],
    status: ['active', 'deleted', 'pending', 'consumed'],
    emailVerified: [true, false],
    passwordHash: ['$argon2id$attacker'],
    registration: [1, 2, 9],
    token: [null, ...tokens, 'x'.repeat(43)],
    tokenHash: [sha256Hex('x'.repeat(43)), ...bodies.permit.map((p) => (p as PermitBody).tokenHash)],
    result: [null, ...bodies.permit.map((p) => (p as PermitBody).result), { secretId: SECRET, newOwnerPrincipalId: ids.mallory, delegatePrincipalId: null }, { secretId: SECRET, delegatePrincipalId: ids.mallory }, { principalId: ids.alice, newPublicKey: attacker.publicKey }],
    consumedAt: [null, NOW + 100],
    principalId: allPrincipals,
    payload: bodies.permit.map((p) => (p as PermitBody).payload),
    requestedBy: bodies.permit.map((p) => (p as PermitBody).requestedBy),
    updatedAt: [NOW, NOW + 99],
  };
  const principalRefs = history.filter((r) => r.kind === 'principal').map(ref);
  const keyProofs = [...Object.values(keys).map((k) => k[0]!), { key: attacker.publicKey, proof: attacker.sign(keyRegistrationMessage(attacker.publicKey)) }];
  return { c, kinds, w, history, ids, bodies, values, delegateStrings, confirmed, tokens, delegateEvidence, createEvidence, principalRefs, keyProofs };
}

/** The fields the adversary varies, per kind. */
const FIELDS: Record<Kind, string[]> = {
  secret: ['ownerPrincipalId', 'delegatePrincipalId', 'publicKeyCid', 'isSyncing', 'secretType', 'shareDigests', 'recentUses', 'auth', 'updatedAt'],
  principal: ['ed25519PublicKey', 'keyProof', 'keyPermitId', 'status', 'emailVerified', 'passwordHash', 'registration', 'updatedAt'],
  permit: ['status', 'token', 'tokenHash', 'result', 'consumedAt', 'principalId', 'payload', 'requestedBy'],
};

/** One forged version: drawn from the pool by indices. */
const forgery = fc.record({
  kind: fc.constantFrom<Kind>('secret', 'principal', 'permit'),
  /** Which key: a principal or a permit of the history (the secret has one). */
  target: fc.nat(),
  /** The body it starts from: the target's current version (0), or any body of the kind seen. */
  base: fc.oneof(fc.constant(0), fc.nat()),
  change: fc.nat(),
  mutations: fc.array(fc.tuple(fc.nat(), fc.nat()), { maxLength: 3 }),
  vouch: fc.constantFrom<number | undefined>(undefined, 0, 1, 1, 3, FORGED_AS_SLOT0),
  clock: fc.integer({ min: -700_000, max: 50_000 }),
  /** Which version it names: the key's latest (0), or any record of the history. */
  prev: fc.oneof(fc.constant(0), fc.nat()),
});
type Forgery = typeof forgery extends fc.Arbitrary<infer T> ? T : never;

/**
 * Forgeries near what a coordinator may genuinely write — the current version with one field
 * changed, under each transition, vouched for by a coordinator — so that some pass and the checks
 * are tried at their edges, mixed with the rest.
 */
const PLAUSIBLE: Array<[Kind, string, string]> = [
  ['principal', 'resetPassword', 'passwordHash'],
  ['principal', 'resetPassword', 'updatedAt'],
  ['principal', 'verifyEmail', 'emailVerified'],
  ['principal', 'registerKey', 'ed25519PublicKey'],
  ['principal', 'rotateKey', 'ed25519PublicKey'],
  ['principal', 'delete', 'status'],
  ['secret', 'setDelegate', 'auth'],
  ['secret', 'setDelegate', 'delegatePrincipalId'],
  ['secret', 'permit', 'auth'],
  ['secret', 'permit', 'ownerPrincipalId'],
];
const nearGenuine = fc
  .record({ pick: fc.nat(PLAUSIBLE.length - 1), target: fc.nat(), value: fc.nat(), vouch: fc.constantFrom<number | undefined>(0, 1, FORGED_AS_SLOT0), clock: fc.integer({ min: -5000, max: 5000 }) })
  .map(({ pick, target, value, vouch, clock }): Forgery => {
    const [kind, change, field] = PLAUSIBLE[pick]!;
    return { kind, target, base: 0, change: CHANGES[kind].indexOf(change as never), mutations: [[FIELDS[kind].indexOf(field), value]], vouch, clock, prev: 0 };
  });
/**
 * Forgeries built from one piece of evidence the way a genuine change would use it — a setDelegate
 * string applied as its delegate change, a permit applied as its change (after a consumption with
 * whatever token is known), a key with its proof registered, a key removed, a create string made a
 * secret — on the current version or any other, under any principal version: the evidence is real,
 * only where it is used may be wrong.
 */
const constructed = fc.record({ build: fc.nat(5), a: fc.nat(), b: fc.nat(), c: fc.nat(), consumeFirst: fc.boolean(), vouch: fc.constantFrom<number | undefined>(undefined, 0, 1, 3, FORGED_AS_SLOT0), clock: fc.oneof(fc.integer({ min: -5000, max: 5000 }), fc.integer({ min: -700_000, max: 5000 })) });
type Constructed = typeof constructed extends fc.Arbitrary<infer T> ? T : never;
const anyForgery = fc.oneof({ arbitrary: forgery, weight: 2 }, { arbitrary: nearGenuine, weight: 2 }, { arbitrary: constructed, weight: 3 });
type AnyForgery = Forgery | Constructed;

/** The version(s) a forgery proposes, in order (each following the latest of its key, or a consumption before it). */
function proposalsOf(world: World, f: AnyForgery, log: { latest(kind: string, key: string): ReplicatedRecord | undefined }, anyPrev: boolean): Array<{ kind: Kind; key: string; body: VersionedBody; atMs: number }> {
  if (!('build' in f)) return [compose(world, f, log, anyPrev)];
  const atMs = NOW + 1000 + f.clock;
  const opts = vouchOptions(f.vouch);
  const at = <T>(list: readonly T[], i: number): T => list[i % list.length]!;
  const principalKey = at(Object.values(world.ids), f.a);
  const out: Array<{ kind: Kind; key: string; body: VersionedBody; atMs: number }> = [];
  const version = (kind: Kind, key: string, change: string, body: object, prev?: ReplicatedRecord) => {
    const latest = prev ?? log.latest(kind, key);
    out.push({ kind, key, body: world.w.version<VersionedBody>(kind, key, change, body as never, { prev: latest ?? null, ...opts }), atMs });
  };
  const strip = (r: ReplicatedRecord | undefined) => {
    const { v: _v, ...rest } = (r?.body ?? {}) as Record<string, unknown>;
    return rest;
  };
  const permits = world.bodies.permit as PermitBody[];
  /** The principal version a piece of evidence is checked under: its signer's current one (as a coordinator would name it), or any. */
  const principalFor = (e: SignedEvidence, pick: number) => {
    const current = log.latest('principal', e.session.principalId);
    return pick % 2 === 0 && current ? { origin: current.origin, seq: current.seq } : at(world.principalRefs, pick >> 1);
  };
  /** A consumption of `p` with a known token (or none that fits), into the result its payload names. */
  const consumption = (p: PermitBody) => {
    const value = JSON.parse(p.payload) as Record<string, string | null>;
    const result = p.action === 'rotate' ? { principalId: p.principalId, newPublicKey: value.newPublicKey } : p.action === 'transfer' ? { secretId: p.secretId, newOwnerPrincipalId: value.newOwnerPrincipalId, delegatePrincipalId: null } : { secretId: p.secretId, delegatePrincipalId: value.delegatePrincipalId };
    const { v: _v, ...pending } = (log.latest('permit', p.permitId)?.body ?? p) as PermitBody;
    version('permit', p.permitId, 'consume', { ...pending, status: 'consumed', consumedAt: atMs, result, token: at([...world.tokens, 'x'.repeat(43)], f.c) });
  };
  switch (f.build) {
    case 0: {
      const d = at(world.delegateEvidence, f.a);
      const cur = strip(log.latest('secret', SKEY)) as Omit<SecretBody, 'v'>;
      version('secret', SKEY, 'setDelegate', { ...cur, delegatePrincipalId: d.delegate, recentUses: [...(cur.recentUses ?? []), { key: d.useKey, at: d.ts }], auth: { by: 'setDelegate', evidence: d.ev, principal: principalFor(d.ev, f.b) } });
      break;
    }
    case 1: {
      const p = at(permits.filter((x) => x.action !== 'rotate'), f.b);
      if (f.consumeFirst) consumption(p);
      const cur = strip(log.latest('secret', SKEY)) as Omit<SecretBody, 'v'>;
      const value = JSON.parse(p.payload) as Record<string, string | null>;
      const change = p.action === 'transfer' ? { ownerPrincipalId: value.newOwnerPrincipalId!, delegatePrincipalId: cur.delegatePrincipalId === value.newOwnerPrincipalId ? null : cur.delegatePrincipalId } : { delegatePrincipalId: value.delegatePrincipalId! };
      version('secret', SKEY, 'permit', { ...cur, ...change, auth: { by: 'permit', permitId: p.permitId } });
      break;
    }
    case 2: {
      const k = at(world.keyProofs, f.b);
      version('principal', principalKey, 'registerKey', { ...strip(log.latest('principal', principalKey)), ed25519PublicKey: k.key, keyProof: k.proof, keyPermitId: null });
      break;
    }
    case 3: {
      const p = at(permits, f.b);
      if (f.consumeFirst) consumption(p);
      const value = JSON.parse(p.payload) as Record<string, string | null>;
      version('principal', principalKey, 'rotateKey', { ...strip(log.latest('principal', principalKey)), ed25519PublicKey: value.newPublicKey ?? at(world.keyProofs, f.c).key, keyProof: null, keyPermitId: p.permitId });
      break;
    }
    case 4: {
      const cur = strip(log.latest('principal', principalKey));
      version('principal', principalKey, at(CHANGES.principal, f.b), { ...cur, ed25519PublicKey: null, keyProof: null, keyPermitId: null });
      break;
    }
    default: {
      const e = at(world.createEvidence, f.b);
      const cur = strip(log.latest('secret', SKEY)) as Omit<SecretBody, 'v'>;
      const key = f.consumeFirst ? SKEY : secretKey(SECRET + 1);
      version('secret', key, 'create', { ...cur, secretId: Number(key), ownerPrincipalId: e.session.principalId, delegatePrincipalId: null, recentUses: undefined, auth: { by: 'create', evidence: e, principal: principalFor(e, f.c) } }, f.consumeFirst ? undefined : (null as never));
    }
  }
  return out;
}

/** The forged body `f` would be, following `prev` (the latest of its key unless `anyPrev`). */
function compose(world: World, f: Forgery, log: { latest(kind: string, key: string): ReplicatedRecord | undefined }, anyPrev: boolean): { kind: Kind; key: string; body: VersionedBody; atMs: number } {
  const keys = f.kind === 'secret' ? [SKEY] : f.kind === 'permit' ? [...new Set(world.bodies.permit.map((p) => (p as PermitBody).permitId))] : Object.values(world.ids);
  const key = keys[f.target % keys.length]!;
  const pool = world.bodies[f.kind];
  const current = log.latest(f.kind, key)?.body as Record<string, unknown> | undefined;
  const base = { ...((f.base === 0 && current) || (pool[f.base % pool.length] as unknown as Record<string, unknown>)) };
  for (const [fi, vi] of f.mutations) {
    const field = FIELDS[f.kind][fi % FIELDS[f.kind].length]!;
    const values = world.values[field]!;
    base[field] = values[vi % values.length];
  }
  const { v: _v, ...body } = base;
  const latest = log.latest(f.kind, key);
  const prev = anyPrev && f.prev > 0 ? world.history[f.prev % world.history.length] : latest;
  const change = CHANGES[f.kind][f.change % CHANGES[f.kind].length]!;
  const versioned = world.w.version<VersionedBody>(f.kind, key, change, body as never, { prev: prev ?? null, ...vouchOptions(f.vouch) });
  return { kind: f.kind, key, body: versioned, atMs: NOW + 1000 + f.clock };
}

/**
 * The oracle, independent of the checks under test: is `after` (following `before`) a genuine
 * transition of what the entitled party authorised? `preceding` is the record right before it.
 */
function genuine(world: World, kind: Kind, before: Body | undefined, after: Body, preceding: ReplicatedRecord | undefined): string | undefined {
  if (kind === 'secret') {
    const a = after as SecretBody;
    const b = before as SecretBody | undefined;
    // A new secret: owned by whoever signed a create string (under slot 0's key one string could back
    // several ids — slot 0 maps each create string to one id; docs/security.md, Known limits).
    if (!b) return a.auth.by === 'create' && a.auth.evidence.session.principalId === a.ownerPrincipalId ? undefined : 'a secret created without its owner’s create string';
    for (const f of ['secretId', 'clusterId', 'secretType', 'publicKeyCid', 'isSyncing', 'createdAt'] as const) if (a[f] !== b[f]) return `changed ${f}`;
    if (JSON.stringify(a.shareDigests) !== JSON.stringify(b.shareDigests)) return 'changed shareDigests';
    if (a.ownerPrincipalId !== b.ownerPrincipalId) {
      const p = a.auth.by === 'permit' ? world.confirmed.get(a.auth.permitId) : undefined;
      if (!p || p.action !== 'transfer' || p.principalId !== b.ownerPrincipalId || JSON.parse(p.payload).newOwnerPrincipalId !== a.ownerPrincipalId) return 'owner moved without a confirmed transfer by its owner';
      if (preceding?.kind !== 'permit' || preceding.key !== p.permitId) return 'a confirmed transfer applied away from its consumption';
    } else if (a.delegatePrincipalId !== b.delegatePrincipalId) {
      if (a.auth.by === 'setDelegate') {
        const data = (a.auth as { evidence: { data: string } }).evidence.data;
        const s = world.delegateStrings.get(signedStringKey('setDelegate', data.split('_')));
        const owner = b.ownerPrincipalId;
        if (!s || s.signer !== owner || s.delegate !== a.delegatePrincipalId) return 'delegate moved without the owner’s string naming it';
        if ((b.recentUses ?? []).some((u) => u.key === signedStringKey('setDelegate', data.split('_')))) return 'a string used twice';
        const latestKey = world.w.latest('principal', owner)!.body as PrincipalBody;
        if (s.sessionKey !== latestKey.ed25519PublicKey) return 'a dead session’s string';
      } else if (a.auth.by === 'permit') {
        const p = world.confirmed.get(a.auth.permitId);
        if (!p || p.action !== 'delegate' || p.principalId !== b.ownerPrincipalId || JSON.parse(p.payload).delegatePrincipalId !== a.delegatePrincipalId) return 'delegate moved without a confirmed permit';
        if (preceding?.kind !== 'permit' || preceding.key !== p.permitId) return 'a confirmed permit applied away from its consumption';
      } else return 'delegate moved by a creation';
    }
    return undefined;
  }
  if (kind === 'principal') {
    const a = after as PrincipalBody;
    const b = before as PrincipalBody | undefined;
    if (!b) return undefined; // a new principal: Web2 identity, the coordinator's word
    if (b.status === 'deleted') return 'a deleted principal changed';
    if (a.ed25519PublicKey !== b.ed25519PublicKey) {
      if (b.ed25519PublicKey === null) return a.v.vouch ? undefined : 'a first key nobody vouched for';
      const p = a.keyPermitId ? world.confirmed.get(a.keyPermitId) : undefined;
      if (!p || p.action !== 'rotate' || JSON.parse(p.payload).newPublicKey !== a.ed25519PublicKey) return 'a key replaced without a confirmed rotation';
      if (preceding?.kind !== 'permit' || preceding.key !== p.permitId) return 'a rotation applied away from its consumption';
    }
    if (a.email !== b.email) return 'changed email';
    return undefined;
  }
  const a = after as PermitBody;
  const b = before as PermitBody | undefined;
  if (!b) return 'a permit nobody requested at slot 0';
  if (b.status === 'consumed') return 'a consumed permit changed';
  if (a.status === 'consumed') {
    if (!a.token || sha256Hex(a.token) !== b.tokenHash) return 'consumed without its token';
    if (JSON.stringify(a.result) !== JSON.stringify(b.result === null ? a.result : b.result) && b.status !== 'pending') return 'result rewritten';
  }
  for (const f of ['permitId', 'requestId', 'action', 'principalId', 'secretId', 'payload', 'payloadDigest', 'createdAt', 'expiresAt'] as const) if (a[f] !== b[f]) return `changed ${f}`;
  return undefined;
}

/** A sequencer over `world`'s log with slot 0 checking its own writes (the real `propose` and guards). */
function sequencerOver(world: World): { writer: VersionWriter; creator: ReturnType<typeof createCreator>; written: ReplicatedRecord[] } {
  const { c, kinds, w } = world;
  const logger = createLogger({ level: 'silent' });
  const creator = createCreator({ timeoutMs: 1000 }, { isCreator: true, counters: { next: async () => 1 }, requestCreate: async () => undefined, logger });
  const written: ReplicatedRecord[] = [];
  const state = {
    get: async (kind: string, key: string) => w.latest(kind, key),
    async *list() {},
  };
  const writer = createSequencer({
    creator,
    kinds,
    sequenced: new Set(['secret', 'principal', 'permit']),
    membership: { descriptor: c.descriptor, self: c.descriptor.nodes[0]!, isReachable: () => true, reachableCount: () => 5 },
    state,
    replicator: {
      // Slot 0's own writes, checked as the engine checks them (siblings before each), then numbered.
      async replicateAll(intents) {
        const siblings: Array<{ kind: string; key: string; body: never; hlc: readonly [number, number] }> = [];
        for (const i of intents) {
          const problem = await bodyProblem(kinds.get(i.kind)!, i.body, contextFor(c, { kind: i.kind, key: i.key, origin: 0, atMs: NOW + 1000, log: w.log, own: true, siblings }));
          if (problem) throw new AppError(problem.transient ? 'NOT_READY' : 'FORBIDDEN', problem.code);
          siblings.push({ kind: i.kind, key: i.key, body: i.body as never, hlc: [NOW + 1000, UNNUMBERED] });
        }
        const records = intents.map((i) => w.put(w.record(i.kind, i.key, i.body, NOW + 1000)));
        written.push(...records);
        return { records, acked: [], failed: [] };
      },
      resendAll: async (records) => ({ records, acked: [], failed: [] }),
    },
    ingest: async () => undefined,
    signDigest: (d) => '0x' + toHex(signDigest(d, c.keys[1]!)),
    logger,
  });
  // The guards the node registers (src/core/permits/claims.ts, src/core/secrets/create.ts): a
  // permit's request and reissue are slot 0's own; no create claim exists for a new secret here.
  writer.guard('permit', 'request', 'selfOnly');
  writer.guard('permit', 'reissue', 'selfOnly');
  writer.guard('secret', 'create', () => {
    throw new AppError('FORBIDDEN', 'no create claim');
  });
  return { writer, creator, written };
}

let world: World;
beforeAll(async () => {
  world = await buildWorld();
}, 30_000);

describe('a rogue coordinator proposing to slot 0', () => {
  it('gets nothing written that is not a genuine transition', async () => {
    let writes = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(anyForgery, { minLength: 1, maxLength: 2 }), async (forgeries) => {
        const fresh = await buildWorldCopy(world);
        const { creator, written } = sequencerOver(fresh);
        const rogue = fresh.c.descriptor.nodes[1]!;
        // One proposal: one or several versions written together (a consumption and its change).
        const proposals = forgeries.flatMap((f) => proposalsOf(fresh, f, fresh.w, false));
        if (new Set(proposals.map((p) => `${p.kind}!${p.key}`)).size !== proposals.length) return;
        await creator.handle({ op: 'propose', params: { proposals: proposals.map(({ kind, key, body }) => ({ kind, key, body })) } }, rogue).catch((e: unknown) => { if (process.env.DEBUG_ADV) console.log((e as Error).message); });
        writes += written.length;
        for (const r of written) {
          // A vouch in a coordinator's name is one that coordinator made: members take slot 0's vouch
          // on its record signature alone (src/core/replication/versions.ts, vouchedBy).
          const vouch = (r.body as unknown as VersionedBody).v.vouch;
          if (vouch) expect(vouchVerifies(fresh.c, r.kind, r.key, r.body as unknown as VersionedBody), `${r.kind} written with a vouch in ${vouch.nodeAddress}'s name it did not make`).toBe(true);
          const before = r.body as unknown as VersionedBody;
          const prev = before.v.prev ? fresh.w.log.get(before.v.prev.origin, before.v.prev.seq) : undefined;
          const preceding = fresh.w.log.get(r.origin, r.seq - 1);
          const problem = genuine(fresh, r.kind as Kind, prev?.body as Body | undefined, r.body as unknown as Body, preceding);
          expect(problem, `${r.kind} ${(r.body as unknown as VersionedBody).v.change}: ${problem}`).toBeUndefined();
        }
      }),
      // A password reset in the rogue's own name (a coordinator is trusted for Web2 identity) is
      // written: tried first, so the count below never depends on the random draws (about 1 in 80
      // of which is written).
      { numRuns: RUNS * 4, examples: [[[{ kind: 'principal', target: 28, base: 0, change: CHANGES.principal.indexOf('resetPassword' as never), mutations: [[FIELDS.principal.indexOf('passwordHash'), 132671730]], vouch: 1, clock: 431, prev: 0 }]]] },
    );
    expect(writes).toBeGreaterThan(0);
  });
});

describe('versions written with slot 0’s own key', () => {
  it('are stored by a member only when they are a genuine transition of the version they name', async () => {
    const seen = { accepted: 0, refused: 0 };
    await fc.assert(
      fc.asyncProperty(anyForgery, async (f) => {
        const local = await buildWorldCopy(world);
        for (const { kind, key, body, atMs } of proposalsOf(local, f, local.w, false)) {
          const r = local.w.record(kind, key, body as never, atMs);
          const problem = await bodyProblem(local.kinds.get(kind)!, r.body, local.w.contextOf(r));
          seen[problem ? 'refused' : 'accepted']++;
          if (problem) return;
          const prev = body.v.prev ? local.w.log.get(body.v.prev.origin, body.v.prev.seq) : undefined;
          const verdict = genuine(local, kind, prev?.body as Body | undefined, body as unknown as Body, local.w.log.get(r.origin, r.seq - 1));
          expect(verdict, `${kind} ${body.v.change} accepted: ${verdict}`).toBeUndefined();
          local.w.put(r);
        }
      }),
      { numRuns: RUNS * 5 },
    );
    // Not vacuous: the adversary gets some versions stored (the transitions coordinators are
    // trusted for) and most refused.
    expect(seen.accepted).toBeGreaterThan(0);
    expect(seen.refused).toBeGreaterThan(seen.accepted);
  });
});

describe('a vouch in the name of the record’s own origin', () => {
  it('is judged on the record’s signature: the verdict of its genuine vouch; one in another coordinator’s name is checked', async () => {
    let renamed = 0;
    await fc.assert(
      fc.asyncProperty(anyForgery, async (f) => {
        const local = await buildWorldCopy(world);
        const verdicts = async (vouch: number | undefined, vouchAs?: number) => {
          const out: Array<string | undefined> = [];
          const proposals = proposalsOf(local, { ...f, vouch }, local.w, false);
          for (const { kind, key, body, atMs } of proposals) {
            const b = vouchAs === undefined ? body : { ...body, v: { ...body.v, vouch: { ...body.v.vouch!, nodeAddress: local.c.descriptor.nodes[vouchAs]!.nodeAddress } } };
            const r = local.w.record(kind, key, b as never, atMs, true);
            out.push((await bodyProblem(local.kinds.get(kind)!, r.body, local.w.contextOf(r)))?.code);
          }
          return out;
        };
        const genuineVouch = await verdicts(0);
        expect(await verdicts(FORGED_AS_SLOT0)).toEqual(genuineVouch);
        // Slot 0's signature in coordinator 1's name is not coordinator 1's vouch: refused, and for its
        // vouch where the genuine one passes.
        (await verdicts(0, 1)).forEach((code, i) => {
          if (genuineVouch[i] === undefined) {
            expect(code).toBe('bad_vouch');
            renamed++;
          } else expect(code).toBeDefined();
        });
      }),
      { numRuns: RUNS * 2 },
    );
    // Not vacuous: some versions pass with their genuine vouch (and were tried in another's name).
    expect(renamed).toBeGreaterThan(0);
  });
});

describe('order never matters', () => {
  it('two replicas offered the same records in two orders store, refuse and hold the same, and agree on every state', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(anyForgery, { maxLength: 6 }), fc.integer(), fc.integer(), async (forgeries, seedA, seedB) => {
        // Forgeries under slot 0's key, naming any version (forks included), numbered after the history.
        let seq = world.history.length;
        const forged = forgeries.flatMap((f) =>
          proposalsOf(world, f, world.w, true).map(({ kind, key, body, atMs }) => ({ kind, key, body: body as never, origin: world.w.origin, seq: ++seq, hlc: [atMs, 0] as [number, number], sig: '0x' }) satisfies ReplicatedRecord),
        );
        const all = [...world.history, ...forged];
        const a = new ModelReplica(world.c, world.kinds);
        const b = new ModelReplica(world.c, world.kinds);
        for (const r of shuffle(all, seedA)) await a.offer(r);
        for (const r of shuffle(all, seedB)) await b.offer(r);
        expect(a.storedIds()).toEqual(b.storedIds());
        expect([...a.refused.keys()].sort()).toEqual([...b.refused.keys()].sort());
        expect([...a.held.keys()].sort()).toEqual([...b.held.keys()].sort());
        // Every genuine record is stored, whatever came first; nothing waits for a record it holds.
        for (const r of world.history) expect(a.log.get(r.origin, r.seq), `${r.kind} ${r.seq}`).toBeDefined();
        for (const r of a.held.values()) {
          const prev = (r.body as unknown as VersionedBody).v?.prev;
          if (prev) expect(a.log.get(prev.origin, prev.seq)).toBeUndefined();
        }
        for (const [k, r] of a.states) expect(b.states.get(k)?.seq, k).toBe(r.seq);
      }),
      { numRuns: RUNS },
    );
  });
});

/** Whether `body`'s vouch is a signature by the node it names over the version (the check members skip for the record's own origin). */
function vouchVerifies(c: UnitCluster, kind: string, key: string, body: VersionedBody): boolean {
  const vouch = body.v.vouch!;
  const node = c.descriptor.nodes.find((n) => n.nodeAddress === vouch.nodeAddress);
  return node !== undefined && verifyDigest(fromHex(vouch.signature.slice(2)), proposalDigest(c.descriptor.clusterId, kind, key, body), fromHex(node.signingPublicKey));
}

/** A deterministic shuffle. */
function shuffle<T>(items: readonly T[], seed: number): T[] {
  const out = [...items];
  let x = seed | 0 || 1;
  for (let i = out.length - 1; i > 0; i--) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    const j = Math.abs(x) % (i + 1);
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/** The world with a log of its own (a sequencer's writes must not leak between runs). */
async function buildWorldCopy(src: World): Promise<World> {
  const w = new Slot0Writer(src.c, NOW);
  for (const r of src.history) w.put(r);
  (w as unknown as { seq: number }).seq = src.history.length;
  return { ...src, w };
}
