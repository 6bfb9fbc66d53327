/**
 * libp2p wiring, in one place so that moving to the next libp2p major is a change of one file:
 * tcp, noise, yamux, identify, gossipsub, and a connection gater that admits only the cluster
 * file's peers (docs/architecture.md, "Network").
 */
import { createLibp2p, type Libp2p } from 'libp2p';
import { tcp } from '@libp2p/tcp';
import { noise } from '@chainsafe/libp2p-noise';
import { noiseCrypto } from './noise-crypto.ts';
import { yamux } from '@chainsafe/libp2p-yamux';
import { identify } from '@libp2p/identify';
import { gossipsub } from '@chainsafe/libp2p-gossipsub';
import type { PrivateKey, PubSub, PeerId } from '@libp2p/interface';
import type { GossipsubEvents } from '@chainsafe/libp2p-gossipsub';
import { sendWindowUpdatesAtHalf } from './yamux-window.ts';

/** The libp2p node type used by the cluster module. */
export type ClusterLibp2p = Libp2p<{ identify: ReturnType<ReturnType<typeof identify>>; pubsub: PubSub<GossipsubEvents> }>;

/** Options of {@link createLibp2pNode}. */
export interface Libp2pNodeOptions {
  privateKey: PrivateKey;
  /** Listen multiaddrs. */
  listen: string[];
  /** Peer ids (strings) allowed to connect: the cluster file's nodes. */
  allowedPeers: ReadonlySet<string>;
  /** Peer ids refused even though listed (fault injection: partitions in tests). */
  blockedPeers: ReadonlySet<string>;
  /**
   * Peer ids whose new connections are refused while their existing ones stay open and carry
   * nothing (fault injection: a silent partition — packets dropped, nothing hung up).
   */
  silencedPeers?: ReadonlySet<string>;
  /** Called for each connection refused because its peer is not in `allowedPeers`. @default none */
  onStrangerRefused?: (peerId: string) => void;
}

/** Create (not start) the libp2p node. */
export async function createLibp2pNode(options: Libp2pNodeOptions): Promise<ClusterLibp2p> {
  sendWindowUpdatesAtHalf();
  const deny = (peerId: PeerId): boolean => {
    const id = peerId.toString();
    return !options.allowedPeers.has(id) || options.blockedPeers.has(id) || options.silencedPeers?.has(id) === true;
  };
  const denyInbound = (peerId: PeerId): boolean => {
    if (!options.allowedPeers.has(peerId.toString())) {
      options.onStrangerRefused?.(peerId.toString());
      return true;
    }
    return deny(peerId);
  };
  return createLibp2p({
    start: false,
    privateKey: options.privateKey,
    addresses: { listen: options.listen },
    transports: [tcp()],
    connectionEncrypters: [noise({ crypto: noiseCrypto })],
    streamMuxers: [yamux()],
    connectionGater: {
      // Cluster peers are on private and loopback addresses; the default gater would refuse those.
      denyDialMultiaddr: () => false,
      denyDialPeer: deny,
      denyInboundEncryptedConnection: denyInbound,
      denyOutboundEncryptedConnection: deny,
    },
    connectionManager: {
      // A cluster is small and static: every member keeps a connection to every other.
      maxConnections: 256,
    },
    services: {
      identify: identify(),
      pubsub: gossipsub({
        allowPublishToZeroTopicPeers: true,
        emitSelf: false,
        floodPublish: true,
        // Small clusters: publish to everyone directly; no peer exchange with strangers.
        doPX: false,
      }) as (components: unknown) => PubSub<GossipsubEvents>,
    },
  }) as Promise<ClusterLibp2p>;
}
