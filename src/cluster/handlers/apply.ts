/**
 * `apply`: signed records from a coordinator, validated and committed in one batch by the engine,
 * answered with what was applied, already held and refused (docs/architecture.md, "Network").
 */
import type { ReplicationEngine } from '../../core/replication/engine.ts';
import type { ProtocolHandler } from './serve.ts';

/** Dependencies of {@link createApplyHandler}. */
export interface ApplyHandlerDeps {
  engine: Pick<ReplicationEngine, 'ingest'>;
}

/** Create the `apply` handler. */
export function createApplyHandler(deps: ApplyHandlerDeps): ProtocolHandler {
  return async (body) => {
    const records = (body as { records?: unknown })?.records;
    if (!Array.isArray(records) || records.length === 0) throw new Error('rejected: malformed apply');
    const res = await deps.engine.ingest(records, 'apply');
    return { applied: res.applied, duplicates: res.duplicates, rejected: res.rejected };
  };
}
