/**
 * Replica state for the unit tests of the permit rules: principals and secrets as the rules read
 * them, behind stub views (CONTRIBUTING.md rule 12: stubs through deps).
 */
import { randomUUID } from 'node:crypto';
import type { PrincipalBody } from '../../../../src/core/accounts/records.ts';
import type { PermitReads } from '../../../../src/core/permits/authorize.ts';
import type { PermitBody } from '../../../../src/core/permits/records.ts';
import { PUBLIC_KEY_B64_CHARS, SECRET_TYPE_MLKEM768, secretKey, type SecretBody } from '../../../../src/core/secrets/records.ts';

export const NOW = 1_800_000_000_000;

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
    ...overrides,
  };
}

/** Stub views over the given principals (by id) and secrets. */
export function replica(principals: Record<string, PrincipalBody>, secrets: SecretBody[] = []): PermitReads {
  const byKey = new Map(secrets.map((s) => [secretKey(s.secretId), s]));
  return {
    principals: { get: async (id) => principals[id] },
    secrets: { get: async (key) => byKey.get(key) },
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
    ...(consumed ? { status: 'consumed', consumedAt: NOW, result: { principalId: 'p', newPublicKey: 'ab' } } : { status: 'pending', consumedAt: null, result: null }),
  };
}
