/**
 * A member's own share as held (src/core/secrets/held-share.ts; docs/security.md, Share recovery): a
 * share that does not open, or is not the one its record's digest names, is not held — never
 * released or contributed (a refusal by code and reason), and counted missing by recovery.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { readHeldShare, requireHeldShare, type HeldShares } from '../../../../src/core/secrets/held-share.ts';
import { shareAtRestAad, shareDigest } from '../../../../src/core/secrets/records.ts';
import { decryptAtRest, encryptAtRest, toHex } from '../../../../src/crypto/index.ts';
import { refusalOf } from '../../../utils/refusal.ts';

const CLUSTER = 'qk-unit-held';
const SLOT = 3;
const LABEL = 7;
const storageKey = randomBytes(32);
const share = new Uint8Array(randomBytes(65));
const digest = shareDigest(CLUSTER, LABEL, SLOT, share);

function heldWith(box: Uint8Array | undefined): HeldShares {
  return {
    shares: { get: async (label) => (label === LABEL ? box : undefined) },
    keyring: { decryptAtRest: (b, aad) => decryptAtRest(storageKey, b, aad) },
    clusterId: CLUSTER,
    slot: SLOT,
  };
}

const stored = encryptAtRest(storageKey, share, shareAtRestAad(CLUSTER, LABEL, SLOT));

describe('a held share', () => {
  it('is the stored share when it opens and matches the digest (or no digest is known)', async () => {
    for (const known of [digest, undefined]) {
      const read = await readHeldShare(heldWith(stored), LABEL, known);
      expect('share' in read && toHex(read.share)).toBe(toHex(share));
      expect(toHex(await requireHeldShare(heldWith(stored), LABEL, known))).toBe(toHex(share));
    }
  });

  it('is missing when nothing is stored, when the box does not open, or when the share is not the digest\'s', async () => {
    expect(await readHeldShare(heldWith(undefined), LABEL, digest)).toEqual({ missing: 'none' });
    const otherSlot = encryptAtRest(storageKey, share, shareAtRestAad(CLUSTER, LABEL, SLOT + 1));
    expect(await readHeldShare(heldWith(otherSlot), LABEL, digest)).toEqual({ missing: 'unreadable' });
    expect(await readHeldShare(heldWith(stored), LABEL, shareDigest(CLUSTER, LABEL, SLOT, new Uint8Array(65)))).toEqual({ missing: 'mismatch' });
    // The digest binds the slot: this share's digest under another slot does not name it.
    expect(await readHeldShare(heldWith(stored), LABEL, shareDigest(CLUSTER, LABEL, SLOT + 1, share))).toEqual({ missing: 'mismatch' });
  });

  it('a release or a contribution without a share it may use is refused: no_share, or share_mismatch', async () => {
    expect(await refusalOf(() => requireHeldShare(heldWith(undefined), LABEL, digest))).toEqual({ code: 'NOT_FOUND', reason: 'no_share' });
    expect(await refusalOf(() => requireHeldShare(heldWith(new Uint8Array(40)), LABEL, digest))).toEqual({ code: 'CONFLICT', reason: 'no_share' });
    expect(await refusalOf(() => requireHeldShare(heldWith(stored), LABEL, 'ab'.repeat(32)))).toEqual({ code: 'CONFLICT', reason: 'share_mismatch' });
  });
});
