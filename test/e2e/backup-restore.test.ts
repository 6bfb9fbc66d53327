/**
 * "Back up and restore a node" as docs/operations.md writes it (issues 15 and 28), with real processes
 * and the real CLI: a backup of a member taken under load — probes written through coordinator 0 and
 * through member 4 itself, secrets created all along — checked, then restored into a new data dir and
 * started. The test asserts what the operator is told to watch: the restored node's `/readyz`
 * (`caughtUp`, then ready), `cluster.equivocating` and `quorumkeep_equivocations_total` on every node,
 * `quorumkeep_records_applied_total{source="sync"}` and `quorumkeep_cluster_reachable_members`,
 * `quorumkeep status`; and afterwards: no acknowledged record lost, none twice, and every acknowledged
 * secret — those whose shares were dealt after the backup included, which the member recovers by
 * itself — decrypts with each of the ten 3-member subsets.
 *
 * Member 4's own records after the backup are missing from the archive: it must catch them up before
 * it writes again, or it would reuse their seqs (docs/operations.md, "What the node does at its first
 * start").
 *
 * Issue 28: `restore` over a running node is refused (exit 2), `--force` and `--dry-run --force`
 * included, and leaves its store alone; once the node is stopped the same restore goes through.
 */
import { readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from 'quorumkeep/testing';
import { getJson, postJson } from '../utils/http.ts';
import { runCli, startProcessCluster, writeProbes } from '../utils/process-cluster.ts';
import { outboxPrincipalWithSession, sealSecrets, type SealedSecret } from '../utils/process-web2.ts';
import type { Principal } from '../utils/session.ts';
import {
  expectEveryThresholdSubsetDecrypts,
  expectNoEquivocation,
  expectProbesEverywhere,
  expectStatus,
  healthOf,
  metricsOf,
  readyzOf,
  runningSlots,
  sampleOf,
  waitForEveryNode,
  type HealthAnswer,
} from '../utils/runbook.ts';
import { cleanupStack, tempDir } from '../utils/temp.ts';

const stack = cleanupStack();
afterEach(() => stack.run());

const RESTORED = 4;

/** Secrets created one after another through `url` until stopped (each sealed with one payload); failures counted. */
function sealer(url: string, p: Principal) {
  const sealed: SealedSecret[] = [];
  let failures = 0;
  let stopped = false;
  const done = (async () => {
    while (!stopped) {
      const made = await sealSecrets(url, p, 1).catch(() => undefined);
      if (made) sealed.push(...made);
      else failures++;
    }
  })();
  return {
    sealed,
    failures: () => failures,
    async stop() {
      stopped = true;
      await done;
    },
  };
}

describe('backup and restore of a member (real CLI, child processes)', () => {
  it('a backup under load, checked, restored into a new data dir: catches up, recovers the shares dealt since, loses no acknowledged record or secret', async () => {
    const dir = await tempDir(stack, 'qk-backup-e2e-');
    const pc = await startProcessCluster(dir, { size: 5, threshold: 3 });
    stack.push(() => pc.stopAll());
    await waitFor(async () => (await healthOf(pc.urls[0]!)).cluster.reachable === 5, { timeoutMs: 20_000, description: 'every member reachable' });
    const A = pc.urls[0]!;

    // Secrets made before the backup.
    const alice = await outboxPrincipalWithSession(pc, A, 'alice');
    const sealedBefore = await sealSecrets(A, alice, 2);

    // Load: probes through coordinator 0 and through member 4 itself, and secrets, all along.
    const viaZero = writeProbes(pc, 0, 'zero');
    let viaFour = writeProbes(pc, RESTORED, 'four');
    const fourBefore = viaFour;
    const secrets = sealer(A, alice);
    stack.push(() => viaZero.stop());
    stack.push(() => fourBefore.stop());
    stack.push(() => secrets.stop());
    await waitFor(() => viaZero.acked.length >= 30 && viaFour.acked.length >= 30 && secrets.sealed.length >= 1, { timeoutMs: 20_000, description: 'writes under way' });

    // Take a backup: the running node streams it, writes go on.
    const archive = join(dir, 'node-4.qkbackup');
    const ownAckedBeforeBackup = viaFour.acked.length;
    const backup = await runCli(['backup', '--config', pc.configPath(RESTORED), '--out', archive]);
    expect(backup.code, backup.stderr).toBe(0);
    expect(backup.stdout).toMatch(/streamed by the running node/);
    expect(backup.stdout).toMatch(/keys: not included/);
    expect((await stat(archive)).mode & 0o777).toBe(0o600);
    // The storage key is not in the archive.
    const storageKey = (await readFile(join(pc.dataDir(RESTORED), 'keys', 'storage.key'), 'utf8')).trim();
    const bytes = await readFile(archive);
    expect(bytes.includes(Buffer.from(storageKey, 'hex')) || bytes.includes(Buffer.from(storageKey))).toBe(false);
    // Check a backup: whole and untampered.
    const verify = await runCli(['verify-backup', '--in', archive]);
    expect(verify.code, verify.stderr).toBe(0);

    // More writes, member 4's own among them, and secrets whose shares the archive does not have.
    const ownAtBackup = viaFour.acked.length;
    const secretsAtBackup = secrets.sealed.length;
    await waitFor(() => viaFour.acked.length >= ownAtBackup + 30 && viaZero.acked.length >= 90 && secrets.sealed.length >= secretsAtBackup + 2, { timeoutMs: 30_000, description: 'writes after the backup' });
    await viaFour.stop();
    await secrets.stop();
    expect(secrets.failures()).toBe(0);
    const sealed = [...sealedBefore, ...secrets.sealed];

    // Restore 1. Stop the node.
    expect(await pc.stop(RESTORED)).toBe(0);
    expect(viaFour.acked.length).toBeGreaterThan(ownAckedBeforeBackup);
    const ownMaxSeqBeforeRestore = Math.max(...viaFour.acked.map((a) => a.seq));
    await waitForEveryNode(pc, (h) => !h.clusterMap[String(RESTORED)]!.reachable, 'every node to miss member 4');
    await expectStatus(pc, 1, ['member_unreachable'], [0]);

    // 2. A new, empty data dir; the keys stay where they are.
    const configPath = pc.configPath(RESTORED);
    const config = JSON.parse(await readFile(configPath, 'utf8')) as Record<string, unknown>;
    await writeFile(configPath, JSON.stringify({ ...config, dataDir: join(dir, 'node-4-restored'), keysDir: join(pc.dataDir(RESTORED), 'keys') }, null, 2));
    // Check a backup: the dry run (right cluster, node and keys), now that the node is stopped.
    const dry = await runCli(['restore', '--config', configPath, '--in', archive, '--dry-run']);
    expect(dry.code, dry.stderr).toBe(0);
    // 3. Restore.
    const restore = await runCli(['restore', '--config', configPath, '--in', archive]);
    expect(restore.code, restore.stderr).toBe(0);
    expect(restore.stdout).toMatch(/restored node-4/);
    const again = await runCli(['restore', '--config', configPath, '--in', archive]);
    expect(again.code).toBe(2);

    // 4. Start it: it catches its own records up before it writes (writes through it meanwhile wait),
    // then writes with fresh seqs. What to watch: `ownLogKnown` and `caughtUp` on its /readyz.
    await pc.start(RESTORED);
    const operator = pc.operatorUrls[RESTORED]!;
    viaFour = writeProbes(pc, RESTORED, 'four-after');
    await waitFor(async () => (await readyzOf(operator)).checks.ownLogKnown && (await readyzOf(operator)).checks.caughtUp, { timeoutMs: 30_000, description: 'the restored member to know its own log and catch up' });
    const fourAfter = viaFour;
    stack.push(() => fourAfter.stop());
    await waitFor(() => fourAfter.acked.length >= 20, { timeoutMs: 20_000, description: 'writes through the restored member' });
    await fourAfter.stop();
    await viaZero.stop();
    expect(Math.min(...fourAfter.acked.map((a) => a.seq))).toBeGreaterThan(ownMaxSeqBeforeRestore);

    // What to watch: ready, every member reachable everywhere, the catch-up on its metrics, no
    // equivocation anywhere; the shares dealt since the backup recovered by the member itself.
    await waitFor(async () => (await readyzOf(operator)).status === 200, { timeoutMs: 60_000, description: 'the restored member ready' });
    const heldBy4 = (h: HealthAnswer) => h.dataSafety.members.find((m) => m.slot === RESTORED)?.shares;
    await waitForEveryNode(pc, (h) => h.status === 'ok' && h.cluster.reachable === 5 && heldBy4(h)?.held === sealed.length && heldBy4(h)?.expected === sealed.length, 'every node ok, member 4 holding every share', 60_000);
    await expectStatus(pc, 0);
    expect((await healthOf(operator)).recovery).toMatchObject({ state: 'done', failed: 0 });
    expect((await healthOf(operator)).recovery!.recovered).toBeGreaterThanOrEqual(sealed.length - secretsAtBackup - sealedBefore.length);
    const restoredMetrics = await metricsOf(operator);
    expect(sampleOf(restoredMetrics, 'quorumkeep_records_applied_total', { source: 'sync' })).toBeGreaterThan(0);
    expect(sampleOf(restoredMetrics, 'quorumkeep_own_writes_held')).toBe(0);
    for (const i of runningSlots(pc)) expect(sampleOf(await metricsOf(pc.operatorUrls[i]!), 'quorumkeep_cluster_reachable_members'), `node-${i}`).toBe(5);
    await expectNoEquivocation(pc);

    // No acknowledged record lost, none twice, on any node.
    await expectProbesEverywhere(pc, [...viaZero.acked, ...fourBefore.acked, ...fourAfter.acked]);

    await expectEveryThresholdSubsetDecrypts(pc, alice, sealed);
    await expectNoEquivocation(pc);
  }, 240_000);

  it('refuses to restore over a running node, --force and --dry-run --force included; restores once it is stopped', async () => {
    const dir = await tempDir(stack, 'qk-restore-live-e2e-');
    const pc = await startProcessCluster(dir, { size: 3, threshold: 2 });
    stack.push(() => pc.stopAll());
    const NODE = 2;
    await waitFor(async () => (await healthOf(pc.urls[0]!)).cluster.reachable === 3, { timeoutMs: 20_000, description: 'every member reachable' });
    const auth = { authorization: `Bearer ${pc.adminTokens[NODE]}` };
    const probe = (key: string) => postJson<{ origin: string; seq: number }>(`${pc.urls[NODE]}/admin/probe`, { key }, auth);
    expect((await probe('before-backup')).status).toBe(201);
    const archive = join(dir, 'node-2.qkbackup');
    const backup = await runCli(['backup', '--config', pc.configPath(NODE), '--out', archive]);
    expect(backup.code, backup.stderr).toBe(0);
    expect((await probe('after-backup')).status).toBe(201);
    const storeInode = async () => (await stat(join(pc.dataDir(NODE), 'db'))).ino;
    const inodeBefore = await storeInode();

    // Its store is locked: refused whatever the flags, one line naming the node.
    const restore = (...args: string[]) => runCli(['restore', '--config', pc.configPath(NODE), '--in', archive, ...args]);
    for (const flags of [['--force'], ['--dry-run', '--force'], []]) {
      const refused = await restore(...flags);
      expect(refused.code, `restore ${flags.join(' ')}: ${refused.stdout}${refused.stderr}`).toBe(2);
      expect(refused.stderr.trim().split('\n')).toHaveLength(1);
      expect(refused.stderr).toContain('node-2');
    }
    // Into another data dir (its keys where they are): no store is locked there, but the operator port answers as node-2.
    const elsewhere = ['--data-dir', join(dir, 'node-2-elsewhere'), '--set', `keysDir=${join(pc.dataDir(NODE), 'keys')}`];
    const viaPort = await restore('--force', ...elsewhere);
    expect(viaPort.code, viaPort.stdout + viaPort.stderr).toBe(2);
    expect(await readdir(dir)).not.toContain('node-2-elsewhere');

    // The node kept serving on its store, neither moved nor replaced, no temporary store beside it: it
    // reads what it wrote after the backup, and writes on.
    expect(await storeInode()).toBe(inodeBefore);
    expect((await readdir(pc.dataDir(NODE))).filter((n) => n.startsWith('.'))).toEqual([]);
    expect((await getJson(`${pc.urls[NODE]}/admin/probe/after-backup`, auth)).status).toBe(200);
    expect((await probe('while-refused')).status).toBe(201);
    expect((await getJson(`${pc.operatorUrls[NODE]}/readyz`)).status).toBe(200);

    // Stopped, the same restores go through (the dry run first: it writes nothing).
    expect(await pc.stop(NODE)).toBe(0);
    const dry = await restore('--dry-run', '--force');
    expect(dry.code, dry.stderr).toBe(0);
    const forced = await restore('--force');
    expect(forced.code, forced.stderr).toBe(0);
    const moved = await restore('--force', ...elsewhere);
    expect(moved.code, moved.stderr).toBe(0);
    // Restarted on the restored store, it catches its own records up from its peers.
    await pc.start(NODE);
    await waitFor(async () => (await getJson(`${pc.urls[NODE]}/admin/probe/while-refused`, auth)).status === 200, { timeoutMs: 20_000, description: 'the restored node to catch up' });
    expect((await probe('after-restore')).status).toBe(201);
  }, 180_000);
});
