/**
 * What every member checks before storing a version of a permit (docs/permits.md; docs/security.md,
 * "Transitions"): requested by a coordinator that vouched for it (and, for a transfer or delegate,
 * with the owner's signed string naming exactly this request), its token reissued only while
 * pending, consumed only with the emailed token into the result the owner's payload fixed — and
 * never changed again.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { PrincipalBody } from '../../../../src/core/accounts/records.ts';
import { permitIdFor, permitKind, permitRequestDigest, type PermitBody } from '../../../../src/core/permits/records.ts';
import type { ReplicatedRecord } from '../../../../src/core/replication/record.ts';
import { sha256Hex, signDigest, toHex } from '../../../../src/crypto/index.ts';
import { evidence, grantedSession, Slot0Writer, unitCluster } from '../../../utils/evidence.ts';

const c = unitCluster();
const kind = permitKind(c.descriptor);
const legacyKind = permitKind(c.descriptor, undefined, { acceptLegacy: true });
const NOW = Date.now();
const owner = randomUUID();
const bob = randomUUID();
const token = 'T'.repeat(43);
const session = grantedSession(c, owner, NOW);

/** A member's log with the owner's principal; slot 0 writing permits into it. */
function scene(action: 'delegate' | 'transfer' | 'rotate' = 'delegate', value: string | null = bob) {
  const w = new Slot0Writer(c, NOW);
  const principal = w.put(
    w.record(
      'principal',
      owner,
      w.version<PrincipalBody>('principal', owner, 'register', { email: 'o@x.test', emailVerified: true, passwordHash: '$argon2id$x', ed25519PublicKey: 'ab'.repeat(32), keyProof: null, status: 'active', createdAt: NOW, updatedAt: NOW, registration: 1 }) as never,
    ),
  );
  const requestId = randomUUID();
  const permitId = permitIdFor(c.descriptor.clusterId, requestId);
  const payload = JSON.stringify(action === 'rotate' ? { newPublicKey: value } : action === 'transfer' ? { newOwnerPrincipalId: value } : { delegatePrincipalId: value });
  const data = ['-1', 7, session.wallet.address, NOW, 'permit', requestId, action, sha256Hex(payload)].join('_');
  const vouched = (b: Omit<PermitBody, 'requestedBy' | 'v'>, by = 1): Omit<PermitBody, 'v'> => ({
    ...b,
    requestedBy: { nodeAddress: c.descriptor.nodes[by]!.nodeAddress, signature: '0x' + toHex(signDigest(permitRequestDigest(c.descriptor.clusterId, b), c.keys[by]!)) },
  });
  const pending = vouched({
    permitId,
    requestId,
    action,
    principalId: owner,
    secretId: action === 'rotate' ? 0 : 7,
    payload,
    payloadDigest: sha256Hex(payload),
    tokenHash: sha256Hex(token),
    createdAt: NOW,
    expiresAt: NOW + 900_000,
    status: 'pending',
    consumedAt: null,
    result: null,
    auth: action === 'rotate' ? null : evidence(session, data),
    authPrincipal: action === 'rotate' ? null : { origin: principal.origin, seq: principal.seq },
    token: null,
  });
  const version = (change: string, body: Omit<PermitBody, 'v'>, prev?: ReplicatedRecord | null) => w.version<PermitBody>('permit', permitId, change, body, prev === undefined ? {} : { prev });
  const check = (body: PermitBody, options: { atMs?: number; k?: typeof kind } = {}) => {
    const r = w.record('permit', permitId, body as never, options.atMs, true);
    return (options.k ?? kind).validate!(body, w.contextOf(r));
  };
  const accept = async (body: PermitBody) => {
    const r = w.record('permit', permitId, body as never);
    expect(await kind.validate!(body, w.contextOf(r))).toBeUndefined();
    return w.put(r);
  };
  const result: Record<string, string | number | null> = action === 'rotate' ? { principalId: owner, newPublicKey: value } : action === 'transfer' ? { secretId: 7, newOwnerPrincipalId: value, delegatePrincipalId: null } : { secretId: 7, delegatePrincipalId: value };
  const consumedBody = (over: Partial<PermitBody> = {}): Omit<PermitBody, 'v'> => ({ ...pending, status: 'consumed', consumedAt: NOW + 1000, result, token, ...over });
  return { w, principal, permitId, requestId, payload, data, pending, vouched, version, check, accept, consumedBody };
}

const code = async (p: ReturnType<ReturnType<typeof scene>['check']>) => (await p)?.code;

describe('permit: request', () => {
  it('vouched for by a coordinator over exactly this request, under the permit id its request fixes', async () => {
    const s = scene();
    expect(await s.check(s.version('request', s.pending))).toBeUndefined();
    // A second permit for one request (another id, say with a token of the writer's choosing).
    const other = randomUUID();
    const second = s.w.version<PermitBody>('permit', other, 'request', { ...s.pending, permitId: other });
    const w2 = s.w.record('permit', other, second as never, undefined, true);
    expect(await kind.validate!(second, s.w.contextOf(w2))).toMatchObject({ code: 'key_mismatch', detail: 'not the permit of its request' });
    const { requestedBy: _r, ...bare } = s.pending;
    expect(await code(s.check(s.version('request', s.vouched(bare, 3))))).toBe('bad_request_signature');
    // The vouch covers the token hash: another token hash is another request.
    expect(await code(s.check(s.version('request', { ...s.pending, tokenHash: 'c'.repeat(64) })))).toBe('bad_request_signature');
    // A requested permit is pending, with no result.
    expect(await code(s.check(s.version('request', { ...s.pending, status: 'consumed', consumedAt: NOW, result: { secretId: 7 }, token })))).toBe('fields_changed');
    expect(await code(s.check(s.version('request', { ...s.pending, payload: '{"delegatePrincipalId":"x"}' })))).toBe('payload_mismatch');
  });

  it('a transfer or delegate carries the owner’s 8-part string naming this request, and its session is live', async () => {
    const s = scene();
    const other = ['-1', 7, session.wallet.address, NOW, 'permit', randomUUID(), 'delegate', sha256Hex(s.payload)].join('_');
    expect(await code(s.check(s.version('request', { ...s.pending, auth: evidence(session, other) })))).toBe('names_another_value');
    const otherSecret = ['-1', 8, session.wallet.address, NOW, 'permit', s.requestId, 'delegate', sha256Hex(s.payload)].join('_');
    expect(await code(s.check(s.version('request', { ...s.pending, auth: evidence(session, otherSecret) })))).toBe('names_another_secret');
    const bobSession = grantedSession(c, bob, NOW);
    expect(await code(s.check(s.version('request', { ...s.pending, auth: evidence(bobSession, s.data) })))).toBe('evidence_invalid');
    expect(await code(s.check(s.version('request', { ...s.pending, auth: null })))).toBe('evidence_invalid');
  });

  it('issue 27 #4: a 4-part string signed for another route backs no permit unless this member’s operator accepts the legacy form', async () => {
    const s = scene();
    const fourPart = evidence(session, `-1_7_${session.wallet.address}_${NOW}`);
    const legacy = s.version('request', s.vouched({ ...s.pending, auth: fourPart }));
    expect(await code(s.check(legacy))).toBe('legacy_refused');
    expect(await s.check(legacy, { k: legacyKind })).toBeUndefined();
  });
});

describe('permit: reissue and consume', () => {
  it('a reissue changes only the token hash and the vouch over it, while pending and not expired', async () => {
    const s = scene();
    await s.accept(s.version('request', s.pending));
    const { requestedBy: _r, ...bare } = s.pending;
    const reissued = s.vouched({ ...bare, tokenHash: 'd'.repeat(64) }, 0);
    expect(await s.check(s.version('reissue', reissued))).toBeUndefined();
    expect(await code(s.check(s.version('reissue', { ...reissued, payload: '{"delegatePrincipalId":null}' })))).toBe('fields_changed');
    expect(await code(s.check(s.version('reissue', { ...reissued, tokenHash: 'e'.repeat(64) })))).toBe('bad_request_signature');
    expect(await code(s.check(s.version('reissue', reissued), { atMs: NOW + 900_001 }))).toBe('permit_expired');
  });

  it('a consumption carries the emailed token, before expiry, into the result the owner’s payload fixed', async () => {
    const s = scene();
    await s.accept(s.version('request', s.pending));
    expect(await s.check(s.version('consume', s.consumedBody()))).toBeUndefined();
    expect(await code(s.check(s.version('consume', s.consumedBody({ token: 'x'.repeat(43) }))))).toBe('token_mismatch');
    expect(await code(s.check(s.version('consume', s.consumedBody({ token: null }))))).toBe('token_mismatch');
    expect(await code(s.check(s.version('consume', s.consumedBody()), { atMs: NOW + 900_001 }))).toBe('permit_expired');
    // Issue 27 #3: a result the payload does not fix.
    expect(await code(s.check(s.version('consume', s.consumedBody({ result: { secretId: 7, delegatePrincipalId: randomUUID() } }))))).toBe('result_mismatch');
    expect(await code(s.check(s.version('consume', s.consumedBody({ result: { secretId: 7, delegatePrincipalId: bob, extra: 'x' } }))))).toBe('result_mismatch');
    // Nothing else changes with it.
    expect(await code(s.check(s.version('consume', s.consumedBody({ principalId: bob }))))).toBe('fields_changed');
  });

  it('issue 27 #3: a consumed permit never changes again — not re-consumed with another result, not reissued', async () => {
    const s = scene('transfer', bob);
    await s.accept(s.version('request', s.pending));
    await s.accept(s.version('consume', s.consumedBody()));
    expect(await code(s.check(s.version('consume', s.consumedBody({ result: { secretId: 7, newOwnerPrincipalId: bob, delegatePrincipalId: randomUUID() } }))))).toBe('terminal_state');
    expect(await code(s.check(s.version('reissue', s.pending)))).toBe('terminal_state');
  });

  it('a rotate permit fixes the new key; a transfer the new owner', async () => {
    const key = 'cd'.repeat(32);
    const r = scene('rotate', key);
    await r.accept(r.version('request', r.pending));
    expect(await r.check(r.version('consume', r.consumedBody()))).toBeUndefined();
    expect(await code(r.check(r.version('consume', r.consumedBody({ result: { principalId: owner, newPublicKey: 'ef'.repeat(32) } }))))).toBe('result_mismatch');
    const t = scene('transfer', bob);
    await t.accept(t.version('request', t.pending));
    expect(await code(t.check(t.version('consume', t.consumedBody({ result: { secretId: 7, newOwnerPrincipalId: randomUUID(), delegatePrincipalId: null } }))))).toBe('result_mismatch');
  });
});
