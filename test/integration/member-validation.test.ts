/**
 * Members check account records themselves before storing them (docs/security.md, "Who may write what": a coordinator alone
 * can't make members store what they would refuse). A cluster peer with a genuine node key sends
 * crafted records over the real `apply` protocol.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { startLocalCluster, type LocalCluster } from 'quorumkeep/testing';
import type { Cluster } from '../../src/cluster/index.ts';
import { startImpostor } from '../utils/impostor.ts';
import { signRecord } from '../../src/core/replication/record.ts';
import { newEd25519 } from '../utils/web2.ts';

let cluster: LocalCluster;
let rogue: Cluster;
let signingKey: Uint8Array;
let hlc = Date.now();

beforeAll(async () => {
  cluster = await startLocalCluster({ size: 5, threshold: 3, coordinators: 2 });
  // Coordinator 1's genuine identity: a node that may write account records, so what refuses below
  // is the members' own check of the evidence.
  ({ peer: rogue, signingKey } = await startImpostor(cluster, 1));
});
afterAll(async () => {
  await rogue?.stop();
  await cluster?.stop();
});

/** A record from node 1 (a genuine coordinator) with a fresh seq. */
let seq = 1_000_000;
function fromRogue(kind: string, key: string, body: unknown) {
  return signRecord(cluster.descriptor.clusterId, { kind, key, origin: cluster.descriptor.nodes[1]!.nodeAddress, seq: seq++, hlc: [hlc++, 0], body: body as never }, signingKey);
}

const principal = (key: { publicKey: string }, proof: string) => ({
  email: 'mallory@example.test',
  emailVerified: true,
  passwordHash: '$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHRzYWx0c2FsdA$aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNoaGFzaGhhc2g',
  ed25519PublicKey: key.publicKey,
  keyProof: proof,
  status: 'active',
  createdAt: 1,
  updatedAt: 1,
});

describe('members validate account records themselves', () => {
  it('refuse a principal whose Ed25519 key proof does not verify, and store one that does', async () => {
    const key = newEd25519();
    const id = randomUUID();
    const forged = fromRogue('principal', id, principal(key, key.sign('cifer_register:someone-else')));
    await expect(rogue.sendApply(0, [forged], { signal: AbortSignal.timeout(3000) })).rejects.toThrow(/bad key signature/);
    expect(await cluster.members[0]!.state.get('principal', id)).toBeUndefined();

    const genuine = fromRogue('principal', id, principal(key, key.sign(`cifer_register:${key.publicKey}`)));
    await rogue.sendApply(0, [genuine], { signal: AbortSignal.timeout(3000) });
    expect((await cluster.members[0]!.state.get('principal', id))?.body).toMatchObject({ ed25519PublicKey: key.publicKey });
  });

  it('refuse a registration ack for another member’s slot', async () => {
    const key = newEd25519();
    const id = randomUUID();
    const claim = fromRogue('nodeRegistration', `${id}:2`, { principalId: id, slot: 2, ed25519PublicKey: key.publicKey, storedAt: 1 });
    await expect(rogue.sendApply(3, [claim], { signal: AbortSignal.timeout(3000) })).rejects.toThrow(/not_written_by_member/);
    const own = fromRogue('nodeRegistration', `${id}:1`, { principalId: id, slot: 1, ed25519PublicKey: key.publicKey, storedAt: 1 });
    await rogue.sendApply(3, [own], { signal: AbortSignal.timeout(3000) });
    expect(await cluster.members[3]!.state.get('nodeRegistration', `${id}:2`)).toBeUndefined();
    expect(await cluster.members[3]!.state.get('nodeRegistration', `${id}:1`)).toBeDefined();
  });

  it('keep a verified principal verified when an older-ranked unverified write arrives later', async () => {
    const key = newEd25519();
    const id = randomUUID();
    const verified = fromRogue('principal', id, principal(key, key.sign(`cifer_register:${key.publicKey}`)));
    const laterUnverified = fromRogue('principal', id, { ...principal(key, key.sign(`cifer_register:${key.publicKey}`)), emailVerified: false, passwordHash: '$argon2id$v=19$m=19456,t=2,p=1$b3RoZXJzYWx0b3RoZXJzYQ$b3RoZXJoYXNob3RoZXJoYXNob3RoZXJoYXNob3RoZXI' });
    await rogue.sendApply(0, [verified], { signal: AbortSignal.timeout(3000) });
    await rogue.sendApply(0, [laterUnverified], { signal: AbortSignal.timeout(3000) });
    expect((await cluster.members[0]!.state.get('principal', id))?.body).toMatchObject({ emailVerified: true, passwordHash: principal(key, '').passwordHash });
  });
});
