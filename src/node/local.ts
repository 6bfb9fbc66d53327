/**
 * `npm start` / `quorumkeep local`: a whole cluster on this machine from embedded defaults. The first
 * run writes a cluster (keys, configs, cluster file) under `dir` with `quorumkeep cluster init`'s
 * generator; later runs reuse it, data included. Every node runs in this one process, each exactly as
 * `quorumkeep start --config <dir>/node-<i>.json` would run it.
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { loadNodeSetup } from '../config/cluster-file.ts';
import { createLogger } from '../log/index.ts';
import { createMetrics } from '../metrics/index.ts';
import { initCluster } from './cluster-init.ts';
import { createNode } from './index.ts';
import type { QuorumNode } from './types.ts';

/** Options of {@link runLocalCluster}. */
export interface LocalRunOptions {
  dir: string;
  size: number;
  threshold: number;
  coordinators: number;
  basePort: number;
  httpBasePort: number;
  /** Operator port of node 0 (node i: + i), on the first run. */
  operatorBasePort: number;
  logLevel: string;
}

/** A running local cluster. */
export interface LocalRun {
  /** Coordinator URLs. */
  coordinators: string[];
  /** Where the cluster lives. */
  dir: string;
  /** True when this run created the cluster. */
  created: boolean;
  stop(): Promise<void>;
}

/** Start (creating on first use) the local cluster under `options.dir`. */
export async function runLocalCluster(options: LocalRunOptions): Promise<LocalRun> {
  const dir = resolve(options.dir);
  const clusterFile = join(dir, 'cluster.json');
  const created = !existsSync(clusterFile);
  if (created) {
    await initCluster({
      out: dir,
      size: options.size,
      threshold: options.threshold,
      coordinators: options.coordinators,
      basePort: options.basePort,
      httpBasePort: options.httpBasePort,
      operatorBasePort: options.operatorBasePort,
    });
  }
  const first = loadNodeSetup({ file: join(dir, 'node-0.json'), env: {} });
  const ids = first.descriptor.nodes.map((n) => n.id);
  const nodes: QuorumNode[] = [];
  try {
    for (const id of ids) {
      const { config, descriptor } = loadNodeSetup({ file: join(dir, `${id}.json`), env: {}, flags: { 'log.level': options.logLevel } });
      nodes.push(
        await createNode(config, {
          descriptor,
          logger: createLogger({ level: config.log.level, base: { node: id } }),
          // One process, several nodes: process metrics would repeat on every node's /metrics.
          metrics: createMetrics({ processMetrics: id === ids[0], labels: { node: id } }),
        }),
      );
    }
    await Promise.all(nodes.map((n) => n.start()));
  } catch (err) {
    await Promise.allSettled(nodes.map((n) => n.stop()));
    throw err;
  }
  return {
    coordinators: nodes.filter((n) => n.httpUrl).map((n) => n.httpUrl!),
    dir,
    created,
    async stop() {
      await Promise.allSettled(nodes.map((n) => n.stop()));
    },
  };
}
