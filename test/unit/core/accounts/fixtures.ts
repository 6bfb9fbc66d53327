/**
 * Stub deps for the unit tests of the accounts parts (CONTRIBUTING.md rule 12): an in-memory replica
 * behind the StateReader and Replicator ports, where every write is stored at once; principal
 * versions written through the real sequencer (src/core/replication/sequencer.ts) as slot 0, over
 * that replica; and principal bodies.
 */
import { accountKinds, type PrincipalBody } from '../../../../src/core/accounts/records.ts';
import type { Json } from '../../../../src/core/replication/canonical-json.ts';
import { createCreator } from '../../../../src/core/replication/creator.ts';
import { createKindRegistry } from '../../../../src/core/replication/kinds.ts';
import type { ClusterDescriptor, Replicator, StateReader, WriteIntent, WriteReport } from '../../../../src/core/replication/ports.ts';
import type { ReplicatedRecord } from '../../../../src/core/replication/record.ts';
import { createSequencer } from '../../../../src/core/replication/sequencer.ts';
import { createLogger } from '../../../../src/log/index.ts';

export const NOW = 1_800_000_000_000;
export const PRINCIPAL_ID = '0b5c7a52-1f0e-4b8e-9a3d-5c2f1e0d9b8a';

/** Five members, threshold three; member `slot` has node address `0x<slot × 40>`. */
export const descriptor: ClusterDescriptor = {
  clusterId: 'qk-unit-accounts',
  size: 5,
  threshold: 3,
  nodes: Array.from({ length: 5 }, (_, slot) => ({ id: `node-${slot}`, slot, peerId: `peer-${slot}`, nodeAddress: `0x${String(slot).repeat(40)}`, signingPublicKey: 'ab', multiaddrs: [] })),
};

/** Slot 0's node address: the origin of every principal version. */
export const SLOT0 = descriptor.nodes[0]!.nodeAddress;

/** The stub signature every vouch of these tests carries (nothing here checks it; the records tests do). */
export const VOUCH = { nodeAddress: SLOT0, signature: `0x${'ee'.repeat(65)}` };

/** An active principal with a verified email and one registration, no key. */
export function principalBody(overrides: Partial<PrincipalBody> = {}): PrincipalBody {
  return {
    email: 'a@example.test',
    emailVerified: true,
    passwordHash: '$argon2id$pw$right$1',
    ed25519PublicKey: null,
    keyProof: null,
    status: 'active',
    createdAt: NOW - 60_000,
    updatedAt: NOW - 60_000,
    registration: 1,
    // Registered, then verified.
    v: { n: 2, prev: { origin: SLOT0, seq: 1 }, change: 'verifyEmail' },
    ...overrides,
  };
}

/** The version envelope of the version that follows `record` by `change`, vouched for as these tests vouch. */
export function versionAfter(record: ReplicatedRecord | undefined, change: PrincipalBody['v']['change']): PrincipalBody['v'] {
  const n = record ? (record.body as unknown as PrincipalBody).v.n + 1 : 1;
  return { n, prev: record ? { origin: record.origin, seq: record.seq } : null, change, vouch: VOUCH };
}

/** What the members answer a write: by default every member acks. */
export type Answer = (intent: WriteIntent) => Pick<WriteReport, 'acked' | 'failed'>;

/**
 * An in-memory replica: `state` reads what `replicator` wrote (or `put` stored) at once; `versions`
 * writes principals as slot 0 does — only after the version the replica holds — through the same
 * replicator. `writes` lists every write, principal versions included.
 */
export function memoryReplica(answer: Answer = () => ({ acked: descriptor.nodes.map((n) => n.nodeAddress), failed: [] })) {
  const records = new Map<string, ReplicatedRecord>();
  const writes: Array<WriteIntent & { requireQuorum?: boolean }> = [];
  const resends: Array<{ record: ReplicatedRecord; slots: number[] }> = [];
  let seq = 0;
  const id = (kind: string, key: string) => `${kind}!${key}`;

  /** Store `body` as slot 0's next record of (kind, key). */
  function put(kind: string, key: string, body: Json): ReplicatedRecord {
    seq++;
    const record: ReplicatedRecord = { kind, key, body, origin: SLOT0, seq, hlc: [seq, 0], sig: '0x' };
    records.set(id(kind, key), record);
    return record;
  }

  const state: StateReader = {
    get: async (kind, key) => records.get(id(kind, key)),
    async *list(kind, options) {
      const prefix = id(kind, options?.prefix ?? '');
      const keys = [...records.keys()].filter((k) => k.startsWith(prefix)).sort();
      for (const k of keys) yield records.get(k)!;
    },
  };

  /** Only the members resent to can ack a resend. */
  const resent = (record: ReplicatedRecord, slots: number[]) => {
    resends.push({ record, slots });
    const reached = new Set(slots.map((slot) => descriptor.nodes[slot]!.nodeAddress));
    const { acked, failed } = answer({ kind: record.kind, key: record.key, body: record.body });
    return { acked: acked.filter((a) => reached.has(a)), failed: failed.filter((f) => reached.has(f.nodeAddress)) };
  };

  const replicator: Pick<Replicator, 'replicate' | 'replicateAll' | 'resend' | 'resendAll'> = {
    async replicate(intent, options) {
      const { records: [record], ...report } = await replicator.replicateAll([intent], options);
      return { record: record!, ...report };
    },
    async replicateAll(intents, options) {
      for (const intent of intents) writes.push({ ...intent, ...(options?.requireQuorum !== undefined ? { requireQuorum: options.requireQuorum } : {}) });
      const report = answer(intents[0]!);
      return { records: intents.map((i) => put(i.kind, i.key, i.body)), ...report };
    },
    resend: async (record, slots) => ({ record, ...resent(record, slots) }),
    async resendAll(rs, slots) {
      const reports = rs.map((r) => resent(r, slots));
      return { records: rs, acked: reports[0]?.acked ?? [], failed: reports[0]?.failed ?? [] };
    },
  };

  const logger = createLogger({ level: 'silent' });
  const versions = createSequencer({
    creator: createCreator({ timeoutMs: 1000 }, { isCreator: true, counters: { next: async () => 1 }, requestCreate: async () => undefined, logger }),
    kinds: createKindRegistry(accountKinds(descriptor)),
    sequenced: new Set(['principal']),
    membership: { descriptor, self: descriptor.nodes[0]!, isReachable: () => true, reachableCount: () => 5 },
    state,
    replicator,
    // Slot 0 proposes to itself: what it wrote is in this replica already.
    ingest: async () => undefined,
    signDigest: () => VOUCH.signature,
    logger,
  });

  return { state, replicator, versions, put, writes, resends, body: (kind: string, key: string) => records.get(id(kind, key))?.body, record: (kind: string, key: string) => records.get(id(kind, key)) };
}
