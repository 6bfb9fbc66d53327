/**
 * The change a confirmed permit makes (docs/permits.md, "GET /web2/confirm — consumption", step 3),
 * computed from the confirming coordinator's replica: a principal's new key, a secret's new owner or
 * delegate. A plain function over the reads it needs.
 */
import { AppError } from '../../errors/index.ts';
import type { PrincipalBody } from '../accounts/records.ts';
import type { Proposed, Versioned } from '../replication/sequencer.ts';
import { withoutVersion } from '../replication/versions.ts';
import { secretKey, type SecretBody } from '../secrets/records.ts';
import { verifiedPrincipal, type PermitReads } from './authorize.ts';
import type { PermitBody } from './records.ts';
import type { PermitResult } from './types.ts';

/** A permit's change: the version to write with its consumption, and the `result` it reports. */
export interface PermitEffect {
  kind: 'principal' | 'secret';
  key: string;
  /** The version it follows (this replica's current one). */
  current: Versioned<PrincipalBody> | Versioned<SecretBody>;
  proposed: Proposed<PrincipalBody> | Proposed<SecretBody>;
  result: PermitResult;
}

/** 409 for a permit the state has overtaken since it was requested. */
function stale(message: string): AppError {
  return new AppError('CONFLICT', `This permit can no longer be applied: ${message}`);
}

/**
 * The change `permit` makes at `now`, from the versions this replica holds. 409 when the state has
 * overtaken it (the account or the target was deleted, the secret changed owner); 503 NOT_READY for
 * a secret this replica does not hold yet.
 */
export async function effectOf(permit: PermitBody, now: number, deps: PermitReads): Promise<PermitEffect> {
  const value = JSON.parse(permit.payload) as Record<string, string | null>;
  if (permit.action === 'rotate') {
    const current = await deps.principals.record(permit.principalId);
    if (!current || current.body.status !== 'active') throw stale('the account was deleted');
    const newPublicKey = value.newPublicKey!;
    const body: Omit<PrincipalBody, 'v'> = { ...withoutVersion(current.body), ed25519PublicKey: newPublicKey, keyProof: null, keyPermitId: permit.permitId, updatedAt: Math.max(now, current.body.updatedAt) };
    return { kind: 'principal', key: permit.principalId, current, proposed: { change: 'rotateKey', body }, result: { principalId: permit.principalId, newPublicKey } };
  }
  const current = await deps.secrets.record(secretKey(permit.secretId));
  if (!current) throw new AppError('NOT_READY', `Secret ${permit.secretId} is not known to this coordinator yet; try again`);
  const secret = current.body;
  if (secret.ownerPrincipalId !== permit.principalId) throw stale(`secret ${permit.secretId} changed owner since it was requested`);
  const target = permit.action === 'transfer' ? value.newOwnerPrincipalId! : value.delegatePrincipalId!;
  if (target !== null && !(await verifiedPrincipal(deps.principals, target))) throw stale('the target account was deleted');
  const updatedAt = Math.max(now, secret.updatedAt);
  const auth = { by: 'permit' as const, permitId: permit.permitId };
  const key = secretKey(permit.secretId);
  if (permit.action === 'transfer') {
    const delegatePrincipalId = secret.delegatePrincipalId === target ? null : secret.delegatePrincipalId;
    const body: Omit<SecretBody, 'v'> = { ...withoutVersion(secret), ownerPrincipalId: target!, delegatePrincipalId, updatedAt, auth };
    return { kind: 'secret', key, current, proposed: { change: 'permit', body }, result: { secretId: permit.secretId, newOwnerPrincipalId: target!, delegatePrincipalId } };
  }
  const body: Omit<SecretBody, 'v'> = { ...withoutVersion(secret), delegatePrincipalId: target, updatedAt, auth };
  return { kind: 'secret', key, current, proposed: { change: 'permit', body }, result: { secretId: permit.secretId, delegatePrincipalId: target } };
}
