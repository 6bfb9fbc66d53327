/**
 * The peer table: every other node of the cluster file by node id, peer id and member slot; whether
 * one is reachable; requests to it over its long-lived links; the membership view built on that
 * (docs/architecture.md, "Network" and "Membership").
 */
import { peerIdFromString } from '@libp2p/peer-id';
import type { PeerId } from '@libp2p/interface';
import type { ClusterDescriptor, ClusterNodeEntry, MembershipView } from '../core/replication/ports.ts';
import { membersOf } from '../core/replication/ports.ts';
import type { ClusterLibp2p } from './libp2p-node.ts';
import { createLink, type Link } from './link.ts';

/** Another node of the cluster file, and what this node knows about its connection. */
export interface Peer {
  entry: ClusterNodeEntry;
  peerId: PeerId;
  idStr: string;
  dialing: boolean;
  /** One long-lived link per request protocol. */
  links: Map<string, Link>;
  /** performance.now() when it last answered a ping (or connected). */
  lastHeard: number;
  /** Liveness pings in flight (each ends at its answer or the liveness timeout). */
  pingsInFlight: number;
  /** Marked unreachable by silence: not heard from within the liveness timeout. */
  silent: boolean;
  /** Its last ping answer said it checks batch record signatures ({@link NODE_FEATURES}). */
  checksBatchSigs: boolean;
  /** Its last ping answer said it takes share stores in batches (`storeMany`, {@link NODE_FEATURES}). */
  storesShareBatches: boolean;
}

/** Options of {@link createPeers}. */
export interface PeersOptions {
  descriptor: ClusterDescriptor;
  self: ClusterNodeEntry;
}

/** Dependencies of {@link createPeers}. */
export interface PeersDeps {
  libp2p: Pick<ClusterLibp2p, 'getConnections' | 'dialProtocol'>;
  /** Live set of peer ids to refuse (fault injection). */
  blockedPeers: ReadonlySet<string>;
  /** Live set of peer ids to go silent on (fault injection: a partition that drops packets). */
  silencedPeers?: ReadonlySet<string>;
}

/** The peer table. */
export interface Peers {
  readonly membership: MembershipView;
  /** Every other node of the cluster file. */
  all(): IterableIterator<Peer>;
  /** A node by its id in the cluster file. */
  get(nodeId: string): Peer | undefined;
  /** A node by its libp2p peer id. */
  byPeerId(peerId: string): Peer | undefined;
  /** The member at `slot`; throws when it is this node or none. */
  ofSlot(slot: number): Peer;
  /** Reachable: an open connection that answers, not blocked. */
  connected(p: Peer): boolean;
  /** Fault injection: this node is silent towards `p`. */
  silenced(p: Peer): boolean;
  /**
   * Fault injection: this node is cut off from `p` (a partition). From the moment it is, nothing of
   * `p`'s is taken in — requests, sync pages, gossip — although the connection closes only at the
   * next maintenance.
   */
  blocked(p: Peer): boolean;
  /** A request over the peer's long-lived link for `protocol`. */
  request(p: Peer, protocol: string, body: unknown, signal: AbortSignal): Promise<unknown>;
  /** Fail every pending request to `p` and close its links. */
  closeLinks(p: Peer, reason: string): void;
  /** Every other node's last ping answer said it checks batch record signatures. */
  allCheckBatchSigs(): boolean;
}

/** Create the peer table of `descriptor` as seen from `self`. */
export function createPeers(options: PeersOptions, deps: PeersDeps): Peers {
  const { descriptor, self } = options;
  const { libp2p } = deps;
  const peers = new Map<string, Peer>(); // by node id
  const byPeerId = new Map<string, Peer>();
  for (const n of descriptor.nodes) {
    if (n.id === self.id) continue;
    const p: Peer = { entry: n, peerId: peerIdFromString(n.peerId), idStr: n.peerId, dialing: false, links: new Map(), lastHeard: 0, pingsInFlight: 0, silent: false, checksBatchSigs: false, storesShareBatches: false };
    peers.set(n.id, p);
    byPeerId.set(n.peerId, p);
  }
  const memberSlots = new Map<number, Peer | 'self'>();
  for (const m of membersOf(descriptor)) memberSlots.set(m.slot, m.id === self.id ? 'self' : peers.get(m.id)!);

  const silenced = (p: Peer) => deps.silencedPeers?.has(p.idStr) === true;
  const blocked = (p: Peer) => deps.blockedPeers.has(p.idStr);
  // Reachable = an open connection AND answering: a TCP connection that stays open while packets are
  // dropped would otherwise count as reachable until keep-alives time out, seconds later.
  const connected = (p: Peer) => !blocked(p) && !p.silent && libp2p.getConnections(p.peerId).some((c) => c.status === 'open');

  const membership: MembershipView = {
    descriptor,
    self,
    isReachable(slot) {
      const p = memberSlots.get(slot);
      if (!p) return false;
      return p === 'self' ? true : connected(p);
    },
    reachableCount() {
      let n = 0;
      for (const slot of memberSlots.keys()) if (membership.isReachable(slot)) n++;
      return n;
    },
    reachableSince(slot) {
      const p = memberSlots.get(slot);
      if (!p) return undefined;
      if (p === 'self') return 0;
      if (!connected(p)) return undefined;
      // The oldest connection still open: a member that restarted has none from before.
      return Math.min(...libp2p.getConnections(p.peerId).filter((c) => c.status === 'open').map((c) => c.timeline.open));
    },
  };

  return {
    membership,
    all: () => peers.values(),
    get: (nodeId) => peers.get(nodeId),
    byPeerId: (peerId) => byPeerId.get(peerId),
    ofSlot(slot) {
      const p = memberSlots.get(slot);
      if (!p || p === 'self') throw new Error(`no peer at slot ${slot}`);
      return p;
    },
    connected,
    silenced,
    blocked,
    request(p, protocol, body, signal) {
      // Fault injection: a silent partition loses the request; only the caller's deadline ends it.
      if (silenced(p)) return new Promise((_resolve, reject) => signal.addEventListener('abort', () => reject(signal.reason instanceof Error ? signal.reason : new Error('timeout')), { once: true }));
      let link = p.links.get(protocol);
      if (!link) {
        link = createLink((sig) => libp2p.dialProtocol(p.peerId, protocol, { signal: sig, negotiateFully: false }));
        p.links.set(protocol, link);
      }
      return link.request(body, signal);
    },
    closeLinks(p, reason) {
      for (const link of p.links.values()) link.close(reason);
    },
    allCheckBatchSigs() {
      for (const p of peers.values()) if (!p.checksBatchSigs) return false;
      return true;
    },
  };
}

/**
 * Fault injection (a silent partition): what a silenced peer asked is never answered; the promise
 * only rejects when the node stops.
 */
export function untilStopped(stopping: AbortSignal): Promise<never> {
  return new Promise<never>((_r, reject) => stopping.addEventListener('abort', () => reject(new Error('stopping')), { once: true }));
}
