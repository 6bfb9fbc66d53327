/**
 * The runbooks of docs/operations.md and docs/deployment.md at process level (./process-cluster.ts):
 * what the operator sees at each step — `quorumkeep status` (its exit code and its `--json` answer),
 * `GET /readyz` and `GET /metrics` on a node's operator port — and the two checks every runbook ends
 * with: every acknowledged secret decrypts with every `threshold` subset of members, and no node
 * recorded an equivocation.
 */
import { expect } from 'vitest';
import { waitFor } from 'quorumkeep/testing';
import { getJson } from './http.ts';
import { runCli, type AckedProbe, type ProcessCluster } from './process-cluster.ts';
import { openSealed, type SealedSecret } from './process-web2.ts';
import type { Principal } from './session.ts';

/** The fields of `GET /healthz` (docs/http.md) the runbooks read. */
export interface HealthAnswer {
  status: 'ok' | 'degraded' | 'unavailable';
  problems: string[];
  clusterMap: Record<string, { slot: number; nodeId: string; nodeAddress: string; reachable: boolean; self: boolean; httpUrl?: string }>;
  cluster: { clusterId: string; size: number; threshold: number; reachable: number; slot0Reachable: boolean; equivocating: unknown[] };
  dataSafety: {
    members: Array<{ slot: number; status: 'active' | 'recovering'; reachable: boolean; shares: { expected: number; held: number; missing: number; pending: number } | null }>;
    secretsAtRisk: number;
    secretsLost: number;
  };
  /** A member's own share recovery (docs/operations.md, "Lose a disk, keep the keys"). */
  recovery?: { state: 'idle' | 'running' | 'done' | 'incomplete'; total: number; held: number; recovered: number; failed: number };
}

/** `GET /healthz` of a node (its API or operator base URL). */
export async function healthOf(url: string): Promise<HealthAnswer> {
  return (await getJson<HealthAnswer>(`${url}/healthz`)).body;
}

/** What `quorumkeep status --url <url> --json` showed: its exit code, and the answer it printed (undefined when it printed none). */
export interface StatusSeen {
  code: number | null;
  health: HealthAnswer | undefined;
}

/** Run `quorumkeep status --url <url> --json`. */
export async function quorumkeepStatus(url: string): Promise<StatusSeen> {
  const run = await runCli(['status', '--url', url, '--json']);
  return { code: run.code, health: run.stdout.trim() === '' ? undefined : (JSON.parse(run.stdout) as HealthAnswer) };
}

/** `GET /readyz` of a node's operator port: the HTTP status and the checks. */
export async function readyzOf(operatorUrl: string): Promise<{ status: number; checks: Record<string, boolean> }> {
  const res = await getJson<{ checks: Record<string, boolean> }>(`${operatorUrl}/readyz`);
  return { status: res.status, checks: res.body.checks };
}

/** One sample of a node's `/metrics`: `name{labels} value`. */
export interface MetricSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The samples of a Prometheus text exposition (comments skipped; label values as written, unescaped). */
export function parseMetrics(text: string): MetricSample[] {
  const samples: MetricSample[] = [];
  for (const line of text.split('\n')) {
    const m = /^([A-Za-z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const [, key, value] of (m[2] ?? '').matchAll(/([A-Za-z_]\w*)="((?:[^"\\]|\\.)*)"/g)) labels[key!] = value!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    samples.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return samples;
}

/** A node's `/metrics`, from its operator port (no token there: docs/deployment.md, "The operator port"). */
export async function metricsOf(operatorUrl: string): Promise<MetricSample[]> {
  const res = await fetch(`${operatorUrl}/metrics`);
  expect(res.status, `${operatorUrl}/metrics`).toBe(200);
  return parseMetrics(await res.text());
}

/** The value of the sample of `name` whose labels include `labels`, or undefined when there is none. */
export function sampleOf(samples: readonly MetricSample[], name: string, labels: Record<string, string> = {}): number | undefined {
  return samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;
}

/** A member slot's shares as a node's metrics show them (docs/operations.md, "Lose a disk, keep the keys"). */
export async function memberSharesOf(operatorUrl: string, slot: number): Promise<{ held: number | undefined; expected: number | undefined; recovering: number | undefined }> {
  const samples = await metricsOf(operatorUrl);
  const labels = { slot: String(slot) };
  return {
    held: sampleOf(samples, 'quorumkeep_member_shares_held', labels),
    expected: sampleOf(samples, 'quorumkeep_member_shares_expected', labels),
    recovering: sampleOf(samples, 'quorumkeep_member_recovering', labels),
  };
}

/** The slots whose node process runs. */
export function runningSlots(pc: ProcessCluster): number[] {
  return Array.from({ length: pc.size }, (_, i) => i).filter((i) => pc.running(i));
}

/** Wait until `/healthz` of every running node satisfies `condition`. */
export async function waitForEveryNode(pc: ProcessCluster, condition: (health: HealthAnswer, slot: number) => boolean, description: string, timeoutMs = 60_000): Promise<void> {
  await waitFor(async () => (await Promise.all(runningSlots(pc).map(async (i) => condition(await healthOf(pc.operatorUrls[i]!), i)))).every(Boolean), { timeoutMs, intervalMs: 250, description });
}

/**
 * `quorumkeep status --url <operator port>` on every running node (or on `slots`): each exits with
 * `code`, and its `problems` include every one of `problems` (exactly none when `code` is 0).
 */
export async function expectStatus(pc: ProcessCluster, code: 0 | 1 | 2, problems: readonly string[] = [], slots = runningSlots(pc)): Promise<void> {
  const seen = await Promise.all(slots.map((i) => quorumkeepStatus(pc.operatorUrls[i]!)));
  for (const [n, s] of seen.entries()) {
    const label = `quorumkeep status on node-${slots[n]}: ${JSON.stringify({ status: s.health?.status, problems: s.health?.problems })}`;
    expect(s.code, label).toBe(code);
    if (code === 0) expect(s.health?.problems, label).toEqual([]);
    else expect(s.health?.problems, label).toEqual(expect.arrayContaining([...problems]));
  }
}

/** Equivocations node `i` counted: the sum of `quorumkeep_equivocations_total` over its labels (0 when absent). */
async function equivocationsCounted(pc: ProcessCluster, i: number): Promise<number> {
  return (await metricsOf(pc.operatorUrls[i]!)).filter((s) => s.name === 'quorumkeep_equivocations_total').reduce((sum, s) => sum + s.value, 0);
}

/**
 * No running node recorded an equivocation: `/healthz` `cluster.equivocating` is empty and
 * `quorumkeep_equivocations_total` absent or 0 (docs/operations.md, "What to watch"). Both live in
 * the node's memory: check before restarting a node that may have seen one.
 */
export async function expectNoEquivocation(pc: ProcessCluster): Promise<void> {
  for (const i of runningSlots(pc)) {
    const health = await healthOf(pc.operatorUrls[i]!);
    expect(health.cluster.equivocating, `node-${i} /healthz cluster.equivocating\n${pc.output(i).slice(-3000)}`).toEqual([]);
    expect(await equivocationsCounted(pc, i), `node-${i} quorumkeep_equivocations_total`).toBe(0);
  }
}

/**
 * Every acknowledged probe is held by every running coordinator under the (origin, seq) it was given,
 * and no (origin, seq) was given twice.
 */
export async function expectProbesEverywhere(pc: ProcessCluster, acked: readonly AckedProbe[]): Promise<void> {
  expect(new Set(acked.map((a) => `${a.origin}!${a.seq}`)).size, 'an (origin, seq) given to two probes').toBe(acked.length);
  for (const [i, url] of pc.urls.entries()) {
    if (!pc.running(i)) continue;
    const auth = { authorization: `Bearer ${pc.adminTokens[i]}` };
    await waitFor(async () => (await getJson(`${url}/admin/probe/${acked.at(-1)!.key}`, auth)).status === 200, { timeoutMs: 20_000, description: `node-${i} to hold the last probe` });
    const wrong: string[] = [];
    for (let at = 0; at < acked.length; at += 50) {
      const answers = await Promise.all(
        acked.slice(at, at + 50).map(async (a) => {
          const res = await getJson<{ origin: string; seq: number }>(`${url}/admin/probe/${a.key}`, auth);
          return res.status === 200 && res.body.origin === a.origin && res.body.seq === a.seq ? undefined : `${a.key}: ${res.status} ${JSON.stringify(res.body)}`;
        }),
      );
      wrong.push(...answers.filter((w): w is string => w !== undefined));
    }
    expect(wrong, `node-${i} lost or changed acknowledged probes`).toEqual([]);
  }
}

/** Every `k`-subset of `items`, in lexicographic order. */
function subsets<T>(items: readonly T[], k: number): T[][] {
  if (k === 0) return [[]];
  return items.flatMap((first, i) => subsets(items.slice(i + 1), k - 1).map((rest) => [first, ...rest]));
}

/**
 * `sets` (of one size) in an order where each differs from the one before in one element when such
 * an order exists (a path found by depth-first search; `sets` is small), else in the order given.
 */
function oneChangeAtATime(sets: number[][]): number[][] {
  const differsInOne = (a: number[], b: number[]) => a.filter((x) => !b.includes(x)).length === 1;
  const path: number[][] = [];
  const used = new Set<number>();
  const extend = (): boolean => {
    if (path.length === sets.length) return true;
    for (const [i, set] of sets.entries()) {
      if (used.has(i) || (path.length > 0 && !differsInOne(path.at(-1)!, set))) continue;
      used.add(i);
      path.push(set);
      if (extend()) return true;
      path.pop();
      used.delete(i);
    }
    return false;
  };
  return extend() ? path : sets;
}

/**
 * Every acknowledged secret decrypts with every `threshold` subset of members, through the real
 * path: for each subset, the members outside it are killed with SIGKILL (those inside started again
 * first, so a quorum stays up), and each payload is decrypted through a coordinator inside the subset
 * once it sees exactly the subset reachable — a coordinator asks its own share first, and killed
 * members cannot answer. Subsets are visited so that one node restarts per step; afterwards every
 * node runs again and sees every member. Needs a coordinator in every subset: with coordinators on
 * slots 0 up, more than `size − threshold` of them.
 */
export async function expectEveryThresholdSubsetDecrypts(pc: ProcessCluster, principal: Principal, sealed: readonly SealedSecret[]): Promise<void> {
  const slots = Array.from({ length: pc.size }, (_, i) => i);
  const coordinators = pc.urls.length;
  if (coordinators <= pc.size - pc.threshold) throw new Error(`${coordinators} coordinators: some ${pc.threshold}-subsets of ${pc.size} members hold none, and nothing could decrypt through them`);
  for (const outside of oneChangeAtATime(subsets(slots, pc.size - pc.threshold))) {
    const inside = slots.filter((s) => !outside.includes(s));
    const via = inside.find((s) => s < coordinators)!;
    await Promise.all(inside.filter((s) => !pc.running(s)).map((s) => pc.start(s)));
    await Promise.all(outside.map((s) => pc.kill9(s)));
    await waitFor(
      async () => {
        const { clusterMap } = await healthOf(pc.urls[via]!);
        return slots.every((s) => clusterMap[String(s)]!.reachable === inside.includes(s));
      },
      { timeoutMs: 30_000, intervalMs: 100, description: `coordinator ${via} to reach exactly members ${inside.join(', ')}` },
    );
    expect(await openSealed(pc.urls[via]!, principal, sealed), `decrypts with members ${inside.join(', ')} through coordinator ${via}`).toEqual(sealed.map((s) => ({ status: 200, plaintext: s.plaintext })));
  }
  await Promise.all(slots.filter((s) => !pc.running(s)).map((s) => pc.start(s)));
  await waitForEveryNode(pc, (h) => h.cluster.reachable === pc.size, 'every node to reach every member again');
  await waitFor(async () => (await Promise.all(slots.map(async (s) => (await readyzOf(pc.operatorUrls[s]!)).status === 200))).every(Boolean), { timeoutMs: 30_000, description: 'every node ready again' });
}
