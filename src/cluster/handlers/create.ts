/**
 * `create`: calls to slot 0's counters and uniqueness checks, answered `{ ok, result }` or
 * `{ ok: false, error, code }` (docs/architecture.md, "Slot 0 — `create`").
 */
import { memberRefusal, type ClusterNodeEntry } from '../../core/replication/ports.ts';
import { isAppError } from '../../errors/index.ts';
import type { ProtocolHandler } from './serve.ts';

/** Handles a `create` request on slot 0; the result is sent back as JSON. */
export type CreateHandler = (request: unknown, from: ClusterNodeEntry) => Promise<unknown>;

/** Dependencies of {@link createCreateCallHandler}. */
export interface CreateCallHandlerDeps {
  /** Slot 0's create handler (absent on other nodes). */
  createHandler?: CreateHandler;
}

/** Create the `create` handler. */
export function createCreateCallHandler(deps: CreateCallHandlerDeps): ProtocolHandler {
  return async (body, remote) => {
    if (!deps.createHandler) return { ok: false, error: 'not the creator' };
    try {
      return { ok: true, result: await deps.createHandler(body, remote.entry) };
    } catch (err) {
      // A refusal carries its code and reason, as a member's does.
      if (isAppError(err)) return memberRefusal(err);
      return { ok: false, error: err instanceof Error ? err.message : 'create failed', code: (err as { code?: string }).code };
    }
  };
}
