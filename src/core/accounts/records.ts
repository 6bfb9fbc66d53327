/**
 * Replicated record kinds of the accounts capability (docs/architecture.md, Web2 accounts):
 * `principal`, `emailIndex`, `otp`, `mailCooldown` and `nodeRegistration`.
 */
import { z } from 'zod';
import type { RecordKindDefinition } from '../replication/kinds.ts';
import type { ClusterDescriptor } from '../replication/ports.ts';
import { refusal, type RecordRefusal } from '../replication/refusals.ts';
import { checkVersion, consumedPermitBefore, onlyChanged, versionSchema, type Transition } from '../replication/versions.ts';
import { kindName } from '../replication/views.ts';
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

/** The transitions of a principal (docs/security.md, "Transitions"); a deleted principal has none. */
export const PRINCIPAL_CHANGES = ['register', 'reregister', 'verifyEmail', 'resetPassword', 'registerKey', 'rotateKey', 'delete'] as const;

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
  /** Which registration of the principal wrote the password: slot 0 counts them (`claimEmail`), 1 for the first. */
  registration: z.number().int().positive(),
  /**
   * No password is valid until a reset (forgot-password → reset-password): registrations before the
   * verification may have chosen different passwords, so none is known to be the verifier's
   * (docs/architecture.md, Web2 accounts). On an unverified record: its verification will require
   * one. Absent means false.
   */
  passwordResetRequired: z.boolean().optional(),
  /** The version: its number, the version it replaces, its transition (src/core/replication/versions.ts). */
  v: versionSchema(PRINCIPAL_CHANGES),
});
export type PrincipalBody = z.infer<typeof principalBodySchema>;

/** The key fields: set only by registerKey (where there was none) and rotateKey; never removed. */
const KEY_FIELDS = ['ed25519PublicKey', 'keyProof', 'keyPermitId'] as const;

/** A coordinator vouched for the version: the transitions a coordinator is trusted for (Web2 identity). */
const coordinatorSaid = (vouchedBy: string | undefined): RecordRefusal | undefined => (vouchedBy ? undefined : refusal('bad_vouch', 'a coordinator vouches for Web2 identity'));

/** The transitions of a principal (docs/security.md, "Transitions"). */
const principalTransitions: Record<(typeof PRINCIPAL_CHANGES)[number], Transition<PrincipalBody>> = {
  // A new registration: unverified, no key. A coordinator checked the email's claim at slot 0.
  register: {
    creates: true,
    check: ({ after, vouchedBy }) =>
      coordinatorSaid(vouchedBy) ??
      (after.emailVerified || after.status !== 'active' || after.ed25519PublicKey !== null || after.keyProof !== null || after.keyPermitId ? refusal('fields_changed', 'a registration is unverified and keyless') : undefined),
  },
  // A later registration of the same unverified email: a new password, counted by slot 0.
  reregister: {
    check({ before, after, vouchedBy }) {
      if (before!.emailVerified || before!.status !== 'active') return refusal('terminal_state', 'only an unverified registration is registered again');
      if (after.registration <= before!.registration) return refusal('registration_not_later');
      return coordinatorSaid(vouchedBy) ?? onlyChanged(before!, after, ['passwordHash', 'registration', 'passwordResetRequired', 'updatedAt']);
    },
  },
  // The OTP mailed for the registration proves the mailbox (checked by the coordinator).
  verifyEmail: {
    check({ before, after, vouchedBy }) {
      if (before!.emailVerified || before!.status !== 'active' || !after.emailVerified) return refusal('fields_changed', 'verification marks an unverified email verified');
      return coordinatorSaid(vouchedBy) ?? onlyChanged(before!, after, ['emailVerified', 'passwordHash', 'passwordResetRequired', 'updatedAt']);
    },
  },
  // The reset OTP (checked by the coordinator): a new password.
  resetPassword: {
    check({ before, after, vouchedBy }) {
      if (!before!.emailVerified || before!.status !== 'active') return refusal('terminal_state', 'only a verified account resets its password');
      return coordinatorSaid(vouchedBy) ?? onlyChanged(before!, after, ['passwordHash', 'passwordResetRequired', 'updatedAt']);
    },
  },
  // The first key, with its proof, for a principal whose password the coordinator checked. Replacing
  // a key takes a rotate permit: no transition removes one, so "no key" happens only before the first.
  registerKey: {
    check({ before, after, vouchedBy }) {
      if (before!.status !== 'active') return refusal('terminal_state');
      if (before!.ed25519PublicKey !== null) return refusal('key_change_refused', 'replacing a key needs a rotate permit');
      if (after.ed25519PublicKey === null || after.keyProof === null || after.keyPermitId) return refusal('key_proof_invalid');
      if (!verifyEd25519(after.ed25519PublicKey, keyRegistrationMessage(after.ed25519PublicKey), after.keyProof)) return refusal('key_proof_invalid');
      return coordinatorSaid(vouchedBy) ?? onlyChanged(before!, after, [...KEY_FIELDS, 'updatedAt']);
    },
  },
  // A confirmed rotate permit, consumed right before this version in slot 0's log: its key, once.
  rotateKey: {
    async check({ before, after, context }) {
      if (before!.status !== 'active') return refusal('terminal_state');
      const fields = onlyChanged(before!, after, [...KEY_FIELDS, 'updatedAt']);
      if (fields) return fields;
      const consumed = await consumedPermitBefore(context, after.keyPermitId);
      if (!('body' in consumed)) return consumed;
      const permit = consumed.body as { action?: string; principalId?: string; result?: Record<string, unknown> | null };
      if (permit.action !== 'rotate' || permit.principalId !== context.key) return refusal('permit_mismatch');
      if (after.keyProof !== null || permit.result?.newPublicKey !== after.ed25519PublicKey) return refusal('result_mismatch');
      return undefined;
    },
  },
  // The deletion OTP (checked by the coordinator). Terminal: a deleted principal has no transition.
  delete: {
    check({ before, after, vouchedBy }) {
      if (before!.status !== 'active' || after.status !== 'deleted') return refusal('terminal_state');
      return coordinatorSaid(vouchedBy) ?? onlyChanged(before!, after, ['status', 'updatedAt']);
    },
  },
};

/**
 * `principal`, keyed by principalId: a sequenced kind (src/core/replication/versions.ts). Slot 0
 * writes every version, one of {@link PRINCIPAL_CHANGES} from the version it names: coordinators are
 * trusted for Web2 identity (registration, verification, passwords, deletion: their vouch), a key is
 * set once with its proof and replaced only by a confirmed rotate permit, and deletion is final.
 */
export function principalKind(descriptor: ClusterDescriptor): RecordKindDefinition<PrincipalBody> {
  return {
    name: 'principal',
    body: principalBodySchema,
    writers: ['slot0'],
    sequenced: true,
    key: (k) => PRINCIPAL_ID_RE.test(k),
    rank: (b) => b.v.n,
    validate: (b, context) => checkVersion(descriptor, principalTransitions, b, context),
  };
}

/** The `principal` kind's name and body type, for typed reads of the replica (`stateView`). */
export const principalKindName = kindName<PrincipalBody>('principal');

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
  validate: (b, { key }) => (key === `${b.principalId}:${b.purpose}` ? undefined : refusal('key_mismatch')),
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
  validate: (b, { key, originSlot }) => (key !== `${b.principalId}:${b.slot}` ? refusal('key_mismatch') : originSlot !== b.slot ? refusal('not_written_by_member') : undefined),
};

/** Every kind of this capability. */
export function accountKinds(descriptor: ClusterDescriptor): RecordKindDefinition[] {
  return [principalKind(descriptor), emailIndexKind, otpKind, mailCooldownKind, nodeRegistrationKind] as RecordKindDefinition[];
}
