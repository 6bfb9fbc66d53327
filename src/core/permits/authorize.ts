/**
 * Who may ask for a permit, and who may be named in one (docs/permits.md, "Authorization"): rotate by
 * the account's credentials, transfer and delegate by the secret owner's signed 8-part string (4-part
 * in the legacy form). Plain functions over the deps they read.
 */
import { AppError, isAppError } from '../../errors/index.ts';
import type { PrincipalBody } from '../accounts/records.ts';
import type { AccountsService } from '../accounts/types.ts';
import type { StateView } from '../replication/views.ts';
import type { SecretBody } from '../secrets/records.ts';
import { secretKey } from '../secrets/records.ts';
import { evidenceFor, parseSecretId } from '../secrets/service.ts';
import type { SignedEvidence } from '../sessions/evidence.ts';
import type { SignedDataVerifier } from '../sessions/types.ts';
import { bad, type CurrentRequest } from './payload.ts';
import type { PermitActionName } from './records.ts';

/** The replica's principals and secrets, as the permit rules read them. */
export interface PermitReads {
  principals: Pick<StateView<PrincipalBody>, 'get' | 'record'>;
  secrets: Pick<StateView<SecretBody>, 'get' | 'record'>;
}

/** Dependencies of {@link authorizePermit}. */
export interface PermitAuthorizeDeps extends PermitReads {
  verifier: SignedDataVerifier;
  accounts: Pick<AccountsService, 'verifyCredentials'>;
}

/** Who acts, on which secret (0 for rotate), and the owner's signed string a transfer or delegate carries. */
export interface PermitAuthorization {
  principalId: string;
  secretId: number;
  auth: SignedEvidence | null;
}

/** An active principal, or undefined. */
export async function activePrincipal(principals: PermitReads['principals'], principalId: string): Promise<PrincipalBody | undefined> {
  const p = await principals.get(principalId);
  return p && p.status === 'active' ? p : undefined;
}

/** A principal that may receive a secret or be its delegate: active and with a verified email. */
export async function verifiedPrincipal(principals: PermitReads['principals'], principalId: string): Promise<PrincipalBody | undefined> {
  const p = await activePrincipal(principals, principalId);
  return p?.emailVerified ? p : undefined;
}

/**
 * Who acts and on what: rotate by credentials, transfer/delegate by an owner's session. `target` is
 * the principal a transfer or delegate names (null: none, or rotate).
 */
export async function authorizePermit(input: CurrentRequest, action: PermitActionName, payloadDigest: string, target: string | null, deps: PermitAuthorizeDeps): Promise<PermitAuthorization> {
  if (action === 'rotate') {
    if (typeof input.email !== 'string' || typeof input.password !== 'string') throw bad('email and password are required for rotate');
    try {
      const { principalId } = await deps.accounts.verifyCredentials(input.email, input.password);
      return { principalId, secretId: 0, auth: null };
    } catch (err) {
      if (isAppError(err) && ['UNAUTHORIZED', 'NOT_FOUND', 'FORBIDDEN'].includes(err.code)) throw new AppError('FORBIDDEN', 'Invalid credentials');
      throw err;
    }
  }
  if (typeof input.data !== 'string' || typeof input.signature !== 'string') throw bad(`data and signature are required for ${action}`);
  const caller = await deps.verifier.verify({ data: input.data, signature: input.signature }, { parts: input.legacy ? 4 : 8 });
  if (!input.legacy) {
    const [literal, requestId, dataAction, digest] = caller.extra as [string, string, string, string];
    if (literal !== 'permit') throw bad('Invalid data format: the 5th part must be "permit"');
    if (requestId !== input.requestId) throw bad('The requestId in data does not match the body');
    if (dataAction !== action) throw bad('The action in data does not match the body');
    if (digest !== payloadDigest) throw bad('The payload digest in data does not match the payload');
  }
  const secretId = parseSecretId(caller.subject);
  const secret = await deps.secrets.get(secretKey(secretId));
  if (!secret) throw new AppError('NOT_FOUND', `Secret ${secretId} not found`);
  if (secret.ownerPrincipalId !== caller.principalId) throw new AppError('FORBIDDEN', 'Only the owner may request this change');
  if (target !== null) {
    if (target === secret.ownerPrincipalId) throw new AppError('FORBIDDEN', `The owner cannot be named ${action === 'transfer' ? 'new owner' : 'delegate'}`);
    if (!(await verifiedPrincipal(deps.principals, target))) throw new AppError('NOT_FOUND', 'Target principal not found');
  }
  return { principalId: caller.principalId, secretId, auth: evidenceFor(caller, { data: input.data, signature: input.signature }) };
}
