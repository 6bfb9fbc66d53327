/**
 * `quorumkeep cluster init`: everything a local cluster needs to start — one key set and one config
 * per node, and the cluster file that lists them (ARCHITECTURE.md, Processes and roles).
 *
 * Layout under `out`:
 * ```
 * cluster.json          the cluster file (written last: its presence marks a complete init)
 * node-<i>.json         node i's config (0600: coordinators' configs hold the admin token)
 * node-<i>/keys/        node i's keys (0700 folder, 0600 files)
 * ```
 * Paths inside the configs are relative to `out`, so the folder can be moved as a whole.
 */
import { access, mkdir, writeFile } from 'node:fs/promises';
import { isIPv4, isIPv6 } from 'node:net';
import { join, resolve } from 'node:path';
import type { z } from 'zod';
import { describeNodeKeys, generateNodeKeys, writeNodeKeys } from '../cluster/identity.ts';
import { ConfigError, parseClusterFile, quorumShapeProblem, writeClusterFile, type nodeConfigSchema } from '../config/index.ts';
import type { ClusterDescriptor, ClusterNodeEntry } from '../core/replication/ports.ts';
import { systemRandom, toHex } from '../crypto/index.ts';

/** Options of {@link initCluster}. */
export interface ClusterInitOptions {
  /** Output folder, created when absent; must not already hold a cluster. */
  out: string;
  /** Number of member slots (1-64). */
  size: number;
  /** Members needed for a quorum; greater than size/2 and at most size. */
  threshold: number;
  /** libp2p TCP port of node 0; node i listens on basePort + i. @default 4010 */
  basePort?: number;
  /** HTTP port of coordinator 0; coordinator i serves on httpBasePort + i. @default 3010 */
  httpBasePort?: number;
  /** How many members, from slot 0 up, serve the HTTP API. @default 2 (or size, when smaller) */
  coordinators?: number;
  /** Address every node listens on (libp2p and HTTP). @default "127.0.0.1" */
  host?: string;
  /** Cluster id. @default "qk-" followed by 8 random hex digits */
  clusterId?: string;
}

/** What {@link initCluster} wrote for one node. */
export interface ClusterInitNode {
  id: string;
  slot: number;
  peerId: string;
  nodeAddress: string;
  /** Compressed secp256k1 public key, hex. */
  signingPublicKey: string;
  /** libp2p TCP port. */
  libp2pPort: number;
  /** The node's libp2p listen multiaddr. */
  multiaddr: string;
  /** HTTP port when it is a coordinator. */
  httpPort: number | undefined;
  /** Base URL of its HTTP API when it is a coordinator. */
  httpUrl: string | undefined;
  /** Absolute path of its config file. */
  configFile: string;
  /** Absolute path of its keys folder. */
  keysDir: string;
}

/** Summary of an {@link initCluster} run. */
export interface ClusterInitSummary {
  /** Absolute output folder. */
  out: string;
  /** Absolute path of the cluster file. */
  clusterFile: string;
  clusterId: string;
  size: number;
  threshold: number;
  nodes: ClusterInitNode[];
}

/** Default libp2p port of node 0. */
export const DEFAULT_BASE_PORT = 4010;
/** Default HTTP port of coordinator 0. */
export const DEFAULT_HTTP_BASE_PORT = 3010;
/** Default number of coordinators. */
export const DEFAULT_COORDINATORS = 2;

const CLUSTER_FILE_NAME = 'cluster.json';

/**
 * Generate keys, configs and the cluster file for a cluster of `size` members under `options.out`.
 * Throws a one-line {@link ConfigError} for bad options or when `out` already holds a cluster; nothing
 * is written before every option has been checked.
 */
export async function initCluster(options: ClusterInitOptions): Promise<ClusterInitSummary> {
  const out = resolve(options.out);
  const { size, threshold } = options;
  const basePort = options.basePort ?? DEFAULT_BASE_PORT;
  const httpBasePort = options.httpBasePort ?? DEFAULT_HTTP_BASE_PORT;
  const coordinators = options.coordinators ?? Math.min(DEFAULT_COORDINATORS, size);
  const host = options.host ?? '127.0.0.1';
  const clusterId = options.clusterId ?? `qk-${toHex(systemRandom(4))}`;
  const fail = (key: string, problem: string): never => {
    throw new ConfigError(`cluster init: ${key}: ${problem}`, key);
  };

  const shape = quorumShapeProblem(size, threshold);
  if (shape) fail(shape.key, shape.problem);
  if (!Number.isInteger(coordinators) || coordinators < 1 || coordinators > size) {
    fail('coordinators', `must be an integer from 1 to size (size ${size}, coordinators ${coordinators})`);
  }
  checkPortRange('basePort', basePort, size, fail);
  checkPortRange('httpBasePort', httpBasePort, coordinators, fail);
  // Overlapping ranges would make a coordinator's HTTP server and some node's libp2p fight for a port.
  if (httpBasePort < basePort + size && basePort < httpBasePort + coordinators) {
    fail('httpBasePort', `HTTP ports ${httpBasePort}-${httpBasePort + coordinators - 1} overlap libp2p ports ${basePort}-${basePort + size - 1}`);
  }
  if (host === '') fail('host', 'must not be empty');

  const clusterFile = join(out, CLUSTER_FILE_NAME);
  const ids = Array.from({ length: size }, (_, i) => `node-${i}`);
  for (const path of [clusterFile, ...ids.flatMap((id) => [join(out, id), join(out, `${id}.json`)])]) {
    if (await exists(path)) throw new ConfigError(`cluster init: ${path} already exists; choose another --out or remove the old cluster`);
  }

  const generated = await Promise.all(
    ids.map(async (id, slot) => {
      const keys = await generateNodeKeys();
      const libp2pPort = basePort + slot;
      const httpPort = slot < coordinators ? httpBasePort + slot : undefined;
      const node: ClusterInitNode = {
        id,
        slot,
        ...describeNodeKeys(keys),
        libp2pPort,
        multiaddr: tcpMultiaddr(host, libp2pPort),
        httpPort,
        httpUrl: httpPort === undefined ? undefined : httpBaseUrl(host, httpPort),
        configFile: join(out, `${id}.json`),
        keysDir: join(out, id, 'keys'),
      };
      return { node, keys };
    }),
  );
  const nodes = generated.map(({ node }) => node);
  const descriptor: ClusterDescriptor = { clusterId, size, threshold, nodes: nodes.map(clusterEntryOf) };
  // Validate the whole descriptor (e.g. a malformed --cluster-id) before anything touches the disk.
  parseClusterFile(descriptor, clusterFile);

  await mkdir(out, { recursive: true });
  for (const { node, keys } of generated) {
    await writeNodeKeys(node.keysDir, keys);
    await writeFile(node.configFile, JSON.stringify(nodeConfigOf(node, host), null, 2) + '\n', { flag: 'wx', mode: 0o600 });
  }
  await writeClusterFile(clusterFile, descriptor);
  return { out, clusterFile, clusterId, size, threshold, nodes };
}

function clusterEntryOf(node: ClusterInitNode): ClusterNodeEntry {
  const { id, slot, peerId, nodeAddress, signingPublicKey, multiaddr, httpUrl } = node;
  return { id, slot, peerId, nodeAddress, signingPublicKey, multiaddrs: [multiaddr], ...(httpUrl ? { httpUrl } : {}) };
}

/** A node's config file content: only what differs from the defaults, paths relative to `out`. */
function nodeConfigOf(node: ClusterInitNode, host: string): z.input<typeof nodeConfigSchema> {
  const base = { clusterFile: CLUSTER_FILE_NAME, nodeId: node.id, dataDir: node.id };
  if (node.httpPort === undefined) return base;
  return {
    ...base,
    http: { enabled: true, host, port: node.httpPort, publicUrl: node.httpUrl },
    // Operator endpoints are on for a generated cluster; the token lives only in this 0600 file (`config print` redacts it).
    admin: { token: toHex(systemRandom(32)) },
  };
}

function checkPortRange(key: string, first: number, count: number, fail: (key: string, problem: string) => never): void {
  if (!Number.isInteger(first) || first < 1 || first + count - 1 > 65535) {
    fail(key, `must be an integer such that ports ${first}..${first + count - 1} lie within 1-65535`);
  }
}

function tcpMultiaddr(host: string, port: number): string {
  const protocol = isIPv4(host) ? 'ip4' : isIPv6(host) ? 'ip6' : 'dns4';
  return `/${protocol}/${host}/tcp/${port}`;
}

function httpBaseUrl(host: string, port: number): string {
  return `http://${isIPv6(host) ? `[${host}]` : host}:${port}`;
}

async function exists(path: string): Promise<boolean> {
  try {
    await access(path);
    return true;
  } catch {
    return false;
  }
}
