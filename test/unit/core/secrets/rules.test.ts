/**
 * The secrets' plain rules (src/core/secrets/rules.ts; docs/http.md, Secrets and Public keys;
 * docs/security.md, Share release): ids, who may decrypt, share labels and the listed view.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { AppError } from '../../../../src/errors/index.ts';
import type { SessionBody } from '../../../../src/core/sessions/records.ts';
import type { VerifiedCaller } from '../../../../src/core/sessions/types.ts';
import type { SecretBody } from '../../../../src/core/secrets/records.ts';
import {
  assertDecryptRight,
  assertUsable,
  errorText,
  evidenceFor,
  listedFor,
  memberAddresses,
  parseRetryChainId,
  parseSecretId,
  resolvedOf,
  secretView,
  shareLabel,
} from '../../../../src/core/secrets/rules.ts';
import { unitCluster } from '../../../utils/evidence.ts';

const owner = randomUUID();
const delegate = randomUUID();
const secret: SecretBody = {
  secretId: 42,
  ownerPrincipalId: owner,
  delegatePrincipalId: delegate,
  clusterId: 'qk-unit',
  secretType: 1,
  publicKeyCid: 'A'.repeat(1580),
  isSyncing: false,
  createdAt: Date.UTC(2026, 0, 2, 3, 4, 5),
  updatedAt: Date.UTC(2026, 0, 3),
  v: { n: 2, prev: { origin: '0x' + '0'.repeat(40), seq: 5 }, change: 'permit' },
  auth: { by: 'permit', permitId: randomUUID() },
};

/** The AppError code `run` throws, or undefined. */
function codeOf(run: () => unknown): string | undefined {
  try {
    run();
    return undefined;
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    return (err as AppError).code;
  }
}

describe('secret rules', () => {
  it('a secretId is a positive safe integer written without a leading zero', () => {
    expect(parseSecretId('1')).toBe(1);
    expect(parseSecretId('9007199254740991')).toBe(Number.MAX_SAFE_INTEGER);
    for (const raw of ['0', '01', '-1', '1.5', '', ' 1', '1e3', '9007199254740992', '12345678901234567']) expect(codeOf(() => parseSecretId(raw)), raw).toBe('BAD_REQUEST');
    // The message quotes at most 24 characters of what was sent.
    expect(() => parseSecretId('x'.repeat(100))).toThrow(`Invalid secretId "${'x'.repeat(24)}": expected a positive integer`);
  });

  it('an operator retry names a Web3 secret’s chain by a positive integer, a Web2 one by nothing', () => {
    expect(parseRetryChainId(undefined)).toBeUndefined();
    expect(parseRetryChainId('31337')).toBe(31337);
    for (const raw of ['0', '-1', 'abc', '', '01']) expect(codeOf(() => parseRetryChainId(raw)), raw).toBe('BAD_REQUEST');
  });

  it('a record carries the caller’s string, a 0x-prefixed lowercase signature and the session record', () => {
    const session = { principalId: owner } as unknown as SessionBody;
    const caller = { chainId: -1, sessionRecord: session } as VerifiedCaller;
    expect(evidenceFor(caller, { data: 'd', signature: 'ABCDEF' })).toEqual({ data: 'd', signature: '0xabcdef', session });
    expect(evidenceFor(caller, { data: 'd', signature: '0XAB' }).signature).toBe('0xab');
    // A Web3 caller has no session: the Web2 routes refuse its chain.
    expect(() => evidenceFor({ chainId: 31337 } as VerifiedCaller, { data: 'd', signature: '0x00' })).toThrow('Chain 31337 is not supported');
  });

  it('a Web2 record resolves to chain -1 with its owner, delegate, syncing flag and type', () => {
    expect(resolvedOf(secret)).toEqual({ chainId: -1, secretId: 42, publicKeyCid: secret.publicKeyCid, owner, delegate, isSyncing: false, secretType: 1 });
  });

  it('share labels keep Web2 ids as they are and put Web3 secrets in their chain’s namespace', () => {
    expect(shareLabel(-1, 7)).toBe(7);
    const web3 = shareLabel(31337, 7);
    expect(typeof web3).toBe('string');
    expect(web3).not.toBe(shareLabel(1, 7));
    expect(web3).not.toBe(shareLabel(31337, 8));
  });

  it('only the owner or a set delegate may decrypt, and only with a usable secret', () => {
    const resolved = resolvedOf(secret);
    expect(() => assertDecryptRight(resolved, owner)).not.toThrow();
    expect(() => assertDecryptRight(resolved, delegate)).not.toThrow();
    expect(codeOf(() => assertDecryptRight(resolved, randomUUID()))).toBe('FORBIDDEN');
    expect(codeOf(() => assertDecryptRight({ ...resolved, delegate: null }, delegate))).toBe('FORBIDDEN');
    // The syncing form names the secret: the real client maps it to its "not ready" error by that.
    expect(() => assertDecryptRight({ ...resolved, isSyncing: true }, owner)).toThrow(`Secret ${resolved.secretId} is syncing; try again shortly`);
    expect(() => assertDecryptRight({ ...resolved, secretType: 2 }, owner)).toThrow('Secret type 2 is not supported');
    // No confirmed owner yet (a Web3 secret only the latest block knows): syncing for everyone, the owner too.
    const unconfirmed = { ...resolved, owner: '', delegate: null, unconfirmed: true as const };
    for (const who of [owner, delegate, '']) expect(() => assertDecryptRight(unconfirmed, who)).toThrow(`Secret ${resolved.secretId} is syncing; try again shortly`);
  });

  it('a secret is usable once synced and of type 1 (ML-KEM-768); while syncing, 403 `Secret <id> is syncing`', () => {
    expect(() => assertUsable({ secretId: 5, isSyncing: false, secretType: 1 })).not.toThrow();
    expect(codeOf(() => assertUsable({ secretId: 5, isSyncing: true, secretType: 1 }))).toBe('FORBIDDEN');
    expect(() => assertUsable({ secretId: 5, isSyncing: true, secretType: 1 })).toThrow('Secret 5 is syncing; try again shortly');
    expect(codeOf(() => assertUsable({ secretId: 5, isSyncing: false, secretType: 0 }))).toBe('FORBIDDEN');
  });

  it('POST /web2/secrets lists a secret for its owner and its delegate, with ISO dates', () => {
    expect(listedFor(secret, owner)).toBe(true);
    expect(listedFor(secret, delegate)).toBe(true);
    expect(listedFor(secret, randomUUID())).toBe(false);
    expect(listedFor({ ...secret, delegatePrincipalId: null }, delegate)).toBe(false);
    // Digests, the version, its evidence and string uses stay inside the cluster.
    expect(secretView({ ...secret, shareDigests: ['0'.repeat(64)], recentUses: [] })).toEqual({
      secretId: 42,
      ownerPrincipalId: owner,
      delegatePrincipalId: delegate,
      isSyncing: false,
      clusterId: 'qk-unit',
      secretType: 1,
      publicKeyCid: secret.publicKeyCid,
      createdAt: '2026-01-02T03:04:05.000Z',
      updatedAt: '2026-01-03T00:00:00.000Z',
    });
  });

  it('a slot’s address is the member of that slot’s, whatever the order of the cluster file', () => {
    const { descriptor } = unitCluster();
    const shuffled = { ...descriptor, nodes: [...descriptor.nodes].reverse() };
    const addressOf = memberAddresses(shuffled);
    for (const n of descriptor.nodes) expect(addressOf(n.slot!)).toBe(n.nodeAddress);
  });

  it('an error is kept as at most 200 characters of its message', () => {
    expect(errorText(new Error('boom'))).toBe('boom');
    expect(errorText('plain')).toBe('plain');
    expect(errorText(new Error('x'.repeat(500)))).toHaveLength(200);
  });
});
