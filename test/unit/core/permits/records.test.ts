/**
 * The record rules every member applies to permits and to the key changes they make (docs/permits.md;
 * docs/security.md, "Who may write what"): what a member refuses to store, whoever sent it.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { permitKind, permitRequestDigest, type PermitBody } from '../../../../src/core/permits/records.ts';
import { principalKind, keyRegistrationMessage, type PrincipalBody } from '../../../../src/core/accounts/records.ts';
import { ed25519PublicKeyOf, sha256Hex, signDigest, signEd25519, toHex } from '../../../../src/crypto/index.ts';
import { contextFor, evidence, grantedSession, unitCluster } from '../../../utils/evidence.ts';

const c = unitCluster();
const kind = permitKind(c.descriptor);
const NOW = Date.now();
const owner = randomUUID();
const permitId = randomUUID();
const requestId = randomUUID();
const token = 'T'.repeat(43);
const payload = '{"delegatePrincipalId":null}';
const session = grantedSession(c, owner, NOW);
const data = ['-1', 7, session.wallet.address, NOW, 'permit', requestId, 'delegate', sha256Hex(payload)].join('_');

function requested(b: Omit<PermitBody, 'requestedBy'>, by = 1): PermitBody {
  const signature = '0x' + toHex(signDigest(permitRequestDigest(c.descriptor.clusterId, b), c.keys[by]!));
  return { ...b, requestedBy: { nodeAddress: c.descriptor.nodes[by]!.nodeAddress, signature } };
}

const pending: PermitBody = requested({
  permitId,
  requestId,
  action: 'delegate',
  principalId: owner,
  secretId: 7,
  payload,
  payloadDigest: sha256Hex(payload),
  tokenHash: sha256Hex(token),
  createdAt: NOW,
  expiresAt: NOW + 900_000,
  status: 'pending',
  consumedAt: null,
  result: null,
  auth: evidence(session, data),
});
const consumed: PermitBody = { ...pending, status: 'consumed', consumedAt: NOW + 1000, result: { secretId: 7, delegatePrincipalId: null }, token };

const check = (b: PermitBody, origin = 0, held = new Map<string, unknown>()) => kind.validate!(b, contextFor(c, { key: permitId, origin, atMs: NOW + 1000, held: held as never }));
const holding = (b: PermitBody) => new Map([[`permit!${permitId}`, b as unknown]]);

describe('permit records', () => {
  it('a pending permit: from slot 0, vouched for by a coordinator, with the owner’s signed 8-part string', async () => {
    expect(await check(pending, 0)).toBeUndefined();
    expect(await check(pending, 2)).toMatch(/slot 0/);
    // Vouched for by a member that is not a coordinator, or not at all.
    expect(await check(requested(pending, 3))).toMatch(/not requested by a coordinator/);
    expect(await check({ ...pending, requestedBy: undefined })).toMatch(/not requested by a coordinator/);
    // The vouch covers the token hash: another token hash is another request.
    expect(await check({ ...pending, tokenHash: 'c'.repeat(64) })).toMatch(/bad request signature/);
  });

  it('the owner’s string must name this request, this secret, and be signed by the principal it names', async () => {
    const other = grantedSession(c, randomUUID(), NOW);
    expect(await check(requested({ ...pending, auth: evidence(other, data.replace(session.wallet.address, other.wallet.address)) }))).toMatch(/not the requesting principal/);
    expect(await check(requested({ ...pending, auth: evidence(session, data.replace(requestId, randomUUID())) }))).toMatch(/another request/);
    expect(await check(requested({ ...pending, auth: evidence(session, data.replace('-1_7_', '-1_8_')) }))).toMatch(/another secret/);
    expect(await check(requested({ ...pending, auth: null }))).toMatch(/signed string/);
    // A session granted by fewer than threshold members backs nothing.
    const thin = grantedSession(c, owner, NOW, [0, 1]);
    expect(await check(requested({ ...pending, auth: evidence(thin, data.replace(session.wallet.address, thin.wallet.address)) }))).toMatch(/quorum proof/);
  });

  it('a consumption: by a coordinator, with the emailed token, for the permit the member holds, unchanged', async () => {
    expect(await check(consumed, 1, holding(pending))).toBeUndefined();
    expect(await check(consumed, 3, holding(pending))).toMatch(/consumed by coordinators/);
    expect(await check({ ...consumed, token: null }, 1, holding(pending))).toMatch(/emailed token/);
    expect(await check({ ...consumed, token: 'U'.repeat(43) }, 1, holding(pending))).toMatch(/emailed token/);
    expect(await check(consumed, 1)).toMatch(/unknown permit/);
    // A token of its own, with the hash to match, on a permit that says otherwise.
    const mine = 'M'.repeat(43);
    expect(await check({ ...consumed, token: mine, tokenHash: sha256Hex(mine) }, 1, holding(pending))).toMatch(/differs from the permit/);
  });

  it('a consumption carries its time and result; a pending permit neither', async () => {
    expect(await check({ ...consumed, result: null }, 1, holding(pending))).toMatch(/consumed/);
    expect(await check({ ...consumed, consumedAt: null }, 1, holding(pending))).toMatch(/consumed/);
    expect(await check({ ...pending, result: { secretId: 7, delegatePrincipalId: null } })).toMatch(/consumed/);
  });

  it('consumed outranks pending, so a late pending copy never revives a consumed permit', () => {
    expect(kind.rank!(consumed)).toBeGreaterThan(kind.rank!(pending));
  });
});

describe('principal records: where a key may come from', () => {
  const seed = new Uint8Array(32).fill(7);
  const key = toHex(ed25519PublicKeyOf(seed));
  const proof = toHex(signEd25519(seed, keyRegistrationMessage(key)));
  const principalId = randomUUID();
  const base: PrincipalBody = { email: 'a@example.test', emailVerified: true, passwordHash: '$argon2id$x', ed25519PublicKey: null, keyProof: null, status: 'active', createdAt: 1, updatedAt: 1 };
  const rotate = { status: 'consumed', action: 'rotate', principalId, result: { principalId, newPublicKey: key } };
  const validate = (b: PrincipalBody, held = new Map<string, unknown>(), siblings: Array<{ kind: string; key: string; body: never }> = []) =>
    principalKind.validate!(b, contextFor(c, { key: principalId, origin: 1, atMs: NOW, held: held as never, siblings, self: { kind: 'principal' } }));

  it('a first key comes with its proof (the coordinator vouches for the password); none without', async () => {
    expect(await validate(base)).toBeUndefined();
    expect(await validate({ ...base, ed25519PublicKey: key, keyProof: proof })).toBeUndefined();
    expect(await validate({ ...base, ed25519PublicKey: key, keyProof: null })).toMatch(/without proof/);
    expect(await validate({ ...base, ed25519PublicKey: key, keyProof: 'c'.repeat(128) })).toMatch(/bad key signature/);
    expect(await validate({ ...base, keyProof: 'c'.repeat(128) })).toMatch(/proof without key/);
  });

  it('replacing a key takes a consumed rotate permit for this principal and this key', async () => {
    const other = toHex(ed25519PublicKeyOf(new Uint8Array(32).fill(9)));
    const held = new Map<string, unknown>([[`principal!${principalId}`, { ...base, ed25519PublicKey: other, keyProof: 'd'.repeat(128) }]]);
    // A proof alone names no principal: anyone could make one.
    expect(await validate({ ...base, ed25519PublicKey: key, keyProof: proof }, held)).toMatch(/rotate permit/);
    const pid = randomUUID();
    expect(await validate({ ...base, ed25519PublicKey: key, keyProof: null, keyPermitId: pid }, held)).toMatch(/does not authorise/);
    expect(await validate({ ...base, ed25519PublicKey: key, keyProof: null, keyPermitId: pid }, held, [{ kind: 'permit', key: pid, body: rotate as never }])).toBeUndefined();
    held.set(`permit!${pid}`, { ...rotate, status: 'pending' });
    expect(await validate({ ...base, ed25519PublicKey: key, keyProof: null, keyPermitId: pid }, held)).toMatch(/does not authorise/);
    held.set(`permit!${pid}`, { ...rotate, principalId: randomUUID() });
    expect(await validate({ ...base, ed25519PublicKey: key, keyProof: null, keyPermitId: pid }, held)).toMatch(/does not authorise/);
    held.set(`permit!${pid}`, rotate);
    expect(await validate({ ...base, ed25519PublicKey: key, keyProof: null, keyPermitId: pid }, held)).toBeUndefined();
  });
});
