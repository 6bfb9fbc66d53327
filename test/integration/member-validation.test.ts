/**
 * Members check account records themselves before storing them (docs/security.md, "Transitions"):
 * even slot 0's genuine key — the only writer of principals — cannot make members store a version
 * that is no transition of the one it names, or a key whose proof fails; and a member acknowledges
 * only its own slot. The rogue speaks the real `apply` protocol.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { startLocalCluster, waitFor, type LocalCluster } from 'quorumkeep/testing';
import type { Cluster } from '../../src/cluster/index.ts';
import { keyRegistrationMessage, type PrincipalBody } from '../../src/core/accounts/records.ts';
import { signRecord, type ReplicatedRecord } from '../../src/core/replication/record.ts';
import { proposalDigest, type VersionedBody } from '../../src/core/replication/versions.ts';
import { loadOrCreateNodeKeys } from '../../src/cluster/index.ts';
import { signDigest, toHex } from '../../src/crypto/index.ts';
import { startImpostor } from '../utils/impostor.ts';
import { newEd25519 } from '../utils/web2.ts';

const LIVING = [2, 3];
let cluster: LocalCluster;
let slot0: Cluster;
let slot0Key: Uint8Array;
let member1: Cluster;
let member1Key: Uint8Array;
let coordinatorKey: Uint8Array;
let hlc = Date.now();
let seq = 1_000_000;

beforeAll(async () => {
  cluster = await startLocalCluster({ size: 5, threshold: 3, coordinators: 2 });
  // Coordinator 1's key vouches; slot 0's genuine identity writes; member 1's writes its acks.
  ({ keys: { signing: coordinatorKey } } = await loadOrCreateNodeKeys(cluster.members[1]!.config.keysDir));
  ({ peer: slot0, signingKey: slot0Key } = await startImpostor(cluster, 0, { connectTo: 2 }));
  ({ peer: member1, signingKey: member1Key } = await startImpostor(cluster, 1, { connectTo: 2 }));
}, 60_000);
afterAll(async () => {
  await slot0?.stop();
  await member1?.stop();
  await cluster?.stop();
});

/** A record signed by `slot`'s genuine key, with a fresh seq. */
function signedBy(slot: 0 | 1, kind: string, key: string, body: unknown): ReplicatedRecord {
  return signRecord(cluster.descriptor.clusterId, { kind, key, origin: cluster.descriptor.nodes[slot]!.nodeAddress, seq: seq++, hlc: [hlc++, 0], body: body as never }, slot === 0 ? slot0Key : member1Key);
}

/** The principal version after `prev`, vouched for by coordinator 1. */
function version(id: string, prev: ReplicatedRecord | undefined, change: string, body: Omit<PrincipalBody, 'v'>): PrincipalBody {
  const v = { n: prev ? (prev.body as unknown as VersionedBody).v.n + 1 : 1, prev: prev ? { origin: prev.origin, seq: prev.seq } : null, change };
  const unvouched = { ...body, v } as unknown as VersionedBody;
  const node = cluster.descriptor.nodes[1]!;
  return { ...body, v: { ...v, vouch: { nodeAddress: node.nodeAddress, signature: '0x' + toHex(signDigest(proposalDigest(cluster.descriptor.clusterId, 'principal', id, unvouched), coordinatorKey)) } } } as PrincipalBody;
}

const base = (): Omit<PrincipalBody, 'v'> => ({
  email: 'mallory@example.test',
  emailVerified: false,
  passwordHash: '$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHRzYWx0c2FsdA$aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNoaGFzaGhhc2g',
  ed25519PublicKey: null,
  keyProof: null,
  status: 'active',
  createdAt: 1,
  updatedAt: 1,
  registration: 1,
});

const send = (peer: Cluster, slot: number, records: ReplicatedRecord[]) => peer.sendApply(slot, records, { signal: AbortSignal.timeout(3000) });

describe('members validate account records themselves', () => {
  it('slot 0’s own key: a key whose proof does not verify is refused, one that does is stored', async () => {
    const id = randomUUID();
    const registered = signedBy(0, 'principal', id, version(id, undefined, 'register', base()));
    const verified = signedBy(0, 'principal', id, version(id, registered, 'verifyEmail', { ...base(), emailVerified: true }));
    for (const slot of LIVING) await send(slot0, slot, [registered, verified]);
    const key = newEd25519();
    const forged = signedBy(0, 'principal', id, version(id, verified, 'registerKey', { ...base(), emailVerified: true, ed25519PublicKey: key.publicKey, keyProof: key.sign('cifer_register:someone-else') }));
    for (const slot of LIVING) await expect(send(slot0, slot, [forged]), `member ${slot}`).rejects.toThrow(/key_proof_invalid/);
    const genuine = signedBy(0, 'principal', id, version(id, verified, 'registerKey', { ...base(), emailVerified: true, ed25519PublicKey: key.publicKey, keyProof: key.sign(keyRegistrationMessage(key.publicKey)) }));
    for (const slot of LIVING) await send(slot0, slot, [genuine]);
    for (const slot of LIVING) expect((await cluster.members[slot]!.state.get('principal', id))?.body).toMatchObject({ ed25519PublicKey: key.publicKey, v: { n: 3 } });
  });

  it('slot 0’s own key: a version that is no transition of the one it names is refused; an older one arriving later changes nothing', async () => {
    const id = randomUUID();
    const registered = signedBy(0, 'principal', id, version(id, undefined, 'register', base()));
    const verified = signedBy(0, 'principal', id, version(id, registered, 'verifyEmail', { ...base(), emailVerified: true }));
    // Member 2 gets the verification first (held back until the registration arrives), member 3 in order.
    await expect(send(slot0, 2, [verified])).rejects.toThrow(/prev_missing/);
    await send(slot0, 2, [registered]);
    await send(slot0, 3, [registered, verified]);
    // A held-back record is checked again in the background once the one it names is stored (the
    // answer to `registered` is about `registered` only): wait until member 2 holds the verification.
    await waitFor(async () => ((await cluster.members[2]!.state.get('principal', id))?.body as unknown as VersionedBody | undefined)?.v.n === 2, { timeoutMs: 20_000, description: 'member 2 stores the held-back verification' });
    // "Unverify" it: no transition does that.
    const unverify = signedBy(0, 'principal', id, version(id, verified, 'reregister', { ...base(), registration: 2 }));
    for (const slot of LIVING) await expect(send(slot0, slot, [unverify]), `member ${slot}`).rejects.toThrow(/terminal_state/);
    for (const slot of LIVING) expect((await cluster.members[slot]!.state.get('principal', id))?.body, `member ${slot}`).toMatchObject({ emailVerified: true, v: { n: 2 } });
  });

  it('a registration ack for another member’s slot is refused; its own is stored', async () => {
    const key = newEd25519();
    const id = randomUUID();
    const claim = signedBy(1, 'nodeRegistration', `${id}:2`, { principalId: id, slot: 2, ed25519PublicKey: key.publicKey, storedAt: 1 });
    await expect(send(member1, 3, [claim])).rejects.toThrow(/not_written_by_member/);
    const own = signedBy(1, 'nodeRegistration', `${id}:1`, { principalId: id, slot: 1, ed25519PublicKey: key.publicKey, storedAt: 1 });
    await send(member1, 3, [own]);
    expect(await cluster.members[3]!.state.get('nodeRegistration', `${id}:2`)).toBeUndefined();
    expect(await cluster.members[3]!.state.get('nodeRegistration', `${id}:1`)).toBeDefined();
  });
});
