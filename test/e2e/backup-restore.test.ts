/**
 * Issue 15, backups — acceptance with real processes and the real CLI: a backup of a member under
 * write load, restore into a new data dir, catch-up: no acknowledged record lost, none twice, and the
 * restored member's share still opens a secret made before the backup.
 *
 * Member 4 writes records of its own (probes through its own API) before and after the backup, so the
 * restored store lacks records of its own origin that its peers hold: it must catch them up before it
 * writes again, or it would reuse their seqs (docs/operations.md, "What the node does at start").
 *
 * Issue 28: `restore` over a running node is refused (exit 2), `--force` and `--dry-run --force`
 * included, and leaves its store alone; once the node is stopped the same restore goes through.
 */
import { readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from 'quorumkeep/testing';
import { getJson, postJson } from '../utils/http.ts';
import { runCli, startProcessCluster, writeProbes, type ProcessCluster } from '../utils/process-cluster.ts';
import { outboxPrincipalWithSession } from '../utils/process-web2.ts';
import { cleanupStack, tempDir } from '../utils/temp.ts';

const stack = cleanupStack();
afterEach(() => stack.run());

const RESTORED = 4;

async function healthOf(pc: ProcessCluster, i: number) {
  return (await getJson<{ cluster: { reachable: number; equivocating: unknown[] } }>(`${pc.urls[i]}/healthz`)).body.cluster;
}

describe('backup and restore of a member (real CLI, child processes)', () => {
  it('a backup under write load, restored into a new data dir, catches up: every acknowledged record once, and its share still opens', async () => {
    const dir = await tempDir(stack, 'qk-backup-e2e-');
    const pc = await startProcessCluster(dir, { size: 5, threshold: 3 });
    stack.push(() => pc.stopAll());
    await waitFor(async () => (await healthOf(pc, 0)).reachable === 5, { timeoutMs: 20_000, description: 'every member reachable' });
    const A = pc.urls[0]!;

    // A secret and a payload made before the backup.
    const alice = await outboxPrincipalWithSession(pc, A, 'alice');
    const created = await postJson<{ secretId: number }>(`${A}/web2/secret`, alice.signed(0));
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const secretId = created.body.secretId;
    const plaintext = 'made before the backup';
    const encrypted = await postJson<{ cifer: string; encryptedMessage: string }>(`${A}/encrypt-payload`, alice.signed(secretId, plaintext));
    expect(encrypted.status, JSON.stringify(encrypted.body)).toBe(200);

    // Writes through coordinator 0 and through member 4 itself, all along.
    const viaZero = writeProbes(pc, 0, 'zero');
    let viaFour = writeProbes(pc, RESTORED, 'four');
    const fourBefore = viaFour;
    stack.push(() => viaZero.stop());
    stack.push(() => fourBefore.stop());
    await waitFor(() => viaZero.acked.length >= 30 && viaFour.acked.length >= 30, { timeoutMs: 20_000, description: 'writes under way' });

    // The backup, through the real CLI, while both writers run.
    const archive = join(dir, 'node-4.qkbackup');
    const ownAckedBeforeBackup = viaFour.acked.length;
    const backup = await runCli(['backup', '--config', pc.configPath(RESTORED), '--out', archive]);
    expect(backup.code, backup.stderr).toBe(0);
    expect(backup.stdout).toMatch(/streamed by the running node/);
    expect(backup.stdout).toMatch(/keys: not included/);
    expect((await stat(archive)).mode & 0o777).toBe(0o600);
    const verify = await runCli(['verify-backup', '--in', archive]);
    expect(verify.code, verify.stderr).toBe(0);
    // The storage key is not in the archive.
    const storageKey = (await readFile(join(pc.dataDir(RESTORED), 'keys', 'storage.key'), 'utf8')).trim();
    const bytes = await readFile(archive);
    expect(bytes.includes(Buffer.from(storageKey, 'hex')) || bytes.includes(Buffer.from(storageKey))).toBe(false);

    // More writes, member 4's own among them, that the archive does not have.
    const ownAtBackup = viaFour.acked.length;
    await waitFor(() => viaFour.acked.length >= ownAtBackup + 30 && viaZero.acked.length >= 90, { timeoutMs: 20_000, description: 'writes after the backup' });
    await viaFour.stop();
    expect(await pc.stop(RESTORED)).toBe(0);
    expect(viaFour.acked.length).toBeGreaterThan(ownAckedBeforeBackup);
    const ownMaxSeqBeforeRestore = Math.max(...viaFour.acked.map((a) => a.seq));

    // Restore into a new data dir; the keys stay where they are.
    const configPath = pc.configPath(RESTORED);
    const config = JSON.parse(await readFile(configPath, 'utf8')) as Record<string, unknown>;
    await writeFile(configPath, JSON.stringify({ ...config, dataDir: join(dir, 'node-4-restored'), keysDir: join(pc.dataDir(RESTORED), 'keys') }, null, 2));
    const restore = await runCli(['restore', '--config', configPath, '--in', archive]);
    expect(restore.code, restore.stderr).toBe(0);
    expect(restore.stdout).toMatch(/restored node-4/);
    const again = await runCli(['restore', '--config', configPath, '--in', archive]);
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(/is not empty/);

    // Start it: it catches its own records up before it writes, then writes with fresh seqs.
    await pc.start(RESTORED);
    viaFour = writeProbes(pc, RESTORED, 'four-after');
    const fourAfter = viaFour;
    stack.push(() => fourAfter.stop());
    await waitFor(() => fourAfter.acked.length >= 20, { timeoutMs: 20_000, description: 'writes through the restored member' });
    await fourAfter.stop();
    await viaZero.stop();
    expect(Math.min(...fourAfter.acked.map((a) => a.seq))).toBeGreaterThan(ownMaxSeqBeforeRestore);

    const acked = [...viaZero.acked, ...fourBefore.acked, ...fourAfter.acked];
    // No (origin, seq) was given to two records.
    expect(new Set(acked.map((a) => `${a.origin}!${a.seq}`)).size).toBe(acked.length);
    const last = viaZero.acked.at(-1)!;
    const auth = (i: number) => ({ authorization: `Bearer ${pc.adminTokens[i]}` });
    await waitFor(async () => (await getJson(`${pc.urls[RESTORED]}/admin/probe/${last.key}`, auth(RESTORED))).status === 200, {
      timeoutMs: 20_000,
      description: 'the restored member to catch up',
    });
    for (const [i, url] of pc.urls.entries()) {
      const wrong: string[] = [];
      for (let at = 0; at < acked.length; at += 50) {
        const answers = await Promise.all(
          acked.slice(at, at + 50).map(async (a) => {
            const res = await getJson<{ origin: string; seq: number }>(`${url}/admin/probe/${a.key}`, auth(i));
            return res.status === 200 && res.body.origin === a.origin && res.body.seq === a.seq ? undefined : `${a.key}: ${res.status} ${JSON.stringify(res.body)}`;
          }),
        );
        wrong.push(...answers.filter((w): w is string => w !== undefined));
      }
      expect(wrong, `node-${i} lost or changed acknowledged records\n${pc.output(RESTORED)}`).toEqual([]);
      expect((await healthOf(pc, i)).equivocating, `node-${i} saw an equivocation`).toEqual([]);
    }

    // The restored member's share still opens: with members 2 and 3 down, a decrypt needs it.
    await pc.stop(2);
    await pc.stop(3);
    await waitFor(async () => (await healthOf(pc, 0)).reachable === 3, { timeoutMs: 10_000, description: 'members 2 and 3 gone' });
    const decrypted = await postJson<{ decryptedMessage: string }>(`${A}/decrypt-payload`, { cifer: encrypted.body.cifer, ...alice.signed(secretId, encrypted.body.encryptedMessage) });
    expect(decrypted.status, JSON.stringify(decrypted.body)).toBe(200);
    expect(decrypted.body.decryptedMessage).toBe(plaintext);
  }, 240_000);

  it('refuses to restore over a running node, --force and --dry-run --force included; restores once it is stopped', async () => {
    const dir = await tempDir(stack, 'qk-restore-live-e2e-');
    const pc = await startProcessCluster(dir, { size: 3, threshold: 2 });
    stack.push(() => pc.stopAll());
    const NODE = 2;
    await waitFor(async () => (await healthOf(pc, 0)).reachable === 3, { timeoutMs: 20_000, description: 'every member reachable' });
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
