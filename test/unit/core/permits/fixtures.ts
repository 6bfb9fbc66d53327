/**
 * Replica state for the unit tests of the permit rules: principals and secrets as the rules read
 * them, behind stub views (CONTRIBUTING.md rule 12: stubs through deps); each held as a version slot
 * 0 wrote.
 */
import { randomUUID } from 'node:crypto';
import type { PrincipalBody } from '../../../../src/core/accounts/records.ts';
import type { PermitReads } from '../../../../src/core/permits/authorize.ts';
import type { PermitBody } from '../../../../src/core/permits/records.ts';
import type { Json } from '../../../../src/core/replication/canonical-json.ts';
import type { ReplicatedRecord } from '../../../../src/core/replication/record.ts';
import { PUBLIC_KEY_B64_CHARS, SECRET_TYPE_MLKEM768, secretKey, type SecretBody } from '../../../../src/core/secrets/records.ts';

export const NOW = 1_800_000_000_000;
/** Slot 0's node address: the origin of every version. */
export const SLOT0 = `0x${'0'.repeat(40)}`;

/** A fresh UUIDv4 for each name. */
export function ids<K extends string>(...names: K[]): Record<K, string> {
  return Object.fromEntries(names.map((name) => [name, randomUUID()])) as Record<K, string>;
}

/** An active principal with a verified email. */
export function principal(overrides: Partial<PrincipalBody> = {}): PrincipalBody {
  return {
    email: `${randomUUID()}@example.com`,
    emailVerified: true,
    passwordHash: '$argon2id$stub',
    ed25519PublicKey: 'ab'.repeat(32),
    keyProof: 'cd'.repeat(64),
    status: 'active',
    createdAt: NOW - 60_000,
    updatedAt: NOW - 60_000,
    registration: 1,
    // Registered, verified, then given its key.
    v: { n: 3, prev: { origin: SLOT0, seq: 2 }, change: 'registerKey' },
    ...overrides,
  };
}

/** Web2 secret `secretId` owned by `ownerPrincipalId`. */
export function secret(secretId: number, ownerPrincipalId: string, overrides: Partial<SecretBody> = {}): SecretBody {
  return {
    secretId,
    ownerPrincipalId,
    delegatePrincipalId: null,
    clusterId: 'qk-unit-permits',
    secretType: SECRET_TYPE_MLKEM768,
    publicKeyCid: 'A'.repeat(PUBLIC_KEY_B64_CHARS),
    isSyncing: false,
    createdAt: NOW - 60_000,
    updatedAt: NOW - 60_000,
    v: { n: 1, prev: null, change: 'create' },
    auth: { by: 'permit', permitId: randomUUID() },
    ...overrides,
  };
}

/** The record of a version as slot 0 wrote it, at `seq` of its log. */
export function versionRecord<B extends { v: unknown }>(kind: string, key: string, body: B, seq = 10): ReplicatedRecord & { body: B } {
  return { kind, key, origin: SLOT0, seq, hlc: [NOW - 60_000, 0], body: body as B & Json, sig: '0x' };
}

/** Stub views over the given principals (by id) and secrets. */
export function replica(principals: Record<string, PrincipalBody>, secrets: SecretBody[] = []): PermitReads {
  const byKey = new Map(secrets.map((s) => [secretKey(s.secretId), s]));
  const principalRecord = (id: string) => (principals[id] ? versionRecord('principal', id, principals[id]) : undefined);
  const secretRecord = (key: string) => (byKey.has(key) ? versionRecord('secret', key, byKey.get(key)!) : undefined);
  return {
    principals: { get: async (id) => principals[id], record: async (id) => principalRecord(id) },
    secrets: { get: async (key) => byKey.get(key), record: async (key) => secretRecord(key) },
  };
}

/** A pending rotate permit `permitId` (consumed with a result when `consumed`). */
export function permitBody(permitId: string, consumed = false): PermitBody {
  return {
    permitId,
    requestId: randomUUID(),
    action: 'rotate',
    principalId: randomUUID(),
    secretId: 0,
    payload: '{}',
    payloadDigest: '00'.repeat(32),
    tokenHash: '11'.repeat(32),
    createdAt: NOW - 1000,
    expiresAt: NOW + 900_000,
    requestedBy: { nodeAddress: `0x${'1'.repeat(40)}`, signature: `0x${'22'.repeat(65)}` },
    auth: null,
    ...(consumed
      ? { status: 'consumed', consumedAt: NOW, result: { principalId: 'p', newPublicKey: 'ab' }, token: 't'.repeat(43), v: { n: 2, prev: { origin: SLOT0, seq: 1 }, change: 'consume' } }
      : { status: 'pending', consumedAt: null, result: null, token: null, v: { n: 1, prev: null, change: 'request' } }),
  };
}
