/**
 * Shared fixtures of the replication unit tests: a cluster of signing keys, signed records, and an
 * in-memory {@link RecordStore} stub for the parts that take a store through their deps
 * (CONTRIBUTING.md rule 12: stubs through deps, never module mocking).
 */
import { z } from 'zod';
import type { RecordKindDefinition } from '../../../../src/core/replication/kinds.ts';
import type { ClusterDescriptor, RecordStore, VersionVector } from '../../../../src/core/replication/ports.ts';
import { signRecord, type ReplicatedRecord } from '../../../../src/core/replication/record.ts';
import { testCluster } from '../../../utils/evidence.ts';

/** A kind any member writes: `{ v: integer }`. */
export const noteKind: RecordKindDefinition<{ v: number }> = { name: 'note', writers: ['member'], body: z.strictObject({ v: z.number().int() }) };

/** A kind whose `closed` state outranks `open` (absorbing). */
export const flagKind: RecordKindDefinition<{ state: 'open' | 'closed' }> = {
  name: 'flag',
  writers: ['member'],
  body: z.strictObject({ state: z.enum(['open', 'closed']) }),
  rank: (b) => (b.state === 'closed' ? 1 : 0),
};

/** `n` members with fresh keys, threshold a majority. */
export function makeCluster(n: number) {
  return testCluster(n, { clusterId: 'qk-unit', coordinators: 0 });
}

/** A record of node `origin` signed with `key` (kind `note`, key `k`, hlc `[1000 + seq, 0]` unless told). */
export function rec(descriptor: ClusterDescriptor, key: Uint8Array, origin: number, seq: number, body: unknown, opts: { kind?: string; k?: string; hlc?: [number, number] } = {}): ReplicatedRecord {
  return signRecord(
    descriptor.clusterId,
    { kind: opts.kind ?? 'note', key: opts.k ?? 'k', origin: descriptor.nodes[origin]!.nodeAddress, seq, hlc: opts.hlc ?? [1000 + seq, 0], body: body as never },
    key,
  );
}

/** An in-memory record store; `commits` lists every committed change in order. */
export function memoryStore(initial: { log?: ReplicatedRecord[]; states?: ReplicatedRecord[]; vv?: VersionVector } = {}) {
  const log = new Map<string, ReplicatedRecord>();
  const states = new Map<string, ReplicatedRecord>();
  let vv: VersionVector = { ...initial.vv };
  const fp = new Map<string, string>();
  const commits: Array<Parameters<RecordStore['commit']>[0]> = [];
  for (const r of initial.log ?? []) log.set(`${r.origin}!${r.seq}`, r);
  for (const r of initial.states ?? []) states.set(`${r.kind}!${r.key}`, r);
  const ofOrigin = (origin: string) => [...log.values()].filter((r) => r.origin === origin).sort((a, b) => a.seq - b.seq);
  const store: RecordStore = {
    loadVersionVector: async () => ({ ...vv }),
    highestSeq: async (origin) => Math.max(0, ...ofOrigin(origin).map((r) => r.seq)),
    hasRecord: async (origin, seq) => log.has(`${origin}!${seq}`),
    getState: async (kind, key) => states.get(`${kind}!${key}`),
    getStates: async (pairs) => pairs.map(({ kind, key }) => states.get(`${kind}!${key}`)),
    async *listState(kind) {
      for (const r of [...states.values()].filter((s) => s.kind === kind).sort((a, b) => (a.key < b.key ? -1 : 1))) yield r;
    },
    async *listStateKeys(kind, o = {}) {
      const keys = [...states.values()].filter((s) => s.kind === kind).map((s) => s.key).sort();
      if (o.reverse) keys.reverse();
      yield keys.slice(0, o.limit ?? keys.length);
    },
    scanLog: async (origin, fromSeq, limit) => ofOrigin(origin).filter((r) => r.seq >= fromSeq).slice(0, limit),
    getLog: async (origin, seq) => log.get(`${origin}!${seq}`),
    async *allLog() {
      for (const r of [...log.values()]) yield r;
    },
    loadFingerprints: async () => Object.fromEntries(fp),
    origins: async () => [...new Set([...log.values()].map((r) => r.origin))].sort(),
    async commit(change) {
      commits.push(change);
      for (const r of change.log) log.set(`${r.origin}!${r.seq}`, r);
      for (const r of change.states) states.set(`${r.kind}!${r.key}`, r);
      vv = { ...vv, ...change.vv };
      for (const [origin, hex] of Object.entries(change.fp ?? {})) fp.set(origin, hex);
    },
  };
  return { store, log, states, commits, fp, vv: () => vv };
}
