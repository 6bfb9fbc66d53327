/**
 * The `memberStatus` record kind (docs/security.md, "Who may write what"; docs/operations.md, "Lose
 * a disk"): whether a member slot is `recovering` its shares. Keyed by the slot.
 *
 * Who writes it: a coordinator (the operator's `quorumkeep member recover`, behind the admin token)
 * sets `recovering`; the member itself, and only for its own slot, sets `recovering` when its store
 * lacks shares the records say it holds (inventory.ts) and `active` when it holds every share again.
 * Evidence: the writer's role. Helpers answer a recovery request only from the slot's own identity
 * while its status is `recovering` — and what they answer is that slot's own share, masked so that
 * nothing else is learnt — so a wrongly set status gives nobody anything new.
 */
import { z } from 'zod';
import type { RecordKindDefinition } from '../replication/kinds.ts';
import type { ClusterDescriptor } from '../replication/ports.ts';
import { refusal } from '../replication/refusals.ts';

/** A member slot as a key or path part: decimal, no leading zero, at most 3 digits. */
export const MEMBER_SLOT_RE = /^(0|[1-9]\d{0,2})$/;

export const memberStatusBodySchema = z.strictObject({
  slot: z.number().int().nonnegative().max(254),
  status: z.enum(['recovering', 'active']),
  /** When this status was set, Unix ms. */
  since: z.number().int().nonnegative(),
});
export type MemberStatusBody = z.infer<typeof memberStatusBodySchema>;

/** `memberStatus`, keyed by the slot in decimal. */
export function memberStatusKind(descriptor: ClusterDescriptor): RecordKindDefinition<MemberStatusBody> {
  return {
    name: 'memberStatus',
    body: memberStatusBodySchema,
    writers: ['coordinator', 'member'],
    key: (k) => MEMBER_SLOT_RE.test(k),
    validate: (b, context) => {
      if (context.key !== String(b.slot)) return refusal('key_mismatch');
      if (b.slot >= descriptor.size) return refusal('not_member_slot');
      // A member that is not a coordinator speaks only for itself.
      if (!context.originIsCoordinator && context.originSlot !== b.slot) return refusal('member_own_slot_only');
      return undefined;
    },
  };
}
