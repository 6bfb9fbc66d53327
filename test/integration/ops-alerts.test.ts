/**
 * The alerting rules and the dashboard operators install (issue 28; docs/deployment.md, "Alerts and
 * dashboard"): every `quorumkeep_*` metric they name is one a real node exports — read from the
 * `# HELP` lines of its operator port's `/metrics`, which name every registered metric, set or not —
 * each rule carries a severity and a summary, description and runbook that exists; and, with
 * Prometheus' `promtool` (Debian's `prometheus` package, which .ci/run installs), the rules load and
 * their unit tests (ops/prometheus/quorumkeep-alerts.test.yml) pass.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { loadNodeSetup } from '../../src/config/index.ts';
import { createNode } from '../../src/node/index.ts';
import { initCluster } from '../../src/node/cluster-init.ts';
import { getFreePortRange } from '../../src/testing/index.ts';
import { cleanupStack, tempDir } from '../utils/temp.ts';
import { onPath, requireTool } from '../utils/tools.ts';

const stack = cleanupStack();
afterEach(() => stack.run());

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const RULES = join(ROOT, 'ops/prometheus/quorumkeep-alerts.yml');
const RULE_TESTS = join(ROOT, 'ops/prometheus/quorumkeep-alerts.test.yml');
const DASHBOARD = join(ROOT, 'ops/grafana/quorumkeep-dashboard.json');
/** What the rules must watch (issue 28): each of these is named by at least one rule. */
const WATCHED = [
  'quorumkeep_equivocations_total',
  'quorumkeep_member_reachable',
  'quorumkeep_cluster_reachable_members',
  'quorumkeep_cluster_threshold',
  'quorumkeep_slot0_reachable',
  'quorumkeep_member_shares_held',
  'quorumkeep_member_shares_expected',
  'quorumkeep_member_recovering',
  'quorumkeep_member_recovering_seconds',
  'quorumkeep_secrets_at_risk',
  'quorumkeep_secrets_lost',
  'quorumkeep_node_ready',
  'quorumkeep_own_writes_held',
  'quorumkeep_build_info',
];

interface Rule {
  alert: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

const rules = (): Rule[] => (parse(readFileSync(RULES, 'utf8')) as { groups: Array<{ rules: Rule[] }> }).groups.flatMap((g) => g.rules);

/** Every PromQL expression of the dashboard (`targets[].expr`, templating queries), rows' panels included. */
function dashboardExprs(): string[] {
  const out: string[] = [];
  const walk = (value: unknown): void => {
    if (Array.isArray(value)) value.forEach(walk);
    else if (typeof value === 'object' && value !== null) {
      for (const [key, v] of Object.entries(value)) {
        if ((key === 'expr' || key === 'definition') && typeof v === 'string') out.push(v);
        else walk(v);
      }
    }
  };
  walk(JSON.parse(readFileSync(DASHBOARD, 'utf8')));
  return out;
}

const metricNames = (exprs: string[]) => new Set(exprs.flatMap((e) => e.match(/\bquorumkeep_[a-z0-9_]+/g) ?? []));

/** GitHub's anchor of a Markdown heading. */
function anchorOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-');
}

/** The metric names a real node registers: the `# HELP` lines of its operator port's /metrics. */
async function registeredNames(): Promise<Set<string>> {
  const dir = await tempDir(stack, 'qk-ops-alerts-');
  const base = await getFreePortRange(3);
  await initCluster({ out: dir, size: 1, threshold: 1, basePort: base, httpBasePort: base + 1, operatorBasePort: base + 2 });
  const { config, descriptor } = loadNodeSetup({ file: join(dir, 'node-0.json'), env: {}, flags: { 'log.level': 'warn' } });
  // As `quorumkeep start` builds it: the default registry, process metrics included.
  const node = await createNode(config, { descriptor });
  stack.push(() => node.stop());
  await node.start();
  const res = await fetch(`${node.operatorUrl!}/metrics`);
  expect(res.status).toBe(200);
  const text = await res.text();
  return new Set([...text.matchAll(/^# HELP (\S+) /gm)].map((m) => m[1]!));
}

describe('ops/: alerting rules and dashboard', () => {
  it('name only metrics a started node exports', async () => {
    const registered = await registeredNames();
    expect(registered).toContain('quorumkeep_build_info');
    const known = (name: string) => registered.has(name) || registered.has(name.replace(/_(bucket|count|sum)$/, ''));
    const fromRules = metricNames(rules().map((r) => r.expr));
    const fromDashboard = metricNames(dashboardExprs());
    expect([...fromRules].filter((n) => !known(n)), 'rules').toEqual([]);
    expect([...fromDashboard].filter((n) => !known(n)), 'dashboard').toEqual([]);
    expect(WATCHED.filter((n) => !fromRules.has(n)), 'metrics no rule watches').toEqual([]);
  }, 60_000);

  it('each rule has a severity, a summary, a description and a runbook section that exists', () => {
    const all = rules();
    expect(all.length).toBeGreaterThan(0);
    expect(new Set(all.map((r) => r.alert)).size).toBe(all.length);
    for (const rule of all) {
      expect(['critical', 'warning', 'info'], rule.alert).toContain(rule.labels?.['severity']);
      expect(rule.annotations?.['summary'], rule.alert).toBeTruthy();
      expect(rule.annotations?.['description'], rule.alert).toBeTruthy();
      const runbook = rule.annotations?.['runbook_url'] ?? '';
      const [file, anchor] = runbook.split('#');
      expect(file, rule.alert).toMatch(/^docs\/[a-z-]+\.md$/);
      const headings = [...readFileSync(join(ROOT, file!), 'utf8').matchAll(/^#{1,6} (.+)$/gm)].map((m) => anchorOf(m[1]!));
      expect(headings, `${rule.alert}: ${runbook}`).toContain(anchor);
    }
  });

  it('the dashboard is Grafana JSON over a Prometheus data source chosen at import', () => {
    const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as { uid: string; panels: Array<{ id: number; targets?: Array<{ datasource?: { uid?: string } }> }> };
    expect(dashboard.uid).toBeTruthy();
    expect(new Set(dashboard.panels.map((p) => p.id)).size).toBe(dashboard.panels.length);
    for (const target of dashboard.panels.flatMap((p) => p.targets ?? [])) expect(target.datasource?.uid).toBe('${datasource}');
  });
});

// Debian's prometheus package (only promtool is used; .ci/run installs it).
const promtoolNeed = requireTool('ops-alerts (promtool checks)', "promtool (Debian's prometheus package)", onPath('promtool'));

describe.skipIf(promtoolNeed.skip)('ops/prometheus with promtool', () => {
  const promtool = (...args: string[]) => {
    promtoolNeed.assertPresent();
    const run = spawnSync('promtool', args, { cwd: join(ROOT, 'ops/prometheus'), encoding: 'utf8' });
    expect(run.error).toBeUndefined();
    return run;
  };

  it('check rules: the rules load', () => {
    const run = promtool('check', 'rules', RULES);
    expect(run.status, run.stdout + run.stderr).toBe(0);
  });

  it('test rules: each alert fires when, and only when, it should', () => {
    const run = promtool('test', 'rules', RULE_TESTS);
    expect(run.status, run.stdout + run.stderr).toBe(0);
  });
});
