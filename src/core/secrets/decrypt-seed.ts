/**
 * A coordinator's side of a decrypt (docs/security.md, Share release): ask the members for their
 * shares of the secret — each checks the client's request itself (shard-handler.ts) and seals its
 * share to this coordinator — and rebuild the seed from the first threshold of them. The shares are
 * zeroed here; the seed is the caller's to check against the public key and zero.
 */
import { AppError, QuorumError } from '../../errors/index.ts';
import type { Logger } from '../../log/index.ts';
import { combineShares, fromBase64, zeroize } from '../../crypto/index.ts';
import { createMemberLoad, gatherFromMembers, memberFailures, type GatherFailure } from '../replication/gather.ts';
import type { ClusterDescriptor, MemberRpc, MembershipView, VersionVector } from '../replication/ports.ts';
import type { SignedRequest } from '../sessions/types.ts';
import type { NodeKeyring } from './ports.ts';
import { shareReleaseAad } from './records.ts';
import { memberAddresses, shareLabel } from './rules.ts';
import { shareReleaseRequest, type DecryptEnvelope } from './shard-messages.ts';
import type { ResolvedSecret } from './types.ts';

/** Why fewer than threshold members released when a retry would not help. */
export interface ReleaseShortfall {
  /** The answer. */
  error: AppError;
  /** How many members refused, when they did (absent when the chain is down). */
  refused?: number;
}

/**
 * The answer to a release short of threshold, when it is not a 503: members that hold no share (the
 * secret is lost: SECRET_LOST), members that refused outright (a string another coordinator used, no
 * right to decrypt: 403 or 400) will refuse a retry too, so once too many did for a quorum to be
 * possible, the first refusal says why; members that could not read the chain say the chain is what
 * is down (CHAIN_UNAVAILABLE with the chainId). Undefined otherwise. The first refusal's reason goes
 * with it (never into the HTTP answer).
 */
export function releaseShortfall(failures: GatherFailure[], descriptor: Pick<ClusterDescriptor, 'size' | 'threshold'>, chainId: number): ReleaseShortfall | undefined {
  const errors = failures.map((f) => f.error);
  // Members are trusted for their own slot: when more than size − threshold say they hold no share,
  // fewer than threshold do — the secret can neither be decrypted nor recovered again.
  const without = errors.filter((e) => e instanceof AppError && (e.reason === 'no_share' || e.reason === 'share_mismatch'));
  if (without.length > descriptor.size - descriptor.threshold) {
    return { refused: without.length, error: new AppError('SECRET_LOST', 'The shares of this secret are lost: fewer than threshold members hold one; it cannot be decrypted', { chainId }) };
  }
  const refusals = errors.filter((e): e is AppError => e instanceof AppError && (e.code === 'FORBIDDEN' || e.code === 'BAD_REQUEST'));
  if (refusals.length > descriptor.size - descriptor.threshold) {
    const first = refusals[0]!;
    return { refused: refusals.length, error: new AppError(first.code, `Members refused to release their shares: ${first.message}`, undefined, { reason: first.reason }) };
  }
  const chainDown = errors.find((e): e is AppError => e instanceof AppError && e.code === 'CHAIN_UNAVAILABLE');
  return chainDown ? { error: new AppError('CHAIN_UNAVAILABLE', chainDown.message, { chainId }) } : undefined;
}

/** Options of {@link createSeedRecovery}. */
export interface SeedRecoveryOptions {
  /** Deadline of one member's share release, ms. */
  shardTimeoutMs: number;
}

/** Dependencies of {@link createSeedRecovery}. */
export interface SeedRecoveryDeps {
  membership: MembershipView;
  members: MemberRpc;
  keyring: Pick<NodeKeyring, 'openBox'>;
  /** This node's version vector (sent with share requests for the catch-up gate). */
  versionVector(): VersionVector;
  /** The secrets module's logger. */
  logger: Logger;
}

/** Create the seed recovery: gather ≥ threshold released shares and combine them. */
export function createSeedRecovery(options: SeedRecoveryOptions, deps: SeedRecoveryDeps): (secret: ResolvedSecret, request: SignedRequest, envelope: DecryptEnvelope) => Promise<Uint8Array> {
  const { membership, keyring, logger: log } = deps;
  const { descriptor, self } = membership;
  const addressOf = memberAddresses(descriptor);
  // Releases spread over the members: this node's own share first, the others by calls in flight.
  const load = createMemberLoad();

  return async function recoverSeed(secret, request, envelope) {
    const slots = load.order(membership);
    const secretId = secret.secretId;
    const label = shareLabel(secret.chainId, secretId);
    const { results, failures } = await gatherFromMembers({
      slots,
      needed: descriptor.threshold,
      timeoutMs: options.shardTimeoutMs,
      load,
      call: async (slot, signal) => {
        const res = (await deps.members.call(slot, 'shard', shareReleaseRequest(secretId, request, envelope, deps.versionVector()), { signal })) as { box?: unknown; share?: unknown };
        if (slot === self.slot && res?.share instanceof Uint8Array) return res.share;
        if (typeof res?.box !== 'string') throw new Error('malformed release');
        const share = await keyring.openBox(fromBase64(res.box), shareReleaseAad(descriptor.clusterId, label, slot, self.nodeAddress));
        if (!share) throw new Error('released share does not open');
        return share;
      },
    });
    const shares = results.map((r) => r.value);
    try {
      if (shares.length < descriptor.threshold) {
        const shortfall = releaseShortfall(failures, descriptor, secret.chainId);
        if (shortfall?.refused !== undefined) log.info({ secretId, refused: shortfall.refused }, 'members refused the share release');
        if (shortfall) throw shortfall.error;
        const failed = memberFailures(membership, failures);
        log.warn({ secretId, released: shares.length, failed }, 'fewer than threshold shares released');
        throw new QuorumError(`Only ${shares.length} members released their share; ${descriptor.threshold} are needed`, results.map((r) => addressOf(r.slot)), failed);
      }
      const seed = await combineShares(shares);
      return seed;
    } finally {
      zeroize(...shares);
    }
  };
}
