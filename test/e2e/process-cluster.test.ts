import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from 'quorumkeep/testing';
import { cleanupStack, tempDir } from '../utils/temp.ts';
import { startProcessCluster } from '../utils/process-cluster.ts';
import { getJson, postJson } from '../utils/http.ts';
import { outboxPrincipalWithSession } from '../utils/process-web2.ts';

const stack = cleanupStack();
afterEach(() => stack.run());

describe('process-level cluster (real CLI, child processes)', () => {
  it('kill -9 of a member during writes loses no acknowledged write, and the member catches up after restart', async () => {
    const dir = await tempDir(stack);
    const pc = await startProcessCluster(dir, { size: 3, threshold: 2 });
    stack.push(() => pc.stopAll());
    const auth = (i: number) => ({ authorization: `Bearer ${pc.adminTokens[i]}` });
    await waitFor(async () => (await getJson<{ cluster: { reachable: number } }>(`${pc.urls[0]}/healthz`)).body.cluster.reachable === 3, { timeoutMs: 15_000 });

    const acked: string[] = [];
    let failures = 0;
    let stopWriting = false;
    const writer = (async () => {
      for (let i = 0; !stopWriting && i < 2000; i++) {
        const key = `w-${i}`;
        const res = await postJson(`${pc.urls[0]}/admin/probe`, { key }, auth(0)).catch(() => undefined);
        if (res?.status === 201) acked.push(key);
        else failures++;
      }
    })();
    await waitFor(() => acked.length >= 100, { timeoutMs: 20_000 });
    await pc.kill9(2);
    const atKill = acked.length;
    await waitFor(() => acked.length >= atKill + 100, { timeoutMs: 20_000, description: 'writes to continue with 2 of 3' });
    stopWriting = true;
    await writer;
    expect(failures).toBe(0);

    // Started as the shipped unit starts a node: no warning. Node 2 now starts without those settings.
    expect(pc.output(0)).not.toContain('QuorumkeepProcessSettings');
    await pc.start(2, { processSettings: false });
    // A process warning is a log line in the node's format (JSON here: its stdout is a pipe), not Node's text on stderr.
    const warnings = pc
      .output(2)
      .split('\n')
      .filter((line) => line.includes('"process warning"'))
      .map((line) => JSON.parse(line) as { warning?: string; detail?: string });
    expect(warnings).toEqual([expect.objectContaining({ warning: 'QuorumkeepProcessSettings', detail: expect.stringMatching(/^started without MALLOC_ARENA_MAX=2 and --max-semi-space-size=8:/) })]);
    expect(pc.output(2)).not.toMatch(/^\(node:\d+\)/m);
    const last = acked[acked.length - 1]!;
    await waitFor(async () => (await getJson(`${pc.urls[2]}/admin/probe/${last}`, auth(2))).status === 200, { timeoutMs: 20_000, description: 'restarted node to catch up' });
    for (const [n, url] of pc.urls.entries()) {
      const missing: string[] = [];
      for (let i = 0; i < acked.length; i += 50) {
        const batch = acked.slice(i, i + 50);
        const statuses = await Promise.all(batch.map(async (k) => [k, (await getJson(`${url}/admin/probe/${k}`, auth(n))).status] as const));
        for (const [k, s] of statuses) if (s !== 200) missing.push(k);
      }
      expect(missing, `${url} is missing acknowledged writes`).toEqual([]);
    }
    // A clean stop exits 0.
    expect(await pc.stop(1)).toBe(0);
  }, 120_000);

  it('kill -9 of the writing node mid-burst, three times: no acknowledged write lost, no seq of its own reused', async () => {
    // Killed with batches of its own in flight (some written, some sent, some acknowledged), it
    // restarts on its data dir, learns its own log (docs/architecture.md, "Failure model") and
    // writes on: every acknowledged write is on every node under the seq it was acknowledged with,
    // and no seq of its own names two records.
    const dir = await tempDir(stack);
    const pc = await startProcessCluster(dir, { size: 3, threshold: 2 });
    stack.push(() => pc.stopAll());
    const auth = (i: number) => ({ authorization: `Bearer ${pc.adminTokens[i]}` });
    const attempted: string[] = [];
    const acked = new Map<string, number>();
    let serial = 0;
    let stop = false;
    const writer = async () => {
      while (!stop) {
        const key = `k-${serial++}`;
        attempted.push(key);
        const res = await postJson<{ seq: number }>(`${pc.urls[0]}/admin/probe`, { key }, auth(0)).catch(() => undefined);
        if (res?.status === 201) acked.set(key, res.body.seq);
        else await new Promise((r) => setTimeout(r, 20));
      }
    };
    for (let round = 0; round < 3; round++) {
      stop = false;
      const writers = Array.from({ length: 16 }, writer);
      const before = acked.size;
      await waitFor(() => acked.size >= before + 150, { timeoutMs: 60_000, description: `writes before kill ${round + 1}` });
      await pc.kill9(0);
      stop = true;
      await Promise.all(writers);
      await pc.start(0);
    }
    // It writes on once it knows its own log (a write before that is a retryable 503).
    const after = 'after-restarts';
    await waitFor(async () => (await postJson(`${pc.urls[0]}/admin/probe`, { key: after }, auth(0))).status === 201, { timeoutMs: 30_000, description: 'a write after the last restart' });

    const origin = (await getJson<{ origin: string }>(`${pc.urls[0]}/admin/probe/${after}`, auth(0))).body.origin;
    const keys = [...attempted, after];
    for (const [n, url] of pc.urls.entries()) {
      await waitFor(async () => (await getJson(`${url}/admin/probe/${after}`, auth(n))).status === 200, { timeoutMs: 30_000, description: `node ${n} to catch up` });
      const seqOf = new Map<string, number>();
      for (let i = 0; i < keys.length; i += 50) {
        const got = await Promise.all(keys.slice(i, i + 50).map(async (k) => [k, await getJson<{ origin: string; seq: number }>(`${url}/admin/probe/${k}`, auth(n))] as const));
        for (const [k, res] of got) if (res.status === 200 && res.body.origin === origin) seqOf.set(k, res.body.seq);
      }
      // Every acknowledged write, under the seq it was acknowledged with; no seq holds two keys.
      expect([...acked].filter(([k, seq]) => seqOf.get(k) !== seq), `${url}: acknowledged writes missing or renumbered`).toEqual([]);
      const seqs = [...seqOf.values()];
      expect(new Set(seqs).size, `${url}: a seq of node 0 names two records`).toBe(seqs.length);
      const health = await getJson<{ cluster: { equivocating: unknown[] } }>(`${url}/healthz`);
      expect(health.body.cluster.equivocating).toEqual([]);
    }
  }, 240_000);

  it('kill -9 of slot 0 mid-burst of creates loses no acknowledged secret id and never hands one out twice', async () => {
    const dir = await tempDir(stack);
    const pc = await startProcessCluster(dir, { size: 3, threshold: 2 });
    stack.push(() => pc.stopAll());
    // Creates go through coordinator 1: slot 0 (node 0) only claims their ids, and is the one killed.
    const via = pc.urls[1]!;
    const p = await outboxPrincipalWithSession(pc, via, 'burst');
    const signedAt = Date.now();
    let serial = 0;
    const acked: Array<{ body: unknown; secretId: number }> = [];
    let stop = false;
    const client = async () => {
      while (!stop) {
        // Each create its own string (its idempotency key), all within the freshness window.
        const body = p.signed(0, undefined, signedAt + serial++);
        const res = await postJson<{ secretId: number }>(`${via}/web2/secret`, body).catch(() => undefined);
        if (res?.status === 201) acked.push({ body, secretId: res.body.secretId });
      }
    };
    const clients = Array.from({ length: 16 }, client);
    await waitFor(() => acked.length >= 40, { timeoutMs: 30_000, description: 'creates before the kill' });
    await pc.kill9(0);
    const atKill = acked.length;
    await pc.start(0);
    await waitFor(() => acked.length >= atKill + 40, { timeoutMs: 60_000, description: 'creates after slot 0 restarted' });
    stop = true;
    await Promise.all(clients);

    const ids = acked.map((a) => a.secretId);
    expect(new Set(ids).size, 'a secret id was handed out twice').toBe(ids.length);
    // Every acknowledged create's claim survived: its string, sent again through the other
    // coordinator, gets its own id back, not a new one.
    const other = pc.urls[2]!;
    const again: Array<{ expected: number; got: number | undefined; status: number }> = [];
    for (const a of acked) {
      const res = await postJson<{ secretId: number }>(`${other}/web2/secret`, a.body);
      again.push({ expected: a.secretId, got: res.body.secretId, status: res.status });
    }
    expect(again.filter((r) => r.status !== 201 || r.got !== r.expected)).toEqual([]);
  }, 180_000);
});
