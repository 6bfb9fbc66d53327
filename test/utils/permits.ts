/**
 * Permits V2 as a client drives them (docs/permits.md): request bodies for each action, the emailed link,
 * and each node's count of applied permits (the `quorumkeep_permits_applied_total` counter).
 */
import { createHash, randomUUID } from 'node:crypto';
import { waitFor, type LocalCluster } from 'quorumkeep/testing';
import type { QuorumNode } from '../../src/node/types.ts';
import { secretKey } from '../../src/core/secrets/records.ts';
import { postJson } from './http.ts';
import { newEd25519 } from './web2.ts';
import { signData, type Principal } from './session.ts';

export type OwnerAction = 'transfer' | 'delegate';

/** Lowercase hex SHA-256 of the payload text (docs/permits.md: payloadDigest). */
export const digestOf = (payload: string) => createHash('sha256').update(payload, 'utf8').digest('hex');

/** A rotate request body by credentials; `key` is the new Ed25519 key. */
export function rotateBody(p: Principal, key = newEd25519(), overrides: Record<string, unknown> = {}) {
  return { requestId: randomUUID(), action: 'rotate', email: p.email, password: p.password, payload: JSON.stringify({ newPublicKey: key.publicKey }), ...overrides };
}

/** Overrides of {@link ownerBody}, to build the malformed variants. */
export interface OwnerBodyOverrides {
  requestId?: string;
  dataRequestId?: string;
  digest?: string;
  payload?: string;
  /** Signing time (default now). */
  at?: number;
}

/** A transfer/delegate body with its 8-part data signed by the principal's current session wallet. */
export function ownerBody(p: Principal, secretId: number, action: OwnerAction, value: string | null, overrides: OwnerBodyOverrides = {}) {
  const requestId = overrides.requestId ?? randomUUID();
  const payload = overrides.payload ?? JSON.stringify(action === 'transfer' ? { newOwnerPrincipalId: value } : { delegatePrincipalId: value });
  const data = ['-1', secretId, p.wallet.address, overrides.at ?? Date.now(), 'permit', overrides.dataRequestId ?? requestId, action, overrides.digest ?? digestOf(payload)].join('_');
  return { requestId, action, payload, ...signData(p.wallet, data) };
}

/** A confirmation link as mailed. */
export interface ConfirmLink {
  permitId: string;
  token: string;
  /** The link's path and query, to open on any coordinator. */
  pathAndQuery: string;
}

/** The confirmation link of a permit, from the mail caught for it. */
export async function confirmLinkOf(cluster: LocalCluster, permitId: string): Promise<ConfirmLink> {
  const mail = await cluster.mailbox.waitFor((m) => m.text.includes(permitId));
  const link = new URL(/https?:\/\/\S+\/web2\/confirm\?\S+/.exec(mail.text)![0]);
  return { permitId, token: link.searchParams.get('token')!, pathAndQuery: link.pathname + link.search };
}

/** Request a permit on `url` (201 expected) and return its emailed link. */
export async function requestPermit(cluster: LocalCluster, url: string, body: Record<string, unknown>): Promise<ConfirmLink> {
  const res = await postJson<{ permitId: string }>(`${url}/web2/permit`, body);
  if (res.status !== 201) throw new Error(`permit: ${res.status} ${JSON.stringify(res.body)}`);
  return confirmLinkOf(cluster, res.body.permitId);
}

/** Permits a node has applied since it started (all actions). */
export async function appliedPermits(node: QuorumNode): Promise<number> {
  const metric = await node.metrics.permitsApplied.get();
  return metric.values.reduce((sum, v) => sum + v.value, 0);
}

/** {@link appliedPermits} of every running member, in slot order. */
export async function appliedOnMembers(cluster: LocalCluster): Promise<number[]> {
  return Promise.all(cluster.members.map((m) => appliedPermits(m)));
}

/** Wait (up to 10 s) until every member's replica satisfies `check` for (kind, key). */
export async function onEveryMember(cluster: LocalCluster, kind: string, key: string, check: (body: Record<string, unknown>) => boolean): Promise<void> {
  await waitFor(async () => (await Promise.all(cluster.members.map((m) => m.state.get(kind, key)))).every((r) => r && check(r.body as Record<string, unknown>)), {
    timeoutMs: 10_000,
    description: `${kind} ${key} on every member`,
  });
}

/** Wait until every member's replica of secret `secretId` satisfies `check`. */
export const secretOnEveryMember = (cluster: LocalCluster, secretId: number, check: (body: Record<string, unknown>) => boolean) => onEveryMember(cluster, 'secret', secretKey(secretId), check);
