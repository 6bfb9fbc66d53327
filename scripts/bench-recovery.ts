/**
 * `npm run bench -- recovery` (issue 15): how long a member that lost its data takes to rebuild its
 * share of every secret from threshold helpers (target: 10,000 secrets in ≤ 60 s on this machine),
 * next to how long the same member takes merely to catch the secrets' records up after the wipe —
 * the floor any recovery sits on, measured in the same run. 5 members, threshold 3, one process.
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { startLocalCluster, waitFor } from '../src/testing/index.ts';
import { principalWithSession } from '../test/utils/session.ts';
import { BENCH_PLAN, figure, post, runConcurrent, table } from './bench-lib.ts';

const SECRETS = Number(process.env.BENCH_RECOVERY_SECRETS ?? 10_000);
const CREATE_CONCURRENCY = 16;
const LOST = 3;


export async function benchRecovery(): Promise<void> {
  const cluster = await startLocalCluster({
    size: 5,
    threshold: 3,
    coordinators: 1,
    nodeConfig: {
      chains: [],
      http: { rateLimits: { perIpPerMinute: 0, perAccountPerMinute: 0 } },
      usage: { enabled: false, plans: [BENCH_PLAN] },
    },
  });
  try {
    const [A] = cluster.coordinators as [string];
    const admin = { authorization: `Bearer ${cluster.adminToken}` };
    const owner = await principalWithSession(cluster, A, 'bench');
    const base = Date.now() - 5 * 60_000;
    const created = await runConcurrent(SECRETS, CREATE_CONCURRENCY, async (i) => {
      // One create string each: a timestamp per secret, within the freshness window.
      const res = await post(`${A}/web2/secret`, owner.signed(0, undefined, base + i));
      if (res.status !== 201) throw new Error(`secret ${i}: ${res.status} ${JSON.stringify(res.body)}`);
    });
    await cluster.waitForConvergence({ timeoutMs: 120_000 });

    // The disk is lost; the keys are not. The member is restarted and nothing else is done: it finds
    // its shares missing, marks itself recovering, rebuilds them and is ready again (docs/operations.md,
    // "Lose a disk, keep the keys"). The floor, measured on the way: catching the records up.
    await cluster.stopMember(LOST);
    await rm(join(cluster.members[LOST]!.config.dataDir, 'db'), { recursive: true, force: true });
    const t0 = performance.now();
    const member = await cluster.restartMember(LOST);
    const target = cluster.members[0]!.versionVector();
    await waitFor(() => Object.entries(target).every(([origin, seq]) => (member.versionVector()[origin] ?? 0) >= seq), { timeoutMs: 600_000, intervalMs: 20, description: 'catch-up' });
    const catchUpMs = performance.now() - t0;
    let notReadySeen = false;
    await waitFor(
      () => {
        const ready = member.health.readiness().ready;
        notReadySeen ||= !ready;
        return ready;
      },
      { timeoutMs: 900_000, intervalMs: 50, description: 'the member to hold every share and be ready' },
    );
    const readyMs = performance.now() - t0;
    if (!notReadySeen) throw new Error('the wiped member was never seen not ready');
    await waitFor(
      async () => {
        const res = await fetch(`${A}/admin/members`, { headers: admin });
        const body = (await res.json()) as { members: Array<{ slot: number; status: string; shares: { held: number } | null }> };
        const m = body.members.find((x) => x.slot === LOST);
        return m?.status === 'active' && m.shares?.held === SECRETS;
      },
      { timeoutMs: 120_000, intervalMs: 100, description: 'the coordinator to see the member whole and active' },
    );

    const recovery = `${SECRETS} secrets, 5 members, threshold 3, no operator command`;
    figure({ name: 'share recovery of a wiped member: restart → ready', value: readyMs / 1000, unit: 's', target: { op: '<=', value: 60 }, note: `${recovery}; ${((SECRETS / readyMs) * 1000).toFixed(0)} shares/s` });
    figure({ name: 'share recovery of a wiped member: catch-up of the records alone', value: catchUpMs / 1000, unit: 's', note: `${recovery}; the floor a recovery sits on` });
    table(`Share recovery of one member, no operator command (${SECRETS} secrets, 5 members, threshold 3; target ≤ 60 s)`, [
      ['secrets created (setup)', `${((created.wallMs / 1000)).toFixed(1)} s  (${((SECRETS / created.wallMs) * 1000).toFixed(0)} /s, ${CREATE_CONCURRENCY} at once)`],
      ['catch-up of the records after the wipe (the floor)', `${(catchUpMs / 1000).toFixed(1)} s`],
      ['restart on an empty data dir → every share rebuilt, checked, stored; ready', `${(readyMs / 1000).toFixed(1)} s  (${((SECRETS / readyMs) * 1000).toFixed(0)} shares/s; ${(readyMs / catchUpMs).toFixed(1)}× the catch-up)`],
    ]);
  } finally {
    await cluster.stop();
  }
}
