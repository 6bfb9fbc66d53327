/**
 * The `secret` record kind (docs/architecture.md, Records) and the associated-data labels that
 * bind every sealed or stored share to its secret, slot and (for releases) requester.
 */
import { z } from 'zod';
import type { RecordContext, RecordKindDefinition } from '../replication/kinds.ts';
import type { ClusterDescriptor } from '../replication/ports.ts';
import { refusal, type RecordRefusal } from '../replication/refusals.ts';
import { checkVersion, consumedPermitBefore, logRefSchema, onlyChanged, versionSchema, type LogRef, type Transition } from '../replication/versions.ts';
import { kindName } from '../replication/views.ts';
import { PRINCIPAL_ID_RE } from '../accounts/records.ts';
import { createEvidenceChecker, evidenceRefusal, principalIsCurrent, sessionLiveAt, signedEvidenceSchema, signedStringKey, type CheckedEvidence, type EvidenceChecker, type SignedEvidence } from '../sessions/evidence.ts';
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

/** The tag of {@link shareDigest}. */
export const SHARE_DIGEST_TAG = 'quorumkeep/share-digest/v1';

/**
 * A share's digest, bound to its cluster, secret label and slot (docs/security.md, "Share
 * recovery"): public (a share is 65 uniformly random-looking bytes), so a member that rebuilt a lost
 * share can tell it is the one it had, and a helper that lied is caught.
 */
export function shareDigest(clusterId: string, label: number | string, slot: number, share: Uint8Array): string {
  return toHex(taggedHash(SHARE_DIGEST_TAG, concatBytes(utf8(shareDigestPrefix(clusterId, label, slot)), share)));
}

/** What {@link shareDigest} hashes before the share. */
export function shareDigestPrefix(clusterId: string, label: number | string, slot: number): string {
  return `${clusterId}\n${label}\n${slot}\n`;
}

/** The transitions of a secret (docs/security.md, "Transitions"). */
export const SECRET_CHANGES = ['create', 'setDelegate', 'permit'] as const;

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
  /** The version: its number, the version it replaces, its transition (src/core/replication/versions.ts). */
  v: versionSchema(SECRET_CHANGES),
  /**
   * The evidence of the transition (docs/security.md): the creator's signed create string, or the
   * owner's setDelegate string — each with its session and the version of the signer's principal slot
   * 0 held when it wrote this one (`principal`) — or the consumed permit, which is the record right
   * before this one in slot 0's log.
   */
  auth: z.discriminatedUnion('by', [
    z.strictObject({ by: z.literal('create'), evidence: signedEvidenceSchema, principal: logRefSchema }),
    z.strictObject({ by: z.literal('setDelegate'), evidence: signedEvidenceSchema, principal: logRefSchema }),
    z.strictObject({ by: z.literal('permit'), permitId: z.string().regex(UUID_V4_RE) }),
  ]),
  /**
   * The setDelegate strings applied to this secret lately (their single-use keys and timestamps):
   * a string already listed authorises nothing, and no version may drop an entry still young enough
   * to be replayed. Entries older than {@link RECENT_USE_KEEP_MS} may go.
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
/** Entries a version must keep: younger than this at the version's time (the keep window less clock skew). */
const RECENT_USE_MUST_KEEP_MS = RECENT_USE_KEEP_MS - 5 * 60_000;

/**
 * Whether `after` carries `before`'s recent uses: every entry still young at `atMs` is kept, and the
 * only new entry is `added` (the string this version used), which `before` must not list.
 */
function usesCarried(before: SecretBody, after: SecretBody, atMs: number, added?: string): RecordRefusal | undefined {
  const had = new Set((before.recentUses ?? []).map((u) => u.key));
  if (added !== undefined && had.has(added)) return refusal('string_used');
  const kept = new Set((after.recentUses ?? []).map((u) => u.key));
  if ((before.recentUses ?? []).some((u) => u.at >= atMs - RECENT_USE_MUST_KEEP_MS && !kept.has(u.key))) return refusal('use_dropped');
  for (const k of kept) if (!had.has(k) && k !== added) return refusal('fields_changed', 'recentUses');
  if (added !== undefined && !kept.has(added)) return refusal('fields_changed', 'the string is not recorded');
  return undefined;
}

/** What a client's string in a secret's version says, checked: the evidence, and its session live at the version's principal. */
async function signedBy(checkSignedEvidence: EvidenceChecker, auth: { evidence: SignedEvidence; principal: LogRef }, parts: 4 | 5, context: RecordContext): Promise<CheckedEvidence | RecordRefusal> {
  const ev = checkSignedEvidence(auth.evidence, { parts, atMs: context.atMs });
  if (typeof ev === 'string') return evidenceRefusal(ev);
  return (await sessionLiveAt(context, auth.principal, auth.evidence.session)) ?? (await principalIsCurrent(context, ev.principalId, auth.principal)) ?? ev;
}


/**
 * The consumed transfer or delegate permit that authorises `after`: the record right before it in
 * slot 0's log, consumed, for this secret and requested by its owner — one permit, one change.
 */
async function permitOf(after: SecretBody, before: SecretBody, context: RecordContext): Promise<PermitBody | RecordRefusal> {
  const auth = after.auth as { by: 'permit'; permitId: string };
  const consumed = await consumedPermitBefore(context, auth.permitId);
  if (!('body' in consumed)) return consumed;
  const permit = consumed.body as unknown as PermitBody;
  if (permit.action === 'rotate' || permit.secretId !== after.secretId) return refusal('permit_mismatch');
  if (permit.principalId !== before.ownerPrincipalId) return refusal('not_owner', 'the permit was requested by someone who does not own the secret');
  return permit;
}

/**
 * The transitions of a secret (docs/security.md, "Transitions"). Every version but the first keeps
 * the secret's id, cluster, type, key, syncing flag, creation time and share digests.
 */
function secretTransitions(evidence: EvidenceChecker, descriptor: ClusterDescriptor): Record<(typeof SECRET_CHANGES)[number], Transition<SecretBody>> {
  return {
    // A new secret: its creator's create string (the session's principal owns it), dealt by a coordinator.
    create: {
      creates: true,
      async check({ after, context, vouchedBy }) {
        if (after.auth.by !== 'create') return refusal('unknown_transition', 'auth');
        if (!vouchedBy) return refusal('bad_vouch', 'a secret is dealt by a coordinator');
        if (after.clusterId !== descriptor.clusterId) return refusal('another_cluster');
        if (after.delegatePrincipalId !== null || after.isSyncing || (after.recentUses?.length ?? 0) > 0) return refusal('fields_changed', 'a new secret has no delegate and no uses');
        const ev = await signedBy(evidence, after.auth, 4, context);
        if (!('parts' in ev)) return ev;
        if (ev.parts[1] !== '0') return refusal('evidence_invalid', 'not a create string');
        return ev.principalId === after.ownerPrincipalId ? undefined : refusal('not_owner', 'the owner is not the signing principal');
      },
    },
    // The owner's setDelegate string naming exactly this delegate, used once.
    setDelegate: {
      async check({ before, after, context }) {
        if (after.auth.by !== 'setDelegate') return refusal('unknown_transition', 'auth');
        const fields = onlyChanged(before!, after, ['delegatePrincipalId', 'updatedAt', 'auth', 'recentUses']);
        if (fields) return fields;
        const ev = await signedBy(evidence, after.auth, 5, context);
        if (!('parts' in ev)) return ev;
        if (ev.parts[1] !== String(after.secretId)) return refusal('names_another_secret');
        if ((ev.parts[4] === '' ? null : ev.parts[4]) !== after.delegatePrincipalId) return refusal('names_another_value', 'another delegate');
        if (ev.principalId !== before!.ownerPrincipalId) return refusal('not_owner', 'the signer is not the owner');
        return usesCarried(before!, after, context.atMs, signedStringKey('setDelegate', ev.parts));
      },
    },
    // A transfer or delegate permit the owner requested and confirmed, consumed right before.
    permit: {
      async check({ before, after, context }) {
        if (after.auth.by !== 'permit') return refusal('unknown_transition', 'auth');
        const fields = onlyChanged(before!, after, ['ownerPrincipalId', 'delegatePrincipalId', 'updatedAt', 'auth', 'recentUses']);
        if (fields) return fields;
        const permit = await permitOf(after, before!, context);
        if (!('permitId' in permit)) return permit;
        const value = JSON.parse(permit.payload) as Record<string, string | null>;
        const result = permit.result ?? {};
        if (permit.action === 'transfer') {
          const owner = value.newOwnerPrincipalId;
          const delegate = before!.delegatePrincipalId === owner ? null : before!.delegatePrincipalId;
          if (after.ownerPrincipalId !== owner || after.delegatePrincipalId !== delegate || result.delegatePrincipalId !== delegate) return refusal('result_mismatch');
        } else if (after.ownerPrincipalId !== before!.ownerPrincipalId || after.delegatePrincipalId !== value.delegatePrincipalId) {
          return refusal('result_mismatch');
        }
        return usesCarried(before!, after, context.atMs);
      },
    },
  };
}

/**
 * `secret`, keyed by {@link secretKey}: a sequenced kind (src/core/replication/versions.ts). Slot 0
 * writes every version, each one of {@link SECRET_CHANGES} from the version it names, with the
 * evidence that authorises exactly that change; the latest version is the secret.
 */
export function secretKind(descriptor: ClusterDescriptor, evidence: EvidenceChecker = createEvidenceChecker(descriptor)): RecordKindDefinition<SecretBody> {
  const transitions = secretTransitions(evidence, descriptor);
  return {
    name: 'secret',
    body: secretBodySchema,
    writers: ['slot0'],
    sequenced: true,
    key: (k) => /^\d{12}$/.test(k),
    rank: (b) => b.v.n,
    signedStrings: (b) => {
      const e = (b as { auth?: { evidence?: { data?: unknown; signature?: unknown } } } | null)?.auth?.evidence;
      return typeof e?.data === 'string' && typeof e.signature === 'string' ? [{ data: e.data, signature: e.signature }] : [];
    },
    validate: async (b, context) => {
      if (context.key !== secretKey(b.secretId)) return refusal('key_mismatch');
      if (b.delegatePrincipalId !== null && b.delegatePrincipalId === b.ownerPrincipalId) return refusal('owner_as_delegate');
      if (b.auth.by !== b.v.change) return refusal('unknown_transition', 'auth does not match the change');
      return checkVersion(descriptor, transitions, b, context);
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
