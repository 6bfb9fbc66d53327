/**
 * Gossip of records on the cluster's topic (docs/architecture.md, "Network"): what arrives goes
 * through the engine's validator like everything else (CONTRIBUTING.md rule 6).
 */
import type { Logger } from '../log/index.ts';
import type { NodeMetrics } from '../metrics/index.ts';
import type { ReplicationEngine } from '../core/replication/engine.ts';
import type { ReplicatedRecord } from '../core/replication/record.ts';
import type { Startable } from '../core/lifecycle.ts';
import type { ClusterLibp2p } from './libp2p-node.ts';
import { recordsTopic } from './protocols.ts';
import { encodeMessage, decodeMessage } from './rpc.ts';

/** Options of {@link createGossip}. */
export interface GossipOptions {
  clusterId: string;
}

/** Dependencies of {@link createGossip}. */
export interface GossipDeps {
  pubsub: ClusterLibp2p['services']['pubsub'];
  /** Live set of peer ids to go silent on (fault injection): what they gossip is dropped. */
  silencedPeers?: ReadonlySet<string>;
  /**
   * Live set of peer ids cut off (fault injection: a partition): what they gossip is dropped too,
   * from the moment they are added, although their connections close only at the next maintenance.
   */
  blockedPeers?: ReadonlySet<string>;
  engine: Pick<ReplicationEngine, 'ingest'>;
  /** The cluster's logger. */
  log: Logger;
  metrics: Pick<NodeMetrics, 'recordsRejected'>;
}

/** The records topic (messages are listened to from creation). */
export interface Gossip extends Startable {
  /** Subscribe to the topic. */
  start(): void;
  /** Unsubscribe; idempotent. */
  stop(): Promise<void>;
  /** Best-effort gossip of a record to every subscriber. */
  publish(record: ReplicatedRecord): Promise<void>;
}

/** Listen to the cluster's records topic. */
export function createGossip(options: GossipOptions, deps: GossipDeps): Gossip {
  const { pubsub, log } = deps;
  const topic = recordsTopic(options.clusterId);
  pubsub.addEventListener('message', (evt) => {
    if (evt.detail.topic !== topic) return;
    const from = (evt.detail as { from?: { toString(): string } }).from?.toString();
    if (from !== undefined && (deps.silencedPeers?.has(from) || deps.blockedPeers?.has(from))) return;
    let record: unknown;
    try {
      record = decodeMessage(evt.detail.data);
    } catch {
      deps.metrics.recordsRejected.inc({ reason: 'malformed_gossip' });
      return;
    }
    deps.engine.ingest([record], 'gossip').catch((err: unknown) => log.warn({ err }, 'gossip apply failed'));
  });
  return {
    start() {
      pubsub.subscribe(topic);
    },
    async stop() {
      try {
        pubsub.unsubscribe(topic);
      } catch {
        // not started
      }
    },
    async publish(record) {
      await pubsub.publish(topic, encodeMessage(record));
    },
  };
}
