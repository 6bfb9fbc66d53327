/**
 * No write before a node knows its own log (src/core/replication/own-log.ts): own writes are held from
 * creation until a sync round has completed with `size − threshold + 1` other members (fewer when the
 * cluster has fewer others) and every other member reachable has been tried; the steps before the
 * release run first (and are tried again when they fail); a stop first fails the held writes.
 */
import { describe, expect, it } from 'vitest';
import { createOwnLogCatchUp, membersToLearnOwnLog, ownLogKnown, type OwnLogCluster } from '../../../../src/core/replication/own-log.ts';
import type { ClusterDescriptor } from '../../../../src/core/replication/ports.ts';
import { waitFor } from '../../../../src/testing/index.ts';
import { captureLogger } from '../../../utils/log.ts';

function descriptorOf(size: number, threshold: number, gateways = 0): ClusterDescriptor {
  return {
    clusterId: 'c',
    size,
    threshold,
    nodes: Array.from({ length: size + gateways }, (_, i) => ({ id: `node-${i}`, slot: i < size ? i : null, peerId: `p${i}`, nodeAddress: `0x${String(i).repeat(40)}`, signingPublicKey: '', multiaddrs: [] })),
  };
}

/** A cluster whose reachable members (by slot) a test sets; records every sync asked. */
function fakeCluster(reachable: Set<number>, failing = new Set<string>()): OwnLogCluster & { synced: string[]; attempts: string[] } {
  const synced: string[] = [];
  const attempts: string[] = [];
  return {
    synced,
    attempts,
    membership: { isReachable: (slot) => reachable.has(slot) },
    async syncWith(id) {
      attempts.push(id);
      if (failing.has(id)) throw new Error('sync failed');
      synced.push(id);
    },
  };
}

function setup(descriptor: ClusterDescriptor, selfIndex: number, cluster: OwnLogCluster, beforeRelease: Array<() => Promise<void>> = []) {
  let hold: Promise<void> | undefined;
  const life = new AbortController();
  const log = captureLogger();
  const self = descriptor.nodes[selfIndex]!;
  const ownLog = createOwnLogCatchUp(
    { retryIntervalMs: 5 },
    {
      engine: { holdOwnWrites: (until) => void (hold = until), versionVector: () => ({ [self.nodeAddress]: 12 }) },
      descriptor,
      self,
      cluster: () => cluster,
      beforeRelease,
      clock: Date.now,
      logger: log.logger,
      signal: life.signal,
    },
  );
  let released = false;
  void ownLog.released.then(() => (released = true), () => undefined);
  return { ownLog, hold: () => hold, released: () => released, life, log };
}

describe('membersToLearnOwnLog', () => {
  it('is size − threshold + 1 other members, or every other one when there are fewer; none alone', () => {
    expect(membersToLearnOwnLog(descriptorOf(5, 3), { id: 'node-4' })).toBe(3);
    expect(membersToLearnOwnLog(descriptorOf(3, 2), { id: 'node-0' })).toBe(2);
    expect(membersToLearnOwnLog(descriptorOf(3, 3), { id: 'node-0' })).toBe(1);
    expect(membersToLearnOwnLog(descriptorOf(2, 2), { id: 'node-0' })).toBe(1);
    expect(membersToLearnOwnLog(descriptorOf(1, 1), { id: 'node-0' })).toBe(0);
    // A gateway is no member: every member counts as another one.
    expect(membersToLearnOwnLog(descriptorOf(3, 2, 1), { id: 'node-3' })).toBe(2);
  });
});

describe('ownLogKnown', () => {
  it('needs enough completed rounds, and every reachable member tried', () => {
    const s = (completed: string[], tried: string[], reachable: string[], needed = 2) => ownLogKnown({ completed: new Set(completed), tried: new Set(tried), reachable, needed });
    expect(s(['a'], ['a'], ['a'])).toBe(false);
    expect(s(['a', 'b'], ['a', 'b'], ['a', 'b', 'c'])).toBe(false);
    // A reachable member whose round failed was tried: it holds nothing up.
    expect(s(['a', 'b'], ['a', 'b', 'c'], ['a', 'b', 'c'])).toBe(true);
    expect(s([], [], [], 0)).toBe(true);
  });
});

describe('the own-log hold at start', () => {
  it('holds own writes from creation until enough members, and every reachable one, have been tried', async () => {
    // Only members 0 and 1 reachable, and a sync with 1 fails: 3 of the 4 others are needed.
    const reachable = new Set([0, 1]);
    const failing = new Set(['node-1']);
    const cluster = fakeCluster(reachable, failing);
    const { ownLog, hold, released } = setup(descriptorOf(5, 3), 4, cluster);
    expect(hold()).toBe(ownLog.released);
    expect(ownLog.membersNeeded).toBe(3);
    ownLog.start();
    await waitFor(() => cluster.attempts.filter((id) => id === 'node-1').length >= 3, { timeoutMs: 5000 });
    expect(released()).toBe(false);
    expect(cluster.synced).toEqual(['node-0']);
    failing.clear();
    reachable.add(2);
    await waitFor(() => cluster.synced.includes('node-2'), { timeoutMs: 5000 });
    // node-0, node-1 and node-2: enough, and nobody else reachable.
    await ownLog.released;
    expect(new Set(cluster.synced)).toEqual(new Set(['node-0', 'node-1', 'node-2']));
    await ownLog.stop();
  });

  it('a member reachable whose round keeps failing is tried, not waited for', async () => {
    const cluster = fakeCluster(new Set([0, 1, 2, 3]), new Set(['node-3']));
    const { ownLog } = setup(descriptorOf(5, 3), 4, cluster);
    ownLog.start();
    await ownLog.released;
    expect(cluster.attempts).toContain('node-3');
    await ownLog.stop();
  });

  it('a cluster of one member writes at once', async () => {
    const cluster = fakeCluster(new Set());
    const { ownLog } = setup(descriptorOf(1, 1), 0, cluster);
    ownLog.start();
    await ownLog.released;
    expect(cluster.attempts).toEqual([]);
    await ownLog.stop();
  });

  it('runs the steps before the release in order, and tries again (another round) when one fails', async () => {
    const steps: string[] = [];
    let failures = 1;
    const cluster = fakeCluster(new Set([0, 1]));
    const { ownLog, released } = setup(descriptorOf(3, 2), 2, cluster, [
      async () => {
        steps.push('counters');
        if (failures-- > 0) throw new Error('disk busy');
      },
      async () => {
        expect(released()).toBe(false);
        steps.push('marker');
      },
    ]);
    ownLog.start();
    await ownLog.released;
    expect(steps).toEqual(['counters', 'counters', 'marker']);
    await ownLog.stop();
  });

  it('a stop before enough members answered fails the held writes', async () => {
    const cluster = fakeCluster(new Set([0]));
    const { ownLog, life } = setup(descriptorOf(5, 3), 4, cluster);
    ownLog.start();
    await waitFor(() => cluster.attempts.length > 0, { timeoutMs: 5000 });
    life.abort();
    await ownLog.stop();
    await expect(ownLog.released).rejects.toThrow(/stopped before it had learnt its own log/);
    // Idempotent.
    await ownLog.stop();
  });

  it('a node that stops without ever starting the catch-up fails its held writes too', async () => {
    const { ownLog } = setup(descriptorOf(3, 2), 0, fakeCluster(new Set()));
    await ownLog.stop();
    await expect(ownLog.released).rejects.toThrow(/stopped/);
  });
});
