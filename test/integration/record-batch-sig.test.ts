/**
 * Batch record signatures on a real cluster (docs/security.md, "Record signatures"; docs/architecture.md,
 * "Records"): once every node has said it checks the form, a coordinator signs the records it commits
 * together once; every member verifies and stores them, a member that missed them catches them up
 * with the same signatures; a node of an older build keeps everyone on one signature a record; and a
 * member with its genuine key cannot carry a record on a batch signature made for others.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalCluster, waitFor, type LocalCluster, type QuorumNode } from 'quorumkeep/testing';
import type { Cluster } from '../../src/cluster/index.ts';
import { recordDigest, verifyRecordSignature, type ReplicatedRecord, type UnsignedRecord } from '../../src/core/replication/record.ts';
import { signRecordDigests } from '../../src/core/replication/record-sig.ts';
import { fromHex, uncompressedPublicKey } from '../../src/crypto/index.ts';
import { startImpostor } from '../utils/impostor.ts';
import { cleanupStack } from '../utils/temp.ts';
import { newEd25519 } from '../utils/web2.ts';

const stack = cleanupStack();
let cluster: LocalCluster;
afterAll(() => stack.run());
beforeAll(async () => {
  cluster = await startLocalCluster({ size: 5, threshold: 3, coordinators: 2 });
  stack.push(() => cluster.stop());
  await cluster.waitForConvergence();
}, 60_000);

const SINGLE_HEX = 2 + 130;
/** Whether `node` signs a batch at a time now (its gauge). */
const batchForm = async (node: QuorumNode) => (await node.metrics.recordBatchSignatures.get()).values[0]?.value === 1;
/** `n` probes written through `node` at once: the records, in the order written. */
async function writeAtOnce(node: QuorumNode, prefix: string, n: number): Promise<ReplicatedRecord[]> {
  const reports = await Promise.all(Array.from({ length: n }, (_, i) => node.replicator.replicate({ kind: 'probe', key: `${prefix}-${i}`, body: { note: prefix, writtenAt: Date.now() } })));
  return reports.map((r) => r.record);
}
const publicKeyOf = (slot: number) => uncompressedPublicKey(fromHex(cluster.descriptor.nodes[slot]!.signingPublicKey));

describe('batch record signatures', () => {
  let batched: ReplicatedRecord[] = [];

  it('once every node checks the form, records committed together share one signature; a member that missed them catches them up as signed', async () => {
    const writer = cluster.members[0]!;
    await waitFor(() => batchForm(writer), { timeoutMs: 10_000, description: 'node 0 to learn that every node checks batch signatures' });
    await cluster.stopMember(3);
    // Written while member 3 is down: it gets them only by catching up.
    await waitFor(async () => {
      batched = await writeAtOnce(writer, `b-${randomUUID().slice(0, 8)}`, 24);
      return batched.some((r) => r.sig.length > SINGLE_HEX);
    }, { timeoutMs: 20_000, description: 'writes at once to be signed a batch at a time' });
    expect(batched.every((r) => verifyRecordSignature(cluster.descriptor.clusterId, r, publicKeyOf(0)))).toBe(true);
    // At most 8 records under one signature.
    const perSignature = new Map<string, number>();
    for (const r of batched) perSignature.set(r.sig.slice(0, SINGLE_HEX), (perSignature.get(r.sig.slice(0, SINGLE_HEX)) ?? 0) + 1);
    expect(Math.max(...perSignature.values())).toBeLessThanOrEqual(8);
    expect(perSignature.size).toBeLessThan(batched.length);

    const member3 = await cluster.restartMember(3);
    for (const node of [cluster.members[1]!, cluster.members[2]!, member3, cluster.members[4]!]) {
      await waitFor(async () => (await Promise.all(batched.map((r) => node.state.get('probe', r.key)))).every(Boolean), { timeoutMs: 20_000, description: `node ${node.slot} to hold every batch-signed record` });
      // Stored, served and caught up with the very signature the writer made.
      for (const r of batched) expect((await node.state.get('probe', r.key))?.sig).toBe(r.sig);
    }
  });

  it('a member with its genuine key cannot carry a record on a batch signature made for others, nor on another record\'s path', async () => {
    const { peer: rogue, signingKey } = await startImpostor(cluster, 4);
    try {
      const origin = cluster.descriptor.nodes[4]!.nodeAddress;
      const send = (slot: number, records: ReplicatedRecord[]) => rogue.sendApply(slot, records, { signal: AbortSignal.timeout(5000) });
      const sameBatch = batched.filter((r) => r.sig.length > SINGLE_HEX && r.sig.slice(0, SINGLE_HEX) === batched.find((b) => b.sig.length > SINGLE_HEX)!.sig.slice(0, SINGLE_HEX));
      expect(sameBatch.length).toBeGreaterThanOrEqual(2);
      const [first, second] = sameBatch as [ReplicatedRecord, ReplicatedRecord];
      // A new record of node 0's on a path of its batch; node 0's record on its batch neighbour's path.
      await expect(send(1, [{ ...first, seq: first.seq + 1000, body: { note: 'new', writtenAt: Date.now() } }])).rejects.toThrow(/\bbad_signature\b/);
      await expect(send(2, [{ ...first, sig: second.sig }])).rejects.toThrow(/\bbad_signature\b/);
      // Node 0's stored record, changed under its own signature, is the stored one's duplicate: nothing changes.
      await send(1, [{ ...first, body: { note: 'changed', writtenAt: Date.now() } }]);
      expect((await cluster.members[1]!.state.get('probe', first.key))?.body).toEqual(first.body);

      // Its own records: a genuine batch of three signed with its key…
      const seq = Math.max(...[0, 1, 2].map((s) => cluster.members[s]!.versionVector()[origin] ?? 0)) + 1;
      const acks: UnsignedRecord[] = [0, 1, 2].map((i) => {
        const principalId = randomUUID();
        return { kind: 'nodeRegistration', key: `${principalId}:4`, origin, seq: seq + i, hlc: [Date.now(), 0], body: { principalId, slot: 4, ed25519PublicKey: newEd25519().publicKey, storedAt: Date.now() } };
      });
      const sigs = signRecordDigests(cluster.descriptor.clusterId, acks.map((a) => recordDigest(cluster.descriptor.clusterId, a)), signingKey, true);
      const genuine = acks.map((a, i) => ({ ...a, sig: sigs[i]! }));
      // …a record of it on another's path, and a record under node 0's batch signature, are refused.
      await expect(send(0, [{ ...genuine[0]!, sig: genuine[1]!.sig }])).rejects.toThrow(/\bbad_signature\b/);
      await expect(send(0, [{ ...genuine[0]!, sig: first.sig }])).rejects.toThrow(/\bbad_signature\b/);
      // The genuine batch, travelling together, is taken.
      await send(0, genuine);
      await waitFor(async () => (await Promise.all(genuine.map((g) => cluster.members[0]!.state.get('nodeRegistration', g.key)))).every((r, i) => r?.sig === genuine[i]!.sig), { timeoutMs: 10_000, description: 'member 0 to store the genuine batch' });
    } finally {
      await rogue.stop();
    }
  });

  it('a node of an older build keeps every writer on one signature a record until it is upgraded', async () => {
    const writer = cluster.members[0]!;
    let older: Cluster | undefined;
    try {
      // Member 4's identity on a build whose ping answers name no feature.
      ({ peer: older } = await startImpostor(cluster, 4, { features: [] }));
      await waitFor(async () => !(await batchForm(writer)), { timeoutMs: 10_000, description: 'node 0 to hear that a node does not check batch signatures' });
      const records = await writeAtOnce(writer, `s-${randomUUID().slice(0, 8)}`, 24);
      expect(records.map((r) => r.sig.length)).toEqual(records.map(() => SINGLE_HEX));
    } finally {
      await older?.stop();
    }
    // Upgraded: member 4 runs this build again.
    await cluster.restartMember(4);
    await waitFor(() => batchForm(writer), { timeoutMs: 10_000, description: 'node 0 to learn that every node checks batch signatures again' });
    await waitFor(async () => (await writeAtOnce(writer, `u-${randomUUID().slice(0, 8)}`, 24)).some((r) => r.sig.length > SINGLE_HEX), { timeoutMs: 20_000, description: 'writes at once to be signed a batch at a time again' });
  });
});

describe('a node that comes back on an older build (a rollback)', () => {
  // Pings every 10 s: what a peer can do is learnt again as soon as it connects, not at the next ping.
  let slow: LocalCluster;
  beforeAll(async () => {
    slow = await startLocalCluster({ size: 5, threshold: 3, coordinators: 2, nodeConfig: { replication: { livenessIntervalMs: 10_000, livenessTimeoutMs: 30_000 } } });
    stack.push(() => slow.stop());
  }, 60_000);

  it('is sent no batch-signed record once it is back, though no liveness ping has run since', async () => {
    const writer = slow.members[0]!;
    await waitFor(() => batchForm(writer), { timeoutMs: 5000, description: 'node 0 to learn at connection that every node checks batch signatures' });
    const startedAt = performance.now();
    const { peer: older } = await startImpostor(slow, 4, { features: [] });
    try {
      await waitFor(async () => !(await batchForm(writer)), { timeoutMs: 5000, description: 'node 0 to stop signing in batches once member 4 is back on a build without the feature' });
      const records = await writeAtOnce(writer, `r-${randomUUID().slice(0, 8)}`, 24);
      expect(records.map((r) => r.sig.length)).toEqual(records.map(() => SINGLE_HEX));
      // All of it inside one liveness interval: the connection itself, not a ping round, told node 0.
      expect(performance.now() - startedAt).toBeLessThan(10_000);
    } finally {
      await older.stop();
    }
  });
});
