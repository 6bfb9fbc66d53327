import { afterEach, describe, expect, it } from 'vitest';
import { startLocalCluster, waitFor, type LocalCluster, type QuorumNode } from 'quorumkeep/testing';
import { startImpostor } from '../utils/impostor.ts';
import { signRecord } from '../../src/core/replication/record.ts';
import { generatePrivateKey, addressOfPrivateKey } from '../../src/crypto/index.ts';
import { QuorumError, AppError } from '../../src/errors/index.ts';
import { cleanupStack } from '../utils/temp.ts';
import { getJson, postJson } from '../utils/http.ts';

const stack = cleanupStack();
afterEach(() => stack.run());

async function start(options: Parameters<typeof startLocalCluster>[0] = {}): Promise<LocalCluster> {
  const cluster = await startLocalCluster({ size: 5, threshold: 3, coordinators: 2, ...options });
  stack.push(() => cluster.stop());
  return cluster;
}

const probe = (node: QuorumNode, key: string) => node.replicator.replicate({ kind: 'probe', key, body: { note: key, writtenAt: Date.now() } });

/** Write `count` probes through `node`, `concurrency` at a time; returns the keys. */
async function writeMany(node: QuorumNode, prefix: string, count: number, concurrency = 16): Promise<string[]> {
  const keys = Array.from({ length: count }, (_, i) => `${prefix}-${i}`);
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < keys.length) await probe(node, keys[next++]!);
    }),
  );
  return keys;
}

async function probeCount(node: QuorumNode): Promise<number> {
  let n = 0;
  for await (const _ of node.state.list('probe')) n++;
  return n;
}

describe('5 members, threshold 3', () => {
  it('a write through a coordinator is acked by at least 3 and reaches all 5; both coordinators report 5 reachable', async () => {
    const cluster = await start();
    const report = await probe(cluster.members[0]!, 'first');
    expect(report.acked.length).toBeGreaterThanOrEqual(3);
    expect(report.failed).toEqual([]);
    // How soon it reaches all 5 is the bench's figure ("time to reach all members"); the wait is only bounded.
    await waitFor(async () => (await Promise.all(cluster.members.map((m) => m.state.get('probe', 'first')))).every(Boolean), { timeoutMs: 15_000, description: 'the write on all 5' });
    for (const url of cluster.coordinators) {
      // `ok` once every member has reported its shares (a second or two after the start).
      await waitFor(async () => (await getJson<{ status: string }>(`${url}/healthz`)).body.status === 'ok', { timeoutMs: 15_000, description: `${url} to report ok` });
      const { status, body } = await getJson<{ status: string; cluster: { reachable: number; size: number; threshold: number; slot0Reachable: boolean } }>(`${url}/healthz`);
      expect(status).toBe(200);
      expect(body.cluster).toMatchObject({ reachable: 5, size: 5, threshold: 3, slot0Reachable: true });
    }
  });

  it('with 2 members stopped writes succeed and name the 2 failed; a 3rd stopped makes writes fail with 503 and healthz unavailable', async () => {
    const cluster = await start();
    await cluster.stopMember(3);
    await cluster.stopMember(4);
    const report = await probe(cluster.members[0]!, 'two-down');
    expect(report.acked).toHaveLength(3);
    expect(report.failed.map((f) => f.nodeAddress).sort()).toEqual([cluster.members[3]!.nodeAddress, cluster.members[4]!.nodeAddress].sort());

    const viaHttp = await postJson(`${cluster.coordinators[1]}/admin/probe`, { key: 'two-down-http' }, { authorization: `Bearer ${cluster.adminToken}` });
    expect(viaHttp.status).toBe(201);
    expect((viaHttp.body.failed as unknown[]).length).toBe(2);

    await cluster.stopMember(2);
    const err = await probe(cluster.members[0]!, 'three-down').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(QuorumError);
    expect((err as QuorumError).status).toBe(503);
    const res = await postJson(`${cluster.coordinators[0]}/admin/probe`, { key: 'three-down-http' }, { authorization: `Bearer ${cluster.adminToken}` });
    expect(res.status).toBe(503);
    expect(res.body).toMatchObject({ code: 'QUORUM_UNAVAILABLE' });
    expect(typeof res.body.error).toBe('string');
    const health = await getJson<{ status: string; problems: string[]; cluster: { reachable: number } }>(`${cluster.coordinators[0]}/healthz`);
    expect(health.status).toBe(200);
    expect(health.body.status).toBe('unavailable');
    expect(health.body.problems).toContain('quorum_unreachable');
    expect(health.body.cluster.reachable).toBe(2);
    // Reads from the local replica still work.
    const read = await getJson(`${cluster.coordinators[0]}/admin/probe/two-down`, { authorization: `Bearer ${cluster.adminToken}` });
    expect(read.status).toBe(200);
  });

  it('a member stopped while 1,000 records are written holds all 1,000, none twice, after restarting on its data dir', async () => {
    // Five nodes on one event loop, 16 writes at a time: on a busy machine an ack can take longer
    // than the default 2 s (about one run in ten failed with "1 of 5 members acknowledged"). What is
    // tested is the catch-up, not the latency: longer deadlines, as the in-process bench uses.
    const cluster = await start({ nodeConfig: { replication: { applyTimeoutMs: 10_000, livenessTimeoutMs: 5000 } } });
    await cluster.stopMember(4);
    const keys = await writeMany(cluster.members[0]!, 'offline', 1000);
    const restarted = await cluster.restartMember(4);
    await waitFor(async () => (await probeCount(restarted)) === 1000, { timeoutMs: 10_000, description: 'catch-up to 1000' });
    await cluster.waitForConvergence();
    expect(await restarted.countRecords()).toBe(1000);
    for (const k of [keys[0]!, keys[499]!, keys[999]!]) expect((await restarted.state.get('probe', k))?.body).toMatchObject({ note: k });
    const origin = cluster.members[0]!.nodeAddress;
    expect(restarted.versionVector()[origin]).toBe(1000);
  });

  it('a member cut off by a partition catches up after the partition heals', async () => {
    const cluster = await start();
    await cluster.partition([4], [0, 1, 2, 3]);
    expect(cluster.members[4]!.membership.reachableCount()).toBe(1);
    await writeMany(cluster.members[1]!, 'partitioned', 300);
    expect(await probeCount(cluster.members[4]!)).toBe(0);
    await cluster.heal();
    await waitFor(async () => (await probeCount(cluster.members[4]!)) === 300, { timeoutMs: 10_000 });
    await cluster.waitForConvergence();
    expect(await cluster.members[4]!.countRecords()).toBe(300);
  });

  it('the minority side of a partition cannot write; the majority can', async () => {
    const cluster = await start();
    await cluster.partition([0, 3], [1, 2, 4]);
    await expect(probe(cluster.members[0]!, 'minority')).rejects.toBeInstanceOf(QuorumError);
    const ok = await probe(cluster.members[1]!, 'majority');
    expect(ok.acked).toHaveLength(3);
  });

  it('a record forged by a key outside the cluster file, sent over the apply protocol by a cluster peer, is rejected and never stored', async () => {
    const cluster = await start();
    // Take node 4's identity so the connection gater admits us, then speak the real protocol.
    const { peer: rogue } = await startImpostor(cluster, 4);
    stack.push(() => rogue.stop());

    const outsider = generatePrivateKey();
    const unknownOrigin = signRecord(cluster.descriptor.clusterId, { kind: 'probe', key: 'forged-1', origin: addressOfPrivateKey(outsider), seq: 1, hlc: [Date.now(), 0], body: { note: 'x', writtenAt: 1 } }, outsider);
    await expect(rogue.sendApply(0, [unknownOrigin], { signal: AbortSignal.timeout(2000) })).rejects.toThrow(/unknown_origin/);
    // Claims to come from node 1 but is signed by the outsider.
    const impersonated = { ...unknownOrigin, key: 'forged-2', origin: cluster.members[1]!.nodeAddress };
    await expect(rogue.sendApply(0, [impersonated], { signal: AbortSignal.timeout(2000) })).rejects.toThrow(/bad_signature/);
    // Gossip path too.
    await rogue.publish(impersonated);

    // A genuine record delivered twice (duplicate) is acked and stored once.
    const genuine = (await probe(cluster.members[1]!, 'genuine')).record;
    await rogue.sendApply(0, [genuine], { signal: AbortSignal.timeout(2000) });
    await rogue.sendApply(0, [genuine, genuine], { signal: AbortSignal.timeout(2000) });

    for (const m of cluster.members.slice(0, 4)) {
      expect(await m.state.get('probe', 'forged-1')).toBeUndefined();
      expect(await m.state.get('probe', 'forged-2')).toBeUndefined();
    }
    expect(await cluster.members[0]!.countRecords()).toBe(1);
    const rejected = await cluster.members[0]!.metrics.recordsRejected.get();
    expect(rejected.values.reduce((a, v) => a + v.value, 0)).toBeGreaterThanOrEqual(2);
  });
});

describe('slot 0 create', () => {
  it('allocates unique increasing ids to every coordinator, refuses other members, and fails with SLOT0_UNAVAILABLE (503) when slot 0 is down', async () => {
    const cluster = await start({ coordinators: 3 });
    const coordinators = cluster.members.slice(0, 3);
    const calls = coordinators.flatMap((m) => Array.from({ length: 10 }, () => m.creator.allocate('test-ids')));
    const ids = await Promise.all(calls);
    expect(new Set(ids).size).toBe(30);
    expect(Math.min(...ids)).toBe(1);
    expect(Math.max(...ids)).toBe(30);
    // Slot 0 serves coordinators only (docs/security.md).
    const refused = await cluster.members[3]!.creator.allocate('test-ids').catch((e: unknown) => e);
    expect((refused as AppError).code).toBe('FORBIDDEN');

    await cluster.stopMember(0);
    const err = await cluster.members[1]!.creator.allocate('test-ids').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).code).toBe('SLOT0_UNAVAILABLE');
    expect((err as AppError).status).toBe(503);
    const health = await getJson<{ cluster: { slot0Reachable: boolean; reachable: number } }>(`${cluster.coordinators[1]}/healthz`);
    expect(health.body.cluster).toMatchObject({ slot0Reachable: false, reachable: 4 });

    // The counter is durable: slot 0 restarted on its data dir continues after 30 — once it knows its
    // own log (it runs no create operation before: docs/architecture.md, "Failure model").
    await cluster.restartMember(0);
    await waitFor(() => cluster.members[0]!.health.readiness().checks.ownLogKnown, { timeoutMs: 10_000, description: 'slot 0 to learn its own log' });
    expect(await cluster.members[2]!.creator.allocate('test-ids')).toBe(31);
  });
});
