/**
 * `npm run bench -- latency-procs`: session and decrypt latency with one process per node, as
 * deployed (one node per host) — next to `-- latency`, where every node shares the bench's event
 * loop, so a decrypt there is the coordinator's and three members' work one after another. Here the
 * members work in parallel, up to the machine's cores (2 on the reference machine, for 5 processes).
 *
 * The cluster is `quorumkeep cluster init`'s (5 members, threshold 3, 2 coordinators), each node
 * started as `quorumkeep start --config node-<i>.json` from the build of src/ (scripts/bench-scale-store.ts's
 * `spawnNode`); requests come one at a time from the load worker thread (scripts/bench-load.ts).
 */
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startMailbox, type Mailbox } from '../src/testing/index.ts';
import { signPersonalMessage } from '../src/crypto/index.ts';
import { benchPrincipal, decryptBodies, figure, load, median, ms, percentile, post, processCpuUs, table } from './bench-lib.ts';
import { initBenchCluster, metricOf, spawnNode, untilReady, type NodeProcess } from './bench-scale-store.ts';
import type { ClusterInitSummary } from '../src/node/cluster-init.ts';

const SESSIONS = Number(process.env.BENCH_SESSIONS ?? 200);
const DECRYPTS = Number(process.env.BENCH_DECRYPTS ?? 300);
/** Rounds of each: the figures are the medians of the rounds' p50 and p99. */
const ROUNDS = Number(process.env.BENCH_PROCS_ROUNDS ?? 3);

/**
 * Run `fn` on a bench cluster of one process per node (`cluster init`'s files, each node spawned as
 * `quorumkeep start` from the build of src/), every node ready; stops them and removes their files after.
 */
export async function withProcessCluster(fn: (cluster: { summary: ClusterInitSummary; nodes: NodeProcess[]; mailbox: Mailbox }) => Promise<void>): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'quorumkeep-bench-procs-'));
  const mailbox = await startMailbox();
  const nodes: NodeProcess[] = [];
  try {
    const summary = await initBenchCluster(dir, mailbox);
    for (const n of summary.nodes) nodes.push(spawnNode(summary, n.slot, { logLevel: 'warn' }));
    for (const n of summary.nodes) await untilReady(nodes[n.slot]!, n.operatorPort!, 120_000);
    await fn({ summary, nodes, mailbox });
  } finally {
    await Promise.allSettled(nodes.map((n) => n.stop()));
    await mailbox.close();
    await rm(dir, { recursive: true, force: true });
  }
}

/** Run the figures (see the module comment). */
export async function benchProcs(): Promise<void> {
  await withProcessCluster(async ({ summary, nodes, mailbox }) => {
    const url = summary.nodes[0]!.httpUrl!;
    const { newSession } = await benchPrincipal({ mailbox }, url);

    const sessionRounds: number[][] = [];
    const decryptRounds: number[][] = [];
    // Each node's CPU and share releases over the decrypt rounds: in a deployment, one node per host,
    // the busiest node's CPU per decrypt bounds the decrypts a cluster serves.
    const decryptCpuUs = nodes.map(() => 0);
    const releasesBefore = await Promise.all(summary.nodes.map((n) => metricOf(summary, n.slot, 'quorumkeep_share_releases_total', 'outcome="released"')));
    for (let round = 0; round < ROUNDS; round++) {
      const sessions = Array.from({ length: SESSIONS }, () => newSession());
      const s = await load(`${url}/web2/session`, sessions.map((x) => JSON.stringify(x.body)), 1);
      if (s.failures > 0) throw new Error(`session: ${s.failures} failures, first: ${s.firstFailure}`);
      sessionRounds.push(s.latencies);
      const session = sessions[sessions.length - 1]!;
      const signed = (subject: number, extra?: string) => {
        const data = `-1_${subject}_${session.address}_${Date.now()}` + (extra === undefined ? '' : `_${extra}`);
        return { data, signature: signPersonalMessage(data, session.wallet) };
      };
      const secret = await post(`${url}/web2/secret`, signed(0));
      if (secret.status !== 201) throw new Error(`secret: ${secret.status} ${JSON.stringify(secret.body)}`);
      const secretId = secret.body.secretId as number;
      const enc = await post(`${url}/encrypt-payload`, signed(secretId, 'x'.repeat(256)));
      if (enc.status !== 200) throw new Error(`encrypt: ${enc.status} ${JSON.stringify(enc.body)}`);
      const cpu0 = nodes.map((n) => processCpuUs(n.child.pid!));
      const d = await load(`${url}/decrypt-payload`, decryptBodies(session, secretId, enc.body, DECRYPTS), 1);
      nodes.forEach((n, i) => (decryptCpuUs[i]! += processCpuUs(n.child.pid!) - cpu0[i]!));
      if (d.failures > 0) throw new Error(`decrypt: ${d.failures} failures, first: ${d.firstFailure}`);
      decryptRounds.push(d.latencies);
    }
    const perRound = (rounds: number[][], p: number) => rounds.map((r) => (p === 50 ? median(r) : percentile(r, p)));
    const shown = (rounds: number[][], p: number) => {
      const each = perRound(rounds, p);
      return `${ms(median(each))}  (rounds: ${each.map(ms).join(', ')})`;
    };
    const record = (name: string, rounds: number[][], p: number, count: string, target?: number) => {
      const each = perRound(rounds, p);
      const note = `median of ${ROUNDS} rounds of ${count}: ${each.map(ms).join(', ')}`;
      figure({ name, value: median(each), unit: 'ms', ...(target === undefined ? {} : { target: { op: '<=', value: target } }), note });
    };
    record('POST /web2/session, p50 (one process per node)', sessionRounds, 50, `${SESSIONS}`, 15);
    record('POST /web2/session, p99 (one process per node)', sessionRounds, 99, `${SESSIONS}`);
    record('POST /decrypt-payload, p50 (one process per node)', decryptRounds, 50, `${DECRYPTS}`, 5);
    record('POST /decrypt-payload, p99 (one process per node)', decryptRounds, 99, `${DECRYPTS}`, 20);
    // Where the nodes ran their request crypto over the run: requests one at a time should find
    // every loop idle and run inline (a thread round trip only adds latency there).
    const ops = { inline: 0, thread: 0 };
    for (const n of summary.nodes) {
      for (const where of ['inline', 'thread'] as const) ops[where] += await metricOf(summary, n.slot, 'quorumkeep_request_crypto_ops_total', `where="${where}"`);
    }
    const decrypts = ROUNDS * DECRYPTS;
    const releases = await Promise.all(summary.nodes.map(async (n, i) => (await metricOf(summary, n.slot, 'quorumkeep_share_releases_total', 'outcome="released"')) - releasesBefore[i]!));
    const perDecrypt = decryptCpuUs.map((us) => us / decrypts);
    const busiest = Math.max(...perDecrypt.slice(1));
    figure({ name: 'POST /decrypt-payload, busiest member but the coordinator, CPU per decrypt (one process per node)', value: busiest, unit: 'µs', note: `sequential decrypts through coordinator 0; each node's CPU from /proc (10 ms ticks) over ${decrypts} decrypts: ${perDecrypt.map((us, slot) => `${slot}: ${us.toFixed(0)}`).join(', ')} µs` });
    const load1 = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
    table(`One process per node (5 members, threshold 3, 2 coordinators; ${ROUNDS} rounds, requests one at a time from a client thread; load ${load1})`, [
      [`POST /web2/session p50 (${SESSIONS} a round)`, `${shown(sessionRounds, 50)}  target ≤ 15 ms`],
      ['POST /web2/session p99', shown(sessionRounds, 99)],
      [`POST /decrypt-payload p50 (${DECRYPTS} a round, 3 shares gathered of 5 members)`, `${shown(decryptRounds, 50)}  target ≤ 5 ms`],
      ['POST /decrypt-payload p99', `${shown(decryptRounds, 99)}  target ≤ 20 ms`],
      ['request crypto operations, all nodes: inline / on the crypto thread', `${ops.inline} / ${ops.thread}`],
      [`decrypts: CPU per decrypt by node, µs (slot 0 = coordinator 0; 10 ms ticks)`, perDecrypt.map((us, slot) => `${slot}: ${us.toFixed(0)}`).join(', ')],
      ['decrypts: share releases by node', releases.map((n, slot) => `${slot}: ${n}`).join(', ')],
    ]);
  });
}
