/**
 * Membership epochs (docs/operations.md, "Replace a member's identity"; docs/security.md, "Who may
 * write what"): the rules by which a node moves from one cluster file to the next when a node's
 * identity is replaced. Pure functions over cluster descriptors, no I/O.
 *
 * - **Who may change membership:** `threshold` members of the current epoch together, never fewer.
 *   Each signs the next epoch's digest ({@link epochDigest}) after checking the step itself
 *   ({@link approveEpochProblem} in ./approve.ts).
 * - **What one step may change:** exactly one node's identity (peer id, address, signing key); its id,
 *   slot and role stay, every other identity stays, the retired identity is kept in `retired` with
 *   the last seq of its log and the time it was retired.
 * - **How a node checks it:** at start against the membership it accepted before (stored in its own
 *   LevelDB), with {@link membershipChangeProblem}: the same epoch must name the same identities, the
 *   next epoch must be one valid step carrying `threshold` approvals from the previous members, and an
 *   older epoch is refused (a rollback would let the retired key back in).
 */
import { canonicalJson } from '../replication/canonical-json.ts';
import { isCoordinatorEntry, type ClusterDescriptor, type ClusterNodeEntry, type RetiredIdentity } from '../replication/ports.ts';
import { fromHex, recoverAddress, taggedHash, utf8 } from '../../crypto/index.ts';

/** What trust depends on in a node entry: its name, slot, keys and role; never its addresses. */
function identityOf(n: ClusterNodeEntry): Record<string, unknown> {
  return { id: n.id, slot: n.slot, peerId: n.peerId, nodeAddress: n.nodeAddress, signingPublicKey: n.signingPublicKey, coordinator: isCoordinatorEntry(n) };
}

function retiredIdentityOf(r: RetiredIdentity): Record<string, unknown> {
  return { ...identityOf(r), epoch: r.epoch, lastSeq: r.lastSeq, retiredAt: r.retiredAt };
}

/** The identities of a descriptor, in a canonical form (nodes sorted by id). */
function identitiesOf(d: ClusterDescriptor): string {
  const nodes = [...d.nodes].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)).map(identityOf);
  return canonicalJson({ clusterId: d.clusterId, size: d.size, threshold: d.threshold, epoch: d.epoch ?? 0, nodes, retired: (d.retired ?? []).map(retiredIdentityOf) });
}

/**
 * The digest members sign to approve an epoch: the cluster id, shape, epoch and every identity (not
 * the addresses, which `quorumkeep cluster set-address` may change later without a new epoch).
 */
export function epochDigest(d: ClusterDescriptor): Uint8Array {
  return taggedHash('quorumkeep/cluster-epoch/v1', utf8(identitiesOf(d)));
}

/** True when two descriptors name the same identities at the same epoch (addresses aside). */
export function sameMembership(a: ClusterDescriptor, b: ClusterDescriptor): boolean {
  return identitiesOf(a) === identitiesOf(b);
}

/** The replacement `next` makes over `prev`: the retired identity and its successor. */
export interface EpochStep {
  retired: RetiredIdentity;
  successor: ClusterNodeEntry;
}

/**
 * Why `next` is not one valid replacement step after `prev` (approvals aside), or the step it makes.
 */
export function epochStepOf(prev: ClusterDescriptor, next: ClusterDescriptor): EpochStep | string {
  if (next.clusterId !== prev.clusterId || next.size !== prev.size || next.threshold !== prev.threshold) return 'the cluster id, size and threshold cannot change';
  const epoch = prev.epoch ?? 0;
  if ((next.epoch ?? 0) !== epoch + 1) return `epoch ${next.epoch ?? 0} does not follow epoch ${epoch}`;
  const before = prev.retired ?? [];
  const after = next.retired ?? [];
  if (after.length !== before.length + 1 || before.some((r, i) => canonicalJson(retiredIdentityOf(r)) !== canonicalJson(retiredIdentityOf(after[i]!)))) {
    return 'a step retires exactly one identity and keeps the earlier ones';
  }
  const retired = after[after.length - 1]!;
  if (retired.epoch !== epoch + 1) return `the identity retired by epoch ${epoch + 1} is marked epoch ${retired.epoch}`;
  const old = prev.nodes.find((n) => n.nodeAddress === retired.nodeAddress);
  if (!old || canonicalJson(identityOf(old)) !== canonicalJson(identityOf(retired))) return `the retired identity ${retired.nodeAddress} is not a node of epoch ${epoch}`;
  const successor = next.nodes.find((n) => n.id === old.id);
  if (!successor || successor.slot !== old.slot || isCoordinatorEntry(successor) !== isCoordinatorEntry(old)) return `${old.id} keeps its id, slot and role under its new identity`;
  if (successor.nodeAddress === old.nodeAddress || successor.peerId === old.peerId) return `${old.id}'s new identity must differ from the retired one`;
  if (before.some((r) => r.nodeAddress === successor.nodeAddress || r.peerId === successor.peerId)) return `${old.id}'s new identity was retired before`;
  if (next.nodes.length !== prev.nodes.length) return 'a step neither adds nor removes nodes';
  for (const n of prev.nodes) {
    if (n.id === old.id) continue;
    const same = next.nodes.find((m) => m.id === n.id);
    if (!same || canonicalJson(identityOf(same)) !== canonicalJson(identityOf(n))) return `a step changes one identity only, and ${n.id}'s changed too`;
  }
  return { retired, successor };
}

/** Why `next`'s approvals are not `threshold` valid signatures of `prev`'s members (the retired one aside). */
export function approvalsProblem(prev: ClusterDescriptor, next: ClusterDescriptor, retired: RetiredIdentity): string | undefined {
  const digest = epochDigest(next);
  const approvers = new Set(prev.nodes.filter((n) => n.slot !== null && n.nodeAddress !== retired.nodeAddress).map((n) => n.nodeAddress));
  const valid = new Set<string>();
  for (const a of next.approvals ?? []) {
    if (!approvers.has(a.nodeAddress) || valid.has(a.nodeAddress)) continue;
    if (recoverAddress(fromHex(a.signature.slice(2)), digest) === a.nodeAddress) valid.add(a.nodeAddress);
  }
  return valid.size >= prev.threshold ? undefined : `epoch ${next.epoch ?? 0} carries ${valid.size} valid approvals from epoch ${prev.epoch ?? 0}'s members; ${prev.threshold} are needed`;
}

/**
 * Why a node that accepted `stored` (undefined: none yet) must not start on `file`, or undefined.
 * On undefined the caller stores `file` as the accepted membership.
 */
export function membershipChangeProblem(stored: ClusterDescriptor | undefined, file: ClusterDescriptor): string | undefined {
  if (!stored) return undefined;
  const have = stored.epoch ?? 0;
  const want = file.epoch ?? 0;
  if (stored.clusterId !== file.clusterId) return `the cluster file is for cluster ${file.clusterId}, but this node's store belongs to ${stored.clusterId}`;
  if (want < have) return `the cluster file is at epoch ${want}, but this node already accepted epoch ${have} (a rollback would let a retired identity back in)`;
  if (want === have) return sameMembership(stored, file) ? undefined : `the cluster file names other identities than the epoch ${have} this node accepted; a change of identity needs a new epoch (quorumkeep member replace)`;
  if (want > have + 1) return `the cluster file is at epoch ${want}, but this node is at epoch ${have}: start it on each epoch's file in turn`;
  const step = epochStepOf(stored, file);
  if (typeof step === 'string') return `epoch ${want} is not a valid step from epoch ${have}: ${step}`;
  return approvalsProblem(stored, file, step.retired);
}
