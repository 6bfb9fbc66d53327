/**
 * A rogue coordinator changes nothing it was not asked to (issue 27; docs/security.md, "Transitions").
 * Coordinator 1 turns rogue with its genuine key and speaks the real protocols — `apply` to every
 * member, `create` to slot 0 (its `propose` and the other operations) — while coordinator 0 stays
 * honest and every victim talks only to coordinator 0. Member 4 turns rogue too (not a coordinator).
 * Each of the ten attacks is tried as the attacker would: every living member (0, 2, 3)
 * refuses or slot 0 writes nothing, the state is unchanged, and every answer coordinator 0 gives
 * stays true. Attacks 5 and 6 (a remove-delegate string as a decrypt, a junk share planted for
 * recovery) are in lying-coordinator.test.ts (i) and share-recovery.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { startLocalCluster, waitFor, type LocalCluster } from 'quorumkeep/testing';
import type { Cluster } from '../../src/cluster/index.ts';
import { AppError } from '../../src/errors/index.ts';
import { signRecord, type ReplicatedRecord } from '../../src/core/replication/record.ts';
import { proposalDigest, type VersionedBody } from '../../src/core/replication/versions.ts';
import { secretKey, type SecretBody } from '../../src/core/secrets/records.ts';
import type { PermitBody } from '../../src/core/permits/records.ts';
import { keyRegistrationMessage, type PrincipalBody } from '../../src/core/accounts/records.ts';
import { signDigest, toHex } from '../../src/crypto/index.ts';
import { lostSecretKey, missingShareDigest } from '../../src/core/secrets/lost-records.ts';
import { shareLabel } from '../../src/core/secrets/rules.ts';
import { attestMissingRequest } from '../../src/core/secrets/shard-messages.ts';
import { startImpostor } from '../utils/impostor.ts';
import { getJson, postJson } from '../utils/http.ts';
import { openSession, principalWithSession, signData, type Principal } from '../utils/session.ts';
import { confirmLinkOf, ownerBody, requestPermit, rotateBody } from '../utils/permits.ts';
import { cleanupStack } from '../utils/temp.ts';
import { newEd25519 } from '../utils/web2.ts';

const LIVING = [0, 2, 3];
const CALL_TIMEOUT_MS = 5000;

const stack = cleanupStack();
let cluster: LocalCluster;
let A: string;
let alice: Principal;
let bob: Principal;
let mallory: Principal;
let secretId: number;
let key: string;
let cifer: string;
let encryptedMessage: string;
/** The rogue non-coordinator member (slot 4) and the rogue coordinator (slot 1), with their keys. */
let member: { peer: Cluster; signingKey: Uint8Array; address: string };
let coordinator: { peer: Cluster; signingKey: Uint8Array; address: string };
let seq = 1_000_000;

beforeAll(async () => {
  cluster = await startLocalCluster({ size: 5, threshold: 3, coordinators: 2 });
  stack.push(() => cluster.stop());
  [A] = cluster.coordinators as [string];
  [alice, bob, mallory] = await Promise.all([principalWithSession(cluster, A, 'alice'), principalWithSession(cluster, A, 'bob'), principalWithSession(cluster, A, 'mallory')]);
  const created = await postJson<{ secretId: number }>(`${A}/web2/secret`, alice.signed(0));
  expect(created.status).toBe(201);
  secretId = created.body.secretId;
  key = secretKey(secretId);
  const enc = await postJson<{ cifer: string; encryptedMessage: string }>(`${A}/encrypt-payload`, alice.signed(secretId, 'alice only'));
  ({ cifer, encryptedMessage } = enc.body);
  await cluster.waitForConvergence({ timeoutMs: 10_000 });
  for (const slot of [4, 1]) {
    const { peer, signingKey } = await startImpostor(cluster, slot);
    stack.push(() => peer.stop());
    const rogue = { peer, signingKey, address: cluster.descriptor.nodes[slot]!.nodeAddress };
    if (slot === 4) member = rogue;
    else coordinator = rogue;
    await waitFor(() => LIVING.every((s) => peer.membership.isReachable(s)), { timeoutMs: 10_000, description: `rogue ${slot} to reach the living members` });
  }
}, 120_000);
afterAll(() => stack.run());

/** A record under the rogue's own origin. */
function forge(rogue: typeof member, kind: string, k: string, body: unknown, at = Date.now()): ReplicatedRecord {
  return signRecord(cluster.descriptor.clusterId, { kind, key: k, origin: rogue.address, seq: seq++, hlc: [at, 0], body: body as never }, rogue.signingKey);
}

/** Every living member refuses the records (one `apply` message) with `code` and stores none of them. */
async function refusedEverywhere(rogue: typeof member, records: ReplicatedRecord[], code: string): Promise<void> {
  const before = await states(records);
  for (const slot of LIVING) {
    await expect(rogue.peer.sendApply(slot, records, { signal: AbortSignal.timeout(CALL_TIMEOUT_MS) }), `member ${slot}`).rejects.toThrow(new RegExp(`\\b${code}\\b`));
  }
  expect(await states(records)).toEqual(before);
}

const states = (records: Array<{ kind: string; key: string }>) => Promise.all(LIVING.map((s) => Promise.all(records.map((r) => cluster.members[s]!.state.get(r.kind, r.key)))));
const current = async <T = Record<string, unknown>>(kind: string, k: string) => (await cluster.members[0]!.state.get(kind, k))! as Omit<ReplicatedRecord, 'body'> & { body: T };

/** The next version of (kind, key) after `prev`, as the rogue coordinator proposes it, vouched for with its key. */
function nextVersion<B extends object>(kind: string, k: string, prev: { origin: string; seq: number; body: unknown } | undefined, change: string, body: B): VersionedBody {
  const { v: _v, ...rest } = body as B & { v?: unknown };
  const v = { n: prev ? (prev.body as unknown as VersionedBody).v.n + 1 : 1, prev: prev ? { origin: prev.origin, seq: prev.seq } : null, change };
  const versioned = { ...rest, v } as unknown as VersionedBody;
  const sig = '0x' + toHex(signDigest(proposalDigest(cluster.descriptor.clusterId, kind, k, versioned), coordinator.signingKey));
  return { ...versioned, v: { ...v, vouch: { nodeAddress: coordinator.address, signature: sig } } } as VersionedBody;
}

/** The rogue coordinator's proposal to slot 0; resolves with the refusal (code and reason, message), or throws if slot 0 wrote it. */
async function proposalRefused(proposals: Array<{ kind: string; key: string; body: VersionedBody }>): Promise<{ code: string; reason: string | undefined; message: string }> {
  const before = await states(proposals);
  const err = await coordinator.peer.requestCreate({ op: 'propose', params: { proposals } }, { signal: AbortSignal.timeout(CALL_TIMEOUT_MS) }).then(
    (res) => res,
    (e: unknown) => e,
  );
  if (!(err instanceof AppError)) {
    // A conflict answer writes nothing either.
    if ((err as { conflict?: boolean })?.conflict) return { code: 'CONFLICT', reason: 'conflict', message: 'conflict' };
    throw new Error(`slot 0 wrote the rogue's proposal: ${JSON.stringify(err).slice(0, 300)}`);
  }
  expect(await states(proposals)).toEqual(before);
  return { code: err.code, reason: err.reason, message: err.message };
}

/** Bob's own decrypt of Alice's message: refused while the secret is Alice's alone. */
async function bobCannotDecrypt(): Promise<void> {
  const res = await postJson(`${A}/decrypt-payload`, { ...bob.signed(secretId, encryptedMessage), cifer });
  expect(res.status).toBe(403);
}

describe('a member that is not a coordinator, and a coordinator, write no sequenced record at all', () => {
  it('secret, principal and permit records under their own origin are refused by every member (slot 0 writes them)', async () => {
    const secret = await current<SecretBody>('secret', key);
    const principal = await current<PrincipalBody>('principal', alice.principalId);
    for (const rogue of [member, coordinator]) {
      await refusedEverywhere(rogue, [forge(rogue, 'secret', key, { ...secret.body, ownerPrincipalId: bob.principalId })], 'writer_not_allowed');
      await refusedEverywhere(rogue, [forge(rogue, 'principal', alice.principalId, { ...principal.body, ed25519PublicKey: newEd25519().publicKey, keyProof: null })], 'writer_not_allowed');
    }
    await refusedEverywhere(member, [forge(member, 'emailIndex', Buffer.from(alice.email).toString('hex'), { principalId: bob.principalId })], 'writer_not_allowed');
    await bobCannotDecrypt();
  });

  it('slot 0 serves the member no operation, and the coordinator none of its own (permit request and reissue)', async () => {
    for (const op of ['claimEmail', 'propose', 'createPermit', 'allocate']) {
      const err = await member.peer.requestCreate({ op, params: {} }, { signal: AbortSignal.timeout(CALL_TIMEOUT_MS) }).catch((e: unknown) => e);
      expect((err as AppError).code, op).toBe('FORBIDDEN');
    }
    const permitId = randomUUID();
    const refused = await proposalRefused([{ kind: 'permit', key: permitId, body: nextVersion('permit', permitId, undefined, 'request', { permitId }) }]);
    expect(refused.reason).toBe('not_proposable');
  });
});

describe('a vouch names the coordinator that made it', () => {
  it('slot 0 writes no version vouched for in its own name by another coordinator (members take its vouch on its record signature)', async () => {
    const principal = await current<PrincipalBody>('principal', mallory.principalId);
    const reset = nextVersion('principal', mallory.principalId, principal, 'resetPassword', { ...principal.body, passwordHash: '$argon2id$v=19$m=19456,t=2,p=1$forged$forged', updatedAt: Date.now() });
    const inSlot0sName = { ...reset, v: { ...reset.v, vouch: { ...reset.v.vouch!, nodeAddress: cluster.descriptor.nodes[0]!.nodeAddress } } };
    const refused = await proposalRefused([{ kind: 'principal', key: mallory.principalId, body: inSlot0sName }]);
    expect(refused.reason).toBe('record_refused');
    expect(refused.message).toMatch(/\bbad_vouch\b/);
    // The same version in the rogue's own name is written: Web2 identity is the coordinators' word.
    const written = (await coordinator.peer.requestCreate({ op: 'propose', params: { proposals: [{ kind: 'principal', key: mallory.principalId, body: reset }] } }, { signal: AbortSignal.timeout(CALL_TIMEOUT_MS) })) as { records?: ReplicatedRecord[] };
    expect(written.records?.length).toBe(1);
    const hash = (reset as unknown as PrincipalBody).passwordHash;
    await waitFor(async () => (await Promise.all(LIVING.map((s) => cluster.members[s]!.state.get('principal', mallory.principalId)))).every((r) => (r?.body as PrincipalBody | undefined)?.passwordHash === hash), {
      timeoutMs: 10_000,
      description: 'the rogue-vouched version on every living member',
    });
  });
});

describe('issue 27: the ten attacks of a rogue coordinator, refused', () => {
  it('#1 no create string moves an owner: a creation only creates, on its own claim', async () => {
    const secret = await current<SecretBody>('secret', key);
    const bobCreate = signData(bob.wallet, `-1_0_${bob.wallet.address}_${Date.now()}`);
    const session = (await current('session', bob.wallet.address)).body;
    const principalRec = await current('principal', bob.principalId);
    const auth = { by: 'create', evidence: { ...bobCreate, session }, principal: { origin: principalRec.origin, seq: principalRec.seq } };
    // As a later version of Alice's secret…
    const asLater = await proposalRefused([{ kind: 'secret', key, body: nextVersion('secret', key, secret, 'create', { ...secret.body, ownerPrincipalId: bob.principalId, auth }) }]);
    expect(asLater.reason).toBe('not_proposable');
    // …or flipping what never changes: the syncing flag, the type, the digests.
    const d = signData(alice.wallet, `-1_${secretId}_${alice.wallet.address}_${Date.now()}_`);
    const aliceSession = (await current('session', alice.wallet.address)).body;
    const ap = await current('principal', alice.principalId);
    for (const over of [{ isSyncing: true }, { secretType: 2 }, { shareDigests: ['0'.repeat(64)] }]) {
      const body = nextVersion('secret', key, secret, 'setDelegate', { ...secret.body, ...over, auth: { by: 'setDelegate', evidence: { ...d, session: aliceSession }, principal: { origin: ap.origin, seq: ap.seq } } });
      const refused = await proposalRefused([{ kind: 'secret', key, body }]);
      expect(refused.reason, JSON.stringify(over)).toBe('record_refused');
      expect(refused.message).toMatch(/fields_changed/);
    }
    expect((await current<SecretBody>('secret', key)).body.ownerPrincipalId).toBe(alice.principalId);
    await bobCannotDecrypt();
  });

  it('#2 no key is removed, and no key with its own proof replaces one', async () => {
    const principal = await current<PrincipalBody>('principal', alice.principalId);
    const removed = await proposalRefused([{ kind: 'principal', key: alice.principalId, body: nextVersion('principal', alice.principalId, principal, 'resetPassword', { ...principal.body, ed25519PublicKey: null, keyProof: null }) }]);
    expect(removed.message).toMatch(/fields_changed/);
    const attacker = newEd25519();
    const replaced = await proposalRefused([
      { kind: 'principal', key: alice.principalId, body: nextVersion('principal', alice.principalId, principal, 'registerKey', { ...principal.body, ed25519PublicKey: attacker.publicKey, keyProof: attacker.sign(keyRegistrationMessage(attacker.publicKey)), keyPermitId: null }) },
    ]);
    expect(replaced.message).toMatch(/key_change_refused/);
    // The attacker's key opens no session as Alice.
    const ts = String(Date.now());
    const res = await postJson(`${A}/web2/session`, { principalId: alice.principalId, timestamp: ts, sessionAddress: mallory.wallet.address, signature: attacker.sign(`cifer_session:${alice.principalId}:${ts}:${mallory.wallet.address}`) });
    expect(res.status).toBe(401);
  });

  it('#3 a consumed permit is never consumed again, and authorises its one change only', async () => {
    // Alice names Bob her delegate by a permit she confirms from the mail (through coordinator 0).
    const link = await requestPermit(cluster, A, ownerBody(alice, secretId, 'delegate', bob.principalId));
    const confirmed = await fetch(`${A}${link.pathAndQuery}`, { headers: { accept: 'application/json' } });
    expect(confirmed.status).toBe(200);
    await cluster.waitForConvergence({ timeoutMs: 10_000 });
    const permit = await current<PermitBody>('permit', link.permitId);
    expect(permit.body.status).toBe('consumed');
    // Consumed again, with another result, with the emailed token the rogue saw.
    const again = await proposalRefused([{ kind: 'permit', key: link.permitId, body: nextVersion('permit', link.permitId, permit, 'consume', { ...permit.body, result: { secretId, delegatePrincipalId: mallory.principalId } }) }]);
    expect(again.message).toMatch(/terminal_state/);
    // Alice removes the delegate by her own string; the rogue then re-applies the permit.
    expect((await postJson(`${A}/web2/setDelegate`, alice.signed(secretId, ''))).status).toBe(200);
    await cluster.waitForConvergence({ timeoutMs: 10_000 });
    const secret = await current<SecretBody>('secret', key);
    expect(secret.body.delegatePrincipalId).toBeNull();
    const reapplied = await proposalRefused([{ kind: 'secret', key, body: nextVersion('secret', key, secret, 'permit', { ...secret.body, delegatePrincipalId: bob.principalId, auth: { by: 'permit', permitId: link.permitId } }) }]);
    expect(reapplied.message).toMatch(/permit_not_adjacent/);
    await bobCannotDecrypt();
  });

  it('#4 a 4-part string signed for another route backs no permit', async () => {
    const fourPart = signData(alice.wallet, `-1_${secretId}_${alice.wallet.address}_${Date.now()}`);
    const requestId = randomUUID();
    const payload = JSON.stringify({ newOwnerPrincipalId: mallory.principalId });
    const session = (await current('session', alice.wallet.address)).body;
    const err = await coordinator.peer
      .requestCreate(
        { op: 'createPermit', params: { requestId, action: 'transfer', principalId: alice.principalId, secretId, payload, payloadDigest: 'a'.repeat(64), tokenHash: 'b'.repeat(64), requestedBy: { nodeAddress: coordinator.address, signature: '0x' + '0'.repeat(130) }, auth: { ...fourPart, session }, deadline: Date.now() + 5000 } },
        { signal: AbortSignal.timeout(CALL_TIMEOUT_MS) },
      )
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).reason).toBe('record_refused');
    expect(await cluster.members[0]!.state.get('permit', requestId)).toBeUndefined();
  });

  it('#7 a coordinator’s usage counters are taken in any order, so no gap stops a member serving anyone', async () => {
    const usageKey = `${alice.principalId}/monthly/${Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), 1)}/encryption/${coordinator.address}`;
    const high = forge(coordinator, 'usage', usageKey, { bytes: 100, requests: 1, refundedBytes: 0, refundedRequests: 0 });
    const low = forge(coordinator, 'usage', usageKey, { bytes: 1, requests: 5, refundedBytes: 0, refundedRequests: 0 });
    await coordinator.peer.sendApply(2, [high], { signal: AbortSignal.timeout(CALL_TIMEOUT_MS) });
    await coordinator.peer.sendApply(2, [low], { signal: AbortSignal.timeout(CALL_TIMEOUT_MS) });
    await coordinator.peer.sendApply(3, [low], { signal: AbortSignal.timeout(CALL_TIMEOUT_MS) });
    await coordinator.peer.sendApply(3, [high], { signal: AbortSignal.timeout(CALL_TIMEOUT_MS) });
    // Both members took both (an apply resolves only when every record of it is stored), and agree.
    expect((await cluster.members[2]!.state.get('usage', usageKey))?.seq).toBe((await cluster.members[3]!.state.get('usage', usageKey))?.seq);
    // The honest coordinator's sessions and decrypts go on.
    const res = await postJson<{ decryptedMessage: string }>(`${A}/decrypt-payload`, { ...alice.signed(secretId, encryptedMessage), cifer });
    expect(res.status).toBe(200);
    expect((await openSession(A, alice)).status).toBe(201);
  });

  it('#8 slot 0 marks no string used that it did not apply: a revocation is applied and answered truly', async () => {
    const err = await coordinator.peer.requestCreate({ op: 'signedUse', params: { useKey: 'a'.repeat(64), mark: true } }, { signal: AbortSignal.timeout(CALL_TIMEOUT_MS) }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect((await postJson(`${A}/web2/setDelegate`, alice.signed(secretId, bob.principalId))).status).toBe(200);
    const removal = alice.signed(secretId, '');
    expect((await postJson(`${A}/web2/setDelegate`, removal)).status).toBe(200);
    // 200 is true: every living member holds the version without a delegate.
    for (const s of LIVING) expect(((await cluster.members[s]!.state.get('secret', key))!.body as SecretBody).delegatePrincipalId, `member ${s}`).toBeNull();
    await bobCannotDecrypt();
  });

  it('#9 a clock pin changes no order: versions follow one another whatever their clocks', async () => {
    // The rogue stamps a secret version 50 s ahead under its own origin (refused: not slot 0) and
    // proposes one to slot 0 (slot 0 stamps its own clock and checks it as every member does).
    const secret = await current<SecretBody>('secret', key);
    await refusedEverywhere(coordinator, [forge(coordinator, 'secret', key, { ...secret.body, delegatePrincipalId: bob.principalId }, Date.now() + 50_000)], 'writer_not_allowed');
    // Alice's later genuine change wins on every member, and so does the one after it.
    expect((await postJson(`${A}/web2/setDelegate`, alice.signed(secretId, bob.principalId))).status).toBe(200);
    expect((await postJson(`${A}/web2/setDelegate`, alice.signed(secretId, ''))).status).toBe(200);
    for (const s of LIVING) expect(((await cluster.members[s]!.state.get('secret', key))!.body as SecretBody).delegatePrincipalId, `member ${s}`).toBeNull();
  });

  it('#10 a session is dead evidence from the moment its key is rotated', async () => {
    const carol = await principalWithSession(cluster, A, 'carol');
    const created = await postJson<{ secretId: number }>(`${A}/web2/secret`, carol.signed(0));
    const carolKey = secretKey(created.body.secretId);
    const oldWallet = carol.wallet;
    const oldSession = (await current('session', oldWallet.address)).body;
    // A string the old session signs before the rotation, held back by the rogue.
    const held = signData(oldWallet, `-1_${created.body.secretId}_${oldWallet.address}_${Date.now()}_${mallory.principalId}`);
    const link = await requestPermit(cluster, A, rotateBody(carol));
    expect((await fetch(`${A}${link.pathAndQuery}`, { headers: { accept: 'application/json' } })).status).toBe(200);
    await cluster.waitForConvergence({ timeoutMs: 10_000 });
    const secret = await current<SecretBody>('secret', carolKey);
    const rotated = await current('principal', carol.principalId);
    const body = nextVersion('secret', carolKey, secret, 'setDelegate', {
      ...secret.body,
      delegatePrincipalId: mallory.principalId,
      recentUses: [{ key: 'f'.repeat(64), at: Date.now() }],
      auth: { by: 'setDelegate', evidence: { ...held, session: oldSession }, principal: { origin: rotated.origin, seq: rotated.seq } },
    });
    const refused = await proposalRefused([{ kind: 'secret', key: carolKey, body }]);
    expect(refused.message).toMatch(/session_ended/);
    // Through the honest coordinator too: the old session is inactive.
    const honest = await postJson<{ code: string }>(`${A}/web2/setDelegate`, held);
    expect(honest.status, JSON.stringify(honest.body)).toBe(403);
    expect(honest.body.code).toBe('FORBIDDEN');
    expect(((await current<SecretBody>('secret', carolKey)).body).delegatePrincipalId).toBeNull();
  });
});

describe('issue 28: a rogue coordinator cannot call a healthy secret lost, nor a member speak for another slot', () => {
  it('a lostSecret without the statements of size − threshold + 1 members is refused by every member (none, its own signatures, too few)', async () => {
    const lostKey = lostSecretKey(-1, secretId);
    const label = shareLabel(-1, secretId);
    const now = Date.now();
    const signedBy = (slot: number, signingKey: Uint8Array) => ({ slot, at: now, signature: '0x' + toHex(signDigest(missingShareDigest(cluster.descriptor.clusterId, label, slot, now), signingKey)) });
    const body = (attestations: unknown[]) => ({ chainId: -1, secretId, acknowledgedAt: now, attestations });
    // Statements in the name of members 0, 2 and 3, signed with the coordinator's own key.
    await refusedEverywhere(coordinator, [forge(coordinator, 'lostSecret', lostKey, body([0, 2, 3].map((s) => signedBy(s, coordinator.signingKey))))], 'loss_unattested');
    // Genuine statements of the two members it controls (slots 1 and 4): one short.
    await refusedEverywhere(coordinator, [forge(coordinator, 'lostSecret', lostKey, body([signedBy(1, coordinator.signingKey), signedBy(4, member.signingKey)]))], 'loss_unattested');
    // A member that is not a coordinator writes none, even with enough statements.
    await refusedEverywhere(member, [forge(member, 'lostSecret', lostKey, body([signedBy(1, coordinator.signingKey), signedBy(4, member.signingKey), signedBy(0, coordinator.signingKey)]))], 'writer_not_allowed');
    // Members that hold their share state nothing; a member answers a coordinator only.
    const asked = await Promise.all(LIVING.map((slot) => coordinator.peer.callMember(slot, 'shard', attestMissingRequest([{ chainId: -1, secretId }]), { signal: AbortSignal.timeout(CALL_TIMEOUT_MS) })));
    for (const answer of asked) expect(answer).toEqual({ attestations: [] });
    const notCoordinator = await member.peer.callMember(0, 'shard', attestMissingRequest([{ chainId: -1, secretId }]), { signal: AbortSignal.timeout(CALL_TIMEOUT_MS) }).catch((e: unknown) => e);
    expect(notCoordinator).toBeInstanceOf(AppError);
    expect((notCoordinator as AppError).reason).toBe('not_coordinator');
    // Alice still decrypts.
    expect((await postJson(`${A}/decrypt-payload`, { ...alice.signed(secretId, encryptedMessage), cifer })).status).toBe(200);
  });

  it('a member marks only its own slot recovering', async () => {
    await refusedEverywhere(member, [forge(member, 'memberStatus', '2', { slot: 2, status: 'recovering', since: Date.now() })], 'member_own_slot_only');
  });
});

describe('the genuine flows still work', () => {
  it('Alice’s own setDelegate and a permit she confirms; then Bob decrypts as the delegate', async () => {
    expect((await postJson(`${A}/web2/setDelegate`, alice.signed(secretId, bob.principalId))).status).toBe(200);
    const res = await postJson<{ decryptedMessage: string }>(`${A}/decrypt-payload`, { ...bob.signed(secretId, encryptedMessage), cifer });
    expect(res.status).toBe(200);
    expect(res.body.decryptedMessage).toBe('alice only');
    const link = await requestPermit(cluster, A, ownerBody(alice, secretId, 'delegate', null));
    expect((await getJson(`${A}${link.pathAndQuery}`)).status).toBe(200);
    await bobCannotDecrypt();
    expect(await confirmLinkOf(cluster, link.permitId)).toMatchObject({ permitId: link.permitId });
  });
});
