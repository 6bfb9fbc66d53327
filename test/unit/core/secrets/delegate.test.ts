/**
 * Delegate changes (src/core/secrets/delegate.ts; docs/http.md, POST /web2/setDelegate;
 * docs/security.md, "Single use"): who may name whom, the version one signed string makes, and that
 * one string makes one change whichever coordinator it is sent through, however often.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createCreator, type CreatorService } from '../../../../src/core/replication/creator.ts';
import { createKindRegistry, supersedes, type RecordKindDefinition } from '../../../../src/core/replication/kinds.ts';
import type { Replicator, StateReader, WriteIntent } from '../../../../src/core/replication/ports.ts';
import type { ReplicatedRecord } from '../../../../src/core/replication/record.ts';
import { createSequencer } from '../../../../src/core/replication/sequencer.ts';
import { assertMayDelegate, createDelegateSetter, delegatedVersion, parseDelegate } from '../../../../src/core/secrets/delegate.ts';
import { RECENT_USE_KEEP_MS, secretKey, secretKind, type SecretBody } from '../../../../src/core/secrets/records.ts';
import type { SignedEvidence } from '../../../../src/core/sessions/evidence.ts';
import type { SessionBody } from '../../../../src/core/sessions/records.ts';
import type { SignedDataVerifier } from '../../../../src/core/sessions/types.ts';
import { createLogger } from '../../../../src/log/index.ts';
import { unitCluster } from '../../../utils/evidence.ts';

const owner = randomUUID();
const bob = randomUUID();
const NOW = 1_700_000_000_000;
const evidence = { data: `-1_7_0xabc_${NOW}_${bob}`, signature: '0x00', session: {} } as unknown as SignedEvidence;
/** The owner's principal version a change was checked against. */
const principal = { origin: '0x' + '0'.repeat(40), seq: 3 };
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
  v: { n: 1, prev: null, change: 'create' },
  auth: { by: 'create', evidence, principal: { origin: '0x' + '0'.repeat(40), seq: 1 } },
};
/** The secret without its version: what a proposed version is built from. */
const { v: _v, ...unversioned } = secret;
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

  it('the version sets the delegate, records the string with its evidence and the principal version it was checked against, and keeps everything else', () => {
    const next = delegatedVersion(secret, { delegate: bob, useKey: key(1), signedAt: NOW - 2_000, evidence, principal }, NOW);
    // The version envelope is slot 0's to number: the body comes without one.
    expect(next).toEqual({ ...unversioned, delegatePrincipalId: bob, updatedAt: NOW, auth: { by: 'setDelegate', evidence, principal }, recentUses: [{ key: key(1), at: NOW - 2_000 }] });
    const cleared = delegatedVersion({ ...next, v: { n: 2, prev: { origin: principal.origin, seq: 9 }, change: 'setDelegate' } }, { delegate: '', useKey: key(2), signedAt: NOW, evidence, principal }, NOW + 1);
    expect(cleared.delegatePrincipalId).toBeNull();
    expect(cleared.recentUses?.map((u) => u.key)).toEqual([key(1), key(2)]);
  });

  it('uses too old to be replayed are dropped, the others kept', () => {
    const held = { ...secret, recentUses: [{ key: key(1), at: NOW - RECENT_USE_KEEP_MS - 1 }, { key: key(2), at: NOW - RECENT_USE_KEEP_MS }] };
    expect(delegatedVersion(held, { delegate: bob, useKey: key(3), signedAt: NOW, evidence, principal }, NOW).recentUses).toEqual([
      { key: key(2), at: NOW - RECENT_USE_KEEP_MS },
      { key: key(3), at: NOW },
    ]);
  });

  it('updatedAt never goes backwards behind a clock that is late', () => {
    expect(delegatedVersion({ ...secret, updatedAt: NOW + 5_000 }, { delegate: bob, useKey: key(1), signedAt: NOW, evidence, principal }, NOW).updatedAt).toBe(NOW + 5_000);
  });
});

/**
 * Two coordinators, A being slot 0, each with its own replica (delivery from A to B held back at will)
 * and the real sequencer: B proposes through A's `propose`, and takes A's versions when it was behind.
 * The verifier is a stub: `data` is `-1_<secretId>_<signer>_<ms>_<delegate>`, and the signer acts as
 * the principal `principalOf` names.
 */
function coordinators() {
  const c = unitCluster();
  const [nodeA, nodeB] = [c.descriptor.nodes[0]!, c.descriptor.nodes[1]!];
  const kinds = createKindRegistry([secretKind(c.descriptor) as RecordKindDefinition]);
  const replicas = { A: new Map<string, ReplicatedRecord>(), B: new Map<string, ReplicatedRecord>() };
  const held: ReplicatedRecord[] = [];
  let holding = false;
  let seq = 0;
  const written: ReplicatedRecord[] = [];
  const resent: ReplicatedRecord[][] = [];
  const apply = (replica: Map<string, ReplicatedRecord>, r: ReplicatedRecord) => {
    const kind = kinds.get(r.kind) ?? { name: r.kind, body: null as never, writers: [] };
    if (supersedes(kind, replica.get(`${r.kind}!${r.key}`), r)) replica.set(`${r.kind}!${r.key}`, r);
  };
  /** Slot 0's record of `body`, in both replicas. */
  const seed = (kind: string, key: string, body: object) => {
    const r = { kind, key, body, origin: nodeA.nodeAddress, seq: ++seq, hlc: [NOW - 5000, 0], sig: '0x' } as unknown as ReplicatedRecord;
    apply(replicas.A, r);
    apply(replicas.B, r);
    return r;
  };
  const principalOf: Record<string, string> = {};
  const verifier: SignedDataVerifier = {
    async verify(request) {
      const parts = request.data.split('_');
      return { chainId: -1, userType: 'web2', subject: parts[1]!, signer: parts[2]!, fresh: Number(parts[3]), extra: parts.slice(4), principalId: principalOf[parts[2]!]!, parts, sessionRecord: {} as SessionBody };
    },
  };
  const creators: Record<string, CreatorService> = {};
  const setters = Object.fromEntries(
    (['A', 'B'] as const).map((name) => {
      const logger = createLogger({ level: 'silent' });
      const creator = createCreator(
        { timeoutMs: 1000 },
        { isCreator: name === 'A', counters: { next: async () => 1 }, requestCreate: (request) => creators.A!.handle(request), logger },
      );
      creators[name] = creator;
      const state: StateReader = { get: async (kind, key) => replicas[name].get(`${kind}!${key}`), list: async function* () {} };
      // Only slot 0 writes the sequenced kinds: every write here is A's.
      const replicator: Pick<Replicator, 'replicateAll' | 'resendAll'> = {
        async replicateAll(intents: WriteIntent[]) {
          const records = intents.map((i) => ({ ...i, origin: nodeA.nodeAddress, seq: ++seq, hlc: [NOW, seq], sig: '0x' }) as ReplicatedRecord);
          for (const r of records) {
            written.push(r);
            apply(replicas.A, r);
            if (holding) held.push(r);
            else apply(replicas.B, r);
          }
          return { records, acked: c.descriptor.nodes.map((n) => n.nodeAddress), failed: [] };
        },
        async resendAll(records, slots) {
          resent.push(records);
          return { records, acked: slots.map((slot) => c.descriptor.nodes[slot]!.nodeAddress), failed: [] };
        },
      };
      const versions = createSequencer({
        creator,
        kinds,
        sequenced: new Set(['secret', 'principal']),
        membership: { descriptor: c.descriptor, self: name === 'A' ? nodeA : nodeB, isReachable: () => true, reachableCount: () => 5 },
        state,
        replicator,
        ingest: async (records) => records.forEach((r) => apply(replicas[name], r as ReplicatedRecord)),
        signDigest: () => `0x${'ee'.repeat(65)}`,
        logger,
      });
      const findSecret = async (id: number) => replicas[name].get(`secret!${secretKey(id)}`)!.body as SecretBody;
      return [name, createDelegateSetter({ verifier, findSecret, state, versions, clock: () => NOW, logger })];
    }),
  ) as Record<'A' | 'B', ReturnType<typeof createDelegateSetter>>;
  return {
    setters,
    written,
    resent,
    seed,
    principalOf,
    secret: (name: 'A' | 'B') => replicas[name].get(`secret!${secretKey(7)}`)!.body as SecretBody,
    hold: () => void (holding = true),
    release() {
      holding = false;
      for (const r of held.splice(0)) apply(replicas.B, r);
    },
  };
}

describe('setDelegate: one string, one change (createDelegateSetter)', () => {
  const ownerWallet = `0x${'a'.repeat(40)}`;
  const strangerWallet = `0x${'b'.repeat(40)}`;
  const stranger = randomUUID();
  const unverifiedId = randomUUID();
  const request = (delegate: string, at = NOW - 1000, wallet = ownerWallet) => ({ data: `-1_7_${wallet}_${at}_${delegate}`, signature: `0x${'11'.repeat(65)}` });

  function setup() {
    const h = coordinators();
    h.principalOf[ownerWallet] = owner;
    h.principalOf[strangerWallet] = stranger;
    for (const id of [owner, bob, stranger]) h.seed('principal', id, { status: 'active', emailVerified: true, v: { n: 2 } });
    h.seed('principal', unverifiedId, { status: 'active', emailVerified: false, v: { n: 1 } });
    h.seed('secret', secretKey(7), secret);
    return h;
  }

  it('the owner\'s string makes the next version of the secret, through slot 0', async () => {
    const h = setup();
    expect(await h.setters.B.setDelegate(request(bob))).toEqual({ secretId: 7 });
    expect(h.written).toHaveLength(1);
    expect(h.written[0]!.body).toMatchObject({ delegatePrincipalId: bob, auth: { by: 'setDelegate' }, v: { n: 2, change: 'setDelegate' } });
    expect(h.secret('B').delegatePrincipalId).toBe(bob);
  });

  it('the same string again, through a coordinator that has not seen its change, writes nothing: that version is made durable and the answer is the same', async () => {
    const h = setup();
    h.hold();
    await h.setters.A.setDelegate(request(bob));
    expect(h.secret('B').delegatePrincipalId).toBeNull();
    expect(await h.setters.B.setDelegate(request(bob))).toEqual({ secretId: 7 });
    expect(h.written).toHaveLength(1);
    // B took slot 0's version, found the string used there, and sent that version again to the members.
    expect(h.secret('B')).toMatchObject({ delegatePrincipalId: bob, v: { n: 2 } });
    expect(h.resent).toEqual([[h.written[0]]]);
  });

  it('a replay racing the first through the other coordinator: one change', async () => {
    const h = setup();
    await Promise.all([h.setters.A.setDelegate(request(bob)), h.setters.B.setDelegate(request(bob))]);
    expect(h.written).toHaveLength(1);
  });

  it('a new string makes a new change, after the one before', async () => {
    const h = setup();
    await h.setters.A.setDelegate(request(bob));
    await h.setters.B.setDelegate(request('', NOW - 500));
    expect(h.written.map((r) => (r.body as SecretBody).v)).toMatchObject([{ n: 2 }, { n: 3, prev: { origin: h.written[0]!.origin, seq: h.written[0]!.seq } }]);
    expect(h.secret('A').delegatePrincipalId).toBeNull();
    expect(h.secret('A').recentUses).toHaveLength(2);
  });

  it('only the owner names a delegate, and only a verified account: nothing written otherwise', async () => {
    const h = setup();
    await expect(h.setters.B.setDelegate(request(bob, NOW - 1000, strangerWallet))).rejects.toMatchObject({ code: 'FORBIDDEN' });
    await expect(h.setters.B.setDelegate(request(owner))).rejects.toMatchObject({ code: 'FORBIDDEN' });
    for (const target of [unverifiedId, randomUUID()]) await expect(h.setters.B.setDelegate(request(target))).rejects.toMatchObject({ code: 'NOT_FOUND' });
    expect(h.written).toEqual([]);
  });
});
