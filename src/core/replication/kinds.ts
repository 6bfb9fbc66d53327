/**
 * Record kinds: each capability registers the kinds it owns with a body schema and its merge rule.
 *
 * Merge rule (a join-semilattice, so any order of delivery converges): for one (kind, key) the winner
 * is the maximum of `(absorbed, hlc, origin)`. An absorbing state (a consumed permit, a deleted
 * principal) therefore beats every non-absorbing one whatever its clock, and stays.
 */
import type { ZodType } from 'zod';
import type { Json } from './canonical-json.ts';
import { compareHlc, type ReplicatedRecord } from './record.ts';

/** How one record kind is validated and merged. */
export interface RecordKindDefinition<B extends Json = Json> {
  /** Kind name; never reuse one for another meaning. */
  name: string;
  /** Schema the body must satisfy before the record is stored. */
  body: ZodType<B>;
  /** Key format check. @default any non-empty string up to 512 chars */
  key?(key: string): boolean;
  /** True when this body is an absorbing state for its key. @default never */
  absorbing?(body: B): boolean;
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
 * Total order: (absorbed, hlc, origin, seq).
 */
export function supersedes(kind: RecordKindDefinition, current: ReplicatedRecord | undefined, incoming: ReplicatedRecord): boolean {
  if (!current) return true;
  const ca = kind.absorbing?.(current.body) ? 1 : 0;
  const ia = kind.absorbing?.(incoming.body) ? 1 : 0;
  if (ca !== ia) return ia > ca;
  const h = compareHlc(incoming.hlc, current.hlc);
  if (h !== 0) return h > 0;
  if (incoming.origin !== current.origin) return incoming.origin > current.origin;
  return incoming.seq > current.seq;
}
