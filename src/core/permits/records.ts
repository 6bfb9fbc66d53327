/**
 * The `permit` record kind (docs/permits.md; docs/architecture.md, Records): a sequenced kind, written
 * by slot 0 when it is requested (`pending`), when its token is reissued, and once more when it is
 * consumed — the consumption is the last version, so a consumed permit stays consumed.
 */
import { z } from 'zod';
import type { RecordContext, RecordKindDefinition } from '../replication/kinds.ts';
import { kindName } from '../replication/views.ts';
import { isCoordinatorEntry, signerAt, type ClusterDescriptor } from '../replication/ports.ts';
import { refusal, type RecordRefusal } from '../replication/refusals.ts';
import { checkVersion, logRefSchema, onlyChanged, versionSchema, type Transition } from '../replication/versions.ts';
import { PRINCIPAL_ID_RE } from '../accounts/records.ts';
import { createEvidenceChecker, evidenceRefusal, principalIsCurrent, sessionLiveAt, signedEvidenceSchema, type EvidenceChecker } from '../sessions/evidence.ts';
import { fromHex, isEd25519PublicKeyHex, recoverAddress, sha256Hex, taggedHash, utf8 } from '../../crypto/index.ts';
import { PERMIT_ACTIONS, parsePayload, uuidV4Of, type PermitActionName } from './payload.ts';

export { PERMIT_ACTIONS, type PermitActionName } from './payload.ts';

/** requestIds: lowercase UUIDv4 (docs/permits.md). Permit ids use the same form. */
export const UUID_V4_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** The transitions of a permit (docs/security.md, "Transitions"). */
export const PERMIT_CHANGES = ['request', 'reissue', 'consume'] as const;

export const permitBodySchema = z.strictObject({
  permitId: z.string().regex(UUID_V4_RE),
  requestId: z.string().regex(UUID_V4_RE),
  action: z.enum(PERMIT_ACTIONS),
  /** The acting principal (the account owner). */
  principalId: z.string().regex(PRINCIPAL_ID_RE),
  /** 0 for rotate. */
  secretId: z.number().int().nonnegative(),
  /** The exact compact JSON text the client hashed. */
  payload: z.string().min(2).max(8192),
  /** Lowercase hex SHA-256 of the payload's UTF-8 bytes. */
  payloadDigest: z.string().regex(/^[0-9a-f]{64}$/),
  /** SHA-256 (hex) of the emailed one-time token; the token itself is never stored. */
  tokenHash: z.string().regex(/^[0-9a-f]{64}$/),
  createdAt: z.number().int().nonnegative(),
  expiresAt: z.number().int().nonnegative(),
  status: z.enum(['pending', 'consumed']),
  consumedAt: z.number().int().nonnegative().nullable(),
  /** The applied change (docs/permits.md: `result`), set when consumed: what the owner's payload fixed. */
  result: z.record(z.string(), z.union([z.string().max(512), z.number(), z.null()])).nullable(),
  /**
   * The coordinator that checked the request (credentials for rotate, the session string for
   * transfer/delegate) and asked slot 0 to create it: its secp256k1 signature over
   * {@link permitRequestDigest}.
   */
  requestedBy: z.strictObject({ nodeAddress: z.string().regex(/^0x[0-9a-f]{40}$/), signature: z.string().regex(/^0x[0-9a-f]{130}$/) }),
  /** transfer/delegate: the owner's signed 8-part string (4-part for the legacy form) with its session. */
  auth: signedEvidenceSchema.nullable(),
  /** transfer/delegate: the version of the owner's principal slot 0 held when it wrote the request. */
  authPrincipal: logRefSchema.nullable().optional(),
  /** Set with consumption: the emailed token itself, whose SHA-256 every member checks against `tokenHash`. */
  token: z.string().min(16).max(128).nullable(),
  /** The version: its number, the version it replaces, its transition (src/core/replication/versions.ts). */
  v: versionSchema(PERMIT_CHANGES),
});
export type PermitBody = z.infer<typeof permitBodySchema>;

/** The `permit` kind's name and body type, for typed reads of the replica (`stateView`). */
export const permitKindName = kindName<PermitBody>('permit');

/**
 * A request's permit id: a UUIDv4 drawn from the cluster and the requestId, so one request is one
 * permit — a second permit for a request would be a second first version of the same key, which no
 * member stores as a successor (docs/security.md, "Transitions").
 */
export function permitIdFor(clusterId: string, requestId: string): string {
  return uuidV4Of(`quorumkeep/permit-id/v1\n${clusterId}\n${requestId}`);
}

/** What the requesting coordinator signs: everything slot 0 turns into the pending permit. */
export function permitRequestDigest(clusterId: string, p: Pick<PermitBody, 'requestId' | 'action' | 'principalId' | 'secretId' | 'payloadDigest' | 'tokenHash'>): Uint8Array {
  return taggedHash('quorumkeep/permit-request/v1', utf8([clusterId, p.requestId, p.action, p.principalId, p.secretId, p.payloadDigest, p.tokenHash].join('\n')));
}

/** The one value a permit's payload names, or undefined when the payload is not one of its action's. */
export function payloadValue(action: PermitActionName, payload: string): string | null | undefined {
  try {
    return parsePayload(action, payload, isEd25519PublicKeyHex);
  } catch {
    return undefined;
  }
}

/**
 * The `result` a consumption records, as far as the owner's payload fixes it: rotate `{ principalId,
 * newPublicKey }`, delegate `{ secretId, delegatePrincipalId }`, transfer `{ secretId,
 * newOwnerPrincipalId }` and the delegate the secret keeps (checked with the secret's version).
 */
function resultProblem(p: PermitBody, result: Record<string, unknown>): RecordRefusal | undefined {
  const value = payloadValue(p.action, p.payload);
  const fixed: Record<string, unknown> =
    p.action === 'rotate' ? { principalId: p.principalId, newPublicKey: value } : p.action === 'delegate' ? { secretId: p.secretId, delegatePrincipalId: value } : { secretId: p.secretId, newOwnerPrincipalId: value };
  const allowed = p.action === 'transfer' ? [...Object.keys(fixed), 'delegatePrincipalId'] : Object.keys(fixed);
  if (Object.keys(result).some((k) => !allowed.includes(k))) return refusal('result_mismatch');
  if (Object.entries(fixed).some(([k, x]) => result[k] !== x)) return refusal('result_mismatch');
  if (p.action === 'transfer' && !(result.delegatePrincipalId === null || (typeof result.delegatePrincipalId === 'string' && PRINCIPAL_ID_RE.test(result.delegatePrincipalId)))) return refusal('result_mismatch');
  return undefined;
}

/** Why the request of a pending permit fails its checks, or undefined. */
async function requestProblem(descriptor: ClusterDescriptor, checkSignedEvidence: EvidenceChecker, b: PermitBody, context: RecordContext, acceptLegacy: boolean): Promise<RecordRefusal | undefined> {
  if (b.status !== 'pending' || b.consumedAt !== null || b.result !== null || b.token !== null) return refusal('fields_changed', 'a requested permit is pending');
  if (b.permitId !== permitIdFor(descriptor.clusterId, b.requestId)) return refusal('key_mismatch', 'not the permit of its request');
  if (b.expiresAt <= b.createdAt) return refusal('bad_time', 'expires before created');
  if (b.action === 'rotate' ? b.secretId !== 0 : b.secretId === 0) return refusal('payload_mismatch', 'secretId does not fit the action');
  if (sha256Hex(b.payload) !== b.payloadDigest || payloadValue(b.action, b.payload) === undefined) return refusal('payload_mismatch');
  const by = b.requestedBy;
  const node = signerAt(descriptor, by.nodeAddress, b.createdAt);
  if (!node || !isCoordinatorEntry(node)) return refusal('bad_request_signature', 'not requested by a coordinator');
  if (recoverAddress(fromHex(by.signature.slice(2)), permitRequestDigest(descriptor.clusterId, b)) !== by.nodeAddress) return refusal('bad_request_signature');
  if (b.action === 'rotate') return b.auth || b.authPrincipal ? refusal('fields_changed', 'rotate carries no session string') : undefined;
  if (!b.auth || !b.authPrincipal) return refusal('evidence_invalid', 'transfer and delegate carry the owner\'s signed string');
  const legacy = b.auth.data.split('_').length === 4;
  // A 4-part string is signed for other routes too (encrypt-file, job status, public key): it
  // authorises a permit only where this node's operator accepts the legacy form.
  if (legacy && !acceptLegacy) return refusal('legacy_refused');
  const ev = checkSignedEvidence(b.auth, { parts: legacy ? 4 : 8, atMs: context.atMs });
  if (typeof ev === 'string') return evidenceRefusal(ev);
  if (ev.parts[1] !== String(b.secretId)) return refusal('names_another_secret');
  if (ev.principalId !== b.principalId) return refusal('not_owner', 'the signer is not the requesting principal');
  if (!legacy && (ev.parts[4] !== 'permit' || ev.parts[5] !== b.requestId || ev.parts[6] !== b.action || ev.parts[7] !== b.payloadDigest)) return refusal('names_another_value', 'another request');
  return (await sessionLiveAt(context, b.authPrincipal, b.auth.session)) ?? principalIsCurrent(context, b.principalId, b.authPrincipal);
}

/** The transitions of a permit (docs/security.md, "Transitions"); a consumed permit has none. */
function permitTransitions(descriptor: ClusterDescriptor, evidence: EvidenceChecker, acceptLegacy: boolean): Record<(typeof PERMIT_CHANGES)[number], Transition<PermitBody>> {
  return {
    // Slot 0 creates it for a coordinator that checked the request (and, for a secret, the owner's string).
    request: { creates: true, check: ({ after, context }) => requestProblem(descriptor, evidence, after, context, acceptLegacy) },
    // A replayed request whose link never went out gets a new token: only the token's hash and the vouch over it change.
    reissue: {
      check({ before, after, context }) {
        if (before!.status !== 'pending') return refusal('terminal_state');
        if (context.atMs >= before!.expiresAt) return refusal('permit_expired');
        const fields = onlyChanged(before!, after, ['tokenHash', 'requestedBy']);
        if (fields) return fields;
        const node = signerAt(descriptor, after.requestedBy.nodeAddress, context.atMs);
        if (!node || !isCoordinatorEntry(node) || recoverAddress(fromHex(after.requestedBy.signature.slice(2)), permitRequestDigest(descriptor.clusterId, after)) !== after.requestedBy.nodeAddress) return refusal('bad_request_signature');
        return undefined;
      },
    },
    // The emailed token, before the permit expires; the result the owner's payload fixed. Terminal.
    consume: {
      check({ before, after, context }) {
        if (before!.status !== 'pending') return refusal('terminal_state');
        if (after.status !== 'consumed' || after.consumedAt === null || after.result === null) return refusal('fields_changed', 'a consumption sets status, time and result');
        const fields = onlyChanged(before!, after, ['status', 'consumedAt', 'result', 'token']);
        if (fields) return fields;
        if (typeof after.token !== 'string' || sha256Hex(after.token) !== before!.tokenHash) return refusal('token_mismatch');
        if (after.consumedAt > after.expiresAt || context.atMs > after.expiresAt) return refusal('permit_expired');
        return resultProblem(after, after.result);
      },
    },
  };
}

/** Options of {@link permitKind}. */
export interface PermitKindOptions {
  /** This node accepts transfer/delegate permits backed by the legacy 4-part string (`permits.acceptLegacy`). @default false */
  acceptLegacy?: boolean;
}

/**
 * `permit`, keyed by permitId: a sequenced kind (src/core/replication/versions.ts). Slot 0 writes the
 * request (with the requesting coordinator's signature and, for transfer/delegate, the owner's signed
 * string), a token reissue, and the consumption (with the emailed token, and — for transfer,
 * delegate and rotate — the change it makes right after it, in the same batch). A consumed permit
 * never changes again.
 */
export function permitKind(descriptor: ClusterDescriptor, evidence: EvidenceChecker = createEvidenceChecker(descriptor), options: PermitKindOptions = {}): RecordKindDefinition<PermitBody> {
  const transitions = permitTransitions(descriptor, evidence, options.acceptLegacy === true);
  return {
    name: 'permit',
    body: permitBodySchema,
    writers: ['slot0'],
    sequenced: true,
    key: (k) => UUID_V4_RE.test(k),
    rank: (b) => b.v.n,
    validate: (b, context) => (context.key !== b.permitId ? refusal('key_mismatch') : checkVersion(descriptor, transitions, b, context)),
  };
}
