/**
 * `npm start` / `quorumkeep local`: a whole cluster on this machine, and a local chain for Web3
 * (docs/configuration.md, "`local`"; docs/web3.md, "Local chain"). The first run writes a
 * cluster (keys, configs, cluster file) under `dir` with `quorumkeep cluster init`'s generator; later
 * runs reuse it, data included. Every node runs in this one process, each as `quorumkeep start
 * --config <dir>/node-<i>.json` would run it: defaults ← its file ← `QK_*` environment ← this run's
 * flags, on every run. The port flags move this run's nodes (the files keep the first run's ports);
 * the chain's entry is added to every node's `chains`, with slot 0 as its syncer.
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { ConfigError, configEnvName, httpUrlOf, loadClusterFile, loadNodeSetup, parseTcpMultiaddr, tcpMultiaddr, urlHost, type NodeConfig } from '../config/index.ts';
import type { ClusterDescriptor, ClusterNodeEntry } from '../core/replication/ports.ts';
import { createLogDestination, createLogger, holdLines, logProcessWarnings, resolveLogFormat, type WarningSource } from '../log/index.ts';
import { createMetrics } from '../metrics/index.ts';
import { DEFAULT_BASE_PORT, DEFAULT_COORDINATORS, DEFAULT_HTTP_BASE_PORT, DEFAULT_OPERATOR_BASE_PORT, initCluster, portRangesProblem } from './cluster-init.ts';
import { startLocalChain, type LocalChain, type LocalChainChoice } from './local-chain.ts';
import { createNode } from './index.ts';
import { DEFAULT_LOCAL_SIZE, DEFAULT_LOCAL_THRESHOLD } from './local-options.ts';
import type { QuorumNode } from './types.ts';

export type { LocalChainChoice } from './local-chain.ts';


/** Options of {@link runLocalCluster}. Unset values: the cluster's own (later runs) or the defaults (first run). */
export interface LocalRunOptions {
  dir: string;
  /** Member slots of a new cluster; on a later run, a different value is an error. @default 5 */
  size?: number;
  /** Quorum of a new cluster; on a later run, a different value is an error. @default 3 */
  threshold?: number;
  /** Coordinators of a new cluster; on a later run, a different value is an error. @default 2 (or size, when smaller) */
  coordinators?: number;
  /** libp2p port of node 0 (node i: + i). @default 4010 on the first run */
  basePort?: number;
  /** HTTP port of coordinator 0 (coordinator i: + i). @default 3010 on the first run */
  httpBasePort?: number;
  /** Operator port of node 0 (node i: + i). @default 3110 on the first run */
  operatorBasePort?: number;
  /** `log.level` of every node, over its file and `QK_LOG_LEVEL`. */
  logLevel?: string;
  /** `log.format` of every node, over its file and `QK_LOG_FORMAT`. */
  logFormat?: string;
  /** Whether stdout is a terminal: `log.format: auto` is then pretty. @default false */
  terminal?: boolean;
  /** The process's warnings, logged through the cluster's log (the CLI passes `process`). */
  warnings?: WarningSource;
  /** The environment: its `QK_*` variables apply to every node, as for `quorumkeep start`. */
  env: Readonly<Record<string, string | undefined>>;
  /** The chain: anvil under `dir` by default (src/node/local-chain.ts). */
  chain: LocalChainChoice;
  /** One line for the operator (no chain on this machine, a syncer that lacks something, anvil gone). */
  notice?(line: string): void;
}

/** A running local cluster. */
export interface LocalRun {
  /** Coordinator URLs. */
  coordinators: string[];
  /** Every node's operator URL (health, readiness, metrics), by node. */
  operators: string[];
  /** Where each coordinator's mail goes: its outbox folder (one `.eml` a message) or its SMTP server. */
  mail: LocalMail[];
  /** Where the cluster lives. */
  dir: string;
  /** True when this run created the cluster. */
  created: boolean;
  size: number;
  threshold: number;
  /** The chain every node has, with its syncer; undefined without one. */
  chain?: Pick<LocalChain, 'kind' | 'entry' | 'syncer' | 'stateFile'>;
  /**
   * Let the nodes' log lines out: they are held from the start until this is called (at most
   * `HELD_LINES_MAX` of them, src/log), so that what the CLI prints once the cluster is up comes first.
   * Stopping releases them too. Idempotent.
   */
  releaseLogs(): void;
  /** Stop every node, then the chain. Idempotent. */
  stop(): Promise<void>;
}

/** Where a coordinator's mail goes. */
export type LocalMail = { nodeId: string; outbox: string } | { nodeId: string; smtp: string };

/** Start (creating on first use) the local cluster under `options.dir`, with its chain. */
export async function runLocalCluster(options: LocalRunOptions): Promise<LocalRun> {
  const dir = resolve(options.dir);
  const notice = options.notice ?? (() => undefined);
  const clusterFile = join(dir, 'cluster.json');
  const created = !existsSync(clusterFile);
  if (created) {
    const size = options.size ?? DEFAULT_LOCAL_SIZE;
    await initCluster({
      out: dir,
      size,
      threshold: options.threshold ?? DEFAULT_LOCAL_THRESHOLD,
      coordinators: options.coordinators ?? Math.min(DEFAULT_COORDINATORS, size),
      basePort: options.basePort ?? DEFAULT_BASE_PORT,
      httpBasePort: options.httpBasePort ?? DEFAULT_HTTP_BASE_PORT,
      operatorBasePort: options.operatorBasePort ?? DEFAULT_OPERATOR_BASE_PORT,
    });
  }
  const stored = loadClusterFile(clusterFile);
  if (!created) checkShape(stored, options, dir);
  // On the first run the files already say what the flags asked for.
  const { descriptor, nodeFlags } = created ? { descriptor: stored, nodeFlags: () => ({}) } : movedPorts(stored, options);
  const ids = descriptor.nodes.map((n) => n.id);

  // Every node's config is checked before the chain starts: a mistyped QK_ variable costs no deployment.
  const setups = ids.map((id) => {
    const file = join(dir, `${id}.json`);
    const flags: Record<string, unknown> = {
      ...nodeFlags(id),
      ...(options.logLevel !== undefined ? { 'log.level': options.logLevel } : {}),
      ...(options.logFormat !== undefined ? { 'log.format': options.logFormat } : {}),
    };
    return { id, file, flags, config: loadNodeSetup({ file, env: options.env, flags }).config };
  });

  // One destination for every node (one worker thread for the pretty format), in the first node's
  // format: the environment and the flags are every node's. Held until the CLI has said where
  // everything is.
  const { log: firstLog } = setups[0]!.config;
  const output = holdLines(createLogDestination(resolveLogFormat(firstLog.format, options.terminal ?? false)));
  if (options.warnings) logProcessWarnings(options.warnings, createLogger({ level: firstLog.level, destination: output }).child({ module: 'process' }));

  const slot0 = descriptor.nodes.find((n) => n.slot === 0) ?? descriptor.nodes[0]!;
  const chain = await startLocalChain(options.chain, { dir, syncer: { id: slot0.id, nodeAddress: slot0.nodeAddress }, notice }).catch((err: unknown) => {
    output.release();
    throw err;
  });
  const nodes: QuorumNode[] = [];
  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      output.release();
      await Promise.allSettled(nodes.map((n) => n.stop()));
      await chain?.stop();
    })());
  try {
    for (const { id, file, flags, config: own } of setups) {
      const config = chain ? loadNodeSetup({ file, env: options.env, flags: { ...flags, chains: withChain(own, chain, id === chain.syncer.id, notice) } }).config : own;
      nodes.push(
        await createNode(config, {
          descriptor,
          logger: createLogger({ level: config.log.level, base: { node: id }, destination: output }),
          // One process, several nodes: process metrics would repeat on every node's /metrics.
          metrics: createMetrics({ processMetrics: id === ids[0], labels: { node: id } }),
        }),
      );
    }
    await Promise.all(nodes.map((n) => n.start()));
  } catch (err) {
    await stop();
    throw err;
  }
  void chain?.exited?.then(({ code, signal }) => {
    if (!stopping) notice(`the local chain (anvil) exited (${code ?? signal}): Web3 routes answer 503 CHAIN_UNAVAILABLE until the cluster is restarted`);
  });
  const coordinators = nodes.filter((n) => n.httpUrl);
  return {
    coordinators: coordinators.map((n) => n.httpUrl!),
    operators: nodes.filter((n) => n.operatorUrl).map((n) => n.operatorUrl!),
    mail: coordinators.map(({ nodeId, config: { mail, dataDir } }) =>
      mail.transport === 'outbox' ? { nodeId, outbox: join(dataDir, 'outbox') } : { nodeId, smtp: `${mail.smtp.host}:${mail.smtp.port}` },
    ),
    dir,
    created,
    size: descriptor.size,
    threshold: descriptor.threshold,
    ...(chain ? { chain: { kind: chain.kind, entry: chain.entry, syncer: chain.syncer, ...(chain.stateFile ? { stateFile: chain.stateFile } : {}) } } : {}),
    releaseLogs: output.release,
    stop,
  };
}

/** A later run: the shape flags, when given, must be the cluster's. */
function checkShape(descriptor: ClusterDescriptor, options: LocalRunOptions, dir: string): void {
  const coordinators = descriptor.nodes.filter((n) => n.httpUrl !== undefined).length;
  const shape = [
    ['size', options.size, descriptor.size],
    ['threshold', options.threshold, descriptor.threshold],
    ['coordinators', options.coordinators, coordinators],
  ] as const;
  for (const [key, asked, actual] of shape) {
    if (asked !== undefined && asked !== actual) {
      throw new ConfigError(`local: --${key} ${asked}: the cluster under ${dir} has ${actual} (${key} is fixed when a cluster is created; use a new --dir)`, key);
    }
  }
}

/**
 * This run's ports: node i (slot order, as `cluster init` numbered them on one host) on basePort + i,
 * coordinator i's HTTP on httpBasePort + i, its operator port on operatorBasePort + i — each only when
 * its flag was given. The cluster file's addresses change for this run (every node dials and links to
 * the others by them); each node gets its ports as flags.
 */
function movedPorts(stored: ClusterDescriptor, options: LocalRunOptions): { descriptor: ClusterDescriptor; nodeFlags(id: string): Record<string, unknown> } {
  const { basePort, httpBasePort, operatorBasePort } = options;
  if (basePort === undefined && httpBasePort === undefined && operatorBasePort === undefined) return { descriptor: stored, nodeFlags: () => ({}) };
  const coordinators = stored.nodes.filter((n) => n.httpUrl !== undefined).length;
  const problem = portRangesProblem([
    ...(basePort !== undefined ? [{ key: 'basePort', label: 'libp2p', first: basePort, count: stored.nodes.length }] : []),
    ...(httpBasePort !== undefined ? [{ key: 'httpBasePort', label: 'HTTP', first: httpBasePort, count: coordinators }] : []),
    ...(operatorBasePort !== undefined ? [{ key: 'operatorBasePort', label: 'operator', first: operatorBasePort, count: stored.nodes.length }] : []),
  ]);
  if (problem) throw new ConfigError(`local: ${problem.key}: ${problem.problem}`, problem.key);
  const flags = new Map<string, Record<string, unknown>>();
  const nodes = stored.nodes.map((node, i): ClusterNodeEntry => {
    const host = parseTcpMultiaddr(node.multiaddrs[0] ?? '')?.host ?? '127.0.0.1';
    const own: Record<string, unknown> = {};
    const entry: ClusterNodeEntry = { ...node };
    if (basePort !== undefined) entry.multiaddrs = [tcpMultiaddr(host, basePort + i)];
    if (httpBasePort !== undefined && node.httpUrl !== undefined) {
      entry.httpUrl = httpUrlOf(urlHost(node.httpUrl) ?? host, httpBasePort + i);
      own['http.port'] = httpBasePort + i;
      own['http.publicUrl'] = entry.httpUrl;
    }
    if (operatorBasePort !== undefined) own['operator.port'] = operatorBasePort + i;
    flags.set(node.id, own);
    return entry;
  });
  return { descriptor: { ...stored, nodes }, nodeFlags: (id) => flags.get(id) ?? {} };
}

/**
 * The node's `chains` (from its file, `QK_CHAINS` or the defaults) with the local cluster's chain
 * added; an entry for the same chain id is replaced, with a notice.
 */
function withChain(config: NodeConfig, chain: LocalChain, syncer: boolean, notice: (line: string) => void): unknown[] {
  const { chainId } = chain.entry;
  const replaced = config.chains.some((c) => c.chainId === chainId);
  if (replaced && syncer) notice(`chains: the entry for chain ${chainId} of the nodes' configs (or ${configEnvName('chains')}) is replaced by the local cluster's chain`);
  return [...config.chains.filter((c) => c.chainId !== chainId), { ...chain.entry, syncer }];
}
