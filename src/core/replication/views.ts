/**
 * Typed reads of the replica: one {@link StateView} per record kind, typed by that kind's body schema,
 * instead of `state.get(kind, key)?.body as X` at every call site. The body was checked against the
 * schema before it was stored (the engine refuses anything else), so the type is what is there.
 */
import type { Json } from './canonical-json.ts';
import type { RecordKindDefinition } from './kinds.ts';
import type { StateReader } from './ports.ts';
import type { ReplicatedRecord } from './record.ts';

/** A kind's name and body type: a kind definition, or `{ name }` typed by its schema. */
export interface KindName<B extends Json> {
  name: string;
  /** Phantom: carries the body type only. */
  readonly __body?: B;
}

/** Name a kind with its body type, e.g. `kindName<SecretBody>('secret')`. */
export function kindName<B extends Json>(name: string): KindName<B> {
  return { name };
}

/** The current state of one record kind, typed. */
export interface StateView<B extends Json> {
  /** The current body of `key`, or undefined. */
  get(key: string): Promise<B | undefined>;
  /** The current record of `key` (body, origin, clock), or undefined. */
  record(key: string): Promise<(ReplicatedRecord & { body: B }) | undefined>;
  /** Every current record of the kind in key order (optionally under a key prefix). */
  list(options?: { prefix?: string; limit?: number }): AsyncIterable<ReplicatedRecord & { body: B }>;
}

/** A typed view of `kind` over `state`. */
export function stateView<B extends Json>(state: StateReader, kind: KindName<B> | RecordKindDefinition<B>): StateView<B> {
  const name = kind.name;
  return {
    get: async (key) => (await state.get(name, key))?.body as B | undefined,
    record: async (key) => (await state.get(name, key)) as (ReplicatedRecord & { body: B }) | undefined,
    list: (options) => state.list(name, options) as AsyncIterable<ReplicatedRecord & { body: B }>,
  };
}
