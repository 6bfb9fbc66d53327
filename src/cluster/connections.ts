/**
 * Connections to the other nodes: the reconnect loop that dials every listed node not connected,
 * liveness pings that mark a node not answering unreachable at once and drop its connection, and the
 * connect and disconnect events (docs/architecture.md, "Membership").
 */
import type { Logger } from '../log/index.ts';
import type { NodeMetrics } from '../metrics/index.ts';
import type { ClusterLibp2p } from './libp2p-node.ts';
import { hasFeature, NODE_FEATURES, PROTOCOLS } from './protocols.ts';
import { createDialFailureLog, type DialFailureLog } from './dial-log.ts';
import type { Peer, Peers } from './peers.ts';
import type { Track } from './background.ts';
import { runPeriodic, stopAll, withDeadline, type Periodic, type Startable } from '../core/lifecycle.ts';

/** Options of {@link createConnections}. */
export interface ConnectionsOptions {
  /** Re-dial interval for unreachable nodes, ms. */
  reconnectIntervalMs: number;
  /** How often each connected node is pinged, ms. */
  livenessIntervalMs: number;
  /** A node that answered no ping for this long is unreachable, ms. */
  livenessTimeoutMs: number;
}

/** Dependencies of {@link createConnections}. */
export interface ConnectionsDeps {
  libp2p: Pick<ClusterLibp2p, 'getConnections' | 'dial' | 'hangUp' | 'addEventListener'>;
  peers: Peers;
  /** Live set of peer ids to refuse (fault injection): their connections are hung up. */
  blockedPeers: ReadonlySet<string>;
  /** Aborted when the cluster stops. */
  stopping: AbortSignal;
  /** Ends the reconnect and liveness loops when aborted: the cluster's stop, or the node's lifetime. */
  loops: AbortSignal;
  track: Track;
  /** The cluster's logger. */
  log: Logger;
  metrics: Pick<NodeMetrics, 'connectedMembers' | 'recordBatchSignatures'>;
  /** A listed node connected (the cluster catches up with it). */
  onConnected(p: Peer): void;
  /** A node disconnected or stopped answering: what still runs against it is aborted. */
  onLost(p: Peer, reason: string): void;
}

/** The reconnect and liveness loops (the connection events are listened to from creation). */
export interface Connections extends Startable {
  /** Dial the nodes not connected now, then start both loops. */
  start(): void;
  /** Stop both loops (waits for a run in flight); idempotent. */
  stop(): Promise<void>;
}

/** Create the loops and listen to connection events. */
export function createConnections(options: ConnectionsOptions, deps: ConnectionsDeps): Connections {
  const { libp2p, peers, log, stopping } = deps;
  const { livenessTimeoutMs } = options;
  const maxPingsInFlight = Math.ceil(livenessTimeoutMs / options.livenessIntervalMs) + 1;
  const reachable = () => deps.metrics.connectedMembers.set(peers.membership.reachableCount());
  let loops: Periodic[] = [];
  /** When the liveness check last ran, or the loop started (performance.now()). */
  let lastCheckAt: number | undefined;
  /** Failed dials, told at warn at most once per peer per 30 s (created at start: its grace period starts then). */
  let dialFailures: DialFailureLog | undefined;

  /** The peer is gone: fail its requests and abort what runs against it. */
  function lost(p: Peer, reason: string): void {
    peers.closeLinks(p, reason);
    deps.onLost(p, reason);
  }

  /**
   * Liveness: ping every connected node; one not heard from within the timeout is unreachable at once
   * (pending requests to it fail now, writes stop waiting for it) and its connection is dropped so the
   * reconnect loop dials it afresh — which fails while the network is down.
   */
  function checkLiveness(): void {
    if (stopping.aborted) return;
    const now = performance.now();
    // This check ran late by `stall` ms: our own event loop was blocked or backlogged (a long
    // synchronous task, GC, a starved CPU), so answers may be sitting unread in our sockets. Time we
    // could not listen is no evidence of a peer's silence: it does not count towards the timeout.
    const stall = lastCheckAt === undefined ? 0 : Math.max(0, now - lastCheckAt - options.livenessIntervalMs);
    lastCheckAt = now;
    for (const p of peers.all()) {
      if (stall > 0) p.lastHeard = Math.min(now, p.lastHeard + stall);
      if (p.silent || deps.blockedPeers.has(p.idStr) || !libp2p.getConnections(p.peerId).some((c) => c.status === 'open')) continue;
      if (now - p.lastHeard > livenessTimeoutMs) {
        p.silent = true;
        reachable();
        log.warn({ peer: p.entry.id, silentMs: Math.round(now - p.lastHeard) }, 'peer stopped answering; marked unreachable');
        lost(p, 'peer not answering');
        void libp2p.hangUp(p.peerId).catch(() => undefined);
        continue;
      }
      ping(p);
    }
  }

  /**
   * Ping `p`, whether or not earlier pings are answered yet: a ping lost in a burst of dropped packets
   * must not hold the next one back until its own timeout, or a peer heard again within the timeout is
   * still marked unreachable when that lost ping runs out (a ping is sent every interval, so at most
   * timeout / interval + 1 are in flight). An answer is hearing from it, and says what its build can do.
   */
  function ping(p: Peer): void {
    if (p.pingsInFlight >= maxPingsInFlight) return;
    p.pingsInFlight++;
    withDeadline(livenessTimeoutMs, undefined, (signal) => peers.request(p, PROTOCOLS.ping, { t: performance.now() }, signal))
      .then((answer) => {
        p.lastHeard = Math.max(p.lastHeard, performance.now());
        knowFeatures(p, answer);
      })
      .catch(() => undefined)
      .finally(() => {
        p.pingsInFlight--;
      });
  }

  /** What `p` can do, from its last ping answer (`undefined`: not known, so nothing beyond the first protocol versions). */
  function knowFeatures(p: Peer, answer: unknown): void {
    p.checksBatchSigs = hasFeature(answer, NODE_FEATURES.recordBatchSig);
    p.storesShareBatches = hasFeature(answer, NODE_FEATURES.shareStoreMany);
    deps.metrics.recordBatchSignatures.set(peers.allCheckBatchSigs() ? 1 : 0);
  }

  function maintain(): void {
    if (stopping.aborted) return;
    reachable();
    for (const p of peers.all()) {
      if (deps.blockedPeers.has(p.idStr)) {
        if (libp2p.getConnections(p.peerId).length > 0) void libp2p.hangUp(p.peerId).catch(() => undefined);
        continue;
      }
      if (peers.connected(p) || p.dialing) continue;
      p.dialing = true;
      deps.track(
        libp2p
          .dial(p.peerId, { signal: AbortSignal.timeout(Math.max(1000, options.reconnectIntervalMs * 2)) })
          .catch((err: unknown) => {
            log.trace({ err, peer: p.entry.id }, 'dial failed');
            if (!stopping.aborted) dialFailures?.failed({ nodeId: p.entry.id, peerId: p.idStr, multiaddrs: p.entry.multiaddrs }, err);
          })
          .finally(() => {
            p.dialing = false;
          }),
      );
    }
  }

  libp2p.addEventListener('peer:connect', (evt) => {
    const p = peers.byPeerId(evt.detail.toString());
    if (p) {
      p.lastHeard = performance.now();
      p.silent = false;
    }
    reachable();
    if (!p || stopping.aborted) return;
    // A new connection may be a new build (a restart, a rollback): nothing beyond the first protocol
    // versions goes to it until its ping answer, asked for at once, says what it can do.
    knowFeatures(p, undefined);
    ping(p);
    dialFailures?.connected(p.entry.id);
    log.info({ peer: p.entry.id }, 'peer connected');
    deps.onConnected(p);
  });
  libp2p.addEventListener('peer:disconnect', (evt) => {
    const p = peers.byPeerId(evt.detail.toString());
    reachable();
    if (!p) return;
    lost(p, 'peer disconnected');
    if (!stopping.aborted) log.info({ peer: p.entry.id }, 'peer disconnected');
  });

  return {
    start() {
      dialFailures = createDialFailureLog({}, { now: () => performance.now(), warn: (fields, message) => log.warn(fields, message) });
      const signal = deps.loops;
      lastCheckAt = performance.now();
      loops = [
        // The first round at once: the dials start with the cluster.
        runPeriodic(maintain, { intervalMs: options.reconnectIntervalMs, signal, logger: log, name: 'reconnect', immediate: true }),
        runPeriodic(checkLiveness, { intervalMs: options.livenessIntervalMs, signal, logger: log, name: 'liveness' }),
      ];
    },
    stop() {
      return stopAll(loops);
    },
  };
}
