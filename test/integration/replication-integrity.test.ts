/**
 * Replication integrity under a node that lies about its own log (docs/security.md, "Replication
 * integrity"): member 4's genuine identity sends two different records under one (origin, seq) to
 * different members, and records stamped far in the future. Members must never end up disagreeing:
 * after catch-up every replica holds the same record, and `/healthz` names the equivocating node.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { startLocalCluster, waitFor, type LocalCluster } from 'quorumkeep/testing';
import type { Cluster } from '../../src/cluster/index.ts';
import { recordContentId, signRecord } from '../../src/core/replication/record.ts';
import { startImpostor } from '../utils/impostor.ts';
import { cleanupStack } from '../utils/temp.ts';
import { newEd25519 } from '../utils/web2.ts';

const LIVING = [0, 1, 2, 3];
const stack = cleanupStack();
let cluster: LocalCluster;
let rogue: Cluster;
let signingKey: Uint8Array;
let origin: string;

beforeAll(async () => {
  cluster = await startLocalCluster({ size: 5, threshold: 3, coordinators: 2 });
  stack.push(() => cluster.stop());
  await cluster.waitForConvergence();
  ({ peer: rogue, signingKey } = await startImpostor(cluster, 4));
  stack.push(() => rogue.stop());
  origin = cluster.descriptor.nodes[4]!.nodeAddress;
  await waitFor(() => LIVING.every((s) => rogue.membership.isReachable(s)), { timeoutMs: 10_000, description: 'the rogue to reach every member' });
}, 60_000);
afterAll(() => stack.run());

/** Member 4's own kind of record (its registration ack), which it may write. */
function ack(seq: number, principalId: string, storedAt: number, hlcMs = Date.now()) {
  return signRecord(cluster.descriptor.clusterId, { kind: 'nodeRegistration', key: `${principalId}:4`, origin, seq, hlc: [hlcMs, 0], body: { principalId, slot: 4, ed25519PublicKey: newEd25519().publicKey, storedAt } }, signingKey);
}

const send = (slot: number, record: ReturnType<typeof ack>) => rogue.sendApply(slot, [record], { signal: AbortSignal.timeout(5000) });

describe('an equivocating origin', () => {
  it('two records under one (origin, seq): every replica converges on the same one and /healthz names the origin', async () => {
    const seq = (cluster.members[0]!.versionVector()[origin] ?? 0) + 1;
    for (const s of LIVING) expect(cluster.members[s]!.versionVector()[origin] ?? 0).toBe(seq - 1);
    const principalId = randomUUID();
    const x = ack(seq, principalId, 1);
    const y = ack(seq, principalId, 2);
    // Members 0 and 2 get one version, 1 and 3 the other: equal version vectors, different records.
    await Promise.all([send(0, x), send(2, x), send(1, y), send(3, y)]);
    const kept = recordContentId(cluster.descriptor.clusterId, x) < recordContentId(cluster.descriptor.clusterId, y) ? x : y;

    await waitFor(
      async () => {
        await Promise.all(LIVING.map((s) => cluster.members[s]!.syncNow()));
        const digests = await Promise.all(LIVING.map((s) => cluster.members[s]!.stateDigest()));
        return digests.every((d) => d === digests[0]);
      },
      { timeoutMs: 20_000, description: 'state digests to agree after sync' },
    );
    for (const s of LIVING) {
      const held = await cluster.members[s]!.state.get('nodeRegistration', `${principalId}:4`);
      expect(held?.sig, `member ${s}`).toBe(kept.sig);
    }
    for (const url of cluster.coordinators) {
      const health = (await (await fetch(`${url}/healthz`)).json()) as { cluster: { equivocating: Array<{ nodeAddress: string; nodeId: string; seq: number }> } };
      expect(health.cluster.equivocating).toEqual([expect.objectContaining({ nodeAddress: origin, nodeId: 'node-4', seq })]);
    }
  });

  it('a record stamped beyond the allowed clock skew is refused, so no clock can win every later write', async () => {
    const seq = (cluster.members[0]!.versionVector()[origin] ?? 0) + 1;
    const future = ack(seq, randomUUID(), 1, Date.now() + 10 * 60_000);
    for (const s of LIVING) await expect(send(s, future), `member ${s}`).rejects.toThrow(/hlc_ahead/);
    // Within the skew it is an ordinary record.
    const near = ack(seq, randomUUID(), 1, Date.now() + 5_000);
    for (const s of LIVING) await send(s, near);
  });
});
