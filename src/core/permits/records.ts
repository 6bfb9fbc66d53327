/**
 * The `permit` record kind (PERMITS.md; ARCHITECTURE.md, Replicated state). A permit is written once
 * by slot 0 when it is created (`pending`) and once more when it is consumed; consumed outranks
 * pending, so a consumed permit stays consumed whatever the delivery order.
 */
import { z } from 'zod';
import type { RecordKindDefinition } from '../replication/kinds.ts';
import { PRINCIPAL_ID_RE } from '../accounts/records.ts';

/** The three admin changes a permit can carry. */
export const PERMIT_ACTIONS = ['rotate', 'transfer', 'delegate'] as const;
export type PermitActionName = (typeof PERMIT_ACTIONS)[number];

/** requestIds: lowercase UUIDv4 (PERMITS.md). Permit ids use the same form. */
export const UUID_V4_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

export const permitBodySchema = z.strictObject({
  permitId: z.string().regex(UUID_V4_RE),
  requestId: z.string().regex(UUID_V4_RE),
  action: z.enum(PERMIT_ACTIONS),
  /** The acting principal (the account owner). */
  principalId: z.string().regex(PRINCIPAL_ID_RE),
  /** 0 for rotate. */
  secretId: z.number().int().nonnegative(),
  /** The exact compact JSON text the client hashed. */
  payload: z.string().min(2).max(8192),
  /** Lowercase hex SHA-256 of the payload's UTF-8 bytes. */
  payloadDigest: z.string().regex(/^[0-9a-f]{64}$/),
  /** SHA-256 (hex) of the emailed one-time token; the token itself is never stored. */
  tokenHash: z.string().regex(/^[0-9a-f]{64}$/),
  createdAt: z.number().int().nonnegative(),
  expiresAt: z.number().int().nonnegative(),
  status: z.enum(['pending', 'consumed']),
  consumedAt: z.number().int().nonnegative().nullable(),
  /** The applied change (API.md: `result`), set when consumed. */
  result: z.record(z.string(), z.union([z.string().max(512), z.number(), z.null()])).nullable(),
});
export type PermitBody = z.infer<typeof permitBodySchema>;

/** `permit`, keyed by permitId. Rank: consumed (1, absorbing) > pending (0). */
export const permitKind: RecordKindDefinition<PermitBody> = {
  name: 'permit',
  body: permitBodySchema,
  key: (k) => UUID_V4_RE.test(k),
  rank: (b) => (b.status === 'consumed' ? 1 : 0),
  validate: (b, { key, originSlot }) => {
    if (key !== b.permitId) return 'key mismatch';
    if (b.expiresAt <= b.createdAt) return 'expires before created';
    if (b.action === 'rotate' ? b.secretId !== 0 : b.secretId === 0) return 'secretId does not fit the action';
    // Only slot 0 creates permits (it holds the requestId registry).
    if (b.status === 'pending' && originSlot !== 0) return 'pending permits are written by slot 0';
    const consumed = b.status === 'consumed';
    if (consumed !== (b.consumedAt !== null) || consumed !== (b.result !== null)) return 'consumedAt and result go with consumed';
    return undefined;
  },
};
