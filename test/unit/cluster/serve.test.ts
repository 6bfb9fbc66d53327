/**
 * Serving a protocol (src/cluster/handlers/serve.ts) with libp2p's `handle` stubbed: a stream from
 * an unknown peer, or from one this node is cut off from (a partition), is aborted before anything
 * of it is read; from the moment the peer is unblocked it is served again.
 */
import { describe, expect, it } from 'vitest';
import { serveProtocol, type ServeDeps } from '../../../src/cluster/handlers/serve.ts';
import type { Peer } from '../../../src/cluster/peers.ts';

type Incoming = (data: { stream: { abort(err: Error): void }; connection: { remotePeer: { toString(): string } } }) => void;

async function setup() {
  let incoming!: Incoming;
  const blocked = new Set<string>();
  const known = new Map<string, Peer>([['peer-1', { entry: { id: 'node-1' }, idStr: 'peer-1' } as unknown as Peer]]);
  const tracked: Array<Promise<unknown>> = [];
  await serveProtocol('/test/1', async () => ({ ok: true }), { maxStreams: 4 }, {
    libp2p: { handle: async (_protocol: string, handler: Incoming) => void (incoming = handler) } as unknown as ServeDeps['libp2p'],
    peers: { byPeerId: (id) => known.get(id), silenced: () => false, blocked: (p) => blocked.has(p.idStr) },
    stopping: new AbortController().signal,
    track: (work) => (tracked.push(work.catch(() => undefined)), work),
  });
  const arrive = (from: string) => {
    const aborted: Error[] = [];
    incoming({ stream: { abort: (err) => aborted.push(err) }, connection: { remotePeer: { toString: () => from } } });
    return aborted;
  };
  return { arrive, blocked, tracked };
}

describe('serveProtocol', () => {
  it('aborts a stream from an unknown peer or a blocked one at once, and serves the peer again once unblocked', async () => {
    const { arrive, blocked, tracked } = await setup();
    expect(arrive('stranger').map((e) => e.message)).toEqual(['unknown peer']);
    blocked.add('peer-1');
    expect(arrive('peer-1').map((e) => e.message)).toEqual(['peer blocked (fault injection)']);
    expect(tracked).toHaveLength(0);
    blocked.clear();
    // Served: the link is started (and tracked) rather than the stream aborted. (Its stub stream ends it at once.)
    expect(arrive('peer-1')).toEqual([]);
    expect(tracked).toHaveLength(1);
  });
});
