/**
 * Setting a secret's delegate (docs/http.md, POST /web2/setDelegate; docs/security.md, "Single use"):
 * the owner's signed string names the delegate, one string makes one change. The version it makes
 * lists the string, and slot 0 writes each version only after the one it holds, so every replay
 * meets the version that used it.
 */
import { AppError } from '../../errors/index.ts';
import type { Logger } from '../../log/index.ts';
import { PRINCIPAL_ID_RE, principalKindName } from '../accounts/records.ts';
import type { StateReader } from '../replication/ports.ts';
import { currentRead, type VersionWriter } from '../replication/sequencer.ts';
import { withoutVersion, type LogRef } from '../replication/versions.ts';
import { stateView } from '../replication/views.ts';
import { signedStringKey, type SignedEvidence } from '../sessions/evidence.ts';
import type { SignedDataVerifier, SignedRequest } from '../sessions/types.ts';
import { RECENT_USE_KEEP_MS, secretKey, secretKindName, type SecretBody } from './records.ts';
import { evidenceFor, parseSecretId } from './rules.ts';

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
  /** The signer's principal version this change was checked against (slot 0 writes it only while it is current). */
  principal: LogRef;
}

/**
 * The version a delegate change makes at `now`: the delegate set, the string's use recorded and uses
 * too old to be replayed anywhere dropped (docs/security.md, "Single use"), updatedAt never backwards.
 */
export function delegatedVersion(secret: SecretBody, change: DelegateChange, now: number): Omit<SecretBody, 'v'> {
  const recentUses = [...(secret.recentUses ?? []).filter((u) => u.at >= now - RECENT_USE_KEEP_MS), { key: change.useKey, at: change.signedAt }];
  return {
    ...withoutVersion(secret),
    delegatePrincipalId: change.delegate === '' ? null : change.delegate,
    updatedAt: Math.max(now, secret.updatedAt),
    auth: { by: 'setDelegate', evidence: change.evidence, principal: change.principal },
    recentUses,
  };
}

/** Dependencies of {@link createDelegateSetter}. */
export interface DelegateSetterDeps {
  verifier: SignedDataVerifier;
  /** A client's lookup of a secret (404 only when it does not exist). */
  findSecret(secretId: number): Promise<SecretBody>;
  state: StateReader;
  /** Writes of sequenced kinds, through slot 0. */
  versions: Pick<VersionWriter, 'update' | 'ensureDurable'>;
  clock: () => number;
  /** The secrets module's logger. */
  logger: Logger;
}

/** The coordinator's POST /web2/setDelegate. */
export function createDelegateSetter(deps: DelegateSetterDeps): { setDelegate(request: SignedRequest): Promise<{ secretId: number }> } {
  const { clock, logger: log } = deps;
  const principals = stateView(deps.state, principalKindName);

  return {
    async setDelegate(request) {
      const caller = await deps.verifier.verify(request, { parts: 5 });
      const secretId = parseSecretId(caller.subject);
      const delegate = parseDelegate(caller.extra[0]);
      assertMayDelegate(await deps.findSecret(secretId), caller.principalId, delegate);
      if (delegate !== '') {
        const p = await principals.get(delegate);
        // Only a verified account can be named: an unverified registration proves no mailbox.
        if (!p || p.status !== 'active' || !p.emailVerified) throw new AppError('NOT_FOUND', 'Delegate principal not found');
      }
      // One string, one change: the version it makes lists it, and slot 0 writes a version only after
      // the one it holds — so a replay (here, through another coordinator, or racing the first) finds
      // its use in the current version, writes nothing and answers the original result.
      const useKey = signedStringKey('setDelegate', caller.parts);
      const evidence = evidenceFor(caller, request);
      const write = await deps.versions.update(secretKindName, secretKey(secretId), async (current) => {
        if (!current) throw new AppError('NOT_READY', `Secret ${secretId} is not on this coordinator yet; try again`);
        if (current.body.recentUses?.some((u) => u.key === useKey)) return undefined;
        assertMayDelegate(current.body, caller.principalId, delegate);
        const principal = await currentRead(deps.state, 'principal', caller.principalId);
        if (!principal.at) throw new AppError('NOT_READY', 'The principal is not on this coordinator yet; try again');
        const body = delegatedVersion(current.body, { delegate, useKey, signedAt: caller.fresh, evidence, principal: principal.at }, clock());
        return { change: 'setDelegate', body, reads: [principal] };
      });
      // A replay: 200 is true once the version that used the string is on a quorum.
      if (!write.written) await deps.versions.ensureDurable(write.current!);
      else log.info({ secretId, delegateSet: delegate !== '' }, 'secret delegate changed');
      return { secretId };
    },
  };
}
