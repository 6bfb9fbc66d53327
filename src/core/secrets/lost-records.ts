/**
 * The `lostSecret` record kind (docs/operations.md, "Data safety"; docs/security.md, "Acknowledged
 * losses"): an operator's acknowledgement that a secret's shares cannot come back — fewer than
 * `threshold` members hold one — so the members that lack it stop recovering it, return to `active`,
 * and the alarms clear. Keyed `<chainId>:<secretId>` (chain `-1` for Web2).
 *
 * Who writes it: a coordinator (`quorumkeep member acknowledge-loss`, behind the admin token).
 * Evidence: a signed statement from each of at least `size − threshold + 1` distinct members that it
 * holds no share of the secret — members are trusted for their own slot, so the statements prove that
 * at most `threshold − 1` members hold one: the secret cannot be decrypted or recovered. A coordinator
 * cannot call a healthy secret lost: it would need statements that members holding a share never
 * sign. The record changes no share, key, owner or permit: a member that holds a share keeps it and
 * releases it as before, and a decrypt is still tried — the record only names the permanent error
 * when one fails (SECRET_LOST).
 */
import { z } from 'zod';
import { fromHex, taggedHash, verifyDigest } from '../../crypto/index.ts';
import { canonicalJson } from '../replication/canonical-json.ts';
import type { RecordKindDefinition } from '../replication/kinds.ts';
import { membersOf, type ClusterDescriptor } from '../replication/ports.ts';
import { refusal } from '../replication/refusals.ts';
import { WEB2_CHAIN_ID } from '../sessions/signed-data.ts';
import { shareLabel } from './rules.ts';

/** How long before the acknowledgement a member's statement may have been signed, ms. */
export const ATTESTATION_MAX_AGE_MS = 10 * 60_000;
/** How far after the acknowledgement a statement may be dated (the writers' clocks differ), ms. */
const ATTESTATION_MAX_AHEAD_MS = 60_000;

/** The key of a secret's `lostSecret` record. */
export function lostSecretKey(chainId: number, secretId: number): string {
  return `${chainId}:${secretId}`;
}

/**
 * The digest a member signs to state that it holds no share of a secret (`label`, rules.ts) at `at`
 * (Unix ms), bound to the cluster and its slot.
 */
export function missingShareDigest(clusterId: string, label: number | string, slot: number, at: number): Uint8Array {
  return taggedHash(`quorumkeep/share-missing/v1/${clusterId}`, canonicalJson({ label: String(label), slot, at }));
}

export const missingShareAttestationSchema = z.strictObject({
  slot: z.number().int().nonnegative().max(254),
  /** When the member looked, Unix ms. */
  at: z.number().int().nonnegative(),
  /** The member's secp256k1 signature over {@link missingShareDigest}, 0x + 130 hex. */
  signature: z.string().regex(/^0x[0-9a-f]{130}$/),
});
export type MissingShareAttestation = z.infer<typeof missingShareAttestationSchema>;

export const lostSecretBodySchema = z.strictObject({
  chainId: z.union([z.literal(WEB2_CHAIN_ID), z.number().int().positive()]),
  secretId: z.number().int().positive(),
  /** When the operator acknowledged the loss, Unix ms. */
  acknowledgedAt: z.number().int().nonnegative(),
  attestations: z.array(missingShareAttestationSchema).min(1).max(255),
});
export type LostSecretBody = z.infer<typeof lostSecretBodySchema>;

/** Why a body's statements do not prove the loss, or undefined when they do. */
export function lossUnproved(descriptor: ClusterDescriptor, body: LostSecretBody): string | undefined {
  const members = membersOf(descriptor);
  const label = shareLabel(body.chainId, body.secretId);
  const slots = new Set<number>();
  for (const a of body.attestations) {
    const member = members.find((m) => m.slot === a.slot);
    if (!member) return `slot ${a.slot} is not a member`;
    if (slots.has(a.slot)) return `slot ${a.slot} twice`;
    if (a.at < body.acknowledgedAt - ATTESTATION_MAX_AGE_MS || a.at > body.acknowledgedAt + ATTESTATION_MAX_AHEAD_MS) return `slot ${a.slot}'s statement is not from the acknowledgement's time`;
    if (!verifyDigest(fromHex(a.signature.slice(2)), missingShareDigest(descriptor.clusterId, label, a.slot, a.at), fromHex(member.signingPublicKey))) return `slot ${a.slot}'s signature`;
    slots.add(a.slot);
  }
  const needed = descriptor.size - descriptor.threshold + 1;
  return slots.size < needed ? `${slots.size} members state they hold no share; ${needed} are needed` : undefined;
}

/** `lostSecret`, keyed by {@link lostSecretKey}. Every valid version says the same: the secret is lost. */
export function lostSecretKind(descriptor: ClusterDescriptor): RecordKindDefinition<LostSecretBody> {
  return {
    name: 'lostSecret',
    body: lostSecretBodySchema,
    writers: ['coordinator'],
    key: (k) => /^(-1|[1-9]\d{0,15}):[1-9]\d{0,15}$/.test(k),
    validate: (b, context) => {
      if (context.key !== lostSecretKey(b.chainId, b.secretId)) return refusal('key_mismatch');
      const problem = lossUnproved(descriptor, b);
      return problem === undefined ? undefined : refusal('loss_unattested', problem);
    },
  };
}
