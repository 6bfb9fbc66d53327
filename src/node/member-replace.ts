/**
 * `quorumkeep member replace` (docs/operations.md, "Replace a member's identity"): give a node whose
 * keys are lost a new identity, as the next membership epoch of the cluster file.
 *
 * 1. Create the node's new keys in `--keys-dir` (which must not hold keys yet).
 * 2. Ask each approver (a member's operator port: `GET /admin/cluster`) how far it holds the old
 *    identity's log; the highest seq becomes the retired identity's `lastSeq`.
 * 3. Build the next epoch (src/core/membership/epoch.ts) and collect `threshold` signatures
 *    (`POST /admin/cluster/approve`); a member that has not caught up yet answers 409 and is asked
 *    again until `--wait` runs out.
 * 4. Write the approved file to `--out`. The operator then puts it in place of every node's cluster
 *    file and restarts the nodes (each checks the step against the epoch it accepted before), and
 *    starts the node on its new keys with an empty data dir, then `quorumkeep member recover`.
 */
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { loadClusterFile, writeClusterFile } from '../config/cluster-file.ts';
import { describeNodeKeys, loadOrCreateNodeKeys } from '../cluster/index.ts';
import type { ClusterDescriptor, EpochApproval, RetiredIdentity } from '../core/replication/ports.ts';
import { zeroize } from '../crypto/index.ts';

/** Deadline of one call to an approver, ms. */
const CALL_TIMEOUT_MS = 10_000;
/** Pause between rounds of asking approvers that answered 409 (not caught up yet), ms. */
const RETRY_PAUSE_MS = 1_000;

/** Options of {@link replaceMember}. */
export interface ReplaceMemberOptions {
  /** The cluster file in force (the current epoch). */
  cluster: string;
  /** The node (cluster-file `id`) whose identity is replaced. */
  node: string;
  /** Where the new keys are created; must not hold keys. */
  keysDir: string;
  /** JSON file: `[{ "url": "<operator URL>", "token": "<admin token>" }, …]`, one per approving member. */
  approvers: string;
  /** Where the next epoch's cluster file is written (must not exist). */
  out: string;
  /** New libp2p multiaddr of the node; default: its current ones. */
  multiaddr?: string;
  /** New HTTP URL (coordinators); default: its current one. */
  httpUrl?: string;
  /** Seconds to keep asking members that have not caught up. @default 60 */
  wait?: number;
}

const approversSchema = z.array(z.strictObject({ url: z.url({ protocol: /^https?$/ }), token: z.string().min(1) })).min(1);
const reportSchema = z.object({ clusterId: z.string(), epoch: z.number(), nodeAddress: z.string(), versionVector: z.record(z.string(), z.number()) });
const approvalSchema = z.object({ approval: z.object({ nodeAddress: z.string(), signature: z.string() }) });

/** One admin call; resolves with status and parsed body, or throws with a one-line reason. */
async function call(url: string, token: string, init: { method: 'GET' | 'POST'; body?: unknown }): Promise<{ status: number; body: unknown }> {
  let response: Response;
  try {
    response = await fetch(url, {
      method: init.method,
      headers: { authorization: `Bearer ${token}`, accept: 'application/json', ...(init.body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
      signal: AbortSignal.timeout(CALL_TIMEOUT_MS),
    });
  } catch (err) {
    throw new Error(`cannot reach ${url} (${err instanceof Error && err.name === 'TimeoutError' ? 'timed out' : ((err as Error).cause as NodeJS.ErrnoException | undefined)?.code ?? (err as Error).message})`);
  }
  return { status: response.status, body: await response.json().catch(() => ({})) };
}

const errorOf = (body: unknown) => (body as { error?: string }).error ?? '';

/** Run `member replace`; returns the approved descriptor (also written to `out`). Throws with a one-line reason. */
export async function replaceMember(options: ReplaceMemberOptions, print: (line: string) => void): Promise<ClusterDescriptor> {
  const current = loadClusterFile(options.cluster);
  const old = current.nodes.find((n) => n.id === options.node);
  if (!old) throw new Error(`member replace: "${options.node}" is not in ${options.cluster} (nodes: ${current.nodes.map((n) => n.id).join(', ')})`);
  const approvers = approversSchema.parse(JSON.parse(await readFile(options.approvers, 'utf8')));
  if (await stat(join(options.keysDir, 'signing.key')).then(() => true, () => false)) {
    throw new Error(`member replace: ${options.keysDir} already holds keys; a new identity needs an empty or new folder`);
  }
  await stat(options.out).then(
    () => {
      throw new Error(`member replace: ${options.out} exists; choose a new file for the next epoch`);
    },
    () => undefined,
  );

  // How far the members hold the old identity's log: the retired identity keeps exactly that much.
  let lastSeq = 0;
  let reached = 0;
  for (const a of approvers) {
    const url = `${a.url.replace(/\/+$/, '')}/admin/cluster`;
    try {
      const res = await call(url, a.token, { method: 'GET' });
      if (res.status !== 200) throw new Error(`HTTP ${res.status}${errorOf(res.body) ? `: ${errorOf(res.body)}` : ''}`);
      const report = reportSchema.parse(res.body);
      if (report.clusterId !== current.clusterId || report.epoch !== (current.epoch ?? 0)) throw new Error(`runs cluster ${report.clusterId} epoch ${report.epoch}, not ${current.clusterId} epoch ${current.epoch ?? 0}`);
      if (report.nodeAddress === old.nodeAddress) throw new Error('is the identity being replaced');
      lastSeq = Math.max(lastSeq, report.versionVector[old.nodeAddress] ?? 0);
      reached++;
    } catch (err) {
      print(`  ${a.url}: ${(err as Error).message}`);
    }
  }
  if (reached < current.threshold) throw new Error(`member replace: only ${reached} of the approvers answered; ${current.threshold} are needed`);

  const { keys } = await loadOrCreateNodeKeys(options.keysDir);
  const facts = describeNodeKeys(keys);
  zeroize(keys.signing, keys.storage);
  const epoch = (current.epoch ?? 0) + 1;
  const retired: RetiredIdentity = { ...old, epoch, lastSeq, retiredAt: Date.now() };
  const successor = { ...old, ...facts, ...(options.multiaddr ? { multiaddrs: [options.multiaddr] } : {}), ...(options.httpUrl ? { httpUrl: options.httpUrl } : {}) };
  const { approvals: _previous, ...rest } = current;
  const proposal: ClusterDescriptor = { ...rest, epoch, nodes: current.nodes.map((n) => (n.id === old.id ? successor : n)), retired: [...(current.retired ?? []), retired] };
  print(`Epoch ${epoch}: ${old.id} (slot ${old.slot ?? 'gateway'}) ${old.nodeAddress} → ${facts.nodeAddress}; its log stays valid up to seq ${lastSeq}.`);

  const approvals = new Map<string, EpochApproval>();
  const deadline = Date.now() + (options.wait ?? 60) * 1000;
  let pending = [...approvers];
  for (;;) {
    const retry: typeof pending = [];
    for (const a of pending) {
      if (approvals.size >= current.threshold) break;
      const url = `${a.url.replace(/\/+$/, '')}/admin/cluster/approve`;
      try {
        const res = await call(url, a.token, { method: 'POST', body: proposal });
        if (res.status === 200) {
          const { approval } = approvalSchema.parse(res.body);
          approvals.set(approval.nodeAddress, approval);
          print(`  approved by ${approval.nodeAddress} (${a.url})`);
        } else if (res.status === 409 && /not yet/.test(errorOf(res.body))) {
          retry.push(a);
        } else {
          print(`  ${a.url} refused: HTTP ${res.status}: ${errorOf(res.body)}`);
        }
      } catch (err) {
        print(`  ${a.url}: ${(err as Error).message}`);
      }
    }
    if (approvals.size >= current.threshold || retry.length === 0 || Date.now() >= deadline) break;
    pending = retry;
    await new Promise((r) => setTimeout(r, RETRY_PAUSE_MS));
  }
  if (approvals.size < current.threshold) throw new Error(`member replace: ${approvals.size} approvals; ${current.threshold} are needed (the new keys in ${options.keysDir} are unused: remove them before trying again)`);

  const approved: ClusterDescriptor = { ...proposal, approvals: [...approvals.values()] };
  await writeClusterFile(options.out, approved);
  print(`Wrote ${options.out}. Next: put it in place of every node's cluster file and restart each node (one at a time);`);
  print(`start ${old.id} on the keys in ${options.keysDir} with an empty data dir; then \`quorumkeep member recover --slot ${old.slot ?? '?'}\`.`);
  return approved;
}
