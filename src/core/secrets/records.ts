/**
 * The `secret` record kind (docs/architecture.md, Records) and the associated-data labels that
 * bind every sealed or stored share to its secret, slot and (for releases) requester.
 */
import { z } from 'zod';
import { evidenceOf, type RecordKindDefinition } from '../replication/kinds.ts';
import type { ClusterDescriptor } from '../replication/ports.ts';
import { kindName } from '../replication/views.ts';
import { PRINCIPAL_ID_RE } from '../accounts/records.ts';
import { createEvidenceChecker, signedEvidenceSchema, signedStringKey, type EvidenceChecker } from '../sessions/evidence.ts';
import { WEB2_FRESHNESS_MS } from '../sessions/signed-data.ts';
import { UUID_V4_RE, type PermitBody } from '../permits/records.ts';
import { concatBytes, taggedHash, toHex, utf8 } from '../../crypto/index.ts';

/** The only secret type this service creates: an ML-KEM-768 key pair (docs/http.md, Secrets). */
export const SECRET_TYPE_MLKEM768 = 1;
/** Base64 length of a 1184-byte ML-KEM-768 public key. */
export const PUBLIC_KEY_B64_CHARS = 1580;

/** Record key of a secret: its id as 12 decimal digits, so keys sort by id. */
export function secretKey(secretId: number): string {
  return String(secretId).padStart(12, '0');
}

/** One digest per slot (hex SHA-256), at most 255. */
export const shareDigestsSchema = z.array(z.string().regex(/^[0-9a-f]{64}$/)).min(1).max(255);

/**
 * A share's digest, bound to its cluster, secret label and slot (docs/security.md, "Share
 * recovery"): public (a share is 65 uniformly random-looking bytes), so a member that rebuilt a lost
 * share can tell it is the one it had, and a helper that lied is caught.
 */
export function shareDigest(clusterId: string, label: number | string, slot: number, share: Uint8Array): string {
  return toHex(taggedHash('quorumkeep/share-digest/v1', concatBytes(utf8(`${clusterId}\n${label}\n${slot}\n`), share)));
}

export const secretBodySchema = z.strictObject({
  secretId: z.number().int().positive(),
  ownerPrincipalId: z.string().regex(PRINCIPAL_ID_RE),
  delegatePrincipalId: z.string().regex(PRINCIPAL_ID_RE).nullable(),
  clusterId: z.string().min(1).max(128),
  secretType: z.number().int().positive(),
  /** ML-KEM-768 public key, base64. */
  publicKeyCid: z.string().length(PUBLIC_KEY_B64_CHARS).regex(/^[A-Za-z0-9+/]+={0,2}$/),
  isSyncing: z.boolean(),
  createdAt: z.number().int().nonnegative(),
  updatedAt: z.number().int().nonnegative(),
  /** Each slot's {@link shareDigest}, by slot: what a recovered share is checked against. */
  shareDigests: shareDigestsSchema.optional(),
  /**
   * What authorised this version (docs/security.md): the creator's signed string, the owner's
   * setDelegate string, or the consumed permit. Every member checks it before storing.
   */
  auth: z
    .discriminatedUnion('by', [
      z.strictObject({ by: z.literal('create'), evidence: signedEvidenceSchema }),
      z.strictObject({ by: z.literal('setDelegate'), evidence: signedEvidenceSchema }),
      z.strictObject({ by: z.literal('permit'), permitId: z.string().regex(UUID_V4_RE) }),
    ])
    .optional(),
  /**
   * The setDelegate strings applied to this secret lately (their single-use keys and timestamps):
   * a member refuses a change backed by a string already listed, and a change that drops an entry
   * still young enough to be replayed. Entries older than {@link RECENT_USE_KEEP_MS} may go.
   */
  recentUses: z
    .array(z.strictObject({ key: z.string().regex(/^[0-9a-f]{64}$/), at: z.number().int().nonnegative() }))
    .max(256)
    .optional(),
});
export type SecretBody = z.infer<typeof secretBodySchema>;

/** The `secret` kind's name and body type, for typed reads of the replica (`stateView`). */
export const secretKindName = kindName<SecretBody>('secret');

/**
 * How long a setDelegate string's use is kept in the secret, ms: past twice the freshness window no
 * string can pass the freshness check at any member, so its entry is no longer needed.
 */
export const RECENT_USE_KEEP_MS = 2 * WEB2_FRESHNESS_MS;
/** Entries a change must keep: younger than this at the record's time (the keep window less clock skew). */
const RECENT_USE_MUST_KEEP_MS = RECENT_USE_KEEP_MS - 5 * 60_000;

/** Fields no change may touch once a secret exists. */
function immutableDiffers(a: SecretBody, b: SecretBody): boolean {
  return (
    a.secretId !== b.secretId ||
    a.clusterId !== b.clusterId ||
    a.secretType !== b.secretType ||
    a.publicKeyCid !== b.publicKeyCid ||
    a.createdAt !== b.createdAt ||
    a.isSyncing !== b.isSyncing ||
    (a.shareDigests ?? []).join() !== (b.shareDigests ?? []).join()
  );
}

/**
 * Why a secret version is not authorised, or undefined. `before` is the version it replaces in the
 * member's replica (undefined for a creation, or when the record loses the merge and so changes
 * nothing: then only what the evidence itself says is checked).
 */
async function authProblem(checkSignedEvidence: EvidenceChecker, b: SecretBody, before: SecretBody | undefined, context: Parameters<NonNullable<RecordKindDefinition['validate']>>[1]): Promise<string | undefined> {
  const auth = b.auth;
  if (!auth) return 'secret version without authorisation';
  if (auth.by === 'create') {
    if (before && before.publicKeyCid !== b.publicKeyCid) return 'secret already exists';
    const ev = checkSignedEvidence(auth.evidence, { parts: 4, atMs: context.atMs });
    if (typeof ev === 'string') return ev;
    if (ev.parts[1] !== '0') return 'evidence: not a create string';
    if (ev.principalId !== b.ownerPrincipalId) return 'evidence: owner is not the signing principal';
    return b.delegatePrincipalId === null ? undefined : 'a new secret has no delegate';
  }
  if (auth.by === 'setDelegate') {
    const ev = checkSignedEvidence(auth.evidence, { parts: 5, atMs: context.atMs });
    if (typeof ev === 'string') return ev;
    if (ev.parts[1] !== String(b.secretId)) return 'evidence: string names another secret';
    if ((ev.parts[4] === '' ? null : ev.parts[4]) !== b.delegatePrincipalId) return 'evidence: string names another delegate';
    if (ev.principalId !== b.ownerPrincipalId) return 'evidence: signer is not the owner';
    if (before && (immutableDiffers(before, b) || before.ownerPrincipalId !== b.ownerPrincipalId)) return 'setDelegate changes more than the delegate';
    // One string, one change: the string's use is recorded in the version it made.
    const key = signedStringKey('setDelegate', ev.parts);
    if (!b.recentUses?.some((u) => u.key === key)) return 'setDelegate does not record its string';
    if (before?.recentUses?.some((u) => u.key === key)) return 'setDelegate string already used';
    return undefined;
  }
  // A consumed transfer or delegate permit, travelling in the same batch or already held.
  const permit = (await evidenceOf(context, 'permit', auth.permitId)) as PermitBody | undefined;
  if (!permit) return 'unknown permit';
  if (permit.status !== 'consumed' || permit.action === 'rotate' || permit.secretId !== b.secretId) return 'permit does not authorise this change';
  const result = permit.result ?? {};
  if (permit.action === 'transfer' ? result.newOwnerPrincipalId !== b.ownerPrincipalId || result.delegatePrincipalId !== b.delegatePrincipalId : result.delegatePrincipalId !== b.delegatePrincipalId) {
    return 'change differs from the permit result';
  }
  if (!before) return undefined;
  if (immutableDiffers(before, b)) return 'permit change touches immutable fields';
  if (before.ownerPrincipalId !== permit.principalId) return 'permit was requested by someone who does not own the secret';
  if (permit.action === 'delegate' && before.ownerPrincipalId !== b.ownerPrincipalId) return 'a delegate permit cannot change the owner';
  return undefined;
}

/**
 * `secret`, keyed by {@link secretKey}. Owner and delegate changes are last-writer-wins by HLC.
 * Written by coordinators only, each version with the authorisation that justifies it.
 */
export function secretKind(descriptor: ClusterDescriptor, evidence: EvidenceChecker = createEvidenceChecker(descriptor)): RecordKindDefinition<SecretBody> {
  return {
    name: 'secret',
    body: secretBodySchema,
    writers: ['coordinator'],
    key: (k) => /^\d{12}$/.test(k),
    validate: async (b, context) => {
      if (context.key !== secretKey(b.secretId)) return 'key mismatch';
      if (b.clusterId !== descriptor.clusterId) return 'another cluster';
      if (b.delegatePrincipalId !== null && b.delegatePrincipalId === b.ownerPrincipalId) return 'owner as delegate';
      // Checked against the version it replaces; a record that loses the merge changes nothing, so
      // only its own evidence is checked (a member that saw a later change first must still store
      // an earlier one, or replicas would differ in which records they hold).
      const { current, wins } = await context.standing();
      if (!current && b.auth?.by !== 'create') return 'unknown secret';
      const before = wins ? (current as SecretBody | undefined) : undefined;
      // No change may forget a use that could still be replayed.
      const kept = new Set((b.recentUses ?? []).map((u) => u.key));
      if (before?.recentUses?.some((u) => u.at >= context.atMs - RECENT_USE_MUST_KEEP_MS && !kept.has(u.key))) return 'change drops a recent string use';
      return authProblem(evidence, b, before, context);
    },
  };
}

/** Associated data of a share sealed to a member for storage. `secretId` is the share label (`shareLabel`). */
export function shareStoreAad(clusterId: string, secretId: number | string, slot: number): Uint8Array {
  return utf8(`quorumkeep/share-store/v1\n${clusterId}\n${secretId}\n${slot}`);
}

/** Associated data of a share encrypted at rest under a member's storage key. */
export function shareAtRestAad(clusterId: string, secretId: number | string, slot: number): Uint8Array {
  return utf8(`quorumkeep/share-at-rest/v1\n${clusterId}\n${secretId}\n${slot}`);
}

/** Associated data of a share released to a coordinator for one decrypt. */
export function shareReleaseAad(clusterId: string, secretId: number | string, slot: number, requester: string): Uint8Array {
  return utf8(`quorumkeep/share-release/v1\n${clusterId}\n${secretId}\n${slot}\n${requester}`);
}
