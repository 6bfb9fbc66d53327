/**
 * The operator port on every node (issue 11): a member that serves no API answers `/healthz`,
 * `/readyz` and `/metrics` there, with the same cluster view as a coordinator; the port closes with
 * the node and comes back on restart. Both name the build (issue 28): `/healthz` `version` and
 * `commit`, `quorumkeep_build_info`.
 */
import { readFile } from 'node:fs/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { startLocalCluster, waitFor } from 'quorumkeep/testing';
import { cleanupStack } from '../utils/temp.ts';
import { getJson } from '../utils/http.ts';

const stack = cleanupStack();
afterEach(() => stack.run());

interface Health {
  status: string;
  version: string;
  commit: string;
  clusterMap: Record<string, { nodeId: string; reachable: boolean; self: boolean }>;
  cluster: { clusterId: string; size: number; threshold: number; reachable: number; slot0Reachable: boolean };
}

describe('operator port', () => {
  it('a member without the API answers /healthz, /readyz and /metrics on it', async () => {
    const cluster = await startLocalCluster({ size: 3, threshold: 2, coordinators: 1, operator: true, mailbox: false });
    stack.push(() => cluster.stop());
    const member = cluster.members[2]!;
    expect(member.httpUrl).toBeUndefined();
    expect(member.operatorUrl).toBe(cluster.operatorUrls[2]);
    const url = cluster.operatorUrls[2]!;

    const health = await getJson<Health>(`${url}/healthz`);
    expect(health.status).toBe(200);
    expect(health.body.cluster).toMatchObject({ clusterId: cluster.descriptor.clusterId, size: 3, threshold: 2, reachable: 3, slot0Reachable: true });
    expect(health.body.clusterMap['2']).toMatchObject({ nodeId: 'node-2', self: true, reachable: true });
    const { version } = JSON.parse(await readFile(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
    expect(health.body.version).toBe(version);
    expect(health.body.commit).toMatch(/^[0-9a-f]{40}$|^unknown$/);

    // The same cluster view as the coordinator's API (which answers as node-0).
    const api = await getJson<Health>(`${cluster.coordinators[0]}/healthz`);
    expect(api.body.cluster).toEqual(health.body.cluster);
    expect(Object.values(api.body.clusterMap).map((m) => [m.nodeId, m.reachable])).toEqual(Object.values(health.body.clusterMap).map((m) => [m.nodeId, m.reachable]));

    await waitFor(async () => (await fetch(`${url}/readyz`)).status === 200, { timeoutMs: 10_000, description: 'member ready' });
    expect((await getJson(`${url}/readyz`)).body).toEqual({ ready: true, checks: { started: true, quorumReachable: true, caughtUp: true, ownLogKnown: true, sharesHeld: true } });

    const metrics = await fetch(`${url}/metrics`);
    expect(metrics.status).toBe(200);
    const text = await metrics.text();
    expect(text).toMatch(/^quorumkeep_cluster_reachable_members\{[^}]*\} 3$/m);
    const buildInfo = text.split('\n').filter((line) => line.startsWith('quorumkeep_build_info{'));
    expect(buildInfo).toEqual([expect.stringMatching(/ 1$/)]);
    expect(buildInfo[0]).toContain(`version="${version}"`);
    expect(buildInfo[0]).toContain(`commit="${health.body.commit}"`);
    expect(text).toMatch(/^quorumkeep_cluster_size\{[^}]*\} 3$/m);
    expect(text).toMatch(/^quorumkeep_cluster_threshold\{[^}]*\} 2$/m);
    // The API's own /metrics still wants the admin token.
    expect((await fetch(`${cluster.coordinators[0]}/metrics`)).status).toBe(401);
    // Nothing but discovery on this port.
    expect((await fetch(`${url}/admin/probe/x`)).status).toBe(404);

    // Bound and closed with the node; the same port after a restart.
    await cluster.stopMember(2);
    await expect(fetch(`${url}/healthz`)).rejects.toThrow();
    const coordinatorView = await getJson<Health>(`${cluster.operatorUrls[0]}/healthz`);
    expect(coordinatorView.body.cluster.reachable).toBe(2);
    await cluster.restartMember(2);
    expect((await getJson<Health>(`${url}/healthz`)).body.cluster.reachable).toBe(3);
  }, 60_000);

  it('a restarted member is ready once its connect syncs finish, not at the first periodic catch-up round', async () => {
    // A periodic round only every ten minutes: readiness within the test's budget comes from the
    // syncs each new connection starts, and must wait until a quorum's worth of them has finished.
    const cluster = await startLocalCluster({ size: 3, threshold: 2, coordinators: 1, operator: true, mailbox: false, nodeConfig: { replication: { syncIntervalMs: 600_000 } } });
    stack.push(() => cluster.stop());
    for (const url of cluster.operatorUrls) await waitFor(async () => (await fetch(`${url}/readyz`)).status === 200, { timeoutMs: 20_000, description: 'every node ready' });
    await cluster.stopMember(2);
    await cluster.restartMember(2);
    const url = cluster.operatorUrls[2]!;
    await waitFor(async () => (await fetch(`${url}/readyz`)).status === 200, { timeoutMs: 20_000, description: 'restarted member ready' });
    expect((await getJson(`${url}/readyz`)).body).toEqual({ ready: true, checks: { started: true, quorumReachable: true, caughtUp: true, ownLogKnown: true, sharesHeld: true } });
  }, 60_000);

  it('is off by default', async () => {
    const cluster = await startLocalCluster({ size: 1, threshold: 1, coordinators: 1, mailbox: false });
    stack.push(() => cluster.stop());
    expect(cluster.operatorUrls).toEqual([]);
    expect(cluster.members[0]!.operatorUrl).toBeUndefined();
  });
});
