/**
 * The catch-up gate (docs/security.md, "Stale members"): a member answers `grant` and `shard` only
 * once it holds what the requesting coordinator held when it asked. Member 4 misses a key rotation
 * and a transfer while it is down, comes back cut off from every member but a coordinator that cannot
 * serve it a catch-up, and is asked for a session with the rotated-away key and for a share of the
 * transferred secret: it refuses both (NOT_READY) rather than answer from its stale replica. Healed,
 * it catches up and then serves what is now right: the new key's session, the new owner's share.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalCluster, waitFor, type LocalCluster } from 'quorumkeep/testing';
import type { Cluster } from '../../src/cluster/index.ts';
import { AppError } from '../../src/errors/index.ts';
import { sessionMessage } from '../../src/core/sessions/service.ts';
import { startImpostor } from '../utils/impostor.ts';
import { postJson } from '../utils/http.ts';
import { newSessionWallet, openSession, principalWithSession, type Principal } from '../utils/session.ts';
import { ownerBody, requestPermit, rotateBody } from '../utils/permits.ts';
import { cleanupStack } from '../utils/temp.ts';
import { newEd25519 } from '../utils/web2.ts';

const STALE = 4;
const stack = cleanupStack();
let cluster: LocalCluster;
let A: string;
let alice: Principal;
let bob: Principal;
let secretId: number;
let cifer: string;
let encryptedMessage: string;
let oldKey: ReturnType<typeof newEd25519>;
let newKey: ReturnType<typeof newEd25519>;
let requester: Cluster;
/** What the requesting coordinator holds: the cluster's version vector after the changes. */
let held: Record<string, number>;

const call = (service: 'grant' | 'shard', body: unknown) => requester.callMember(STALE, service, { ...(body as object), vv: held }, { signal: AbortSignal.timeout(10_000) });

function grantFor(key: ReturnType<typeof newEd25519>, principalId: string) {
  const wallet = newSessionWallet();
  const timestamp = String(Date.now());
  return { principalId, timestamp, sessionAddress: wallet.address, ttl: null, signature: key.sign(sessionMessage(principalId, timestamp, wallet.address)), issuedAt: Date.now() };
}

const release = (p: Principal) => ({ op: 'release', secretId, ...p.signed(secretId, encryptedMessage), cifer, inputFormat: 'hex' });

beforeAll(async () => {
  cluster = await startLocalCluster({ size: 5, threshold: 3, coordinators: 2 });
  stack.push(() => cluster.stop());
  [A] = cluster.coordinators as [string];
  [alice, bob] = await Promise.all([principalWithSession(cluster, A, 'alice'), principalWithSession(cluster, A, 'bob')]);
  const created = await postJson<{ secretId: number }>(`${A}/web2/secret`, alice.signed(0));
  secretId = created.body.secretId;
  ({ cifer, encryptedMessage } = (await postJson<{ cifer: string; encryptedMessage: string }>(`${A}/encrypt-payload`, alice.signed(secretId, 'hello'))).body);
  await cluster.waitForConvergence();

  // Member 4 goes down; meanwhile Alice rotates her key and gives her secret to Bob.
  await cluster.stopMember(STALE);
  oldKey = alice.key;
  newKey = newEd25519();
  for (const link of [await requestPermit(cluster, A, rotateBody(alice, newKey)), await requestPermit(cluster, A, ownerBody(alice, secretId, 'transfer', bob.principalId))]) {
    const res = await fetch(`${A}${link.pathAndQuery}`, { headers: { accept: 'application/json' } });
    expect(res.status).toBe(200);
  }
  const sorted = (vv: Record<string, number>) => JSON.stringify(Object.entries(vv).sort());
  await waitFor(() => [0, 1, 2, 3].every((s) => sorted(cluster.members[s]!.versionVector()) === sorted(cluster.members[0]!.versionVector())), { timeoutMs: 10_000, description: 'the living members to converge' });
  held = cluster.members[0]!.versionVector();

  // Coordinator 1's genuine identity asks, claiming what the cluster holds and serving no catch-up.
  ({ peer: requester } = await startImpostor(cluster, 1, { versionVector: () => held }));
  stack.push(() => requester.stop());
  await cluster.partition([STALE], [0, 2, 3]);
  await cluster.restartMember(STALE);
  await waitFor(() => requester.membership.isReachable(STALE), { timeoutMs: 10_000, description: 'the requester to reach the stale member' });
}, 90_000);
afterAll(() => stack.run());

describe('a member behind the requester', () => {
  it('refuses a session for the rotated-away key and a share of the transferred secret until it has caught up', async () => {
    // Its stale replica would grant the old key and release to the old owner: it answers neither.
    for (const [service, body] of [
      ['grant', grantFor(oldKey, alice.principalId)],
      ['shard', release(alice)],
      ['shard', release(bob)],
    ] as const) {
      const err = await call(service, body).catch((e: unknown) => e);
      expect(err, `${service} ${JSON.stringify(body).slice(0, 60)}`).toBeInstanceOf(AppError);
      expect({ code: (err as AppError).code, reason: (err as AppError).reason }).toEqual({ code: 'NOT_READY', reason: 'not_ready' });
    }
    expect(cluster.members[STALE]!.versionVector()).not.toEqual(held);
  });

  it('once healed it catches up, then serves what is right now and refuses what is not', async () => {
    await cluster.heal();
    await waitFor(() => Object.entries(held).every(([o, s]) => (cluster.members[STALE]!.versionVector()[o] ?? 0) >= s), { timeoutMs: 15_000, description: 'the stale member to catch up' });
    const oldGrant = await call('grant', grantFor(oldKey, alice.principalId)).catch((e: unknown) => e);
    expect((oldGrant as AppError).code).toBe('UNAUTHORIZED');
    const granted = (await call('grant', grantFor(newKey, alice.principalId))) as { nodeAddress: string };
    expect(granted.nodeAddress).toBe(cluster.descriptor.nodes[STALE]!.nodeAddress);
    // Alice's old session ended with the rotation; Bob owns the secret now.
    const aliceRelease = await call('shard', release(alice)).catch((e: unknown) => e);
    expect((aliceRelease as AppError).code).toMatch(/FORBIDDEN|SESSION_INACTIVE/);
    const share = (await call('shard', release(bob))) as { slot: number; box: string };
    expect(share.slot).toBe(STALE);
    expect(typeof share.box).toBe('string');
    // And the cluster as a whole serves Alice's new key.
    alice.key = newKey;
    alice.wallet = newSessionWallet();
    await openSession(A, alice);
  });
});
