/**
 * The session service's quorum logic with members stubbed through deps: how grants, refusals and
 * unreachable members turn into a session, a 403 or a 503.
 */
import { describe, expect, it } from 'vitest';
import { createSessionsService, sessionMessage } from '../../../../src/core/sessions/service.ts';
import { checkQuorumProof, sessionGrantDigest } from '../../../../src/core/sessions/records.ts';
import { AppError } from '../../../../src/errors/index.ts';
import { refusalOf } from '../../../utils/refusal.ts';
import { createLogger } from '../../../../src/log/index.ts';
import type { ClusterDescriptor, ClusterNodeEntry, MemberRpc, WriteIntent } from '../../../../src/core/replication/ports.ts';
import type { ReplicatedRecord } from '../../../../src/core/replication/record.ts';
import { addressOfPrivateKey, generatePrivateKey, publicKeyOf, signDigest, toHex } from '../../../../src/crypto/index.ts';

const NOW = 1_800_000_000_000;
const PRINCIPAL = '0b5d6c1e-2f3a-4b4c-8d5e-6f7a8b9c0d1e';
const KEY = 'ab'.repeat(32);
const SESSION_ADDRESS = '0x' + '12'.repeat(20);

const memberKeys = Array.from({ length: 5 }, () => generatePrivateKey());
const descriptor: ClusterDescriptor = {
  clusterId: 'test-cluster',
  size: 5,
  threshold: 3,
  nodes: memberKeys.map((k, slot) => ({ id: `node-${slot}`, slot, peerId: `peer-${slot}`, nodeAddress: addressOfPrivateKey(k), signingPublicKey: toHex(publicKeyOf(k)), multiaddrs: [] })),
};

/** A service on member 0 whose peers answer as `answer(slot)` says. */
function service(answer: (slot: number, body: Record<string, unknown>) => 'grant' | 'refuse' | 'unreachable') {
  const writes: WriteIntent[] = [];
  const states = new Map<string, ReplicatedRecord>();
  states.set(`principal!${PRINCIPAL}`, { body: { status: 'active', ed25519PublicKey: KEY } } as unknown as ReplicatedRecord);
  const members: MemberRpc = {
    async call(slot, _service, body) {
      const verdict = answer(slot, body as Record<string, unknown>);
      if (verdict === 'unreachable') throw new Error('timeout');
      if (verdict === 'refuse') throw new AppError('FORBIDDEN', 'No Ed25519 key registered for this principal');
      const b = body as { issuedAt: number; ttl: number | null };
      const grant = { principalId: PRINCIPAL, sessionAddress: SESSION_ADDRESS, publicKey: KEY, issuedAt: b.issuedAt, expiresAt: b.issuedAt + (b.ttl ?? 900_000) };
      return { nodeAddress: descriptor.nodes[slot]!.nodeAddress, signature: '0x' + toHex(signDigest(sessionGrantDigest(descriptor.clusterId, grant), memberKeys[slot]!)) };
    },
  };
  const svc = createSessionsService(
    { grantTimeoutMs: 1000 },
    {
      replicator: {
        async replicate(intent) {
          writes.push(intent);
          return { record: {} as ReplicatedRecord, acked: [], failed: [] };
        },
      },
      state: { get: async (kind, key) => states.get(`${kind}!${key}`), list: async function* () {} },
      membership: { descriptor, self: descriptor.nodes[0]!, isReachable: () => true, reachableCount: () => 5 },
      members,
      verifier: { verify: async () => Promise.reject(new Error('unused')) },
      signDigest: (d) => '0x' + toHex(signDigest(d, memberKeys[0]!)),
      verifyEd25519: (key, message, signature) => key === KEY && message === sessionMessage(PRINCIPAL, String(NOW), SESSION_ADDRESS) && signature === 'cd'.repeat(64),
      versionVector: () => ({}),
      catchUp: async () => undefined,
      clock: () => NOW,
      logger: createLogger({ level: 'silent' }),
    },
  );
  return { svc, writes };
}

const request = { principalId: PRINCIPAL, timestamp: String(NOW), sessionAddress: SESSION_ADDRESS, signature: 'cd'.repeat(64) };

describe('createSession quorum', () => {
  it('collects threshold grants (the next member replacing one that fails) and replicates a session every node will accept', async () => {
    const { svc, writes } = service((slot) => (slot === 1 ? 'unreachable' : 'grant'));
    const created = await svc.createSession(request);
    expect(created.quorumProof).toHaveLength(3);
    expect(created.quorumProof.map((g) => g.nodeAddress)).not.toContain(descriptor.nodes[1]!.nodeAddress);
    expect(writes).toHaveLength(1);
    const body = writes[0]!.body as { grants: Array<{ nodeAddress: string; signature: string }>; issuedAt: number; expiresAt: number };
    expect(checkQuorumProof(descriptor, { principalId: PRINCIPAL, sessionAddress: SESSION_ADDRESS, publicKey: KEY, issuedAt: body.issuedAt, expiresAt: body.expiresAt }, body.grants)).toBeUndefined();
    expect(created.expiresAt).toBe(new Date(NOW + 900_000).toISOString());
  });

  it('members refusing the grant (key registered on fewer than threshold members) → 403, nothing replicated', async () => {
    const { svc, writes } = service((slot) => (slot >= 2 ? 'refuse' : 'grant'));
    await expect(svc.createSession(request)).rejects.toMatchObject({ code: 'FORBIDDEN', status: 403 });
    expect(writes).toHaveLength(0);
  });

  it('members not answering → 503 QUORUM_UNAVAILABLE naming them, nothing replicated', async () => {
    const { svc, writes } = service((slot) => (slot >= 2 ? 'unreachable' : 'grant'));
    await expect(svc.createSession(request)).rejects.toMatchObject({ code: 'QUORUM_UNAVAILABLE', status: 503 });
    expect(writes).toHaveLength(0);
  });

  it('a quorum proof with fewer than threshold valid member signatures is refused by the record validator', () => {
    const grant = { principalId: PRINCIPAL, sessionAddress: SESSION_ADDRESS, publicKey: KEY, issuedAt: NOW, expiresAt: NOW + 60_000 };
    const digest = sessionGrantDigest(descriptor.clusterId, grant);
    const sig = (slot: number) => ({ nodeAddress: descriptor.nodes[slot]!.nodeAddress, signature: '0x' + toHex(signDigest(digest, memberKeys[slot]!)) });
    expect(checkQuorumProof(descriptor, grant, [sig(0), sig(1), sig(2)])).toBeUndefined();
    expect(checkQuorumProof(descriptor, grant, [sig(0), sig(1), sig(1)])).toMatch(/2 valid grants/);
    expect(checkQuorumProof(descriptor, grant, [sig(0), sig(1), { ...sig(2), nodeAddress: descriptor.nodes[3]!.nodeAddress }])).toMatch(/2 valid grants/);
    expect(checkQuorumProof(descriptor, { ...grant, expiresAt: grant.expiresAt + 1 }, [sig(0), sig(1), sig(2)])).toMatch(/0 valid grants/);
  });
});

describe("a member's grant (decoded at the edge; refusals by code and reason)", () => {
  const coordinator = { ...descriptor.nodes[1]!, httpUrl: 'http://127.0.0.1:3011' };
  const body = { ...request, ttl: null, issuedAt: NOW, vv: {} };
  const grant = (b: unknown, from: ClusterNodeEntry = coordinator) => refusalOf(() => service(() => 'grant').svc.handleGrant(b, from));

  it('a coordinator asking for a genuine proof gets a signed grant', async () => {
    const res = await service(() => 'grant').svc.handleGrant(body, coordinator);
    expect(res.nodeAddress).toBe(descriptor.nodes[0]!.nodeAddress);
    // A version vector's malformed entries are dropped, not refused.
    expect(await grant({ ...body, vv: { 'node-1': 'x' } })).toBe('accepted');
    const { vv: _absent, ...withoutVv } = body;
    expect(await grant(withoutVv)).toBe('accepted');
  });

  it('a node that is not a coordinator gets none, whatever it sends', async () => {
    expect(await grant(body, descriptor.nodes[2]!)).toEqual({ code: 'FORBIDDEN', reason: 'not_coordinator' });
    expect(await grant({}, descriptor.nodes[2]!)).toEqual({ code: 'FORBIDDEN', reason: 'not_coordinator' });
  });

  it('a malformed request is refused as such: a field missing, of another type, out of bounds', async () => {
    for (const bad of [
      null,
      {},
      { ...body, principalId: 'not-a-uuid' },
      { ...body, timestamp: NOW },
      { ...body, sessionAddress: '0x12' },
      { ...body, signature: 'cd' },
      { ...body, ttl: undefined },
      { ...body, ttl: 1000 },
      { ...body, ttl: '900000' },
      { ...body, issuedAt: String(NOW) },
      { ...body, issuedAt: 1.5 },
    ]) {
      expect(await grant(bad), JSON.stringify(bad)).toEqual({ code: 'BAD_REQUEST', reason: 'malformed' });
    }
  });

  it('an issue time far from the member\'s clock, a proof that does not verify, an unknown principal', async () => {
    expect(await grant({ ...body, issuedAt: NOW - 120_000 })).toEqual({ code: 'FORBIDDEN', reason: 'clock_skew' });
    expect(await grant({ ...body, signature: 'ef'.repeat(64) })).toEqual({ code: 'UNAUTHORIZED', reason: 'unverified' });
    expect(await grant({ ...body, principalId: '1b5d6c1e-2f3a-4b4c-8d5e-6f7a8b9c0d1e' })).toEqual({ code: 'NOT_FOUND', reason: 'unknown_principal' });
  });
});
