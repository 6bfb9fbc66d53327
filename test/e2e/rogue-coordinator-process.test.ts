/**
 * A rogue coordinator among real processes (issue 27, "Process level"; docs/security.md,
 * "Transitions"): five `quorumkeep start` processes; coordinator 1 is killed with SIGKILL and its
 * genuine identity (its keys from its data directory) speaks the real protocols from the test, while
 * Alice and Bob talk only to coordinator 0 over HTTP. While the rogue forges records and proposals,
 * every answer coordinator 0 gives stays true — each 200 is what the members then act on — and
 * nothing changes that Alice did not sign.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { loadClusterFile } from '../../src/config/cluster-file.ts';
import type { Cluster } from '../../src/cluster/index.ts';
import type { ClusterDescriptor } from '../../src/core/replication/ports.ts';
import { signRecord } from '../../src/core/replication/record.ts';
import { proposalDigest, type VersionedBody } from '../../src/core/replication/versions.ts';
import { secretKey } from '../../src/core/secrets/records.ts';
import { signDigest, toHex } from '../../src/crypto/index.ts';
import { AppError } from '../../src/errors/index.ts';
import { postJson } from '../utils/http.ts';
import { startPeerImpostor } from '../utils/impostor.ts';
import { startProcessCluster, type ProcessCluster } from '../utils/process-cluster.ts';
import { outboxPrincipalWithSession } from '../utils/process-web2.ts';
import type { Principal } from '../utils/session.ts';
import { newEd25519 } from '../utils/web2.ts';

const ROGUE = 1;
let dir: string;
let pc: ProcessCluster;
let descriptor: ClusterDescriptor;
let rogue: { peer: Cluster; signingKey: Uint8Array };
let alice: Principal;
let bob: Principal;
let secretId: number;
let envelope: { cifer: string; encryptedMessage: string };

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'qk-rogue-'));
  pc = await startProcessCluster(dir, { size: 5, threshold: 3 });
  descriptor = loadClusterFile(join(dir, 'cluster.json'));
  const A = pc.urls[0]!;
  [alice, bob] = [await outboxPrincipalWithSession(pc, A, 'alice'), await outboxPrincipalWithSession(pc, A, 'bob')];
  const created = await postJson<{ secretId: number }>(`${A}/web2/secret`, alice.signed(0));
  expect(created.status).toBe(201);
  secretId = created.body.secretId;
  const enc = await postJson<{ cifer: string; encryptedMessage: string }>(`${A}/encrypt-payload`, alice.signed(secretId, 'for alice'));
  envelope = enc.body;
  await pc.kill9(ROGUE);
  rogue = await startPeerImpostor(descriptor, ROGUE, join(pc.dataDir(ROGUE), 'keys'));
}, 180_000);

afterAll(async () => {
  await rogue?.peer.stop();
  await pc?.stopAll();
  await rm(dir, { recursive: true, force: true });
});

const A = () => pc.urls[0]!;
const decryptAs = (p: Principal) => postJson(`${A()}/decrypt-payload`, { ...p.signed(secretId, envelope.encryptedMessage), cifer: envelope.cifer });

/** The rogue's attacks, over and over, for as long as `during` runs; every one must be refused. */
async function attackWhile(during: Promise<unknown>): Promise<{ tries: number; accepted: string[] }> {
  let done = false;
  void during.finally(() => (done = true));
  const accepted: string[] = [];
  let tries = 0;
  let seq = 1_000_000;
  const self = descriptor.nodes[ROGUE]!;
  while (!done) {
    tries++;
    // Its own secret record, handing the secret to Bob: no member stores one (writer_not_allowed).
    const forged = signRecord(descriptor.clusterId, { kind: 'secret', key: secretKey(secretId), origin: self.nodeAddress, seq: seq++, hlc: [Date.now() + 50_000, 0], body: { secretId, ownerPrincipalId: bob.principalId } as never }, rogue.signingKey);
    for (const slot of [0, 2, 3, 4]) {
      await rogue.peer.sendApply(slot, [forged], { signal: AbortSignal.timeout(5000) }).then(
        () => accepted.push(`apply to ${slot}`),
        () => undefined,
      );
    }
    // A first version of Alice's secret again, owned by Bob, vouched for with its genuine key.
    const body = { secretId, ownerPrincipalId: bob.principalId, v: { n: 1, prev: null, change: 'create' } } as unknown as VersionedBody;
    const vouch = { nodeAddress: self.nodeAddress, signature: '0x' + toHex(signDigest(proposalDigest(descriptor.clusterId, 'secret', secretKey(secretId), body), rogue.signingKey)) };
    const proposal = { kind: 'secret', key: secretKey(secretId), body: { ...body, v: { ...body.v, vouch } } };
    const res = await rogue.peer.requestCreate({ op: 'propose', params: { proposals: [proposal] } }, { signal: AbortSignal.timeout(5000) }).catch((e: unknown) => e);
    if (!(res instanceof AppError) && !(res as { conflict?: boolean })?.conflict) accepted.push('propose');
    // Alice's key replaced by the attacker's own, proven key.
    const attacker = newEd25519();
    const key = { kind: 'principal', key: alice.principalId, body: { ed25519PublicKey: attacker.publicKey, v: { n: 9, prev: null, change: 'registerKey' } } };
    const k = await rogue.peer.requestCreate({ op: 'propose', params: { proposals: [key] } }, { signal: AbortSignal.timeout(5000) }).catch((e: unknown) => e);
    if (!(k instanceof AppError) && !(k as { conflict?: boolean })?.conflict) accepted.push('key');
  }
  return { tries, accepted };
}

describe('a rogue coordinator process among real processes', () => {
  it('forges while Alice sets and removes her delegate through the honest coordinator: every answer stays true', async () => {
    const clientFlow = (async () => {
      const answers: Array<[string, number]> = [];
      for (let round = 0; round < 3; round++) {
        answers.push(['set', (await postJson(`${A()}/web2/setDelegate`, alice.signed(secretId, bob.principalId))).status]);
        // 200 is true: Bob, the delegate now, decrypts.
        answers.push(['bob as delegate', (await decryptAs(bob)).status]);
        answers.push(['remove', (await postJson(`${A()}/web2/setDelegate`, alice.signed(secretId, ''))).status]);
        // 200 is true: the revocation holds on the members, Bob is refused.
        answers.push(['bob revoked', (await decryptAs(bob)).status]);
        answers.push(['alice', (await decryptAs(alice)).status]);
      }
      return answers;
    })();
    const [answers, attacks] = await Promise.all([clientFlow, attackWhile(clientFlow)]);
    expect(attacks.tries).toBeGreaterThan(0);
    expect(attacks.accepted).toEqual([]);
    for (const [what, status] of answers) expect(status, what).toBe(what === 'bob revoked' ? 403 : 200);
  }, 120_000);
});
