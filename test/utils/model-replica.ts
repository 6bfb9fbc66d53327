/**
 * A member's replica in memory, for property tests of the record rules (docs/security.md, "Order never
 * matters"): records offered in any order pass the real kinds' checks against its own log, wait when
 * they name a record it lacks, and the real merge order picks the state. No signatures (the records of
 * these tests are unsigned; the engine checks signatures before any of this).
 */
import { mayWrite, bodyProblem } from '../../src/core/replication/validate.ts';
import { supersedes, type KindRegistry } from '../../src/core/replication/kinds.ts';
import { isCoordinatorEntry } from '../../src/core/replication/ports.ts';
import type { ReplicatedRecord } from '../../src/core/replication/record.ts';
import type { RecordRefusal } from '../../src/core/replication/refusals.ts';
import { contextFor, MemoryLog, type UnitCluster } from './evidence.ts';

/** What became of an offered record. */
export type Outcome = 'stored' | 'duplicate' | 'held' | { refused: RecordRefusal };

/** A replica: log, states, what it refused, what waits. */
export class ModelReplica {
  readonly log = new MemoryLog();
  readonly states = new Map<string, ReplicatedRecord>();
  readonly refused = new Map<string, RecordRefusal>();
  readonly held = new Map<string, ReplicatedRecord>();
  readonly c: UnitCluster;
  readonly kinds: KindRegistry;
  constructor(c: UnitCluster, kinds: KindRegistry) {
    this.c = c;
    this.kinds = kinds;
  }

  /** Offer one record; records it unblocks are tried again. */
  async offer(r: ReplicatedRecord): Promise<Outcome> {
    const outcome = await this.tryOne(r);
    if (outcome !== 'held' && outcome !== 'duplicate') await this.retryHeld();
    return outcome;
  }

  /** The current state of (kind, key). */
  state(kind: string, key: string): ReplicatedRecord | undefined {
    return this.states.get(`${kind}!${key}`);
  }

  /** Ids (`origin!seq`) of every stored record. */
  storedIds(): string[] {
    return [...this.log.records.keys()].sort();
  }

  private async tryOne(r: ReplicatedRecord): Promise<Outcome> {
    const id = `${r.origin}!${r.seq}`;
    if (this.log.get(r.origin, r.seq)) return 'duplicate';
    const slot = this.c.descriptor.nodes.findIndex((n) => n.nodeAddress === r.origin);
    const node = this.c.descriptor.nodes[slot];
    const kind = this.kinds.get(r.kind);
    if (!node || !kind) return { refused: { code: 'unknown_origin' } };
    if (!mayWrite(kind, { entry: node, coordinator: isCoordinatorEntry(node) })) return this.refuse(id, { code: 'writer_not_allowed' });
    const refused = (origin: string, seq: number) => this.refused.has(`${origin}!${seq}`);
    const problem = await bodyProblem(kind, r.body, contextFor(this.c, { kind: r.kind, key: r.key, origin: slot, seq: r.seq, atMs: r.hlc[0], log: this.log, refused }));
    if (problem?.transient) {
      this.held.set(id, r);
      return 'held';
    }
    if (problem) return this.refuse(id, problem);
    this.held.delete(id);
    this.log.put(r);
    const sk = `${r.kind}!${r.key}`;
    if (supersedes(kind, this.states.get(sk), r)) this.states.set(sk, r);
    return 'stored';
  }

  private refuse(id: string, problem: RecordRefusal): Outcome {
    this.held.delete(id);
    this.refused.set(id, problem);
    return { refused: problem };
  }

  private async retryHeld(): Promise<void> {
    for (let progress = true; progress; ) {
      progress = false;
      for (const r of [...this.held.values()]) if ((await this.tryOne(r)) !== 'held') progress = true;
    }
  }
}
