/**
 * The cluster: composes the peer table (peers.ts), the reconnect and liveness loops
 * (connections.ts), the request/response protocol servers (handlers/) and their requester side
 * (requests.ts), catch-up on `sync` (sync.ts) and gossip (gossip.ts) (docs/architecture.md,
 * "Network", "Sync (catch-up)" and "Membership").
 *
 * Implements the core's PeerTransport and MembershipView ports; nothing outside this folder sees a
 * libp2p type.
 */
import { multiaddr } from '@multiformats/multiaddr';
import type { PrivateKey } from '@libp2p/interface';
import type { Logger } from '../log/index.ts';
import type { NodeMetrics } from '../metrics/index.ts';
import type { ReplicationEngine } from '../core/replication/engine.ts';
import type { ClusterDescriptor, ClusterNodeEntry, MemberHandler, MemberService, MembershipView, PeerTransport } from '../core/replication/ports.ts';
import { stopAll, type Startable } from '../core/lifecycle.ts';
import { createLibp2pNode, type ClusterLibp2p } from './libp2p-node.ts';
import { NODE_FEATURES, PROTOCOLS } from './protocols.ts';
import { announcedAddressUnbound } from './announce-check.ts';
import { createBackground } from './background.ts';
import { createPeers } from './peers.ts';
import { createConnections } from './connections.ts';
import { createRequests } from './requests.ts';
import { createSync, type SyncResult } from './sync.ts';
import { createGossip } from './gossip.ts';
import { serveProtocol } from './handlers/serve.ts';
import { createApplyHandler } from './handlers/apply.ts';
import { createPingHandler } from './handlers/ping.ts';
import { createCreateCallHandler, type CreateHandler } from './handlers/create.ts';
import { createMemberServiceHandler } from './handlers/member.ts';

export type { SyncResult } from './sync.ts';
export type { CreateHandler } from './handlers/create.ts';

/** Options of {@link createCluster}. */
export interface ClusterOptions {
  /** Listen multiaddrs. */
  listen: string[];
  /** Re-dial interval for unreachable nodes, ms. */
  reconnectIntervalMs: number;
  /** Periodic catch-up interval, ms. */
  syncIntervalMs: number;
  /** Records per sync page. */
  syncBatchSize: number;
  /** Idle deadline while reading a sync page, ms. @default 15000 */
  syncReadTimeoutMs?: number;
  /** Streams per protocol per connection. @default 1024 */
  maxStreams?: number;
  /** How often each connected node is pinged, ms. @default 300 */
  livenessIntervalMs?: number;
  /**
   * A node not heard from (no ping answered) for this long is unreachable: writes stop waiting for
   * it, `/healthz` says so, and its connection is dropped and re-dialled, ms. @default 1200
   */
  livenessTimeoutMs?: number;
}

/** Dependencies of {@link createCluster}. */
export interface ClusterDeps {
  descriptor: ClusterDescriptor;
  self: ClusterNodeEntry;
  privateKey: PrivateKey;
  /** Live set of peer ids to refuse (fault injection). */
  blockedPeers: ReadonlySet<string>;
  /**
   * Live set of peer ids to go silent on (fault injection: a partition that drops packets): nothing
   * is sent to them or answered, their connections are not hung up, new ones are refused.
   */
  silencedPeers?: ReadonlySet<string>;
  /** What this node's `ping` answers say it can do. @default every one of {@link NODE_FEATURES} (a test plays an older build with fewer) */
  features?: readonly string[];
  engine: Pick<ReplicationEngine, 'ingest' | 'prepareIngest' | 'ingestPrepared' | 'versionVector' | 'missingFor' | 'syncRequest'>;
  /** Slot 0's create handler (absent on other nodes). */
  createHandler?: CreateHandler;
  /** This member's `grant` and `shard` handlers (absent on gateways): served to peers, and called in-process by {@link Cluster.callMember} for its own slot. */
  memberHandlers?: Partial<Record<MemberService, MemberHandler>>;
  /** The node's lifetime: ends the periodic loops (reconnect, liveness, sync) when aborted. @default only {@link Cluster.stop} ends them */
  signal?: AbortSignal;
  logger: Logger;
  metrics: NodeMetrics;
}

/** The running cluster. */
export interface Cluster extends PeerTransport, Startable {
  readonly membership: MembershipView;
  /** Listen, dial the other nodes, and start gossip, the liveness pings and the periodic sync. */
  start(): Promise<void>;
  /** Stop every loop, close the links and libp2p, and wait for the background work; idempotent. */
  stop(): Promise<void>;
  /** Send a `create` request to slot 0 and return its result; rejects when unreachable or refused. */
  requestCreate(request: unknown, options: { signal: AbortSignal }): Promise<unknown>;
  /**
   * Call a member's `grant` or `shard` service; this node's own slot is called in-process. Rejects
   * with an AppError carrying the member's code when it refused, with a plain Error when unreachable
   * or timed out.
   */
  callMember(slot: number, service: MemberService, body: unknown, options: { signal: AbortSignal }): Promise<unknown>;
  /** One catch-up round with a node (by id). */
  syncWith(nodeId: string): Promise<SyncResult>;
  /** One catch-up round with every reachable node. */
  syncAll(): Promise<SyncResult[]>;
  /** Round-trip time to a node over the `ping` protocol, ms. */
  ping(nodeId: string, options?: { signal?: AbortSignal }): Promise<number>;
  /** True once a catch-up round with every node reachable at that time has completed. */
  caughtUp(): boolean;
  /** Bound listen addresses. */
  listenAddresses(): string[];
}

/** Create the cluster (not started). */
export async function createCluster(options: ClusterOptions, deps: ClusterDeps): Promise<Cluster> {
  const log = deps.logger.child({ module: 'cluster' });
  const { descriptor, self, engine } = deps;
  const maxStreams = options.maxStreams ?? 1024;

  const libp2p: ClusterLibp2p = await createLibp2pNode({
    privateKey: deps.privateKey,
    listen: options.listen,
    allowedPeers: new Set(descriptor.nodes.map((n) => n.peerId)),
    blockedPeers: deps.blockedPeers,
    ...(deps.silencedPeers ? { silencedPeers: deps.silencedPeers } : {}),
    onStrangerRefused: () => deps.metrics.peersRefused.inc(),
  });
  const peers = createPeers({ descriptor, self }, { libp2p, blockedPeers: deps.blockedPeers, silencedPeers: deps.silencedPeers });

  let started = false;
  let stopped: Promise<void> | undefined;
  /** Aborted on stop: ends what fault injection left waiting, and tells every part the cluster stopped. */
  const stopping = new AbortController();
  const background = createBackground();
  const { track } = background;
  /** What ends the periodic loops: this cluster's stop, or the node's lifetime. */
  const loops = deps.signal ? AbortSignal.any([stopping.signal, deps.signal]) : stopping.signal;

  const serving = { libp2p, peers, stopping: stopping.signal, track };
  await serveProtocol(PROTOCOLS.apply, createApplyHandler({ engine }), { maxStreams }, serving);
  await serveProtocol(PROTOCOLS.ping, createPingHandler(deps.features ?? Object.values(NODE_FEATURES)), { maxStreams }, serving);
  await serveProtocol(PROTOCOLS.create, createCreateCallHandler({ createHandler: deps.createHandler }), { maxStreams }, serving);
  for (const service of ['grant', 'shard'] as const) {
    await serveProtocol(PROTOCOLS[service], createMemberServiceHandler(service, { memberHandlers: deps.memberHandlers, log }), { maxStreams }, serving);
  }
  const sync = await createSync(
    { syncIntervalMs: options.syncIntervalMs, syncBatchSize: options.syncBatchSize, syncReadTimeoutMs: options.syncReadTimeoutMs ?? 15_000, caughtUpPeers: descriptor.threshold - 1 },
    { libp2p, peers, engine, stopping: stopping.signal, loops, track, log },
  );

  const requests = createRequests({ peers });
  const connections = createConnections(
    { reconnectIntervalMs: options.reconnectIntervalMs, livenessIntervalMs: options.livenessIntervalMs ?? 300, livenessTimeoutMs: options.livenessTimeoutMs ?? 1200 },
    {
      libp2p,
      peers,
      blockedPeers: deps.blockedPeers,
      stopping: stopping.signal,
      loops,
      track,
      log,
      metrics: deps.metrics,
      // Catch up on every (re)connection.
      onConnected: (p) => void sync.syncPeer(p).catch((err: unknown) => log.debug({ err, peer: p.entry.id }, 'sync on connect failed')),
      onLost: (p, reason) => {
        sync.abort(p, reason);
        requests.abortInFlight(p, reason);
      },
    },
  );
  const gossip = createGossip({ clusterId: descriptor.clusterId }, { pubsub: libp2p.services.pubsub, silencedPeers: deps.silencedPeers, blockedPeers: deps.blockedPeers, engine, log, metrics: deps.metrics });

  return {
    membership: peers.membership,
    async start() {
      if (started) return;
      started = true;
      for (const p of peers.all()) {
        await libp2p.peerStore.merge(p.peerId, { multiaddrs: p.entry.multiaddrs.map((a) => multiaddr(a)) });
      }
      await libp2p.start();
      const bound = libp2p.getMultiaddrs().map(String);
      if (announcedAddressUnbound(self.multiaddrs, [...options.listen, ...bound])) {
        log.warn(
          {
            announced: self.multiaddrs,
            listen: options.listen,
            bound,
            hint: 'other nodes dial the announced address (this node\'s multiaddrs in the cluster file): fix it or the config listen; ignore if a NAT or port forward maps it here',
          },
          'node does not listen on its announced address',
        );
      }
      gossip.start();
      connections.start();
      sync.start();
      log.info({ listen: libp2p.getMultiaddrs().map(String), peerId: self.peerId }, 'cluster started');
    },
    stop() {
      stopped ??= (async () => {
        // Ends the loops (no run starts after this) and the sync rounds under way.
        stopping.abort();
        for (const p of peers.all()) peers.closeLinks(p, 'stopping');
        await gossip.stop();
        await libp2p.stop();
        // The run each loop had in flight, then everything else tracked.
        await stopAll([connections, sync]);
        await background.settle();
      })();
      return stopped;
    },
    sendApply: requests.sendApply,
    publish: gossip.publish,
    batchSignatures: peers.allCheckBatchSigs,
    requestCreate: requests.requestCreate,
    async callMember(slot, service, body, options) {
      if (slot !== self.slot) return requests.callMember(slot, service, body, options);
      // A member calls itself in-process, never over the wire.
      const handler = deps.memberHandlers?.[service];
      if (!handler) throw new Error(`no ${service} handler`);
      options.signal.throwIfAborted();
      return handler(body, self);
    },
    syncWith(nodeId) {
      const p = peers.get(nodeId);
      if (!p) return Promise.reject(new Error(`unknown node ${nodeId}`));
      return sync.syncPeer(p);
    },
    syncAll: sync.syncAll,
    ping: requests.ping,
    caughtUp: sync.caughtUp,
    listenAddresses: () => libp2p.getMultiaddrs().map(String),
  };
}
