/**
 * The records topic (src/cluster/gossip.ts) with its pubsub and engine stubbed: what arrives goes to
 * the engine, except what a silenced or blocked (partitioned) peer authored — dropped from the moment
 * the peer is added, whether or not its connection is still open.
 */
import { describe, expect, it } from 'vitest';
import { createGossip, type GossipDeps } from '../../../src/cluster/gossip.ts';
import { recordsTopic } from '../../../src/cluster/protocols.ts';
import { encodeMessage } from '../../../src/cluster/rpc.ts';
import type { Logger } from '../../../src/log/index.ts';

const CLUSTER = 'cluster-a';

function setup() {
  const pubsub = new EventTarget();
  const ingested: unknown[] = [];
  const blockedPeers = new Set<string>();
  const silencedPeers = new Set<string>();
  createGossip(
    { clusterId: CLUSTER },
    {
      pubsub: pubsub as unknown as GossipDeps['pubsub'],
      blockedPeers,
      silencedPeers,
      engine: { ingest: async (records) => (ingested.push(...records), { applied: records.length, duplicates: 0, rejected: [] }) },
      log: { warn: () => undefined } as unknown as Logger,
      metrics: { recordsRejected: { inc: () => undefined } } as unknown as GossipDeps['metrics'],
    },
  );
  const arrive = (from: string, record: unknown, topic = recordsTopic(CLUSTER)) =>
    pubsub.dispatchEvent(new CustomEvent('message', { detail: { topic, from: { toString: () => from }, data: encodeMessage(record) } }));
  return { arrive, ingested, blockedPeers, silencedPeers };
}

describe('gossip', () => {
  it('hands what arrives on the records topic to the engine, and nothing of other topics', () => {
    const { arrive, ingested } = setup();
    arrive('peer-1', { key: 'a' });
    arrive('peer-1', { key: 'b' }, 'another-topic');
    expect(ingested).toEqual([{ key: 'a' }]);
  });

  it('drops what a blocked or silenced peer authored from the moment it is added, and takes it again once removed', () => {
    const { arrive, ingested, blockedPeers, silencedPeers } = setup();
    blockedPeers.add('peer-4');
    silencedPeers.add('peer-3');
    arrive('peer-4', { key: 'partitioned' });
    arrive('peer-3', { key: 'silenced' });
    arrive('peer-1', { key: 'reachable' });
    expect(ingested).toEqual([{ key: 'reachable' }]);
    blockedPeers.clear();
    arrive('peer-4', { key: 'healed' });
    expect(ingested).toEqual([{ key: 'reachable' }, { key: 'healed' }]);
  });
});
