/**
 * An impostor peer: a stopped member's genuine identity driving the real cluster module, so a test
 * can send crafted records over the real `apply` protocol (the connection gater admits it).
 */
import type { LocalCluster } from 'quorumkeep/testing';
import { waitFor } from 'quorumkeep/testing';
import { createCluster, loadOrCreateNodeKeys, type Cluster } from '../../src/cluster/index.ts';
import type { ClusterDescriptor, MemberHandler, MemberService } from '../../src/core/replication/ports.ts';
import { createLogger } from '../../src/log/index.ts';
import { createMetrics } from '../../src/metrics/index.ts';

/**
 * Stop member `slot` and take its identity; resolves once connected to every running member (or to
 * `connectTo` only), so a first request to any of them is not a dial racing theirs. `versionVector` is
 * what it claims to hold (it serves nothing when a member tries to catch up from it);
 * `memberHandlers` what it answers to `grant`/`shard` calls (a lying member).
 */
export async function startImpostor(
  cluster: LocalCluster,
  slot: number,
  options: ImpostorOptions = {},
): Promise<{ peer: Cluster; signingKey: Uint8Array }> {
  await cluster.stopMember(slot);
  const running = cluster.descriptor.nodes.map((n) => n.slot).filter((s): s is number => s !== null && s !== slot && cluster.isRunning(s));
  return startPeerImpostor(cluster.descriptor, slot, cluster.members[slot]!.config.keysDir, { connectTo: running, ...options });
}

/** What an impostor claims and answers, and whom it waits to reach. */
export interface ImpostorOptions {
  /** What it claims to hold (it serves nothing when a member tries to catch up from it). */
  versionVector?: () => Record<string, number>;
  /** What it answers to `grant`/`shard` calls (a lying member). */
  memberHandlers?: Partial<Record<MemberService, MemberHandler>>;
  /** The slots it waits to reach before it resolves. @default 0 (`startImpostor`: every running member) */
  connectTo?: number | readonly number[];
  /** What its ping answers say it can do (an older build says less). @default this build's */
  features?: readonly string[];
}

/**
 * Node `slot`'s genuine identity (its keys from `keysDir`) driving the real cluster module, for a
 * cluster of any kind — in-process or real processes (the node itself must be down).
 */
export async function startPeerImpostor(descriptor: ClusterDescriptor, slot: number, keysDir: string, options: ImpostorOptions = {}): Promise<{ peer: Cluster; signingKey: Uint8Array }> {
  const { keys } = await loadOrCreateNodeKeys(keysDir);
  const self = descriptor.nodes[slot]!;
  const peer = await createCluster(
    { listen: self.multiaddrs, reconnectIntervalMs: 100, syncIntervalMs: 60_000, syncBatchSize: 100 },
    {
      descriptor,
      self,
      privateKey: keys.identity,
      blockedPeers: new Set(),
      // It stores nothing and offers nothing to sync: it only speaks.
      engine: {
        ingest: async () => ({ applied: 0, duplicates: 0, rejected: [] }),
        prepareIngest: async () => ({ source: 'sync', refusals: [], checked: [], known: 0, awaiting: [] }),
        ingestPrepared: async () => ({ applied: 0, duplicates: 0, rejected: [] }),
        versionVector: options.versionVector ?? (() => ({})),
        syncRequest: async () => ({ vv: {} }),
        missingFor: async function* () {},
      },
      logger: createLogger({ level: 'silent' }),
      metrics: createMetrics({ processMetrics: false }),
      // What it answers when members call it (none by default: every call fails).
      ...(options.memberHandlers ? { memberHandlers: options.memberHandlers } : {}),
      ...(options.features ? { features: options.features } : {}),
    },
  );
  await peer.start();
  const slots = [options.connectTo ?? 0].flat();
  await waitFor(() => slots.every((s) => peer.membership.isReachable(s)), { timeoutMs: 10_000, description: `impostor to connect to slots ${slots.join(', ')}` });
  return { peer, signingKey: keys.signing };
}
