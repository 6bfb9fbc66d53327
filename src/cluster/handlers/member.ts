/**
 * `grant` and `shard`: a member's own services, answered `{ ok, result }` or a refusal carrying its
 * error code and reason (docs/architecture.md, "Network"; docs/security.md, "Member refusals").
 */
import type { Logger } from '../../log/index.ts';
import { memberFailure, type MemberHandler, type MemberRefusal, type MemberService } from '../../core/replication/ports.ts';
import type { ProtocolHandler } from './serve.ts';

/** Dependencies of {@link createMemberServiceHandler}. */
export interface MemberServiceHandlerDeps {
  /** This member's `grant` and `shard` handlers (absent on gateways). */
  memberHandlers?: Partial<Record<MemberService, MemberHandler>>;
  /** The cluster's logger. */
  log: Logger;
}

/** Create the handler of one member service. */
export function createMemberServiceHandler(service: MemberService, deps: MemberServiceHandlerDeps): ProtocolHandler {
  return async (body, remote) => {
    const handler = deps.memberHandlers?.[service];
    if (!handler) return { ok: false, error: 'not a member', code: 'FORBIDDEN', reason: 'not_member' } satisfies MemberRefusal;
    try {
      return { ok: true, result: await handler(body, remote.entry) };
    } catch (err) {
      // Refusals carry their code and reason; anything else is reported without internals.
      return memberFailure(err, (e) => deps.log.warn({ err: e, service, peer: remote.entry.id }, 'member service failed'));
    }
  };
}
