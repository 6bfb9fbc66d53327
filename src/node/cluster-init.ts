/**
 * `quorumkeep cluster init`: everything a cluster needs to start — one key set and one config per
 * node, and the cluster file that lists them (docs/configuration.md, "The cluster file") — for nodes on one
 * machine (`host`, ports numbered base + i) or one node per host (`hosts`, the same ports everywhere;
 * docs/deployment.md).
 *
 * Layout under `out`:
 * ```
 * cluster.json          the cluster file (written last: its presence marks a complete init)
 * node-<i>.json         node i's config (0600: it holds the node's admin token)
 * node-<i>/keys/        node i's keys (0700 folder, 0600 files)
 * ```
 * Paths inside the configs are relative to `out`, so the folder can be moved as a whole.
 */
import { access, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { z } from 'zod';
import { describeNodeKeys, generateNodeKeys, writeNodeKeys } from '../cluster/identity.ts';
import {
  ConfigError,
  announceHostProblem,
  httpUrlOf,
  isHostSyntax,
  mixedLoopbackProblem,
  parseClusterFile,
  quorumShapeProblem,
  tcpMultiaddr,
  writeClusterFile,
  type nodeConfigSchema,
} from '../config/index.ts';
import type { ClusterDescriptor, ClusterNodeEntry } from '../core/replication/ports.ts';
import { systemRandom, toHex } from '../crypto/index.ts';

/** One node's addresses in {@link ClusterInitOptions.hosts}. */
export interface ClusterInitHost {
  /** The address the other nodes dial and clients reach: written to the cluster file and `http.publicUrl`. */
  announce: string;
  /** The address the node binds to (e.g. `0.0.0.0`). @default {@link ClusterInitOptions.listenHost}, else `announce` */
  listen?: string;
}

/** Options of {@link initCluster}. */
export interface ClusterInitOptions {
  /** Output folder, created when absent; must not already hold a cluster. */
  out: string;
  /** Number of member slots (1-64). */
  size: number;
  /** Members needed for a quorum; greater than size/2 and at most size. */
  threshold: number;
  /**
   * libp2p TCP port. A node shares its announced host with k nodes before it listens on basePort + k:
   * on one host node i gets basePort + i, on hosts of their own every node gets basePort. @default 4010
   */
  basePort?: number;
  /** HTTP port of the coordinators, offset like {@link basePort}. @default 3010 */
  httpBasePort?: number;
  /** Operator port (health, readiness, metrics) of every node, offset like {@link basePort}. @default 3110 */
  operatorBasePort?: number;
  /** Give every node an operator port. @default true */
  operator?: boolean;
  /** How many members, from slot 0 up, serve the HTTP API. @default 2 (or size, when smaller) */
  coordinators?: number;
  /** The one address every node announces (all on one host); not with `hosts`. @default "127.0.0.1" unless `hosts` */
  host?: string;
  /** One entry per node, slot order: the address each node announces, and optionally binds to. Exactly `size` entries. */
  hosts?: ClusterInitHost[];
  /** The address every node binds to (libp2p, HTTP, operator port), e.g. `0.0.0.0`. @default each node's announced address */
  listenHost?: string;
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
  /** The address other nodes dial (and clients reach). */
  announceHost: string;
  /** The address it binds to. */
  listenHost: string;
  /** libp2p TCP port. */
  libp2pPort: number;
  /** The node's announced libp2p multiaddr (the cluster file's). */
  multiaddr: string;
  /** The multiaddr it listens on: {@link multiaddr} unless it binds elsewhere (then its config's `listen`). */
  listenMultiaddr: string;
  /** HTTP port when it is a coordinator. */
  httpPort: number | undefined;
  /** Base URL of its HTTP API when it is a coordinator (announced: cluster file `httpUrl`, `http.publicUrl`). */
  httpUrl: string | undefined;
  /** Its operator port, unless turned off. */
  operatorPort: number | undefined;
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
/** Default operator port of node 0. */
export const DEFAULT_OPERATOR_BASE_PORT = 3110;
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
  const operatorBasePort = options.operatorBasePort ?? DEFAULT_OPERATOR_BASE_PORT;
  const operator = options.operator ?? true;
  const coordinators = options.coordinators ?? Math.min(DEFAULT_COORDINATORS, size);
  const clusterId = options.clusterId ?? `qk-${toHex(systemRandom(4))}`;
  const fail = (key: string, problem: string): never => {
    throw new ConfigError(`cluster init: ${key}: ${problem}`, key);
  };

  const shape = quorumShapeProblem(size, threshold);
  if (shape) fail(shape.key, shape.problem);
  if (!Number.isInteger(coordinators) || coordinators < 1 || coordinators > size) {
    fail('coordinators', `must be an integer from 1 to size (size ${size}, coordinators ${coordinators})`);
  }
  const addresses = nodeAddresses(options, size, fail);

  // The k-th node announcing a host gets base + k: nodes on hosts of their own share one set of ports,
  // nodes sharing a host are numbered as on one machine.
  const seen = new Map<string, number>();
  const offsets = addresses.map(({ announce }) => {
    const key = announce.toLowerCase();
    const k = seen.get(key) ?? 0;
    seen.set(key, k + 1);
    return k;
  });
  const span = (slots: number[]): number => Math.max(0, ...slots.map((slot) => offsets[slot] ?? 0)) + 1;
  const allSlots = offsets.map((_, slot) => slot);
  const ranges = [
    { key: 'basePort', label: 'libp2p', first: basePort, count: span(allSlots) },
    { key: 'httpBasePort', label: 'HTTP', first: httpBasePort, count: span(allSlots.slice(0, coordinators)) },
    ...(operator ? [{ key: 'operatorBasePort', label: 'operator', first: operatorBasePort, count: span(allSlots) }] : []),
  ];
  const rangeProblem = portRangesProblem(ranges);
  if (rangeProblem) fail(rangeProblem.key, rangeProblem.problem);

  const clusterFile = join(out, CLUSTER_FILE_NAME);
  const ids = Array.from({ length: size }, (_, i) => `node-${i}`);
  for (const path of [clusterFile, ...ids.flatMap((id) => [join(out, id), join(out, `${id}.json`)])]) {
    if (await exists(path)) throw new ConfigError(`cluster init: ${path} already exists; choose another --out or remove the old cluster`);
  }

  const generated = await Promise.all(
    ids.map(async (id, slot) => {
      const keys = await generateNodeKeys();
      const { announce, listen } = addresses[slot]!;
      const offset = offsets[slot]!;
      const libp2pPort = basePort + offset;
      const httpPort = slot < coordinators ? httpBasePort + offset : undefined;
      const node: ClusterInitNode = {
        id,
        slot,
        ...describeNodeKeys(keys),
        announceHost: announce,
        listenHost: listen,
        libp2pPort,
        multiaddr: tcpMultiaddr(announce, libp2pPort),
        listenMultiaddr: tcpMultiaddr(listen, libp2pPort),
        httpPort,
        httpUrl: httpPort === undefined ? undefined : httpUrlOf(announce, httpPort),
        operatorPort: operator ? operatorBasePort + offset : undefined,
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
    await writeFile(node.configFile, JSON.stringify(nodeConfigOf(node), null, 2) + '\n', { flag: 'wx', mode: 0o600 });
  }
  await writeClusterFile(clusterFile, descriptor);
  return { out, clusterFile, clusterId, size, threshold, nodes };
}

/**
 * Each node's announced and bind addresses, from `host` or `hosts` and `listenHost`, checked: an
 * announced address must be diallable by the other nodes (no wildcard, no loopback next to routable
 * addresses); a bind address may be a wildcard.
 */
function nodeAddresses(options: ClusterInitOptions, size: number, fail: (key: string, problem: string) => never): Array<{ announce: string; listen: string }> {
  if (options.host !== undefined && options.hosts !== undefined) fail('hosts', 'give either --host (one address for every node) or --hosts/--hosts-file (one per node), not both');
  if (options.hosts !== undefined && options.hosts.length !== size) {
    fail('hosts', `needs exactly one address per node (size ${size}, got ${options.hosts.length})`);
  }
  if (options.listenHost !== undefined) {
    const problem = bindHostProblem(options.listenHost);
    if (problem) fail('listenHost', problem);
  }
  const addresses = Array.from({ length: size }, (_, slot) => {
    const entry = options.hosts?.[slot];
    const announce = (entry?.announce ?? options.host ?? '127.0.0.1').trim();
    const announceKey = entry ? `hosts.${slot}` : 'host';
    const problem = announceHostProblem(announce);
    if (problem) fail(announceKey, problem);
    const listen = (entry?.listen ?? options.listenHost ?? announce).trim();
    if (entry?.listen !== undefined) {
      const listenProblem = bindHostProblem(listen);
      if (listenProblem) fail(`hosts.${slot}.listen`, listenProblem);
    }
    return { announce, listen };
  });
  const mixed = mixedLoopbackProblem(addresses.map((a) => a.announce));
  if (mixed) fail(options.hosts ? 'hosts' : 'host', mixed);
  return addresses;
}

/** Why `host` cannot be bound to, or undefined: a bind address is an IP (wildcards included) or a name. */
function bindHostProblem(host: string): string | undefined {
  if (host.trim() === '') return 'must not be empty';
  return isHostSyntax(host.trim()) ? undefined : `"${host}" is neither an IP address nor a host name`;
}

/**
 * Parse a hosts file: one line per node in slot order, `<announce-host> [<listen-host>]`; `#` starts
 * a comment, blank lines are ignored. Throws a one-line {@link ConfigError} naming the line.
 * @param source the file's path, for messages
 */
export function parseHostsFile(text: string, source: string): ClusterInitHost[] {
  const hosts: ClusterInitHost[] = [];
  text.split(/\r?\n/).forEach((raw, index) => {
    const fields = raw.replace(/#.*/, '').trim().split(/\s+/).filter((f) => f !== '');
    if (fields.length === 0) return;
    if (fields.length > 2) {
      throw new ConfigError(`cluster init: hostsFile: line ${index + 1}: expected "<announce-host> [<listen-host>]", got ${fields.length} fields (in ${source})`, 'hostsFile');
    }
    const [announce, listen] = fields as [string, string | undefined];
    hosts.push(listen === undefined ? { announce } : { announce, listen });
  });
  return hosts;
}

/** Read and parse a hosts file ({@link parseHostsFile}); an unreadable file is a one-line {@link ConfigError}. */
export async function readHostsFile(path: string): Promise<ClusterInitHost[]> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    throw new ConfigError(`cluster init: hostsFile ${path}: cannot read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`, 'hostsFile', { cause: err });
  }
  return parseHostsFile(text, path);
}

function clusterEntryOf(node: ClusterInitNode): ClusterNodeEntry {
  const { id, slot, peerId, nodeAddress, signingPublicKey, multiaddr, httpUrl } = node;
  return { id, slot, peerId, nodeAddress, signingPublicKey, multiaddrs: [multiaddr], ...(httpUrl ? { httpUrl } : {}) };
}

/** A node's config file content: only what differs from the defaults, paths relative to `out`. */
function nodeConfigOf(node: ClusterInitNode): z.input<typeof nodeConfigSchema> {
  const config: z.input<typeof nodeConfigSchema> = { clusterFile: CLUSTER_FILE_NAME, nodeId: node.id, dataDir: node.id };
  // Without `listen` a node listens on its cluster-file multiaddr; it binds elsewhere only when told.
  if (node.listenMultiaddr !== node.multiaddr) config.listen = [node.listenMultiaddr];
  if (node.httpPort !== undefined) config.http = { enabled: true, host: node.listenHost, port: node.httpPort, publicUrl: node.httpUrl };
  if (node.operatorPort !== undefined) config.operator = { enabled: true, host: node.listenHost, port: node.operatorPort };
  // Operator endpoints are on for a generated cluster (the API's `/admin`, and on every node's operator
  // port `GET /admin/backup`); the token lives only in this 0600 file (`config print` redacts it).
  if (node.httpPort !== undefined || node.operatorPort !== undefined) config.admin = { token: toHex(systemRandom(32)) };
  return config;
}

/** Consecutive ports of one kind on one host: `count` from `first`, set by the option `key`. */
export interface PortRange {
  /** The option that sets `first`, e.g. `httpBasePort`. */
  key: string;
  /** e.g. `HTTP`. */
  label: string;
  first: number;
  count: number;
}

/** Why these port ranges cannot be used together on one host, or undefined: out of 1-65535, or overlapping. */
export function portRangesProblem(ranges: readonly PortRange[]): { key: string; problem: string } | undefined {
  for (const r of ranges) {
    if (!Number.isInteger(r.first) || r.first < 1 || r.first + r.count - 1 > 65535) {
      return { key: r.key, problem: `must be an integer such that ports ${r.first}..${r.first + r.count - 1} lie within 1-65535` };
    }
  }
  // Overlapping ranges would make two servers of one host fight for a port.
  for (const [i, a] of ranges.entries()) {
    for (const b of ranges.slice(0, i)) {
      if (a.first < b.first + b.count && b.first < a.first + a.count) {
        return { key: a.key, problem: `${a.label} ports ${a.first}-${a.first + a.count - 1} overlap ${b.label} ports ${b.first}-${b.first + b.count - 1}` };
      }
    }
  }
  return undefined;
}

async function exists(path: string): Promise<boolean> {
  try {
    await access(path);
    return true;
  } catch {
    return false;
  }
}
