/**
 * The `secret` record kind (ARCHITECTURE.md, Replicated state) and the associated-data labels that
 * bind every sealed or stored share to its secret, slot and (for releases) requester.
 */
import { z } from 'zod';
import type { RecordKindDefinition } from '../replication/kinds.ts';
import type { ClusterDescriptor } from '../replication/ports.ts';
import { PRINCIPAL_ID_RE } from '../accounts/records.ts';
import { utf8 } from '../../crypto/index.ts';

/** The only secret type this service creates: an ML-KEM-768 key pair (API.md). */
export const SECRET_TYPE_MLKEM768 = 1;
/** Base64 length of a 1184-byte ML-KEM-768 public key. */
const PUBLIC_KEY_B64_CHARS = 1580;

/** Record key of a secret: its id as 12 decimal digits, so keys sort by id. */
export function secretKey(secretId: number): string {
  return String(secretId).padStart(12, '0');
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
});
export type SecretBody = z.infer<typeof secretBodySchema>;

/** `secret`, keyed by {@link secretKey}. Owner and delegate changes are last-writer-wins by HLC. */
export function secretKind(descriptor: ClusterDescriptor): RecordKindDefinition<SecretBody> {
  return {
    name: 'secret',
    body: secretBodySchema,
    key: (k) => /^\d{12}$/.test(k),
    validate: (b, { key }) => {
      if (key !== secretKey(b.secretId)) return 'key mismatch';
      if (b.clusterId !== descriptor.clusterId) return 'another cluster';
      if (b.delegatePrincipalId !== null && b.delegatePrincipalId === b.ownerPrincipalId) return 'owner as delegate';
      return undefined;
    },
  };
}

/** Associated data of a share sealed to a member for storage. */
export function shareStoreAad(clusterId: string, secretId: number, slot: number): Uint8Array {
  return utf8(`quorumkeep/share-store/v1\n${clusterId}\n${secretId}\n${slot}`);
}

/** Associated data of a share encrypted at rest under a member's storage key. */
export function shareAtRestAad(clusterId: string, secretId: number, slot: number): Uint8Array {
  return utf8(`quorumkeep/share-at-rest/v1\n${clusterId}\n${secretId}\n${slot}`);
}

/** Associated data of a share released to a coordinator for one decrypt. */
export function shareReleaseAad(clusterId: string, secretId: number, slot: number, requester: string): Uint8Array {
  return utf8(`quorumkeep/share-release/v1\n${clusterId}\n${secretId}\n${slot}\n${requester}`);
}
