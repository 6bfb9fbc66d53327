/**
 * Issue 28 — "Lose a disk, keep the keys" (docs/operations.md) for a coordinator, with real node
 * processes and the real CLI, the runbook as written: a coordinator that wrote records of its own
 * (an account registered through it, its acknowledgements of every key, secrets, probes) is killed
 * with SIGKILL, its data dir wiped, its keys kept; it starts again on the empty data dir;
 * `quorumkeep member recover` marks its slot and `quorumkeep member status` exits 0 once it holds every
 * share. Keys are registered through another coordinator and probes written through it all along.
 * Then: it is ready (`/readyz` `ownLogKnown`), no (origin, seq) was given to two probes, its new
 * records follow every seq of its own the others held, every secret opens through it, and no node
 * ever recorded an equivocation (`/healthz` `equivocating`, `quorumkeep_equivocations_total`).
 *
 * A sync round streams a peer's records origin by origin in address order; the coordinator wiped is
 * the one whose address sorts last, after slot 0's when any does — where the old race (acknowledging
 * slot 0's principals before its own records came back) would show.
 */
import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from 'quorumkeep/testing';
import { getJson } from '../utils/http.ts';
import { runCli, startProcessCluster, writeProbes } from '../utils/process-cluster.ts';
import { openSealed, outboxPrincipalWithSession, sealSecrets } from '../utils/process-web2.ts';
import { expectNoEquivocation } from '../utils/runbook.ts';
import { cleanupStack, tempDir } from '../utils/temp.ts';

const stack = cleanupStack();
afterEach(() => stack.run());

interface Health {
  cluster: { reachable: number; equivocating: unknown[] };
  clusterMap: Record<string, { nodeAddress: string }>;
}

describe('a coordinator process that lost its disk, its keys kept (real CLI, kill -9)', () => {
  it('follows the runbook without any node recording an equivocation, and writes again after its own seqs', async () => {
    const dir = await tempDir(stack);
    const pc = await startProcessCluster(dir, { size: 5, threshold: 3 });
    stack.push(() => pc.stopAll());
    const A = pc.urls[0]!;
    await waitFor(async () => (await getJson<Health>(`${A}/healthz`)).body.cluster.reachable === 5, { timeoutMs: 20_000, description: 'every member reachable' });
    const map = (await getJson<Health>(`${A}/healthz`)).body.clusterMap;
    const address = (slot: number) => map[String(slot)]!.nodeAddress;
    const LOST = [1, 2, 3, 4].reduce((best, slot) => (address(slot) > address(best) ? slot : best), 1);
    const X = pc.urls[LOST]!;

    // Records of its own: an account registered through it, its key acknowledgements, secrets, probes.
    const alice = await outboxPrincipalWithSession(pc, X, 'alice');
    const sealed = await sealSecrets(X, alice, 3);
    const before = writeProbes(pc, LOST, 'before');
    stack.push(() => before.stop());
    await waitFor(() => before.acked.length >= 10, { timeoutMs: 20_000, description: 'probes through the coordinator' });
    await expectNoEquivocation(pc);

    // Keys registered through slot 0's coordinator all along: each one the lost coordinator acknowledges.
    let stopped = false;
    let registered = 0;
    const registering = (async () => {
      while (!stopped) if (await outboxPrincipalWithSession(pc, A, `during-${registered}`).catch(() => undefined)) registered++;
    })();
    stack.push(async () => {
      stopped = true;
      await registering;
    });
    await waitFor(() => registered >= 2, { timeoutMs: 30_000, description: 'keys registered before the disk goes' });

    // The disk goes; the keys stay.
    await pc.kill9(LOST);
    await before.stop();
    const ownBefore = Math.max(...before.acked.map((a) => a.seq));
    const data = pc.dataDir(LOST);
    for (const name of await readdir(data)) if (name !== 'keys') await rm(join(data, name), { recursive: true, force: true });
    expect(await readdir(data)).toEqual(['keys']);

    // 1. Start it on its keys with an empty data dir; it is written through at once.
    await pc.start(LOST);
    const after = writeProbes(pc, LOST, 'after');
    stack.push(() => after.stop());
    // 2. Mark the slot. 3. Wait until every slot is active.
    const token = ['--url', A, '--token', pc.adminTokens[0]!];
    const recover = await runCli(['member', 'recover', '--slot', String(LOST), ...token]);
    expect(recover.code, recover.stderr).toBe(0);
    await waitFor(async () => (await runCli(['member', 'status', ...token])).code === 0, { timeoutMs: 90_000, intervalMs: 500, description: 'the coordinator to hold every share again' });
    await waitFor(async () => (await fetch(`${pc.operatorUrls[LOST]}/readyz`)).status === 200, { timeoutMs: 30_000, description: 'the coordinator ready' });
    expect((await getJson<{ checks: Record<string, boolean> }>(`${pc.operatorUrls[LOST]}/readyz`)).body.checks).toMatchObject({ ownLogKnown: true });
    await waitFor(() => after.acked.length >= 10, { timeoutMs: 30_000, description: 'probes through the restarted coordinator' });
    const registeredAfter = registered;
    await waitFor(() => registered >= registeredAfter + 1, { timeoutMs: 30_000, description: 'a key registered after the restart' });
    stopped = true;
    await Promise.all([registering, after.stop()]);

    // Its new records follow every seq of its own the others held; none was given twice.
    const acked = [...before.acked, ...after.acked];
    expect(new Set(acked.map((a) => `${a.origin}!${a.seq}`)).size).toBe(acked.length);
    expect(Math.min(...after.acked.map((a) => a.seq))).toBeGreaterThan(ownBefore);
    for (const [i, url] of pc.urls.entries()) {
      await waitFor(async () => (await getJson(`${url}/admin/probe/${after.acked.at(-1)!.key}`, { authorization: `Bearer ${pc.adminTokens[i]}` })).status === 200, { timeoutMs: 20_000, description: `node-${i} to hold the last probe` });
      for (const a of acked) {
        const res = await getJson<{ origin: string; seq: number }>(`${url}/admin/probe/${a.key}`, { authorization: `Bearer ${pc.adminTokens[i]}` });
        expect(res.body, `node-${i}: ${a.key}`).toMatchObject({ origin: a.origin, seq: a.seq });
      }
    }
    expect(await openSealed(X, alice, sealed)).toEqual(sealed.map((s) => ({ status: 200, plaintext: s.plaintext })));
    await expectNoEquivocation(pc);
  }, 300_000);
});
