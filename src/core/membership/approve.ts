/**
 * A member's side of `quorumkeep member replace` (docs/operations.md, "Replace a member's identity"):
 * it describes the membership it runs on, and signs a proposed next epoch only when the proposal is
 * one valid step from it (./epoch.ts) that cuts nothing this member holds.
 *
 * The checks, each against this node's own view, never the proposer's word:
 * - the proposal replaces exactly one identity and changes nothing else (epochStepOf);
 * - this member is not the identity being retired (a lost or stolen key does not vote itself out);
 * - `retiredAt` is within `maxSkewMs` of this node's clock;
 * - `lastSeq` is exactly the retired origin's contiguous log here: lower would cut records this member
 *   holds; higher means this member has not caught up yet (409: retry after catch-up).
 */
import { AppError, isAppError } from '../../errors/index.ts';
import type { ClusterDescriptor, ClusterNodeEntry, EpochApproval, VersionVector } from '../replication/ports.ts';
import { epochDigest, epochStepOf } from './epoch.ts';

/** Options of {@link createEpochApprover}. */
export interface EpochApproverOptions {
  /** Largest difference between a proposal's `retiredAt` and this node's clock, ms. @default 600000 */
  maxSkewMs?: number;
}

/** Dependencies of {@link createEpochApprover}. */
export interface EpochApproverDeps {
  /** The membership this node runs on. */
  descriptor: ClusterDescriptor;
  self: ClusterNodeEntry;
  /** This node's contiguous log per origin. */
  versionVector(): VersionVector;
  /**
   * Parse a proposal as a cluster file, every cross-field rule included; throws naming the field (any
   * error becomes a `VALIDATION_FAILED`). src/node passes the cluster file's own parser.
   */
  parseProposal(value: unknown): ClusterDescriptor;
  /** Sign a 32-byte digest with this node's key: 0x + r ‖ s ‖ v hex. */
  signDigest(digest: Uint8Array): string;
  clock: () => number;
}

/** What `GET /admin/cluster` reports: the membership and how far this node holds each origin's log. */
export interface MembershipReport {
  clusterId: string;
  epoch: number;
  nodeId: string;
  nodeAddress: string;
  /** Contiguous log per origin (node address → highest seq). */
  versionVector: VersionVector;
}

/** The approver. */
export interface EpochApprover {
  report(): MembershipReport;
  /**
   * Parse and sign a proposal (a cluster file without approvals), or throw an {@link AppError}
   * (VALIDATION_FAILED / BAD_REQUEST invalid, FORBIDDEN not allowed, CONFLICT not yet or would cut).
   */
  approve(value: unknown): { approval: EpochApproval; proposal: ClusterDescriptor };
}

/** Create this member's epoch approver. */
export function createEpochApprover(options: EpochApproverOptions, deps: EpochApproverDeps): EpochApprover {
  const maxSkewMs = options.maxSkewMs ?? 600_000;
  const { descriptor, self } = deps;
  return {
    report: () => ({ clusterId: descriptor.clusterId, epoch: descriptor.epoch ?? 0, nodeId: self.id, nodeAddress: self.nodeAddress, versionVector: deps.versionVector() }),
    approve(value) {
      let proposal: ClusterDescriptor;
      try {
        proposal = deps.parseProposal(value);
      } catch (err) {
        throw isAppError(err) ? err : new AppError('VALIDATION_FAILED', (err as Error).message);
      }
      if (self.slot === null) throw new AppError('FORBIDDEN', 'only members approve a membership epoch; this node is a gateway');
      const step = epochStepOf(descriptor, proposal);
      if (typeof step === 'string') throw new AppError('BAD_REQUEST', `not a valid next epoch for this node (epoch ${descriptor.epoch ?? 0}): ${step}`);
      const { retired } = step;
      if (retired.nodeAddress === self.nodeAddress) throw new AppError('FORBIDDEN', 'a member does not approve the retirement of its own identity');
      if (Math.abs(retired.retiredAt - deps.clock()) > maxSkewMs) throw new AppError('BAD_REQUEST', `retiredAt ${new Date(retired.retiredAt).toISOString()} is more than ${maxSkewMs / 1000} s from this node's clock`);
      const held = deps.versionVector()[retired.nodeAddress] ?? 0;
      if (held > retired.lastSeq) throw new AppError('CONFLICT', `this member holds ${retired.id}'s records up to seq ${held}; lastSeq ${retired.lastSeq} would cut them`);
      if (held < retired.lastSeq) throw new AppError('CONFLICT', `this member holds ${retired.id}'s records up to seq ${held}, not yet ${retired.lastSeq}: retry once it has caught up`);
      return { approval: { nodeAddress: self.nodeAddress, signature: deps.signDigest(epochDigest(proposal)) }, proposal };
    },
  };
}
