/**
 * Stub deps for the unit tests of the accounts parts (CONTRIBUTING.md rule 12): an in-memory replica
 * behind the StateReader and Replicator ports, where every write is stored at once, and principal
 * bodies.
 */
import type { PrincipalBody } from '../../../../src/core/accounts/records.ts';
import type { Json } from '../../../../src/core/replication/canonical-json.ts';
import type { ClusterDescriptor, Replicator, StateReader, WriteIntent, WriteReport } from '../../../../src/core/replication/ports.ts';
import type { ReplicatedRecord } from '../../../../src/core/replication/record.ts';

export const NOW = 1_800_000_000_000;
export const PRINCIPAL_ID = '0b5c7a52-1f0e-4b8e-9a3d-5c2f1e0d9b8a';

/** Five members, threshold three; member `slot` has node address `0x<slot × 40>`. */
export const descriptor: ClusterDescriptor = {
  clusterId: 'qk-unit-accounts',
  size: 5,
  threshold: 3,
  nodes: Array.from({ length: 5 }, (_, slot) => ({ id: `node-${slot}`, slot, peerId: `peer-${slot}`, nodeAddress: `0x${String(slot).repeat(40)}`, signingPublicKey: 'ab', multiaddrs: [] })),
};

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
    ...overrides,
  };
}

/** What the members answer a write: by default every member acks. */
export type Answer = (intent: WriteIntent) => Pick<WriteReport, 'acked' | 'failed'>;

/** An in-memory replica: `state` reads what `replicator` wrote (or `put` stored) at once. */
export function memoryReplica(answer: Answer = () => ({ acked: descriptor.nodes.map((n) => n.nodeAddress), failed: [] })) {
  const records = new Map<string, ReplicatedRecord>();
  const writes: Array<WriteIntent & { requireQuorum?: boolean }> = [];
  const resends: Array<{ record: ReplicatedRecord; slots: number[] }> = [];
  let seq = 0;
  const id = (kind: string, key: string) => `${kind}!${key}`;

  function put(kind: string, key: string, body: Json): ReplicatedRecord {
    seq++;
    const record: ReplicatedRecord = { kind, key, body, origin: '0x'.padEnd(42, '0'), seq, hlc: [seq, 0], sig: '0x' };
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

  const replicator: Pick<Replicator, 'replicate' | 'resend'> = {
    async replicate(intent, options) {
      writes.push({ ...intent, ...(options?.requireQuorum !== undefined ? { requireQuorum: options.requireQuorum } : {}) });
      return { record: put(intent.kind, intent.key, intent.body), ...answer(intent) };
    },
    // Only the members resent to can ack a resend.
    async resend(record, slots) {
      resends.push({ record, slots });
      const reached = new Set(slots.map((slot) => descriptor.nodes[slot]!.nodeAddress));
      const { acked, failed } = answer({ kind: record.kind, key: record.key, body: record.body });
      return { record, acked: acked.filter((a) => reached.has(a)), failed: failed.filter((f) => reached.has(f.nodeAddress)) };
    },
  };

  return { state, replicator, put, writes, resends, body: (kind: string, key: string) => records.get(id(kind, key))?.body };
}
