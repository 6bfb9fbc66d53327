/**
 * "Lose a disk, keep the keys" for members, as docs/operations.md writes it (issues 15 and 28): five
 * real node processes, 3-of-5, coordinators on slots 0-2, members only on 3 and 4. Members 3 and 4
 * are killed with SIGKILL and their data dirs wiped but their keys kept; they start again on the
 * empty data dirs and, with no operator command, find their shares missing, mark themselves
 * `recovering` and rebuild them.
 *
 * With every member up, rebuilding three shares takes less than one of the 5 s rounds in which the
 * nodes ask members for their inventories, so the operator would not see step 3 at all. So member 2
 * is down (its disk fine) while they come back: every secret is then held by members 0, 1 and 2 only
 * — at risk — and neither wiped member finds `threshold` helpers that hold their shares, until, as
 * "Data safety" says, the member that is merely down is brought back. At each step the test asserts
 * what the operator sees — `quorumkeep status` on every node, `quorumkeep member status`, `/readyz`,
 * the share metrics — and afterwards that every secret decrypts with each of the ten 3-member
 * subsets and that no node recorded an equivocation (a node on a new disk reusing its own seqs).
 */
import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { cleanupStack, tempDir } from '../utils/temp.ts';
import { runCli, startProcessCluster } from '../utils/process-cluster.ts';
import { outboxPrincipalWithSession, sealSecrets } from '../utils/process-web2.ts';
import {
  expectEveryThresholdSubsetDecrypts,
  expectNoEquivocation,
  expectStatus,
  healthOf,
  type HealthAnswer,
  memberSharesOf,
  metricsOf,
  readyzOf,
  runningSlots,
  sampleOf,
  waitForEveryNode,
} from '../utils/runbook.ts';

const stack = cleanupStack();
afterEach(() => stack.run());

const LOST = [3, 4];
/** Down (its disk fine) while the members on new disks come back. */
const DOWN = 2;
const SECRETS = 3;

const memberIn = (h: HealthAnswer, slot: number) => h.dataSafety.members.find((m) => m.slot === slot);

describe('member processes that lost their disks, their keys kept (real CLI, kill -9)', () => {
  it('find their shares missing by themselves, are not ready and degrade every status until they rebuilt them; then every 3 members decrypt everything', async () => {
    const dir = await tempDir(stack);
    const pc = await startProcessCluster(dir, { size: 5, threshold: 3, coordinators: 3 });
    stack.push(() => pc.stopAll());
    const A = pc.urls[0]!;
    const alice = await outboxPrincipalWithSession(pc, A, 'alice');
    // Every member holds its share before the disks go.
    const sealed = await sealSecrets(A, alice, SECRETS);
    await waitForEveryNode(pc, (h) => h.status === 'ok' && h.dataSafety.members.every((m) => m.shares?.held === SECRETS), 'every node to see every member hold every share');
    await expectStatus(pc, 0, [], [0]);
    for (const slot of LOST) expect(await memberSharesOf(pc.operatorUrls[0]!, slot), `slot ${slot}`).toEqual({ held: SECRETS, expected: SECRETS, recovering: 0 });

    // Member 2 goes down; then members 3 and 4 lose their disks, their keys kept.
    await pc.kill9(DOWN);
    await waitForEveryNode(pc, (h) => !h.clusterMap[String(DOWN)]!.reachable, 'every node to miss member 2');
    await expectStatus(pc, 1, ['member_unreachable'], [0]);
    for (const slot of LOST) {
      await pc.kill9(slot);
      for (const name of await readdir(pc.dataDir(slot))) if (name !== 'keys') await rm(join(pc.dataDir(slot), name), { recursive: true, force: true });
    }
    await waitForEveryNode(pc, (h) => h.cluster.reachable === 2, 'nodes 0 and 1 to reach only each other');
    await expectStatus(pc, 2, ['quorum_unreachable'], [0]);

    // 1. Start them on their keys with empty data dirs; nothing else.
    await Promise.all(LOST.map((slot) => pc.start(slot)));
    // 2-3. They learn their own logs, find their shares missing and mark themselves recovering, but
    // find no `threshold` helpers holding shares: not ready, every node's status degraded, the secrets
    // at risk (held by 0, 1 and 2 only), their slots short on /metrics.
    await waitForEveryNode(
      pc,
      (h) => LOST.every((slot) => memberIn(h, slot)?.status === 'recovering' && memberIn(h, slot)?.shares?.missing === SECRETS) && h.dataSafety.secretsAtRisk === SECRETS,
      'every running node to see members 3 and 4 recovering and missing every share, every secret at risk',
    );
    await expectStatus(pc, 1, ['shares_missing', 'member_recovering', 'secrets_at_risk', 'member_unreachable']);
    for (const slot of LOST) {
      const notReady = await readyzOf(pc.operatorUrls[slot]!);
      expect(notReady.status, `member ${slot} /readyz`).toBe(503);
      expect(notReady.checks, `member ${slot} /readyz`).toMatchObject({ sharesHeld: false, quorumReachable: true, caughtUp: true, ownLogKnown: true });
    }
    for (const i of runningSlots(pc)) {
      const metrics = await metricsOf(pc.operatorUrls[i]!);
      expect(sampleOf(metrics, 'quorumkeep_secrets_at_risk'), `node-${i}`).toBe(SECRETS);
      for (const slot of LOST) {
        const labels = { slot: String(slot) };
        expect(sampleOf(metrics, 'quorumkeep_member_shares_held', labels), `node-${i} slot ${slot}`).toBe(0);
        expect(sampleOf(metrics, 'quorumkeep_member_shares_expected', labels), `node-${i} slot ${slot}`).toBe(SECRETS);
        expect(sampleOf(metrics, 'quorumkeep_member_recovering', labels), `node-${i} slot ${slot}`).toBe(1);
      }
    }
    const token = ['--url', A, '--token', pc.adminTokens[0]!];
    expect((await runCli(['member', 'status', ...token])).code).toBe(1);
    await expectNoEquivocation(pc);

    // Data safety, "When a secret is at risk": bring the member that is merely down back. They rebuild
    // their shares; wait for `quorumkeep status` to exit 0.
    await pc.start(DOWN);
    await waitForEveryNode(pc, (h) => h.status === 'ok' && LOST.every((slot) => memberIn(h, slot)?.shares?.held === SECRETS), 'every node ok, members 3 and 4 holding every share', 90_000);
    await expectStatus(pc, 0);
    expect((await runCli(['member', 'status', ...token])).code).toBe(0);
    for (const slot of LOST) {
      expect((await readyzOf(pc.operatorUrls[slot]!)).status, `member ${slot} /readyz`).toBe(200);
      expect((await healthOf(pc.operatorUrls[slot]!)).recovery, `member ${slot}`).toMatchObject({ state: 'done', total: SECRETS, recovered: SECRETS, failed: 0 });
    }
    for (const i of runningSlots(pc)) {
      const metrics = await metricsOf(pc.operatorUrls[i]!);
      expect(sampleOf(metrics, 'quorumkeep_secrets_at_risk'), `node-${i}`).toBe(0);
      for (const slot of LOST) expect(await memberSharesOf(pc.operatorUrls[i]!, slot), `node-${i} slot ${slot}`).toEqual({ held: SECRETS, expected: SECRETS, recovering: 0 });
    }
    await expectNoEquivocation(pc);

    await expectEveryThresholdSubsetDecrypts(pc, alice, sealed);
    await expectNoEquivocation(pc);
  }, 240_000);
});
