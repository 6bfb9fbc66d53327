/**
 * Serving a request/response protocol over long-lived links (src/cluster/link.ts): only listed
 * peers are answered; a silenced one never is, and a blocked one is refused (fault injection).
 */
import type { ClusterLibp2p } from '../libp2p-node.ts';
import { serveLink } from '../link.ts';
import { untilStopped, type Peer, type Peers } from '../peers.ts';
import type { Track } from '../background.ts';

/** Answers one request of a protocol from `remote`; the result is sent back as JSON. */
export type ProtocolHandler = (body: unknown, remote: Peer) => Promise<unknown>;

/** Options of {@link serveProtocol}. */
export interface ServeOptions {
  /** Streams per protocol per connection. */
  maxStreams: number;
}

/** Dependencies of {@link serveProtocol}. */
export interface ServeDeps {
  libp2p: Pick<ClusterLibp2p, 'handle'>;
  peers: Pick<Peers, 'byPeerId' | 'silenced' | 'blocked'>;
  /** Aborted when the cluster stops. */
  stopping: AbortSignal;
  track: Track;
}

/** Register `handler` for `protocol`. */
export async function serveProtocol(protocol: string, handler: ProtocolHandler, options: ServeOptions, deps: ServeDeps): Promise<void> {
  const { peers, stopping } = deps;
  await deps.libp2p.handle(
    protocol,
    ({ stream, connection }) => {
      const remote = peers.byPeerId(connection.remotePeer.toString());
      if (!remote) {
        stream.abort(new Error('unknown peer'));
        return;
      }
      // Fault injection: a partition refuses the peer's streams at once.
      if (peers.blocked(remote)) {
        stream.abort(new Error('peer blocked (fault injection)'));
        return;
      }
      // Fault injection: a silent partition: requests arrive into nothing and are never answered.
      deps.track(serveLink(stream, (body) => (peers.silenced(remote) ? untilStopped(stopping) : handler(body, remote))));
    },
    { maxInboundStreams: options.maxStreams, maxOutboundStreams: options.maxStreams },
  );
}
