/**
 * Share recovery at process level (issue 15 acceptance; docs/operations.md, "Lose a disk"): five real
 * node processes; member 3 is killed with SIGKILL, its data dir wiped but its keys kept; it starts
 * again empty, `quorumkeep member recover` marks it, and `quorumkeep member status` exits 0 once it
 * holds every share — then every secret decrypts with members 3, 0 and 1 only.
 */
import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from 'quorumkeep/testing';
import { cleanupStack, tempDir } from '../utils/temp.ts';
import { runCli, startProcessCluster } from '../utils/process-cluster.ts';
import { openSealed, outboxPrincipalWithSession, sealSecrets } from '../utils/process-web2.ts';
import { getJson } from '../utils/http.ts';

const stack = cleanupStack();
afterEach(() => stack.run());

const LOST = 3;
const SECRETS = 4;

describe('a member process that lost its disk (real CLI, kill -9)', () => {
  it('recovers every share from its peers, and secrets then decrypt with members 3, 0 and 1', async () => {
    const dir = await tempDir(stack);
    const pc = await startProcessCluster(dir, { size: 5, threshold: 3 });
    stack.push(() => pc.stopAll());
    const A = pc.urls[0]!;
    await waitFor(async () => (await getJson<{ cluster: { reachable: number } }>(`${A}/healthz`)).body.cluster.reachable === 5, { timeoutMs: 20_000 });
    const alice = await outboxPrincipalWithSession(pc, A, 'alice');
    // Every member holds its share before the disk goes.
    const sealed = await sealSecrets(A, alice, SECRETS);

    await pc.kill9(LOST);
    const data = pc.dataDir(LOST);
    // Everything but the keys.
    for (const name of await readdir(data)) if (name !== 'keys') await rm(join(data, name), { recursive: true, force: true });
    await pc.start(LOST);

    const token = ['--url', A, '--token', pc.adminTokens[0]!];
    const recover = await runCli(['member', 'recover', '--slot', String(LOST), ...token]);
    expect(recover.code, recover.stderr).toBe(0);
    await waitFor(async () => (await runCli(['member', 'status', ...token])).code === 0, { timeoutMs: 60_000, intervalMs: 500, description: 'member 3 to hold every share again' });
    const progress = await getJson<{ recovery: { state: string; total: number; recovered: number; failed: number } }>(`${pc.urls[LOST]}/healthz`);
    expect(progress.body.recovery).toMatchObject({ state: 'done', total: SECRETS, recovered: SECRETS, failed: 0 });

    await pc.stop(2);
    await pc.stop(4);
    expect(await openSealed(A, alice, sealed)).toEqual(sealed.map((s) => ({ status: 200, plaintext: s.plaintext })));
  }, 180_000);
});
