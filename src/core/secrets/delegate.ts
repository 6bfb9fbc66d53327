/**
 * Setting a secret's delegate (docs/http.md, POST /web2/setDelegate; docs/security.md, "Single use"):
 * the owner's signed string names the delegate, one string makes one change. The version it makes
 * lists the string (members refuse a second use); slot 0's `signedUse` registry also catches a replay
 * on a coordinator whose replica has not seen that version yet.
 */
import { AppError } from '../../errors/index.ts';
import type { Logger } from '../../log/index.ts';
import { PRINCIPAL_ID_RE, type PrincipalBody } from '../accounts/records.ts';
import type { CreatorService } from '../replication/creator.ts';
import type { Replicator } from '../replication/ports.ts';
import type { StateView } from '../replication/views.ts';
import { signedStringKey, type SignedEvidence } from '../sessions/evidence.ts';
import type { SignedDataVerifier, SignedRequest } from '../sessions/types.ts';
import type { ClaimStore } from './ports.ts';
import { RECENT_USE_KEEP_MS, secretKey, type SecretBody } from './records.ts';
import { errorText, evidenceFor, parseSecretId, USE_KEY_RE } from './rules.ts';

/** The delegate a setDelegate string names: a principal id, or `''` to clear it; 400 otherwise. */
export function parseDelegate(raw: string | undefined): string {
  const delegate = raw ?? '';
  if (delegate !== '' && !PRINCIPAL_ID_RE.test(delegate)) throw new AppError('BAD_REQUEST', 'Invalid delegatePrincipalId: expected a principal id or nothing');
  return delegate;
}

/** 403 unless `principalId` owns the secret and `delegate` is not the owner. */
export function assertMayDelegate(secret: Pick<SecretBody, 'ownerPrincipalId'>, principalId: string, delegate: string): void {
  if (secret.ownerPrincipalId !== principalId) throw new AppError('FORBIDDEN', 'Only the owner may set the delegate');
  if (delegate === secret.ownerPrincipalId) throw new AppError('FORBIDDEN', 'The owner cannot be the delegate');
}

/** One delegate change as the signed string states it. */
export interface DelegateChange {
  /** The new delegate, `''` for none. */
  delegate: string;
  /** The string's single-use key. */
  useKey: string;
  /** The string's timestamp, Unix ms. */
  signedAt: number;
  evidence: SignedEvidence;
}

/**
 * The version a delegate change makes at `now`: the delegate set, the string's use recorded and uses
 * too old to be replayed anywhere dropped (docs/security.md, "Single use"), updatedAt never backwards.
 */
export function delegatedVersion(secret: SecretBody, change: DelegateChange, now: number): SecretBody {
  const recentUses = [...(secret.recentUses ?? []).filter((u) => u.at >= now - RECENT_USE_KEEP_MS), { key: change.useKey, at: change.signedAt }];
  return { ...secret, delegatePrincipalId: change.delegate === '' ? null : change.delegate, updatedAt: Math.max(now, secret.updatedAt), auth: { by: 'setDelegate', evidence: change.evidence }, recentUses };
}

/** Dependencies of {@link createDelegateSetter}. */
export interface DelegateSetterDeps {
  creator: Pick<CreatorService, 'call' | 'register'>;
  /** Slot 0's durable claims. */
  claims: ClaimStore;
  verifier: SignedDataVerifier;
  /** A client's lookup of a secret (404 only when it does not exist). */
  findSecret(secretId: number): Promise<SecretBody>;
  principals: Pick<StateView<PrincipalBody>, 'get'>;
  replicator: Replicator;
  clock: () => number;
  /** The secrets module's logger. */
  logger: Logger;
}

/** Register slot 0's `signedUse` operation and return the coordinator's POST /web2/setDelegate. */
export function createDelegateSetter(deps: DelegateSetterDeps): { setDelegate(request: SignedRequest): Promise<{ secretId: number }> } {
  const { creator, claims, clock, logger: log } = deps;

  // Slot 0: signed strings that changed something (setDelegate), for exact-replay answers.
  creator.register('signedUse', async (params) => {
    const { useKey, mark } = params;
    if (typeof useKey !== 'string' || !USE_KEY_RE.test(useKey) || typeof mark !== 'boolean') throw new AppError('BAD_REQUEST', 'malformed signed-use claim');
    const name = `signed-use:${useKey}`;
    if (mark) await claims.put(name, '1');
    return { used: !mark && (await claims.get(name)) !== undefined };
  });

  return {
    async setDelegate(request) {
      const caller = await deps.verifier.verify(request, { parts: 5 });
      const secretId = parseSecretId(caller.subject);
      const delegate = parseDelegate(caller.extra[0]);
      const secret = await deps.findSecret(secretId);
      assertMayDelegate(secret, caller.principalId, delegate);
      if (delegate !== '') {
        const p = await deps.principals.get(delegate);
        // Only a verified account can be named: an unverified registration proves no mailbox.
        if (!p || p.status !== 'active' || !p.emailVerified) throw new AppError('NOT_FOUND', 'Delegate principal not found');
      }
      // One string, one change: an exact replay answers the original result and writes nothing. The
      // version it made lists it (members refuse a second use); slot 0's registry also catches a
      // replay on a coordinator whose replica has not seen that version yet.
      const useKey = signedStringKey('setDelegate', caller.parts);
      if (secret.recentUses?.some((u) => u.key === useKey)) return { secretId };
      const seen = (await creator.call('signedUse', { useKey, mark: false }).catch((err: unknown) => {
        if (err instanceof AppError && err.code === 'SLOT0_UNAVAILABLE') return { used: false };
        throw err;
      })) as { used: boolean };
      if (seen.used) return { secretId };
      const body = delegatedVersion(secret, { delegate, useKey, signedAt: caller.fresh, evidence: evidenceFor(caller, request) }, clock());
      await deps.replicator.replicate({ kind: 'secret', key: secretKey(secretId), body });
      await creator.call('signedUse', { useKey, mark: true }).catch((err: unknown) => log.warn({ secretId, err: errorText(err) }, 'could not mark the setDelegate string used'));
      log.info({ secretId, delegateSet: delegate !== '' }, 'secret delegate changed');
      return { secretId };
    },
  };
}
