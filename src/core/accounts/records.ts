/**
 * Replicated record kinds of the accounts capability (docs/architecture.md, Web2 accounts):
 * `principal`, `emailIndex`, `otp`, `mailCooldown` and `nodeRegistration`.
 */
import { z } from 'zod';
import { evidenceOf, type RecordKindDefinition } from '../replication/kinds.ts';
import { verifyEd25519 } from '../../crypto/index.ts';

/** Web2 principal ids: UUIDv4, allocated by slot 0. */
export const PRINCIPAL_ID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** Longest accepted (normalised) email: RFC 5321's path limit. */
export const MAX_EMAIL_LENGTH = 254;

/** The message a principal signs with its Ed25519 key to register it (docs/http.md, Web2 accounts: register-key). */
export function keyRegistrationMessage(publicKeyHex: string): string {
  return `cifer_register:${publicKeyHex}`;
}

const hex64 = z.string().regex(/^[0-9a-f]{64}$/);

export const principalBodySchema = z.strictObject({
  email: z.string().min(3).max(MAX_EMAIL_LENGTH),
  emailVerified: z.boolean(),
  /** argon2id PHC string. */
  passwordHash: z.string().startsWith('$argon2id$').max(256),
  /** Registered Ed25519 key (64 lowercase hex), or null. */
  ed25519PublicKey: hex64.nullable(),
  /**
   * Proof for the key: the principal's signature over `cifer_register:<key>` (register-key), which
   * every member checks itself before storing; null when no key.
   */
  keyProof: z.string().regex(/^[0-9a-f]{128}$/).nullable(),
  /**
   * The rotate permit (docs/permits.md) that set the key, when it was set by an email-confirmed permit
   * rather than registered with a proof; absent or null otherwise.
   */
  keyPermitId: z.string().regex(PRINCIPAL_ID_RE).nullable().optional(),
  status: z.enum(['active', 'deleted']),
  createdAt: z.number().int().nonnegative(),
  updatedAt: z.number().int().nonnegative(),
  /**
   * Which registration of the principal wrote the password: slot 0 counts them (`claimEmail`), 1 for
   * the first. Absent on records written before registrations were counted.
   */
  registration: z.number().int().positive().optional(),
  /**
   * No password is valid until a reset (forgot-password → reset-password): registrations before the
   * verification may have chosen different passwords, so none is known to be the verifier's
   * (docs/architecture.md, Web2 accounts). On an unverified record: its verification will require
   * one. Absent means false.
   */
  passwordResetRequired: z.boolean().optional(),
});
export type PrincipalBody = z.infer<typeof principalBodySchema>;

/**
 * Merge rank of an unverified record, in [0, 1): later registrations (slot 0's count) win whatever
 * the clocks, so a registration that found the password contested is never undone by an earlier one
 * whose write arrives later.
 */
function unverifiedRank(registration: number | undefined): number {
  const n = registration ?? 0;
  return n / (n + 1);
}

/**
 * `principal`, keyed by principalId. Rank: deleted (2, absorbing) > verified (1) > unverified
 * ([0, 1), by registration), so an unverified re-register can never undo a verification, and nothing
 * undoes a deletion.
 */
export const principalKind: RecordKindDefinition<PrincipalBody> = {
  name: 'principal',
  body: principalBodySchema,
  // Coordinators vouch for Web2 identity (password, OTP); a key change needs more, below.
  writers: ['coordinator'],
  key: (k) => PRINCIPAL_ID_RE.test(k),
  rank: (b) => (b.status === 'deleted' ? 2 : b.emailVerified ? 1 : unverifiedRank(b.registration)),
  async validate(b, context) {
    if (b.ed25519PublicKey === null) return b.keyProof === null ? undefined : 'proof without key';
    // A key comes from a confirmed rotate permit, travelling with it or already held…
    if (b.keyProof === null) {
      if (!b.keyPermitId) return 'key without proof';
      const permit = (await evidenceOf(context, 'permit', b.keyPermitId)) as
        | { status?: string; action?: string; principalId?: string; result?: Record<string, unknown> | null }
        | undefined;
      const ok = permit?.status === 'consumed' && permit.action === 'rotate' && permit.principalId === context.key && permit.result?.newPublicKey === b.ed25519PublicKey;
      return ok ? undefined : 'key permit does not authorise this key';
    }
    if (!verifyEd25519(b.ed25519PublicKey, keyRegistrationMessage(b.ed25519PublicKey), b.keyProof)) return 'bad key signature';
    // …or, registered with its proof, only where the principal has no other key: replacing a key
    // takes a rotate permit (the proof names no principal, so it cannot authorise a replacement).
    const { current, wins } = await context.standing();
    const before = wins ? (current as PrincipalBody | undefined) : undefined;
    if (before?.ed25519PublicKey && before.ed25519PublicKey !== b.ed25519PublicKey) return 'replacing a key needs a rotate permit';
    return undefined;
  },
};

export const emailIndexBodySchema = z.strictObject({
  /** The active principal of this email, or null once it was deleted. */
  principalId: z.string().regex(PRINCIPAL_ID_RE).nullable(),
});
export type EmailIndexBody = z.infer<typeof emailIndexBodySchema>;

/** `emailIndex`, keyed by the hex of the normalised email's UTF-8 bytes. Last writer wins. */
export const emailIndexKind: RecordKindDefinition<EmailIndexBody> = {
  name: 'emailIndex',
  body: emailIndexBodySchema,
  writers: ['coordinator'],
  key: (k) => /^([0-9a-f]{2}){3,254}$/.test(k),
};

/** What an OTP is for; the purposes never cross (the purpose is bound into the hash). */
export const OTP_PURPOSES = ['verify', 'reset', 'delete'] as const;
export type OtpPurpose = (typeof OTP_PURPOSES)[number];

export const otpBodySchema = z.strictObject({
  principalId: z.string().regex(PRINCIPAL_ID_RE),
  purpose: z.enum(OTP_PURPOSES),
  /** argon2id PHC of the code, bound to (principalId, purpose, issuedAt). */
  codeHash: z.string().startsWith('$argon2id$').max(256),
  issuedAt: z.number().int().nonnegative(),
  expiresAt: z.number().int().nonnegative(),
  /**
   * Wrong guesses at this principal and purpose within the guess budget's window, as slot 0 last
   * counted them (`otpAttempt`): they may predate this code, since a new code does not refill the
   * budget.
   */
  attempts: z.number().int().min(0).max(1000),
  consumed: z.boolean(),
  /** A verify code: the registration (principal `registration`) it was mailed for; absent otherwise. */
  registration: z.number().int().positive().optional(),
});
export type OtpBody = z.infer<typeof otpBodySchema>;

/**
 * Wrong guesses allowed per principal and purpose in any OTP lifetime (`accounts.otpTtlMs`), however
 * many codes were issued; the code that reaches it is dead.
 */
export const OTP_MAX_ATTEMPTS = 5;

/**
 * `otp`, keyed `<principalId>:<purpose>`: the current code of that purpose. Rank orders by issue
 * time first (a newly issued code replaces any older one, consumed or not), then a consumed or dead
 * code beats the same code's attempt updates, so a concurrent wrong guess can never revive it.
 */
export const otpKind: RecordKindDefinition<OtpBody> = {
  name: 'otp',
  body: otpBodySchema,
  writers: ['coordinator'],
  key: (k) => /^[0-9a-f-]{36}:(verify|reset|delete)$/.test(k),
  rank: (b) => b.issuedAt * 4 + (b.consumed || b.attempts >= OTP_MAX_ATTEMPTS ? 2 : 0),
  validate: (b, { key }) => (key === `${b.principalId}:${b.purpose}` ? undefined : 'key mismatch'),
};

export const mailCooldownBodySchema = z.strictObject({ lastSentAt: z.number().int().nonnegative() });
export type MailCooldownBody = z.infer<typeof mailCooldownBodySchema>;

/**
 * `mailCooldown`, keyed by the email's hex. No longer written: the cooldown is slot 0's (`mailTurn`,
 * serialised, so parallel requests through several coordinators can't each send a mail). The kind
 * stays so records from earlier versions still validate; nothing reads them.
 */
export const mailCooldownKind: RecordKindDefinition<MailCooldownBody> = {
  name: 'mailCooldown',
  body: mailCooldownBodySchema,
  writers: ['coordinator'],
  key: (k) => emailIndexKind.key!(k),
};

export const nodeRegistrationBodySchema = z.strictObject({
  principalId: z.string().regex(PRINCIPAL_ID_RE),
  slot: z.number().int().nonnegative(),
  /** The registered key this member stored. */
  ed25519PublicKey: hex64,
  storedAt: z.number().int().nonnegative(),
});
export type NodeRegistrationBody = z.infer<typeof nodeRegistrationBodySchema>;

/**
 * `nodeRegistration`, keyed `<principalId>:<slot>`: written by each member once it has stored a
 * principal's key (directly, by gossip or by catch-up), so every coordinator can tell which members
 * hold it.
 */
export const nodeRegistrationKind: RecordKindDefinition<NodeRegistrationBody> = {
  name: 'nodeRegistration',
  body: nodeRegistrationBodySchema,
  writers: ['member'],
  key: (k) => /^[0-9a-f-]{36}:\d{1,2}$/.test(k),
  // Only the member itself can say it holds the key.
  validate: (b, { key, originSlot }) => (key !== `${b.principalId}:${b.slot}` ? 'key mismatch' : originSlot !== b.slot ? 'not written by that member' : undefined),
};

/** Every kind of this capability. */
export const accountKinds = [principalKind, emailIndexKind, otpKind, mailCooldownKind, nodeRegistrationKind];
