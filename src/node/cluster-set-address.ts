/**
 * `quorumkeep cluster set-address`: change one node's announced addresses — its libp2p multiaddrs,
 * its HTTP URL — in the cluster file, with the rules `cluster init` applies (issue 11). The cluster
 * file is static per node: the rewritten file must then be copied to every node, and the nodes
 * restarted one at a time (docs/deployment.md, "Changing a node's address").
 */
import { resolve } from 'node:path';
import {
  ConfigError,
  announcedMultiaddrProblem,
  announcedUrlProblem,
  loadClusterFile,
  mixedLoopbackProblem,
  parseTcpMultiaddr,
  replaceClusterFile,
  urlHost,
} from '../config/index.ts';
import type { ClusterDescriptor, ClusterNodeEntry } from '../core/replication/ports.ts';

/** Options of {@link setNodeAddress}. */
export interface SetAddressOptions {
  /** The cluster file to rewrite. */
  clusterFile: string;
  /** The node's `id` in it. */
  nodeId: string;
  /** Its new libp2p multiaddrs (`/ip4|ip6|dns4|dns6|dns/<host>/tcp/<port>`), replacing the old list. */
  multiaddrs?: string[];
  /** Its new HTTP base URL (http or https). */
  httpUrl?: string;
}

/** One field that changed. */
export interface AddressChange {
  field: 'multiaddrs' | 'httpUrl';
  /** The old value (`multiaddrs` joined by ", "), `undefined` when absent. */
  before: string | undefined;
  after: string;
}

/** What {@link setNodeAddress} did. */
export interface SetAddressResult {
  /** Absolute path of the cluster file. */
  clusterFile: string;
  nodeId: string;
  /** The fields that changed; empty when the file already said so (and was left untouched). */
  changes: AddressChange[];
}

/**
 * Rewrite `nodeId`'s addresses in the cluster file, atomically (temp file, then rename). Everything
 * is checked before the file is touched; a problem is a one-line {@link ConfigError} naming the option.
 */
export async function setNodeAddress(options: SetAddressOptions): Promise<SetAddressResult> {
  const clusterFile = resolve(options.clusterFile);
  const fail = (key: string, problem: string): never => {
    throw new ConfigError(`cluster set-address: ${key}: ${problem}`, key);
  };
  if ((options.multiaddrs === undefined || options.multiaddrs.length === 0) && options.httpUrl === undefined) {
    fail('multiaddr', 'give the new address: --multiaddr and/or --http-url');
  }

  const descriptor = loadClusterFile(clusterFile);
  const index = descriptor.nodes.findIndex((n) => n.id === options.nodeId);
  if (index < 0) fail('node', `"${options.nodeId}" is not in ${clusterFile} (nodes: ${descriptor.nodes.map((n) => n.id).join(', ')})`);
  const old = descriptor.nodes[index]!;
  const entry: ClusterNodeEntry = { ...old };

  if (options.multiaddrs !== undefined && options.multiaddrs.length > 0) {
    for (const ma of options.multiaddrs) {
      const tcp = parseTcpMultiaddr(ma);
      if (!tcp || tcp.port === 0) fail('multiaddr', `"${ma}" is not a TCP multiaddr such as /ip4/10.0.0.5/tcp/4010 (or /dns4/node-1.example/tcp/4010)`);
      const problem = announcedMultiaddrProblem(ma);
      if (problem) fail('multiaddr', problem);
    }
    entry.multiaddrs = [...new Set(options.multiaddrs)];
  }
  if (options.httpUrl !== undefined) {
    const url = options.httpUrl.replace(/\/+$/, '');
    let protocol: string;
    try {
      protocol = new URL(url).protocol;
    } catch {
      return fail('httpUrl', `"${options.httpUrl}" is not a URL such as http://10.0.0.5:3010`);
    }
    if (protocol !== 'http:' && protocol !== 'https:') fail('httpUrl', `"${options.httpUrl}" must be an http or https URL`);
    const problem = announcedUrlProblem(url);
    if (problem) fail('httpUrl', problem);
    entry.httpUrl = url;
  }

  // Another node announcing the same address would receive this node's dials.
  for (const other of descriptor.nodes) {
    if (other.id === entry.id) continue;
    const taken = entry.multiaddrs.find((ma) => other.multiaddrs.some((o) => sameTcpAddress(o, ma)));
    if (taken) fail('multiaddr', `"${taken}" is already ${other.id}'s address`);
  }
  const next: ClusterDescriptor = { ...descriptor, nodes: descriptor.nodes.map((n, i) => (i === index ? entry : n)) };
  const mixed = mixedLoopbackProblem(announcedHosts(next));
  if (mixed) fail(options.multiaddrs ? 'multiaddr' : 'httpUrl', `the cluster ${mixed}`);

  const changes: AddressChange[] = [];
  if (old.multiaddrs.join(', ') !== entry.multiaddrs.join(', ')) changes.push({ field: 'multiaddrs', before: old.multiaddrs.join(', '), after: entry.multiaddrs.join(', ') });
  if (entry.httpUrl !== undefined && old.httpUrl !== entry.httpUrl) changes.push({ field: 'httpUrl', before: old.httpUrl, after: entry.httpUrl });
  if (changes.length > 0) await replaceClusterFile(clusterFile, next);
  return { clusterFile, nodeId: entry.id, changes };
}

function sameTcpAddress(a: string, b: string): boolean {
  const x = parseTcpMultiaddr(a);
  const y = parseTcpMultiaddr(b);
  return x !== undefined && y !== undefined && x.port === y.port && x.host.toLowerCase() === y.host.toLowerCase();
}

/** Every host the cluster file announces (multiaddrs and HTTP URLs). */
function announcedHosts(descriptor: ClusterDescriptor): string[] {
  return descriptor.nodes.flatMap((n) => [
    ...n.multiaddrs.map((ma) => parseTcpMultiaddr(ma)?.host).filter((h): h is string => h !== undefined),
    ...(n.httpUrl === undefined ? [] : [urlHost(n.httpUrl)].filter((h): h is string => h !== undefined)),
  ]);
}
