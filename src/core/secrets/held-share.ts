/**
 * A member's own share of a secret as it holds it (docs/security.md, Share recovery): opened from its
 * share store with its storage key and, when the secret's record names a digest for this slot,
 * checked against it. A share that is not this slot's — stored before the record existed, or before
 * members checked stores against the digest — is then never released, contributed to a recovery,
 * or counted as held.
 */
import { refusal } from '../../errors/index.ts';
import { constantTimeEqual, zeroize } from '../../crypto/index.ts';
import type { NodeKeyring, ShareStore } from './ports.ts';
import { shareAtRestAad, shareDigest } from './records.ts';

/** Whether `share` is the one `digest` (a record's `shareDigests[slot]`) names for `slot`. */
export function isSlotShare(clusterId: string, label: number | string, slot: number, share: Uint8Array, digest: string): boolean {
  return constantTimeEqual(shareDigest(clusterId, label, slot, share), digest);
}

/** Where a member's shares are, and whose they are. */
export interface HeldShares {
  shares: Pick<ShareStore, 'get'>;
  keyring: Pick<NodeKeyring, 'decryptAtRest'>;
  clusterId: string;
  /** This member's slot. */
  slot: number;
}

/** The share held (the caller zeroes it), or why there is none: nothing stored, a box that does not open, or a share other than the digest's. */
export type HeldShare = { share: Uint8Array } | { missing: 'none' | 'unreadable' | 'mismatch' };

/** Read this member's share of `label`; `digest` is the record's for this slot, when it has one. */
export async function readHeldShare(held: HeldShares, label: number | string, digest: string | undefined): Promise<HeldShare> {
  const box = await held.shares.get(label);
  if (!box) return { missing: 'none' };
  const share = held.keyring.decryptAtRest(box, shareAtRestAad(held.clusterId, label, held.slot));
  if (!share) return { missing: 'unreadable' };
  if (digest !== undefined && !isSlotShare(held.clusterId, label, held.slot, share, digest)) {
    zeroize(share);
    return { missing: 'mismatch' };
  }
  return { share };
}

/** This member's share of `label` for a release or a recovery contribution (the caller zeroes it); a refusal when it holds none it may use. */
export async function requireHeldShare(held: HeldShares, label: number | string, digest: string | undefined): Promise<Uint8Array> {
  const read = await readHeldShare(held, label, digest);
  if ('share' in read) return read.share;
  if (read.missing === 'none') throw refusal('NOT_FOUND', 'no_share', 'this member holds no share of the secret');
  if (read.missing === 'unreadable') throw refusal('CONFLICT', 'no_share', 'stored share does not open');
  throw refusal('CONFLICT', 'share_mismatch', "the share held does not match the secret's digest for this slot");
}
