/**
 * Record kinds: each capability registers the kinds it owns with a body schema and its merge rule.
 *
 * Merge rule (a join-semilattice, so any order of delivery converges): for one (kind, key) the winner
 * is the maximum of `(rank, hlc, origin, seq)`. A state of higher rank (a verified account over an
 * unverified one; a deleted principal or a consumed permit over everything) therefore beats every
 * lower-ranked one whatever its clock, and the top rank is absorbing.
 */
import type { ZodType } from 'zod';
import type { Json } from './canonical-json.ts';
import { compareHlc, type ReplicatedRecord } from './record.ts';
import type { RecordRefusal } from './refusals.ts';

/** How one record kind is validated and merged. */
export interface RecordKindDefinition<B extends Json = Json> {
  /** Kind name; never reuse one for another meaning. */
  name: string;
  /** Schema the body must satisfy before the record is stored. */
  body: ZodType<B>;
  /** Key format check. @default any non-empty string up to 512 chars */
  key?(key: string): boolean;
  /** Rank of a body in the merge order; higher ranks win regardless of clocks. @default 0 */
  rank?(body: B): number;
  /**
   * A sequenced kind (src/core/replication/versions.ts): written by slot 0 alone, each version
   * following the one it names; its rank is the version number. Coordinators propose versions
   * through slot 0's `propose` (src/core/replication/sequencer.ts).
   */
  sequenced?: boolean;
  /**
   * Who may write this kind (docs/security.md, "Who may write what"): `coordinator` — a node the
   * cluster file lists with an HTTP URL; `slot0` — the slot-0 member; `member` — any member (the
   * kind's `validate` then narrows it, e.g. to the member named in the body). A record from any
   * other origin is refused before anything else is looked at.
   */
  writers: ReadonlyArray<'coordinator' | 'slot0' | 'member'>;
  /**
   * The EIP-191 strings a body carries as evidence (a client's signed `data` and its `signature`),
   * read before the body is checked — so maybe malformed: anything not two strings is left out.
   * Their signers are recovered ahead of the checks, together and off the event loop under load
   * (src/core/sessions/signer-memo.ts, `signerPrefetch`); a hint for that, never a verdict: the check
   * recovers what was not. @default none
   */
  signedStrings?(body: Json): ReadonlyArray<{ data: string; signature: string }>;
  /**
   * Semantic check every node runs itself before storing: the evidence inside the body (an Ed25519
   * or EIP-191 signature, a quorum proof, a consumed permit) checked against the records it names
   * and the records travelling with it. Returns a refusal (a closed code), or undefined when valid.
   * It must not depend on what else the replica happens to hold (docs/security.md, "Order never
   * matters"): what it cannot decide yet is a transient refusal, held back and tried again.
   * @default always valid
   */
  validate?(body: B, context: RecordContext): RecordRefusal | undefined | Promise<RecordRefusal | undefined>;
}

/** Where a record sits and who wrote it, for semantic validation. */
export interface RecordContext {
  kind: string;
  key: string;
  /** Node address of the origin. */
  origin: string;
  /** The record's seq in its origin's log ({@link UNNUMBERED} for this node's own write not numbered yet). */
  seq: number;
  /**
   * True for this node's own write, checked before it is numbered. False: a record its origin signed,
   * whose signature this node has verified before checking its body (ingest verifies first).
   */
  own: boolean;
  /** The origin's member slot, or null for a gateway. */
  originSlot: number | null;
  /** True when the cluster file lists the origin as a coordinator (it has an HTTP URL). */
  originIsCoordinator: boolean;
  /** Wall-clock part of the record's HLC, Unix ms: the time signed strings are judged against. */
  atMs: number;
  /**
   * The validating node's current winner of (kind, key) in its own replica. What a member holds
   * depends on what arrived first: a check of a received record must not depend on it (docs/security.md,
   * "Order never matters"); this node's own writes may be checked against it.
   */
  current(kind: string, key: string): Promise<{ body: Json; origin: string; seq: number } | undefined>;
  /**
   * The records that travel before this one (one `apply` message, one sync page, or one local batch)
   * and passed their own checks, e.g. a consumed permit next to the change it authorises.
   */
  siblings: ReadonlyArray<Sibling>;
  /**
   * The record at (origin, seq): among the siblings, else in this node's log; undefined when this
   * node does not hold it (yet). `hint` names the key it is a record of: when it is that key's current
   * record (the usual case — the version a new one replaces), it is read from the state cache, not
   * the log. The same (origin, seq) is the same record either way.
   */
  recordAt(origin: string, seq: number, hint?: { kind: string; key: string }): Promise<Sibling | undefined>;
  /**
   * True when this node refused the record at (origin, seq) for good: a record that needs it can
   * never pass, and is refused rather than held back.
   */
  refusedAt(origin: string, seq: number): boolean;
  /**
   * The record right before this one in its origin's log (for this node's own writes not yet
   * numbered: the write before it in the same batch); undefined when this node does not hold it.
   */
  preceding(): Promise<Sibling | undefined>;
}

/** A record travelling with the one being checked, or read from the log. */
export interface Sibling {
  kind: string;
  key: string;
  body: Json;
  /** Absent for this node's own writes not yet numbered. */
  origin?: string;
  seq?: number;
  hlc: readonly [number, number];
}

/** A set of kinds known to a node. */
export interface KindRegistry {
  get(name: string): RecordKindDefinition | undefined;
  names(): string[];
}

/** Build a registry from definitions; throws on a duplicate name. */
export function createKindRegistry(definitions: RecordKindDefinition<Json>[]): KindRegistry {
  const map = new Map<string, RecordKindDefinition>();
  for (const d of definitions) {
    if (map.has(d.name)) throw new Error(`duplicate record kind ${d.name}`);
    map.set(d.name, d as RecordKindDefinition);
  }
  return { get: (n) => map.get(n), names: () => [...map.keys()] };
}

/**
 * True when `incoming` should replace `current` as the state of their key.
 * Total order: (rank, hlc, origin, seq).
 */
export function supersedes(kind: RecordKindDefinition, current: ReplicatedRecord | undefined, incoming: ReplicatedRecord): boolean {
  if (!current) return true;
  const cr = kind.rank?.(current.body) ?? 0;
  const ir = kind.rank?.(incoming.body) ?? 0;
  if (cr !== ir) return ir > cr;
  const h = compareHlc(incoming.hlc, current.hlc);
  if (h !== 0) return h > 0;
  if (incoming.origin !== current.origin) return incoming.origin > current.origin;
  return incoming.seq > current.seq;
}
