/**
 * The cluster file: the static membership every node of a cluster shares (docs/configuration.md, "The
 * cluster file") — `clusterId`, `size`, `threshold` and one entry per node. `quorumkeep cluster init`
 * writes it; every node loads it at start, together with its own config ({@link loadNodeSetup}).
 */
import { open, rename, rm, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { z } from 'zod';
import { addressOfPublicKey, fromHex } from '../crypto/index.ts';
import type { ClusterDescriptor } from '../core/replication/ports.ts';
import type { NodeConfig } from './schema.ts';
import { announceHostProblem, announcedMultiaddrProblem, announcedUrlProblem, isWildcardHost } from './addresses.ts';
import { ConfigError, configErrorFromIssues, configIssueMessage, loadConfig, parseJsonText, readJsonFile, type LoadConfigOptions } from './loader.ts';

/** Largest cluster a file may describe. */
export const MAX_CLUSTER_SIZE = 64;

/**
 * Why `size`/`threshold` cannot form a cluster, or undefined when they can. The threshold must exceed
 * size/2 so that any two quorums share a member (docs/configuration.md, "The cluster file").
 */
export function quorumShapeProblem(size: number, threshold: number): { key: 'size' | 'threshold'; problem: string } | undefined {
  if (!Number.isInteger(size) || size < 1 || size > MAX_CLUSTER_SIZE) {
    return { key: 'size', problem: `must be an integer from 1 to ${MAX_CLUSTER_SIZE} (got ${size})` };
  }
  if (!Number.isInteger(threshold) || threshold * 2 <= size || threshold > size) {
    return { key: 'threshold', problem: `must be greater than size/2 and at most size (size ${size}, threshold ${threshold})` };
  }
  return undefined;
}

// Letters, digits and . _ - only: the cluster id is part of the gossip topic `/quorumkeep/<clusterId>/records/1`.
const CLUSTER_ID_RE = /^[A-Za-z0-9._-]{1,64}$/;
// Base58btc alphabet: libp2p peer ids as strings (e.g. `12D3KooW…`).
const PEER_ID_RE = /^[1-9A-HJ-NP-Za-km-z]{32,128}$/;

/** One node of the cluster file (see {@link ClusterNodeEntry} for the meaning of each field). */
export const clusterNodeEntrySchema = z.strictObject({
  id: z.string().min(1).max(64),
  slot: z.number().int().min(0).nullable(),
  peerId: z.string().regex(PEER_ID_RE, 'must be a base58btc libp2p peer id'),
  nodeAddress: z.string().regex(/^0x[0-9a-f]{40}$/, 'must be 0x followed by 40 lowercase hex digits'),
  signingPublicKey: z.string().regex(/^[0-9a-fA-F]{66}$/, 'must be a compressed secp256k1 public key (66 hex digits)'),
  multiaddrs: z.array(z.string().startsWith('/', 'must be a multiaddr such as /ip4/127.0.0.1/tcp/4010')).min(1),
  httpUrl: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).optional(),
});

/** An identity replaced by `quorumkeep member replace` (see {@link RetiredIdentity}). */
const retiredIdentitySchema = clusterNodeEntrySchema.extend({
  epoch: z.number().int().min(1),
  lastSeq: z.number().int().min(0),
  retiredAt: z.number().int().min(0),
});

/** The cluster file, with every cross-field rule (slots, uniqueness, addresses, epochs) checked. */
export const clusterFileSchema = z
  .strictObject({
    clusterId: z.string().regex(CLUSTER_ID_RE, 'must be 1-64 characters of A-Z a-z 0-9 . _ -'),
    size: z.number(),
    threshold: z.number(),
    nodes: z.array(clusterNodeEntrySchema).min(1),
    epoch: z.number().int().min(0).optional(),
    retired: z.array(retiredIdentitySchema).max(1024).optional(),
    approvals: z.array(z.strictObject({ nodeAddress: z.string().regex(/^0x[0-9a-f]{40}$/), signature: z.string().regex(/^0x[0-9a-f]{130}$/) })).max(MAX_CLUSTER_SIZE).optional(),
  })
  .superRefine((file, ctx) => {
    const report = (path: PropertyKey[], message: string): void => ctx.addIssue({ code: 'custom', path, message });
    const shape = quorumShapeProblem(file.size, file.threshold);
    if (shape) return report([shape.key], shape.problem);

    // Epochs (docs/operations.md, "Replace a member's identity"): each replacement retires one
    // identity at the next epoch and carries the previous epoch's approvals; a retired identity is never reused.
    const epoch = file.epoch ?? 0;
    const retired = file.retired ?? [];
    if (epoch === 0 && (retired.length > 0 || file.approvals !== undefined)) report(['epoch'], 'a file with retired identities or approvals has an epoch of 1 or more');
    retired.forEach((r, i) => {
      if (r.epoch > epoch || (i > 0 && r.epoch <= retired[i - 1]!.epoch)) report(['retired', i, 'epoch'], `must increase along the list and be at most the file's epoch ${epoch}`);
      if (file.nodes.some((n) => n.nodeAddress === r.nodeAddress || n.peerId === r.peerId)) report(['retired', i], `${r.nodeAddress} is retired and cannot also be a node`);
      if (retired.some((o, j) => j < i && (o.nodeAddress === r.nodeAddress || o.peerId === r.peerId))) report(['retired', i], `${r.nodeAddress} is retired twice`);
    });

    // Member slots: exactly 0..size-1, each held once; gateways (slot null) hold none.
    const holders = new Map<number, string>();
    file.nodes.forEach((node, i) => {
      if (node.slot === null) return;
      const holder = holders.get(node.slot);
      if (node.slot >= file.size) report(['nodes', i, 'slot'], `slot ${node.slot} is outside 0..${file.size - 1} (size ${file.size})`);
      else if (holder !== undefined) report(['nodes', i, 'slot'], `slot ${node.slot} is already held by ${holder}`);
      else holders.set(node.slot, node.id);
    });
    const vacant = Array.from({ length: file.size }, (_, slot) => slot).filter((slot) => !holders.has(slot));
    if (vacant.length > 0) report(['nodes'], `no member holds slot ${vacant.join(', ')} (each of 0..${file.size - 1} needs exactly one)`);

    for (const field of ['id', 'peerId', 'nodeAddress'] as const) {
      const seen = new Map<string, number>();
      file.nodes.forEach((node, i) => {
        const first = seen.get(node[field]);
        if (first !== undefined) report(['nodes', i, field], `"${node[field]}" is also used by nodes.${first}`);
        else seen.set(node[field], i);
      });
    }

    // The address is derived from the key, so a record signed by this node verifies against it.
    file.nodes.forEach((node, i) => {
      let derived: string;
      try {
        derived = addressOfPublicKey(fromHex(node.signingPublicKey));
      } catch {
        return report(['nodes', i, 'signingPublicKey'], 'is not a valid secp256k1 public key');
      }
      if (derived !== node.nodeAddress) report(['nodes', i, 'nodeAddress'], `does not match signingPublicKey (which gives ${derived})`);
    });

    // Every other node dials these: a wildcard (0.0.0.0) or multicast address would leave the cluster
    // degraded for ever with nothing but failed dials to show for it (issue 11).
    file.nodes.forEach((node, i) => {
      node.multiaddrs.forEach((ma, j) => {
        const problem = announcedMultiaddrProblem(ma);
        if (problem) report(['nodes', i, 'multiaddrs', j], problem);
      });
      const urlProblem = node.httpUrl === undefined ? undefined : announcedUrlProblem(node.httpUrl);
      if (urlProblem) report(['nodes', i, 'httpUrl'], urlProblem);
    });
  });

/**
 * Validate a cluster file's content (a JSON text or an already-parsed value).
 * Throws a one-line {@link ConfigError}, e.g.
 * `cluster file: threshold: must be greater than size/2 and at most size (size 5, threshold 2) (in /x/cluster.json)`.
 * @param sourceName where the content came from, for messages (usually the file's path)
 */
export function parseClusterFile(json: unknown, sourceName: string): ClusterDescriptor {
  const descriptor = parseClusterProposal(json, sourceName);
  // A proposal (POST /admin/cluster/approve) has none yet; a file a node runs on must.
  const epoch = descriptor.epoch ?? 0;
  if (epoch > 0 && (descriptor.approvals ?? []).length === 0) {
    throw new ConfigError(`cluster file: approvals: epoch ${epoch} needs the approvals of the previous epoch's members (quorumkeep member replace) (in ${sourceName})`);
  }
  return descriptor;
}

/**
 * Validate a proposed next epoch (`quorumkeep member replace`, `POST /admin/cluster/approve`): every
 * rule of {@link parseClusterFile} but the approvals, which it has not collected yet.
 */
export function parseClusterProposal(json: unknown, sourceName: string): ClusterDescriptor {
  const value = typeof json === 'string' ? parseJsonText(json, `cluster file ${sourceName}`) : json;
  const result = clusterFileSchema.safeParse(value, { error: configIssueMessage });
  if (!result.success) throw configErrorFromIssues('cluster file', result.error.issues, () => `in ${sourceName}`);
  return result.data;
}

/** Read and validate the cluster file at `path`; throws a one-line {@link ConfigError}. */
export function loadClusterFile(path: string): ClusterDescriptor {
  return parseClusterFile(readJsonFile(path, `cluster file ${path}`), path);
}

/**
 * Validate `descriptor` and write it to `path` as pretty JSON. Refuses to replace an existing file
 * (a cluster's membership is changed deliberately, never by an accidental re-run). The file holds no
 * secret, so it is world-readable (0644): every node and operator of the cluster reads it.
 */
export async function writeClusterFile(path: string, descriptor: ClusterDescriptor): Promise<void> {
  const valid = parseClusterFile(descriptor, path);
  await writeFile(path, JSON.stringify(valid, null, 2) + '\n', { flag: 'wx', mode: 0o644 });
}

/**
 * Validate `descriptor` and put it at `path` in place of what is there, atomically: it is written to a
 * temporary file in the same folder (0644, synced), then renamed over `path`, so a reader — a node
 * starting — sees the old file or the new one, never half of one. Used to change a node's addresses
 * (`quorumkeep cluster set-address`).
 */
export async function replaceClusterFile(path: string, descriptor: ClusterDescriptor): Promise<void> {
  const valid = parseClusterFile(descriptor, path);
  const temp = join(dirname(path), `.${basename(path)}.${process.pid}.${Date.now().toString(36)}.tmp`);
  try {
    const handle = await open(temp, 'wx', 0o644);
    try {
      await handle.writeFile(JSON.stringify(valid, null, 2) + '\n');
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temp, path);
  } catch (err) {
    await rm(temp, { force: true });
    throw err;
  }
}

/** A node's validated config and the cluster file it names. */
export interface NodeSetup {
  config: NodeConfig;
  descriptor: ClusterDescriptor;
}

/**
 * Load a node's config ({@link loadConfig}) and its cluster file, and check that the node is listed in
 * it. Everything a node needs to start is validated here, before any component is created.
 */
export function loadNodeSetup(options: LoadConfigOptions): NodeSetup {
  const config = loadConfig(options);
  const json = readJsonFile(config.clusterFile, `config: clusterFile ${config.clusterFile}`, 'clusterFile');
  const descriptor = parseClusterFile(json, config.clusterFile);
  if (!descriptor.nodes.some((node) => node.id === config.nodeId)) {
    throw new ConfigError(`config: nodeId: "${config.nodeId}" is not in the cluster file ${config.clusterFile}`, 'nodeId');
  }
  const urlProblem = publicUrlProblem(config);
  if (urlProblem) throw new ConfigError(`config: http.publicUrl: ${urlProblem}`, 'http.publicUrl');
  return { config, descriptor };
}

/**
 * Why the coordinator's public URL — the base of every emailed link — cannot be reached by a client,
 * or undefined. Empty, it is derived from `http.host`, which then must not be a wildcard either.
 */
function publicUrlProblem(config: NodeConfig): string | undefined {
  if (!config.http.enabled) return undefined;
  if (config.http.publicUrl !== '') return announcedUrlProblem(config.http.publicUrl);
  const hostProblem = announceHostProblem(config.http.host);
  if (hostProblem === undefined) return undefined;
  return `is empty, so links would be built from http.host ${config.http.host}, which ${isWildcardHost(config.http.host) ? 'is a wildcard address' : 'cannot be dialled'}: set http.publicUrl to the URL clients reach this node at`;
}
