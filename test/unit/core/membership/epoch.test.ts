/**
 * Membership epochs (src/core/membership): who may replace an identity, what a step may change, how
 * a node checks it at start, and what the replication engine and the quorum-proof check accept from a
 * retired identity. Malicious members try: a minority signing, a member approving a second change,
 * a rollback, and the retired key writing on.
 */
import { describe, expect, it, afterEach } from 'vitest';
import { z } from 'zod';
import { approvalsProblem, epochDigest, epochStepOf, membershipChangeProblem } from '../../../../src/core/membership/epoch.ts';
import { createEpochApprover } from '../../../../src/core/membership/approve.ts';
import type { ClusterDescriptor, EpochApproval, RetiredIdentity } from '../../../../src/core/replication/ports.ts';
import { createReplicationEngine } from '../../../../src/core/replication/engine.ts';
import { createKindRegistry, type RecordKindDefinition } from '../../../../src/core/replication/kinds.ts';
import { signRecord } from '../../../../src/core/replication/record.ts';
import { checkQuorumProof, sessionGrantDigest, type SessionGrant } from '../../../../src/core/sessions/records.ts';
import { parseClusterFile, parseClusterProposal } from '../../../../src/config/cluster-file.ts';
import { addressOfPrivateKey, generatePrivateKey, publicKeyOf, signDigest, toHex } from '../../../../src/crypto/index.ts';
import { openStore } from '../../../../src/store/index.ts';
import { createLogger } from '../../../../src/log/index.ts';
import { createMetrics } from '../../../../src/metrics/index.ts';
import { AppError } from '../../../../src/errors/index.ts';
import { cleanupStack, tempDir } from '../../../utils/temp.ts';

const stack = cleanupStack();
afterEach(() => stack.run());

const PEER = (i: number, gen = 0) => `12D3KooW${'ABCDEFGHJKLMNPQRSTUVWXYZ'[i]!}${String(gen + 1)}${'x'.repeat(36)}`;

function identity(key: Uint8Array, i: number, gen = 0) {
  return { peerId: PEER(i, gen), nodeAddress: addressOfPrivateKey(key), signingPublicKey: toHex(publicKeyOf(key, true)) };
}

/** A 5-member, threshold-3 cluster at epoch 0 with its members' keys. */
function cluster() {
  const keys = Array.from({ length: 5 }, () => generatePrivateKey());
  const descriptor: ClusterDescriptor = parseClusterFile(
    {
      clusterId: 'qk-epoch',
      size: 5,
      threshold: 3,
      nodes: keys.map((k, i) => ({ id: `node-${i}`, slot: i, ...identity(k, i), multiaddrs: [`/ip4/127.0.0.1/tcp/${4000 + i}`], httpUrl: `http://127.0.0.1:${3000 + i}` })),
    },
    'test',
  );
  return { keys, descriptor };
}

/** The next epoch replacing node `i` with a fresh key; unsigned. */
function proposeReplacement(prev: ClusterDescriptor, i: number, lastSeq = 0, retiredAt = Date.now()) {
  const newKey = generatePrivateKey();
  const old = prev.nodes.find((n) => n.id === `node-${i}`)!;
  const epoch = (prev.epoch ?? 0) + 1;
  const retired: RetiredIdentity = { ...old, epoch, lastSeq, retiredAt };
  const { approvals: _a, ...rest } = prev;
  const next: ClusterDescriptor = { ...rest, epoch, nodes: prev.nodes.map((n) => (n.id === old.id ? { ...n, ...identity(newKey, i, epoch) } : n)), retired: [...(prev.retired ?? []), retired] };
  return { next, newKey, retired };
}

function approve(next: ClusterDescriptor, signers: Uint8Array[]): EpochApproval[] {
  return signers.map((k) => ({ nodeAddress: addressOfPrivateKey(k), signature: '0x' + toHex(signDigest(epochDigest(next), k)) }));
}

describe('membership epochs: what a step may change', () => {
  it('accepts one replacement approved by threshold members of the previous epoch, and the file parses', () => {
    const { keys, descriptor } = cluster();
    const { next, retired } = proposeReplacement(descriptor, 4, 7);
    const signed = { ...next, approvals: approve(next, [keys[0]!, keys[1]!, keys[2]!]) };
    expect(parseClusterFile(signed, 'next')).toEqual(signed);
    const step = epochStepOf(descriptor, signed);
    expect(step).toMatchObject({ retired: { nodeAddress: retired.nodeAddress, lastSeq: 7 }, successor: { id: 'node-4', slot: 4 } });
    expect(membershipChangeProblem(descriptor, signed)).toBeUndefined();
  });

  it('refuses threshold − 1 approvals, the retired key approving itself, duplicates and outsiders', () => {
    const { keys, descriptor } = cluster();
    const { next, newKey } = proposeReplacement(descriptor, 4);
    const cases: Array<[string, Uint8Array[]]> = [
      ['two members', [keys[0]!, keys[1]!]],
      ['two members and the retired key', [keys[0]!, keys[1]!, keys[4]!]],
      ['two members and the new key', [keys[0]!, keys[1]!, newKey]],
      ['two members, one twice', [keys[0]!, keys[1]!, keys[1]!]],
      ['two members and an outsider', [keys[0]!, keys[1]!, generatePrivateKey()]],
    ];
    for (const [what, signers] of cases) {
      expect(membershipChangeProblem(descriptor, { ...next, approvals: approve(next, signers) }), what).toMatch(/2 valid approvals.*3 are needed/);
    }
  });

  it('refuses a signature over another proposal (a malicious member reusing approvals for a second change)', () => {
    const { keys, descriptor } = cluster();
    const honest = proposeReplacement(descriptor, 4).next;
    const approvals = approve(honest, [keys[0]!, keys[1]!, keys[2]!]);
    // Member 3 swaps its own choice of key for node-4 in, keeping the approvals of the honest proposal.
    const swapped = proposeReplacement(descriptor, 4).next;
    expect(membershipChangeProblem(descriptor, { ...swapped, approvals })).toMatch(/0 valid approvals/);
  });

  it('refuses steps that change more than one identity, a slot, a role, the shape, or skip an epoch', () => {
    const { keys, descriptor } = cluster();
    const signers = [keys[0]!, keys[1]!, keys[2]!];
    const base = proposeReplacement(descriptor, 4).next;
    const variants: Array<[string, ClusterDescriptor, RegExp]> = [
      ['a second identity', { ...base, nodes: base.nodes.map((n) => (n.id === 'node-3' ? { ...n, ...identity(generatePrivateKey(), 3, 9) } : n)) }, /one identity only/],
      ['the slot', { ...base, nodes: base.nodes.map((n) => (n.id === 'node-4' ? { ...n, slot: 3 } : n.id === 'node-3' ? { ...n, slot: 4 } : n)) }, /keeps its id, slot and role|one identity only/],
      ['the role', { ...base, nodes: base.nodes.map((n) => (n.id === 'node-4' ? { id: n.id, slot: n.slot, peerId: n.peerId, nodeAddress: n.nodeAddress, signingPublicKey: n.signingPublicKey, multiaddrs: n.multiaddrs } : n)) }, /keeps its id, slot and role/],
      ['the threshold', { ...base, threshold: 4 }, /cannot change/],
      ['two epochs at once', { ...base, epoch: 2, retired: base.retired!.map((r) => ({ ...r, epoch: 2 })) }, /does not follow|start it on each epoch/],
      ['nothing retired', { ...base, retired: [] }, /exactly one identity/],
    ];
    for (const [what, next, problem] of variants) {
      expect(membershipChangeProblem(descriptor, { ...next, approvals: approve(next, signers) }), what).toMatch(problem);
    }
  });

  it('a node refuses to go back an epoch, or to run on other identities at the epoch it accepted', () => {
    const { keys, descriptor } = cluster();
    const { next } = proposeReplacement(descriptor, 4);
    const signed = { ...next, approvals: approve(next, [keys[0]!, keys[1]!, keys[2]!]) };
    expect(membershipChangeProblem(signed, descriptor)).toMatch(/rollback/);
    const tampered = { ...descriptor, nodes: descriptor.nodes.map((n) => (n.id === 'node-2' ? { ...n, ...identity(generatePrivateKey(), 2, 5) } : n)) };
    expect(membershipChangeProblem(descriptor, tampered)).toMatch(/other identities/);
    // Addresses are not identity: a moved node needs no epoch.
    const moved = { ...descriptor, nodes: descriptor.nodes.map((n) => (n.id === 'node-2' ? { ...n, multiaddrs: ['/ip4/10.0.0.2/tcp/4002'] } : n)) };
    expect(membershipChangeProblem(descriptor, moved)).toBeUndefined();
    expect(approvalsProblem(descriptor, signed, signed.retired![0]!)).toBeUndefined();
  });
});

describe('membership epochs: a member approving', () => {
  function approverOf(descriptor: ClusterDescriptor, key: Uint8Array, i: number, vv: Record<string, number>) {
    return createEpochApprover({}, { descriptor, self: descriptor.nodes[i]!, parseProposal: (v) => parseClusterProposal(v, 'proposal'), versionVector: () => vv, signDigest: (d) => '0x' + toHex(signDigest(d, key)), clock: Date.now });
  }
  const statusOf = (f: () => unknown) => {
    try {
      f();
    } catch (err) {
      return err instanceof AppError ? `${err.status} ${err.message}` : String(err);
    }
    return 'signed';
  };

  it('signs a valid step whose lastSeq is exactly the log it holds; 409 for more or less; refuses its own retirement and a skewed time', () => {
    const { keys, descriptor } = cluster();
    const oldAddress = descriptor.nodes[4]!.nodeAddress;
    const { next } = proposeReplacement(descriptor, 4, 12);
    const { approval } = approverOf(descriptor, keys[0]!, 0, { [oldAddress]: 12 }).approve(next);
    expect(approvalsProblem(descriptor, { ...next, approvals: [approval, ...approve(next, [keys[1]!, keys[2]!])] }, next.retired![0]!)).toBeUndefined();
    expect(statusOf(() => approverOf(descriptor, keys[0]!, 0, { [oldAddress]: 11 }).approve(next))).toMatch(/^409 .*not yet 12/);
    expect(statusOf(() => approverOf(descriptor, keys[0]!, 0, { [oldAddress]: 13 }).approve(next))).toMatch(/^409 .*would cut/);
    expect(statusOf(() => approverOf(descriptor, keys[4]!, 4, { [oldAddress]: 12 }).approve(next))).toMatch(/^403 .*its own identity/);
    const stale = proposeReplacement(descriptor, 4, 12, Date.now() - 3_600_000).next;
    expect(statusOf(() => approverOf(descriptor, keys[0]!, 0, { [oldAddress]: 12 }).approve(stale))).toMatch(/^400 .*retiredAt/);
    expect(statusOf(() => approverOf(descriptor, keys[0]!, 0, { [oldAddress]: 12 }).approve({ ...next, threshold: 'three' }))).toMatch(/^400 .*threshold/);
    const double = { ...next, nodes: next.nodes.map((n) => (n.id === 'node-1' ? { ...n, ...identity(generatePrivateKey(), 1, 8) } : n)) };
    expect(statusOf(() => approverOf(descriptor, keys[0]!, 0, { [oldAddress]: 12 }).approve(double))).toMatch(/^400 .*one identity only/);
  });
});

describe('membership epochs: what a retired identity can still do', () => {
  const noteKind: RecordKindDefinition<{ v: number }> = { name: 'note', writers: ['member'], body: z.strictObject({ v: z.number().int() }) };

  it('its log up to lastSeq replicates to a node catching up; anything after is refused as a retired origin', async () => {
    const { keys, descriptor } = cluster();
    const { next, newKey } = proposeReplacement(descriptor, 4, 2);
    const signed = { ...next, approvals: approve(next, [keys[0]!, keys[1]!, keys[2]!]) };
    const store = await openStore({ location: await tempDir(stack) });
    stack.push(() => store.close());
    const engine = createReplicationEngine(
      { applyTimeoutMs: 500 },
      {
        store: store.records,
        kinds: createKindRegistry([noteKind as RecordKindDefinition]),
        membership: { descriptor: signed, self: signed.nodes[0]!, isReachable: () => true, reachableCount: () => 5 },
        transport: () => ({ sendApply: async () => undefined, publish: async () => undefined }),
        signingKey: keys[0]!,
        clock: Date.now,
        logger: createLogger({ level: 'silent' }),
        metrics: createMetrics({ processMetrics: false }),
      },
    );
    await engine.open();
    const oldAddress = descriptor.nodes[4]!.nodeAddress;
    const note = (key: Uint8Array, origin: string, seq: number) => signRecord(signed.clusterId, { kind: 'note', key: `k${seq}`, origin, seq, hlc: [1000 + seq, 0], body: { v: seq } }, key);
    const historic = await engine.ingest([note(keys[4]!, oldAddress, 1), note(keys[4]!, oldAddress, 2)], 'sync');
    expect(historic.applied).toBe(2);
    const stolen = await engine.ingest([note(keys[4]!, oldAddress, 3)], 'gossip');
    expect(stolen.rejected).toEqual([expect.objectContaining({ reason: 'retired_origin' })]);
    expect(await engine.get('note', 'k3')).toBeUndefined();
    const fresh = await engine.ingest([note(newKey, signed.nodes[4]!.nodeAddress, 1)], 'apply');
    expect(fresh.applied).toBe(1);
  });

  it('its session grants count for sessions issued before it was retired, never after', () => {
    const { keys, descriptor } = cluster();
    const retiredAt = Date.now();
    const { next } = proposeReplacement(descriptor, 4, 0, retiredAt);
    const grantAt = (issuedAt: number): SessionGrant => ({ principalId: 'p1', sessionAddress: '0x' + '1'.repeat(40), publicKey: 'a'.repeat(64), issuedAt, expiresAt: issuedAt + 60_000 });
    const grantsFor = (g: SessionGrant, signers: Uint8Array[]) => signers.map((k) => ({ nodeAddress: addressOfPrivateKey(k), signature: '0x' + toHex(signDigest(sessionGrantDigest(next.clusterId, g), k)) }));
    const before = grantAt(retiredAt - 1000);
    expect(checkQuorumProof(next, before, grantsFor(before, [keys[0]!, keys[1]!, keys[4]!]))).toBeUndefined();
    // The lost key, found by someone, signs a grant for a session after its retirement: it does not count.
    const after = grantAt(retiredAt + 1000);
    expect(checkQuorumProof(next, after, grantsFor(after, [keys[0]!, keys[1]!, keys[4]!]))).toMatch(/2 valid grants/);
  });
});
