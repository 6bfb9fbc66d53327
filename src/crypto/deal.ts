/**
 * The crypto of dealing a secret's key (src/core/secrets/dealing.ts; docs/architecture.md, Keys and
 * crypto), as one operation the request crypto thread can run (./request-ops.ts, `deal`): the seed's
 * ML-KEM-768 public key, its Shamir shares at x = slot + 1, each sealed to its member (one ephemeral
 * key for the deal's boxes: ./sealed-box.ts, `sealToMany`) and digested.
 * What the boxes and digests are bound to (cluster, secret, slot) comes in as bytes from the caller,
 * so this layer knows nothing of secrets.
 */
import { concatBytes, zeroize } from './bytes.ts';
import { taggedHash } from './hash.ts';
import { mlkemPublicKeyFromSeed } from './mlkem.ts';
import { sealToMany } from './sealed-box.ts';
import { splitSecretForSlots } from './shamir.ts';

/** One member's share of a deal: where it goes and what it is bound to. */
export interface DealRecipient {
  slot: number;
  /** The member's secp256k1 signing public key (33 or 65 bytes). */
  publicKey: Uint8Array;
  /** Associated data of its sealed box. */
  aad: Uint8Array;
  /** Its digest is `taggedHash(digestTag, digestPrefix ‖ share)`. */
  digestPrefix: Uint8Array;
}

/** A dealt key: its public key, and per recipient (in the order given) the sealed share and its digest. */
export interface DealtShares {
  publicKey: Uint8Array;
  boxes: Uint8Array[];
  digests: Uint8Array[];
}

/**
 * Deal `seed` to `recipients`, any `threshold` of whose shares rebuild it. The shares are zeroed; the
 * seed is the caller's to zero. Throws a TypeError for a recipient key that is not a curve point.
 */
export function dealShares(seed: Uint8Array, threshold: number, recipients: readonly DealRecipient[], digestTag: string): DealtShares {
  const publicKey = mlkemPublicKeyFromSeed(seed);
  const shares = splitSecretForSlots(seed, recipients.map((r) => r.slot), threshold);
  try {
    return {
      publicKey,
      boxes: sealToMany(recipients.map((r, i) => ({ publicKey: r.publicKey, plaintext: shares[i]!, aad: r.aad }))),
      digests: recipients.map((r, i) => taggedHash(digestTag, concatBytes(r.digestPrefix, shares[i]!))),
    };
  } finally {
    zeroize(...shares);
  }
}
