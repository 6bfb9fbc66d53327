/**
 * The `permit` record kind (docs/permits.md; docs/architecture.md, Records). A permit is written once
 * by slot 0 when it is created (`pending`) and once more when it is consumed; consumed outranks
 * pending, so a consumed permit stays consumed whatever the delivery order.
 */
import { z } from 'zod';
import type { RecordKindDefinition } from '../replication/kinds.ts';
import { kindName } from '../replication/views.ts';
import { isCoordinatorEntry, signerAt, type ClusterDescriptor } from '../replication/ports.ts';
import { PRINCIPAL_ID_RE } from '../accounts/records.ts';
import { createEvidenceChecker, signedEvidenceSchema, type EvidenceChecker } from '../sessions/evidence.ts';
import { fromHex, recoverAddress, sha256Hex, taggedHash, utf8 } from '../../crypto/index.ts';

/** The three admin changes a permit can carry. */
export const PERMIT_ACTIONS = ['rotate', 'transfer', 'delegate'] as const;
export type PermitActionName = (typeof PERMIT_ACTIONS)[number];

/** requestIds: lowercase UUIDv4 (docs/permits.md). Permit ids use the same form. */
export const UUID_V4_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

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
  /** The applied change (docs/permits.md: `result`), set when consumed. */
  result: z.record(z.string(), z.union([z.string().max(512), z.number(), z.null()])).nullable(),
  /**
   * The coordinator that checked the request (credentials for rotate, the session string for
   * transfer/delegate) and asked slot 0 to create it: its secp256k1 signature over
   * {@link permitRequestDigest}.
   */
  requestedBy: z.strictObject({ nodeAddress: z.string().regex(/^0x[0-9a-f]{40}$/), signature: z.string().regex(/^0x[0-9a-f]{130}$/) }).optional(),
  /** transfer/delegate: the owner's signed 8-part string (4-part for the legacy form) with its session. */
  auth: signedEvidenceSchema.nullable().optional(),
  /** Set with consumption: the emailed token itself, whose SHA-256 every member checks against `tokenHash`. */
  token: z.string().min(16).max(128).nullable().optional(),
});
export type PermitBody = z.infer<typeof permitBodySchema>;

/** The `permit` kind's name and body type, for typed reads of the replica (`stateView`). */
export const permitKindName = kindName<PermitBody>('permit');

/** What the requesting coordinator signs: everything slot 0 turns into the pending permit. */
export function permitRequestDigest(clusterId: string, p: Pick<PermitBody, 'requestId' | 'action' | 'principalId' | 'secretId' | 'payloadDigest' | 'tokenHash'>): Uint8Array {
  return taggedHash('quorumkeep/permit-request/v1', utf8([clusterId, p.requestId, p.action, p.principalId, p.secretId, p.payloadDigest, p.tokenHash].join('\n')));
}

/** Fields that never change between a permit's pending and consumed records. */
const IMMUTABLE: ReadonlyArray<keyof PermitBody> = ['permitId', 'requestId', 'action', 'principalId', 'secretId', 'payload', 'payloadDigest', 'tokenHash', 'createdAt', 'expiresAt'];

/** Why a pending permit's request evidence fails, or undefined. */
function requestProblem(descriptor: ClusterDescriptor, checkSignedEvidence: EvidenceChecker, b: PermitBody, atMs: number): string | undefined {
  if (sha256Hex(b.payload) !== b.payloadDigest) return 'payload digest mismatch';
  const by = b.requestedBy;
  const node = by && signerAt(descriptor, by.nodeAddress, b.createdAt);
  if (!by || !node || !isCoordinatorEntry(node)) return 'permit not requested by a coordinator';
  if (recoverAddress(fromHex(by.signature.slice(2)), permitRequestDigest(descriptor.clusterId, b)) !== by.nodeAddress) return 'bad request signature';
  if (b.action === 'rotate') return b.auth ? 'rotate carries no session string' : undefined;
  if (!b.auth) return 'transfer and delegate carry the owner\'s signed string';
  const legacy = b.auth.data.split('_').length === 4;
  const ev = checkSignedEvidence(b.auth, { parts: legacy ? 4 : 8, atMs });
  if (typeof ev === 'string') return ev;
  if (ev.parts[1] !== String(b.secretId)) return 'evidence: string names another secret';
  if (ev.principalId !== b.principalId) return 'evidence: signer is not the requesting principal';
  if (!legacy && (ev.parts[4] !== 'permit' || ev.parts[5] !== b.requestId || ev.parts[6] !== b.action || ev.parts[7] !== b.payloadDigest)) return 'evidence: string names another request';
  return undefined;
}

/**
 * `permit`, keyed by permitId. Rank: consumed (1, absorbing) > pending (0). Slot 0 writes the pending
 * permit, with the requesting coordinator's signature and (transfer/delegate) the owner's signed
 * string; a coordinator writes the consumption, with the emailed token, and only for a permit the
 * member already holds, unchanged.
 */
export function permitKind(descriptor: ClusterDescriptor, evidence: EvidenceChecker = createEvidenceChecker(descriptor)): RecordKindDefinition<PermitBody> {
  return {
    name: 'permit',
    body: permitBodySchema,
    writers: ['slot0', 'coordinator'],
    key: (k) => UUID_V4_RE.test(k),
    rank: (b) => (b.status === 'consumed' ? 1 : 0),
    validate: async (b, context) => {
      if (context.key !== b.permitId) return 'key mismatch';
      if (b.expiresAt <= b.createdAt) return 'expires before created';
      if (b.action === 'rotate' ? b.secretId !== 0 : b.secretId === 0) return 'secretId does not fit the action';
      const consumed = b.status === 'consumed';
      if (consumed !== (b.consumedAt !== null) || consumed !== (b.result !== null)) return 'consumedAt and result go with consumed';
      if (!consumed) {
        // Only slot 0 creates permits (it holds the requestId registry).
        if (context.originSlot !== 0) return 'pending permits are written by slot 0';
        return requestProblem(descriptor, evidence, b, context.atMs);
      }
      if (!context.originIsCoordinator) return 'permits are consumed by coordinators';
      if (typeof b.token !== 'string' || sha256Hex(b.token) !== b.tokenHash) return 'consumption without the emailed token';
      if (b.consumedAt! > b.expiresAt) return 'consumed after expiry';
      const held = (await context.current('permit', b.permitId))?.body as PermitBody | undefined;
      if (!held) return 'unknown permit';
      if (IMMUTABLE.some((f) => held[f] !== b[f])) return 'consumption differs from the permit';
      return undefined;
    },
  };
}
