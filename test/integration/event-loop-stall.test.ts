/**
 * A node whose own event loop stalls (a long synchronous task, a GC pause, a starved CPU) must not
 * take the stall for every peer's silence: before, a 1.5 s stall made each node mark every peer
 * unreachable and drop every connection when it woke (docs/architecture.md, "Membership"), and a
 * write right after failed with QUORUM_UNAVAILABLE. All members of an in-process cluster share one
 * event loop, so blocking it stalls them all at once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalCluster, waitFor, type LocalCluster } from 'quorumkeep/testing';
import { cleanupStack } from '../utils/temp.ts';

const stack = cleanupStack();
let cluster: LocalCluster;
const lines: string[] = [];

beforeAll(async () => {
  cluster = await startLocalCluster({
    size: 3,
    threshold: 2,
    coordinators: 1,
    logLevel: 'info',
    logDestination: { write: (line: string) => void lines.push(line) },
  });
  stack.push(() => cluster.stop());
}, 60_000);
afterAll(() => stack.run());

/** Block this thread for `ms` (every member with it). */
function stall(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until);
}

describe('an event-loop stall', () => {
  it('is not silence: after a 2.5 s stall (liveness timeout 1.2 s) no peer is marked unreachable, no connection is dropped, and a write is acked by all', async () => {
    await cluster.waitForConvergence({ timeoutMs: 15_000 });
    const before = lines.length;
    stall(2500);
    // Every link answers again; by then the overdue liveness checks have all run. A ping has 2 s: on a
    // loaded machine the backlog the stall left can take longer, so a timed-out one is asked again.
    const answers = (node: (typeof cluster.members)[number], other: string) => node.pingPeer(other).then(() => true, () => false);
    for (const node of cluster.members) for (const other of cluster.members) if (other !== node) await waitFor(() => answers(node, other.nodeId), { timeoutMs: 20_000, description: `${node.nodeId} → ${other.nodeId} answers` });
    const after = lines.slice(before).filter((l) => /stopped answering|peer disconnected/.test(l));
    expect(after).toEqual([]);
    for (const node of cluster.members) for (let slot = 0; slot < 3; slot++) expect(node.membership.isReachable(slot)).toBe(true);
    const report = await cluster.members[0]!.replicator.replicate({ kind: 'probe', key: 'after-stall', body: { note: '', writtenAt: Date.now() } });
    expect(report.acked).toHaveLength(3);
    expect(report.failed).toEqual([]);
  });
});
