/**
 * Delegate changes (src/core/secrets/delegate.ts; docs/http.md, POST /web2/setDelegate;
 * docs/security.md, "Single use"): who may name whom, and the version one signed string makes.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { assertMayDelegate, delegatedVersion, parseDelegate } from '../../../../src/core/secrets/delegate.ts';
import { RECENT_USE_KEEP_MS, type SecretBody } from '../../../../src/core/secrets/records.ts';
import type { SignedEvidence } from '../../../../src/core/sessions/evidence.ts';

const owner = randomUUID();
const bob = randomUUID();
const NOW = 1_700_000_000_000;
const secret: SecretBody = {
  secretId: 7,
  ownerPrincipalId: owner,
  delegatePrincipalId: null,
  clusterId: 'qk-unit',
  secretType: 1,
  publicKeyCid: 'A'.repeat(1580),
  isSyncing: false,
  createdAt: NOW - 10_000,
  updatedAt: NOW - 10_000,
};
const evidence = { data: `-1_7_0xabc_${NOW}_${bob}`, signature: '0x00', session: {} } as unknown as SignedEvidence;
const key = (n: number) => n.toString(16).padStart(64, '0');

describe('delegate changes', () => {
  it('a string names a principal id or nothing', () => {
    expect(parseDelegate(bob)).toBe(bob);
    expect(parseDelegate('')).toBe('');
    expect(parseDelegate(undefined)).toBe('');
    expect(() => parseDelegate('bob')).toThrow(expect.objectContaining({ code: 'BAD_REQUEST', message: 'Invalid delegatePrincipalId: expected a principal id or nothing' }));
  });

  it('only the owner sets the delegate, and never to itself', () => {
    expect(() => assertMayDelegate(secret, owner, bob)).not.toThrow();
    expect(() => assertMayDelegate(secret, owner, '')).not.toThrow();
    expect(() => assertMayDelegate(secret, bob, bob)).toThrow(expect.objectContaining({ code: 'FORBIDDEN', message: 'Only the owner may set the delegate' }));
    expect(() => assertMayDelegate(secret, owner, owner)).toThrow(expect.objectContaining({ code: 'FORBIDDEN', message: 'The owner cannot be the delegate' }));
  });

  it('the version sets the delegate, records the string with its evidence, and keeps everything else', () => {
    const next = delegatedVersion(secret, { delegate: bob, useKey: key(1), signedAt: NOW - 2_000, evidence }, NOW);
    expect(next).toEqual({ ...secret, delegatePrincipalId: bob, updatedAt: NOW, auth: { by: 'setDelegate', evidence }, recentUses: [{ key: key(1), at: NOW - 2_000 }] });
    expect(delegatedVersion(next, { delegate: '', useKey: key(2), signedAt: NOW, evidence }, NOW + 1).delegatePrincipalId).toBeNull();
  });

  it('uses too old to be replayed are dropped, the others kept', () => {
    const held = { ...secret, recentUses: [{ key: key(1), at: NOW - RECENT_USE_KEEP_MS - 1 }, { key: key(2), at: NOW - RECENT_USE_KEEP_MS }] };
    expect(delegatedVersion(held, { delegate: bob, useKey: key(3), signedAt: NOW, evidence }, NOW).recentUses).toEqual([
      { key: key(2), at: NOW - RECENT_USE_KEEP_MS },
      { key: key(3), at: NOW },
    ]);
  });

  it('updatedAt never goes backwards behind a clock that is late', () => {
    expect(delegatedVersion({ ...secret, updatedAt: NOW + 5_000 }, { delegate: bob, useKey: key(1), signedAt: NOW, evidence }, NOW).updatedAt).toBe(NOW + 5_000);
  });
});
