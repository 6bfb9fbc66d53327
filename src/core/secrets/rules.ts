/**
 * The secrets capability's plain rules (docs/http.md, Secrets and Public keys; docs/security.md, Share
 * release): parsing ids, who may decrypt, how a secret is named in share stores, and the views the
 * routes answer. No I/O: the services in this folder call these.
 */
import { AppError, refusal } from '../../errors/index.ts';
import { membersOf, type ClusterDescriptor } from '../replication/ports.ts';
import type { SignedEvidence } from '../sessions/evidence.ts';
import { WEB2_CHAIN_ID } from '../sessions/signed-data.ts';
import type { SignedRequest, VerifiedCaller } from '../sessions/types.ts';
import { web3SecretLabel } from '../web3/records.ts';
import { SECRET_TYPE_MLKEM768, type SecretBody } from './records.ts';
import type { ResolvedSecret, SecretView } from './types.ts';

/** A positive integer id as a path part or query value (a secretId, a chainId). */
const POSITIVE_ID_RE = /^[1-9]\d{0,15}$/;
/** A signed string's single-use key (`signedStringKey`) as slot 0's operations accept it. */
export const USE_KEY_RE = /^[0-9a-f]{64}$/;

/** Parse a positive integer secret id; 400 otherwise. */
export function parseSecretId(raw: string): number {
  if (!POSITIVE_ID_RE.test(raw) || !Number.isSafeInteger(Number(raw))) throw new AppError('BAD_REQUEST', `Invalid secretId "${raw.slice(0, 24)}": expected a positive integer`);
  return Number(raw);
}

/** The `chainId` query of an operator retry: absent for a Web2 secret, else a positive integer; 400 otherwise. */
export function parseRetryChainId(raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  if (!POSITIVE_ID_RE.test(raw)) throw new AppError('BAD_REQUEST', `Invalid chainId "${raw.slice(0, 24)}": expected a positive integer`);
  return Number(raw);
}

/** The evidence a record carries for a verified caller's signed request (docs/security.md). */
export function evidenceFor(caller: VerifiedCaller, request: SignedRequest): SignedEvidence {
  const sig = request.signature.toLowerCase();
  // Web2 routes only (their shapes do not accept Web3): a Web3 caller has no session to carry.
  if (!caller.sessionRecord) throw new AppError('BAD_REQUEST', `Chain ${caller.chainId} is not supported`);
  return { data: request.data, signature: sig.startsWith('0x') ? sig : `0x${sig}`, session: caller.sessionRecord };
}

/** A Web2 secret record as the payload and file routes see it. */
export function resolvedOf(b: SecretBody): ResolvedSecret {
  return { chainId: WEB2_CHAIN_ID, secretId: b.secretId, publicKeyCid: b.publicKeyCid, owner: b.ownerPrincipalId, delegate: b.delegatePrincipalId, isSyncing: b.isSyncing, secretType: b.secretType };
}

/**
 * How a secret is named in share stores and associated data: its id for Web2 (so Web2 labels are
 * unchanged), `<chainId>:<id>` for Web3 — the two namespaces never meet.
 */
export function shareLabel(chainId: number, secretId: number): number | string {
  return chainId === WEB2_CHAIN_ID ? secretId : web3SecretLabel(chainId, secretId);
}

/**
 * 403 `Secret <id> is syncing; try again shortly` (a member's refusal says `secret_unavailable`). The
 * form is a contract: the real client turns a message that contains `is syncing` and `secret <id>`
 * into its "not ready" error (docs/http.md, "Signed routes: what is checked where").
 */
export function secretSyncing(secretId: number): AppError {
  return refusal('FORBIDDEN', 'secret_unavailable', `Secret ${secretId} is syncing; try again shortly`);
}

/**
 * 403 unless `principalId` may decrypt with the secret (the owner, or a delegate that is set). A Web3
 * secret not in the confirmed view yet has no confirmed owner: refused as syncing, whoever asks
 * (docs/web3.md, "Serving a secret").
 */
export function assertDecryptRight(secret: Pick<ResolvedSecret, 'secretId' | 'owner' | 'delegate' | 'isSyncing' | 'secretType' | 'unconfirmed'>, principalId: string): void {
  if (secret.unconfirmed) throw secretSyncing(secret.secretId);
  if (secret.owner !== principalId && (secret.delegate === null || secret.delegate !== principalId)) throw refusal('FORBIDDEN', 'not_owner_or_delegate', 'Only the owner or the delegate may decrypt with this secret');
  assertUsable(secret);
}

/** 403 while syncing or for a type this service cannot use (a member's refusal says `secret_unavailable`). */
export function assertUsable(secret: Pick<ResolvedSecret, 'secretId' | 'isSyncing' | 'secretType'>): void {
  if (secret.isSyncing) throw secretSyncing(secret.secretId);
  if (secret.secretType !== SECRET_TYPE_MLKEM768) throw refusal('FORBIDDEN', 'secret_unavailable', `Secret type ${secret.secretType} is not supported`);
}

/** Whether POST /web2/secrets lists the secret for `principalId`: its owner or its delegate. */
export function listedFor(b: SecretBody, principalId: string): boolean {
  return b.ownerPrincipalId === principalId || b.delegatePrincipalId === principalId;
}

/** A secret record as POST /web2/secrets lists it. */
export function secretView(b: SecretBody): SecretView {
  return {
    secretId: b.secretId,
    ownerPrincipalId: b.ownerPrincipalId,
    delegatePrincipalId: b.delegatePrincipalId,
    isSyncing: b.isSyncing,
    clusterId: b.clusterId,
    secretType: b.secretType,
    publicKeyCid: b.publicKeyCid,
    createdAt: new Date(b.createdAt).toISOString(),
    updatedAt: new Date(b.updatedAt).toISOString(),
  };
}

/** A member slot's node address, for errors, logs and the operator view. */
export function memberAddresses(descriptor: ClusterDescriptor): (slot: number) => string {
  const memberList = membersOf(descriptor);
  return (slot) => memberList[slot]!.nodeAddress;
}

/** An error as a member's last error (logs, the durable retry list): its message, at most 200 characters. */
export const errorText = (err: unknown): string => (err instanceof Error ? err.message : String(err)).slice(0, 200);
