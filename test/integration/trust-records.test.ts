/**
 * Members verify authority, not just origin (docs/security.md, "Who may write what" and "Evidence in
 * the record"). Two genuine cluster identities turn rogue and speak the real protocols: member 4,
 * which is not a coordinator, and coordinator 1. Each forges the records of the review that found
 * them possible — a secret handed to Bob, Alice's account given the attacker's key, consumed permits,
 * OTPs and email claims — and asks slot 0 for its operations. Every living member (0, 2, 3) refuses
 * every forged record and stores nothing; Bob still cannot decrypt Alice's message; the genuine flows
 * (Alice's own setDelegate, a permit confirmed from the emailed link) still work afterwards.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { startLocalCluster, waitFor, type LocalCluster } from 'quorumkeep/testing';
import type { Cluster } from '../../src/cluster/index.ts';
import { signRecord, type ReplicatedRecord } from '../../src/core/replication/record.ts';
import { secretKey, type SecretBody } from '../../src/core/secrets/records.ts';
import type { PermitBody } from '../../src/core/permits/records.ts';
import type { PrincipalBody } from '../../src/core/accounts/records.ts';
import { keyRegistrationMessage } from '../../src/core/accounts/records.ts';
import { startImpostor } from '../utils/impostor.ts';
import { postJson } from '../utils/http.ts';
import { refusalOf } from '../utils/refusal.ts';
import { principalWithSession, type Principal } from '../utils/session.ts';
import { ownerBody, requestPermit } from '../utils/permits.ts';
import { cleanupStack } from '../utils/temp.ts';
import { newEd25519 } from '../utils/web2.ts';

const LIVING = [0, 2, 3];
const CALL_TIMEOUT_MS = 5000;

const stack = cleanupStack();
let cluster: LocalCluster;
let A: string;
let alice: Principal;
let bob: Principal;
let secretId: number;
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
  [alice, bob] = await Promise.all([principalWithSession(cluster, A, 'alice'), principalWithSession(cluster, A, 'bob')]);
  const created = await postJson<{ secretId: number }>(`${A}/web2/secret`, alice.signed(0));
  expect(created.status).toBe(201);
  secretId = created.body.secretId;
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
}, 90_000);
afterAll(() => stack.run());

function forge(rogue: typeof member, kind: string, key: string, body: unknown, at = Date.now()): ReplicatedRecord {
  return signRecord(cluster.descriptor.clusterId, { kind, key, origin: rogue.address, seq: seq++, hlc: [at, 0], body: body as never }, rogue.signingKey);
}

/** Every living member refuses the records (one `apply` message) for `reason` and stores none of them. */
async function refusedEverywhere(rogue: typeof member, records: ReplicatedRecord[], reason: RegExp): Promise<void> {
  const before = await Promise.all(LIVING.map((s) => Promise.all(records.map((r) => cluster.members[s]!.state.get(r.kind, r.key)))));
  for (const slot of LIVING) {
    await expect(rogue.peer.sendApply(slot, records, { signal: AbortSignal.timeout(CALL_TIMEOUT_MS) }), `member ${slot}`).rejects.toThrow(reason);
  }
  const after = await Promise.all(LIVING.map((s) => Promise.all(records.map((r) => cluster.members[s]!.state.get(r.kind, r.key)))));
  expect(after).toEqual(before);
}

const current = async <T>(kind: string, key: string) => (await cluster.members[0]!.state.get(kind, key))!.body as T;

/** Bob's own decrypt of Alice's message: refused while the secret is Alice's alone. */
async function bobCannotDecrypt(): Promise<void> {
  const res = await postJson(`${A}/decrypt-payload`, { ...bob.signed(secretId, encryptedMessage), cifer });
  expect(res.status).toBe(403);
}

describe('a member that is not a coordinator can change nothing', () => {
  it('its secret, principal, permit, otp, emailIndex and session records are refused by every member', async () => {
    const secret = await current<SecretBody>('secret', secretKey(secretId));
    await refusedEverywhere(member, [forge(member, 'secret', secretKey(secretId), { ...secret, ownerPrincipalId: bob.principalId })], /may not write/);
    const attacker = newEd25519();
    const principal = await current<PrincipalBody>('principal', alice.principalId);
    await refusedEverywhere(member, [forge(member, 'principal', alice.principalId, { ...principal, ed25519PublicKey: attacker.publicKey, keyProof: null, keyPermitId: randomUUID() })], /may not write/);
    await refusedEverywhere(member, [forge(member, 'otp', `${alice.principalId}:reset`, { principalId: alice.principalId, purpose: 'reset', codeHash: '$argon2id$x', issuedAt: Date.now(), expiresAt: Date.now() + 1, attempts: 0, consumed: true })], /may not write/);
    await refusedEverywhere(member, [forge(member, 'emailIndex', Buffer.from(alice.email).toString('hex'), { principalId: bob.principalId })], /may not write/);
    const session = await current<Record<string, unknown>>('session', alice.wallet.address);
    await refusedEverywhere(member, [forge(member, 'session', alice.wallet.address, session)], /may not write/);
    await bobCannotDecrypt();
  });

  it('slot 0 serves it no operation, and no member grants it a session or releases it a share', async () => {
    for (const [op, params] of [
      ['claimEmail', { emailHex: Buffer.from('x@example.test').toString('hex') }],
      ['otpAttempt', { key: `${alice.principalId}:reset`, issuedAt: 1, success: true }],
      ['allocate', { counter: 'secretId' }],
      ['createPermit', { requestId: randomUUID() }],
      ['claimSecretCreate', { useKey: 'a'.repeat(64), coordinator: 'node-4', attempt: 'x' }],
    ] as const) {
      await expect(member.peer.requestCreate({ op, params }, { signal: AbortSignal.timeout(CALL_TIMEOUT_MS) }), op).rejects.toThrow(/coordinators only/);
    }
    const release = { op: 'release', secretId, ...alice.signed(secretId, encryptedMessage), cifer, inputFormat: 'hex', vv: {} };
    const notCoordinator = { code: 'FORBIDDEN', reason: 'not_coordinator' };
    for (const slot of LIVING) {
      expect(await refusalOf(() => member.peer.callMember(slot, 'shard', release, { signal: AbortSignal.timeout(CALL_TIMEOUT_MS) })), `member ${slot} release`).toEqual(notCoordinator);
      expect(await refusalOf(() => member.peer.callMember(slot, 'grant', {}, { signal: AbortSignal.timeout(CALL_TIMEOUT_MS) })), `member ${slot} grant`).toEqual(notCoordinator);
    }
  });
});

describe('a coordinator cannot change an owner, a delegate or a key without the client', () => {
  it('a secret handed to Bob is refused whatever authorisation it borrows', async () => {
    const secret = await current<SecretBody>('secret', secretKey(secretId));
    const key = secretKey(secretId);
    await refusedEverywhere(coordinator, [forge(coordinator, 'secret', key, { ...secret, ownerPrincipalId: bob.principalId, auth: undefined })], /without authorisation/);
    // Alice's own create string, re-used: it made Alice the owner, nobody else.
    await refusedEverywhere(coordinator, [forge(coordinator, 'secret', key, { ...secret, ownerPrincipalId: bob.principalId })], /owner is not the signing principal/);
    // A permit that does not exist.
    await refusedEverywhere(coordinator, [forge(coordinator, 'secret', key, { ...secret, ownerPrincipalId: bob.principalId, auth: { by: 'permit', permitId: randomUUID() } })], /unknown permit/);
    // Bob's genuine setDelegate string for Alice's secret: he is not the owner.
    const bobString = bob.signed(secretId, bob.principalId);
    const bobEvidence = { data: bobString.data, signature: bobString.signature, session: await current('session', bob.wallet.address) };
    await refusedEverywhere(coordinator, [forge(coordinator, 'secret', key, { ...secret, delegatePrincipalId: bob.principalId, auth: { by: 'setDelegate', evidence: bobEvidence } })], /signer is not the owner/);
    await bobCannotDecrypt();
  });

  it('Alice’s genuine setDelegate string authorises exactly its own change, once', async () => {
    const res = await postJson(`${A}/web2/setDelegate`, alice.signed(secretId, ''));
    expect(res.status).toBe(200);
    await cluster.waitForConvergence({ timeoutMs: 10_000 });
    const secret = await current<SecretBody>('secret', secretKey(secretId));
    expect(secret.auth?.by).toBe('setDelegate');
    // The rogue re-uses the string for another delegate, or to move the owner.
    await refusedEverywhere(coordinator, [forge(coordinator, 'secret', secretKey(secretId), { ...secret, delegatePrincipalId: bob.principalId })], /names another delegate/);
    await refusedEverywhere(coordinator, [forge(coordinator, 'secret', secretKey(secretId), { ...secret, ownerPrincipalId: bob.principalId })], /signer is not the owner/);
    // The same version again under a new seq: the string is spent.
    await refusedEverywhere(coordinator, [forge(coordinator, 'secret', secretKey(secretId), secret)], /already used/);
    // Stale: a string signed 11 minutes before the record's own time.
    await refusedEverywhere(coordinator, [forge(coordinator, 'secret', secretKey(secretId), secret, Date.now() + 11 * 60_000 - 60_000)], /not fresh|ahead of clock/);
    await bobCannotDecrypt();
  });

  it('Alice’s key is not replaced by a self-made proof or an invented permit', async () => {
    const principal = await current<PrincipalBody>('principal', alice.principalId);
    const attacker = newEd25519();
    await refusedEverywhere(coordinator, [forge(coordinator, 'principal', alice.principalId, { ...principal, ed25519PublicKey: attacker.publicKey, keyProof: attacker.sign(keyRegistrationMessage(attacker.publicKey)), keyPermitId: null })], /needs a rotate permit/);
    await refusedEverywhere(coordinator, [forge(coordinator, 'principal', alice.principalId, { ...principal, ed25519PublicKey: attacker.publicKey, keyProof: null, keyPermitId: randomUUID() })], /does not authorise this key/);
    // And the attacker's key opens no session as Alice.
    const ts = String(Date.now());
    const res = await postJson(`${A}/web2/session`, { principalId: alice.principalId, timestamp: ts, sessionAddress: bob.wallet.address, signature: attacker.sign(`cifer_session:${alice.principalId}:${ts}:${bob.wallet.address}`) });
    expect(res.status).toBe(401);
  });

  it('a permit is consumed only with the emailed token, and created only by slot 0', async () => {
    const link = await requestPermit(cluster, A, ownerBody(alice, secretId, 'delegate', bob.principalId));
    await waitFor(async () => (await cluster.members[3]!.state.get('permit', link.permitId)) !== undefined, { timeoutMs: 10_000, description: 'the permit on every member' });
    const permit = await current<PermitBody>('permit', link.permitId);
    const result = { secretId, delegatePrincipalId: bob.principalId };
    const secret = await current<SecretBody>('secret', secretKey(secretId));
    const change = (token: string | null) => [
      forge(coordinator, 'permit', link.permitId, { ...permit, status: 'consumed', consumedAt: Date.now(), result, token }),
      forge(coordinator, 'secret', secretKey(secretId), { ...secret, delegatePrincipalId: bob.principalId, auth: { by: 'permit', permitId: link.permitId } }),
    ];
    await refusedEverywhere(coordinator, change(null), /without the emailed token/);
    await refusedEverywhere(coordinator, change('x'.repeat(43)), /without the emailed token/);
    // A permit of its own making: pending permits come from slot 0.
    await refusedEverywhere(coordinator, [forge(coordinator, 'permit', randomUUID(), { ...permit, permitId: randomUUID() })], /key mismatch|written by slot 0/);
    const own = randomUUID();
    await refusedEverywhere(coordinator, [forge(coordinator, 'permit', own, { ...permit, permitId: own })], /written by slot 0/);
    await bobCannotDecrypt();

    // The genuine link still works, and then Bob decrypts as the delegate.
    const confirmed = await fetch(`${A}${link.pathAndQuery}`, { headers: { accept: 'application/json' } });
    expect(confirmed.status).toBe(200);
    const res = await postJson<{ decryptedMessage: string }>(`${A}/decrypt-payload`, { ...bob.signed(secretId, encryptedMessage), cifer });
    expect(res.status).toBe(200);
    expect(res.body.decryptedMessage).toBe('alice only');
  });
});
