/**
 * One node per host, and partitions that drop packets (issue 11). Five network namespaces joined by a
 * bridge; the cluster is made only with the documented commands (`cluster init --hosts …`, then
 * `quorumkeep start --config node-i.json` on each host) and driven over HTTP from outside. Three
 * faults, each an iptables DROP (connections stay open and go silent): a minority cut off, slot 0 cut
 * off, and a bridge partition where one node sees both sides. During each, secrets are created
 * through both coordinators and a permit is confirmed; after healing, every answer must have been
 * true: each 201 is a secret every coordinator serves, each 503 is retry-safe (its retry makes no
 * second secret), each 200 "consumed" is applied on every member exactly once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChildProcess } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { simpleParser } from 'mailparser';
import { waitFor } from 'quorumkeep/testing';
import { createNetnsLab, type NetnsLab } from '../utils/netns.ts';
import { allOf, asRoot, onPath, requireTool } from '../utils/tools.ts';
import { runCli } from '../utils/process-cluster.ts';
import { newSessionWallet, sessionRequest, signData, type SessionWallet } from '../utils/session.ts';
import { digestOf } from '../utils/permits.ts';
import { newEd25519 } from '../utils/web2.ts';

const REPO = resolve(fileURLToPath(import.meta.url), '../../..');
const SIZE = 5;
const HTTP_PORT = 3010;
const OPERATOR_PORT = 3110;
const CREATES_PER_FAULT = 8;

let lab: NetnsLab;
let dir: string;
const procs: ChildProcess[] = [];
const output: string[] = Array.from({ length: SIZE }, () => '');
let A: string;
let B: string;

interface Client {
  principalId: string;
  wallet: SessionWallet;
  signed(subject: string | number, extra?: string, at?: number): { data: string; signature: string };
}

async function post(url: string, body: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body), signal: AbortSignal.timeout(20_000) });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** The newest mail in node `i`'s outbox to `to` whose text matches `pattern`. */
async function mailText(i: number, to: string, pattern: RegExp): Promise<string> {
  let found: string | undefined;
  await waitFor(
    async () => {
      const box = join(dir, `node-${i}`, 'outbox');
      const files = (await readdir(box).catch(() => [] as string[])).filter((f) => f.endsWith('.eml')).sort();
      for (const f of files.reverse()) {
        const mail = await simpleParser(await readFile(join(box, f)));
        const addressed = JSON.stringify(mail.to ?? '').includes(to);
        if (addressed && pattern.test(mail.text ?? '')) {
          found = mail.text ?? '';
          return true;
        }
      }
      return false;
    },
    { timeoutMs: 10_000, description: `mail to ${to}` },
  );
  return found!;
}

async function client(url: string, node: number, tag: string): Promise<Client> {
  const email = `${tag}-${Date.now()}@example.test`;
  const password = 'correct horse battery staple';
  const reg = await post(`${url}/web2/auth/register`, { email, password });
  expect(reg.status, JSON.stringify(reg.body)).toBe(201);
  const otp = /\b(\d{6})\b/.exec(await mailText(node, email, /\b\d{6}\b/))![1]!;
  expect((await post(`${url}/web2/auth/verify-email`, { email, otp })).status).toBe(200);
  const key = newEd25519();
  const principalId = reg.body.principalId as string;
  const rk = await post(`${url}/web2/auth/register-key`, { principalId, password, publicKey: key.publicKey, signature: key.sign(`cifer_register:${key.publicKey}`) });
  expect(rk.status, JSON.stringify(rk.body)).toBe(201);
  const wallet = newSessionWallet();
  const session = await post(`${url}/web2/session`, sessionRequest(principalId, key, wallet));
  expect(session.status, JSON.stringify(session.body)).toBe(201);
  let last = 0;
  return {
    principalId,
    wallet,
    signed(subject, extra, at) {
      // Distinct timestamps: every string is its own request.
      const ts = at ?? Math.max(Date.now(), last + 1);
      last = ts;
      return signData(wallet, `-1_${subject}_${wallet.address}_${ts}` + (extra === undefined ? '' : `_${extra}`));
    },
  };
}

const health = async (i: number) =>
  (await (await fetch(`http://${lab.hosts[i]}:${OPERATOR_PORT}/healthz`, { signal: AbortSignal.timeout(3000) })).json()) as { cluster: { reachable: number } };

async function allSeeAll(): Promise<void> {
  await waitFor(async () => (await Promise.all(lab.hosts.map((_, i) => health(i).catch(() => undefined)))).every((h) => h?.cluster.reachable === SIZE), {
    timeoutMs: 30_000,
    intervalMs: 200,
    description: 'every node to see all 5',
  });
}

async function appliedPermits(i: number): Promise<number> {
  const text = await (await fetch(`http://${lab.hosts[i]}:${OPERATOR_PORT}/metrics`)).text();
  return [...text.matchAll(/^quorumkeep_permits_applied_total\{[^}]*\} (\d+)$/gm)].reduce((n, m) => n + Number(m[1]), 0);
}

// Network namespaces and iptables rules: root, ip and iptables (.ci/run installs iptables; CI runs as root).
const netnsNeed = requireTool('netns-partitions', 'root, ip and iptables', allOf(asRoot, onPath('ip', 'iptables')));

beforeAll(async () => {
  if (netnsNeed.skip) return;
  netnsNeed.assertPresent();
  lab = await createNetnsLab(SIZE);
  dir = await mkdtemp(join(tmpdir(), 'qk-netns-'));
  const init = await runCli(['cluster', 'init', '--size', String(SIZE), '--threshold', '3', '--coordinators', '2', '--hosts', lab.hosts.join(','), '--out', dir]);
  expect(init.code, init.stderr).toBe(0);
  for (let i = 0; i < SIZE; i++) {
    const p = lab.spawn(i, process.execPath, ['src/main.ts', 'start', '--config', join(dir, `node-${i}.json`)], { cwd: REPO });
    p.stdout!.on('data', (d: Buffer) => (output[i] += d.toString()));
    p.stderr!.on('data', (d: Buffer) => (output[i] += d.toString()));
    procs.push(p);
  }
  [A, B] = [0, 1].map((i) => `http://${lab.hosts[i]}:${HTTP_PORT}`) as [string, string];
  await allSeeAll();
}, 120_000);

afterAll(async () => {
  for (const p of procs) p.kill('SIGTERM');
  await Promise.all(procs.map((p) => new Promise((r) => (p.exitCode !== null ? r(undefined) : p.once('close', r)))));
  await lab?.destroy();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe.skipIf(netnsNeed.skip)('a cluster of five hosts under silent partitions', () => {
  it('every answer is true: 201s survive, 503s are retry-safe, consumed permits are applied once everywhere', async () => {
    const alice = await client(A, 0, 'alice');
    const bob = await client(B, 1, 'bob');
    const faults: Array<[string, number[], number[]]> = [
      ['minority cut off', [3, 4], [0, 1, 2]],
      ['slot 0 cut off', [0], [1, 2, 3, 4]],
      ['bridge partition (node 2 sees both sides)', [0, 1], [3, 4]],
    ];
    const created = new Map<string, number>(); // signed data → secretId (201)
    const unknown: Array<{ url: string; body: { data: string; signature: string } }> = []; // 503s
    const consumed: string[] = []; // permits answered 200 consumed during a fault
    const links: Array<{ permitId: string; path: string }> = []; // every permit whose link was clicked
    const appliedBefore = await Promise.all(lab.hosts.map((_, i) => appliedPermits(i)));

    // A secret Alice owns from the start, for permits.
    const base = await post(`${A}/web2/secret`, alice.signed(0));
    expect(base.status).toBe(201);
    const baseId = base.body.secretId as number;

    for (const [name, a, b] of faults) {
      await lab.cut(a, b);
      // Until every node sees the partition (liveness), so what they answer reflects it.
      const expected = (x: number) => SIZE - (a.includes(x) ? b.length : b.includes(x) ? a.length : 0);
      await waitFor(async () => (await Promise.all(lab.hosts.map((_, x) => health(x)))).every((h, x) => h.cluster.reachable === expected(x)), {
        timeoutMs: 10_000,
        intervalMs: 100,
        description: `${name} to be seen`,
      });
      const requests = Array.from({ length: CREATES_PER_FAULT }, (_, k) => ({ url: k % 2 ? B : A, body: alice.signed(0) }));
      const answers = await Promise.all(requests.map((r) => post(`${r.url}/web2/secret`, r.body)));
      answers.forEach((ans, k) => {
        const r = requests[k]!;
        if (ans.status === 201) created.set(r.body.data, ans.body.secretId as number);
        else {
          expect(ans.status, `${name}: ${JSON.stringify(ans.body)}`).toBe(503);
          unknown.push(r);
        }
      });
      // A delegate permit requested and confirmed during the fault, through whichever coordinator can.
      const requestId = crypto.randomUUID();
      const payload = JSON.stringify({ delegatePrincipalId: name.startsWith('slot') ? null : bob.principalId });
      const data = ['-1', baseId, alice.wallet.address, Date.now(), 'permit', requestId, 'delegate', digestOf(payload)].join('_');
      for (const url of [A, B]) {
        const req = await post(`${url}/web2/permit`, { requestId, action: 'delegate', payload, ...signData(alice.wallet, data) });
        // Without slot 0 nobody can create a permit: a 503, and the retry elsewhere is safe.
        if (req.status === 503) continue;
        expect([200, 201], `${name}: permit ${req.status} ${JSON.stringify(req.body)}`).toContain(req.status);
        const link = new URL(/https?:\/\/\S+\/web2\/confirm\?\S+/.exec(await mailText(url === A ? 0 : 1, '', new RegExp(req.body.permitId as string)))![0]);
        links.push({ permitId: req.body.permitId as string, path: link.pathname + link.search });
        const conf = await fetch(`${url}${link.pathname}${link.search}`, { headers: { accept: 'application/json' } });
        const body = (await conf.json()) as { status?: string };
        expect([200, 202, 503], `${name}: confirm ${conf.status} ${JSON.stringify(body)}`).toContain(conf.status);
        if (conf.status === 200) consumed.push(req.body.permitId as string);
        break;
      }
      await lab.heal();
      await allSeeAll();
    }

    // Every 201 is served by both coordinators; every 503, retried as is, ends in one secret.
    for (const [data, id] of created) {
      for (const url of [A, B]) expect((await fetch(`${url}/secret-public-key/-1/${id}`)).status, data).toBe(200);
    }
    for (const r of unknown) {
      let ans = await post(`${r.url}/web2/secret`, r.body);
      await waitFor(async () => ans.status !== 503 || (ans = await post(`${r.url}/web2/secret`, r.body)).status !== 503, { timeoutMs: 20_000, intervalMs: 250, description: 'the retried create to be answered' });
      expect(ans.status, JSON.stringify(ans.body)).toBe(201);
      expect(created.has(r.body.data)).toBe(false);
      created.set(r.body.data, ans.body.secretId as number);
    }
    const listed = ((await post(`${A}/web2/secrets`, alice.signed(alice.principalId))).body.secrets as Array<{ secretId: number }>).map((s) => s.secretId);
    // One secret per string (plus the base one): nothing lost, nothing made twice.
    expect(new Set(created.values()).size).toBe(created.size);
    expect(listed.sort((x, y) => x - y)).toEqual([baseId, ...created.values()].sort((x, y) => x - y));
    // Every link clicked ends consumed (a 202 completes on its own, or on the next click), each
    // permit answered "consumed" is among them, and every member applied each exactly once.
    // Slot 0 cut off: no permit could be made; the other two faults leave slot 0 with a majority.
    expect(links.length).toBe(faults.length - 1);
    for (const l of links) {
      const res = await fetch(`${A}${l.path}`, { headers: { accept: 'application/json' } });
      expect(res.status, l.permitId).toBe(200);
    }
    for (const id of consumed) expect(links.map((l) => l.permitId)).toContain(id);
    await waitFor(async () => (await Promise.all(lab.hosts.map((_, i) => appliedPermits(i)))).every((n, i) => n === appliedBefore[i]! + links.length), {
      timeoutMs: 20_000,
      description: 'every permit applied on every member',
    });
  }, 240_000);
});
