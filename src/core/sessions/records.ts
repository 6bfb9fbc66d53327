/**
 * The `session` record kind (docs/architecture.md, Records) and the session grant every member
 * signs (the `grant` protocol). A session is valid on a node only when its body carries ≥ threshold
 * grants by distinct members over the grant digest: each member checked the principal's Ed25519
 * signature itself before signing, so no single coordinator can mint a session.
 */
import { z } from 'zod';
import type { RecordKindDefinition } from '../replication/kinds.ts';
import { signerAt, type ClusterDescriptor } from '../replication/ports.ts';
import { refusal } from '../replication/refusals.ts';
import { PRINCIPAL_ID_RE, type PrincipalBody } from '../accounts/records.ts';
import { fromHex, recoverAddress, taggedHash, toHex, utf8 } from '../../crypto/index.ts';

/** Domain-separation label of the grant digest. */
export const SESSION_GRANT_LABEL = 'quorumkeep/session-grant/v1';

/** Session addresses as stored: lowercase 0x + 40 hex. */
export const SESSION_ADDRESS_RE = /^0x[0-9a-f]{40}$/;

/** What the members sign: the facts a session is made of. */
export interface SessionGrant {
  principalId: string;
  /** Lowercase. */
  sessionAddress: string;
  /** The principal's Ed25519 key the session was proven with; rotating the key ends the session. */
  publicKey: string;
  /** Unix ms, the coordinator's clock. */
  issuedAt: number;
  /** Unix ms. */
  expiresAt: number;
}

/** 32-byte digest of a grant, bound to the cluster. */
export function sessionGrantDigest(clusterId: string, g: SessionGrant): Uint8Array {
  return taggedHash(SESSION_GRANT_LABEL, utf8([clusterId, g.principalId, g.sessionAddress, g.publicKey, g.issuedAt, g.expiresAt].join('\n')));
}

const hexSig = z.string().regex(/^0x[0-9a-f]{130}$/);

export const sessionBodySchema = z.strictObject({
  principalId: z.string().regex(PRINCIPAL_ID_RE),
  sessionAddress: z.string().regex(SESSION_ADDRESS_RE),
  publicKey: z.string().regex(/^[0-9a-f]{64}$/),
  issuedAt: z.number().int().nonnegative(),
  expiresAt: z.number().int().nonnegative(),
  /** Member signatures over {@link sessionGrantDigest}. */
  grants: z.array(z.strictObject({ nodeAddress: z.string().regex(/^0x[0-9a-f]{40}$/), signature: hexSig })).max(64),
});
export type SessionBody = z.infer<typeof sessionBodySchema>;

/** Reason a grant list is not a valid quorum proof for `g`, or undefined when it is. */
export function checkQuorumProof(descriptor: ClusterDescriptor, g: SessionGrant, grants: ReadonlyArray<{ nodeAddress: string; signature: string }>): string | undefined {
  const digest = sessionGrantDigest(descriptor.clusterId, g);
  const valid = new Set<string>();
  for (const grant of grants) {
    // A member now, or an identity retired after the session was issued (its grant was good then).
    if (valid.has(grant.nodeAddress) || typeof signerAt(descriptor, grant.nodeAddress, g.issuedAt)?.slot !== 'number') continue;
    if (recoverAddress(fromHex(grant.signature.slice(2)), digest) === grant.nodeAddress) valid.add(grant.nodeAddress);
  }
  return valid.size >= descriptor.threshold ? undefined : `quorum proof has ${valid.size} valid grants, ${descriptor.threshold} needed`;
}

/** `session`, keyed by the lowercase session address. Later grants for the same address win. */
export function sessionKind(descriptor: ClusterDescriptor): RecordKindDefinition<SessionBody> {
  return {
    name: 'session',
    body: sessionBodySchema,
    writers: ['coordinator'],
    key: (k) => SESSION_ADDRESS_RE.test(k),
    validate: (b, { key }) => {
      if (key !== b.sessionAddress) return refusal('key_mismatch');
      if (b.expiresAt <= b.issuedAt) return refusal('expires_before_issued');
      const proof = checkQuorumProof(descriptor, b, b.grants);
      return proof ? refusal('quorum_proof_invalid', proof) : undefined;
    },
  };
}

/** Hex form of a grant digest, as handed to clients (`sessionToken`). */
export function sessionTokenOf(clusterId: string, g: SessionGrant): string {
  return '0x' + toHex(sessionGrantDigest(clusterId, g));
}

/**
 * True when a stored session is active at `now`: not expired, its principal exists and is not
 * deleted, and the principal's key is still the one the session was proven with (a rotation ends it).
 */
export function isSessionActive(session: SessionBody, principal: PrincipalBody | undefined, now: number): boolean {
  return !!principal && principal.status === 'active' && principal.ed25519PublicKey === session.publicKey && session.expiresAt > now;
}
