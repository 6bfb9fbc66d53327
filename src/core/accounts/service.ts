/**
 * Web2 accounts (docs/http.md, Web2 accounts): registration with email OTP, credentials, password reset,
 * deletion, Ed25519 key registration propagated to the members, and principal lookup.
 *
 * Every account change is a replicated record (principal, emailIndex, otp, nodeRegistration). What
 * must be decided once for the whole cluster goes through slot 0 (claims.ts). This file composes the
 * parts — the replica's typed views (replica.ts), codes and the mail cooldown (otp.ts), key
 * registration (node-registrations.ts), the plain rules (rules.ts) — and holds the account changes.
 */
import { randomBytes } from 'node:crypto';
import { AppError } from '../../errors/index.ts';
import type { Logger } from '../../log/index.ts';
import type { CreatorService } from '../replication/creator.ts';
import type { MembershipView, Replicator, StateReader } from '../replication/ports.ts';
import type { VersionWriter } from '../replication/sequencer.ts';
import { createAccountClaims } from './claims.ts';
import { createNodeRegistrations, type NodeRegistrations } from './node-registrations.ts';
import { createOtpCodes } from './otp.ts';
import type { AccountClaims, AccountCrypto, AccountMail } from './ports.ts';
import { emailIndexKind, type PrincipalBody } from './records.ts';
import { createAccountReplica } from './replica.ts';
import {
  GENERIC_MAIL_MESSAGE,
  checkAccountPassword,
  checkPassword,
  emailHexOf,
  emailOfQuery,
  invalidCodeError,
  normalizeEmail,
  passwordContested,
  verificationRequiresReset,
} from './rules.ts';
import type { AccountsService } from './types.ts';

export type { AccountCrypto, AccountMail } from './ports.ts';

/** Options of {@link createAccountsService}. */
export interface AccountsOptions {
  /**
   * OTP lifetime, ms; also the window of the guess budget: at most OTP_MAX_ATTEMPTS wrong guesses per
   * principal and purpose in any window this long, however many codes were issued. @default 600000
   */
  otpTtlMs?: number;
  /**
   * Cooldown between code mails to one email, shared by register, resend-otp, forgot-password and
   * request-deletion, known and unknown emails alike; a correct code ends it early, ms. @default 60000
   */
  mailCooldownMs?: number;
  /** Public URL of the service, for emails. */
  publicUrl: string;
}

/** Dependencies of {@link createAccountsService}. */
export interface AccountsDeps {
  replicator: Replicator;
  /** Writes of principals (a sequenced kind), through slot 0. */
  versions: Pick<VersionWriter, 'update'>;
  state: StateReader;
  creator: CreatorService;
  membership: MembershipView;
  /** Slot 0's durable email claims (used only on slot 0). */
  claims: AccountClaims;
  crypto: AccountCrypto;
  mail: AccountMail;
  clock: () => number;
  logger: Logger;
  /** True while this node holds its own writes: no key acks from applied records then (node-registrations.ts). @default never */
  ownWritesHeld?(): boolean;
}

/** The service plus the hooks the node calls after records are applied and at start (see {@link NodeRegistrations}). */
export type AccountsCapability = AccountsService & Pick<NodeRegistrations, 'onRecordsApplied' | 'reconcileNodeRegistrations'>;

/** Create the accounts capability and register its slot-0 operations. */
export function createAccountsService(options: AccountsOptions, deps: AccountsDeps): AccountsCapability {
  const { crypto, clock } = deps;
  const log = deps.logger.child({ module: 'accounts' });
  const otpTtlMs = options.otpTtlMs ?? 600_000;
  const replica = createAccountReplica({ state: deps.state, replicator: deps.replicator, versions: deps.versions, clock });
  const slotZero = createAccountClaims({ otpTtlMs, mailCooldownMs: options.mailCooldownMs ?? 60_000 }, { creator: deps.creator, claims: deps.claims, replica, clock });
  const codes = createOtpCodes({ otpTtlMs, publicUrl: options.publicUrl }, { replica, slotZero, crypto, mail: deps.mail, clock });
  const keys = createNodeRegistrations({ replica, replicator: deps.replicator, membership: deps.membership, crypto, clock, log, ...(deps.ownWritesHeld ? { ownWritesHeld: deps.ownWritesHeld } : {}) });

  return {
    ...keys,

    async register(rawEmail, password) {
      const email = normalizeEmail(rawEmail);
      checkPassword(password);
      // A verified email is refused before anything is spent on it, its mail turn included.
      if ((await replica.principalByEmail(email))?.body.emailVerified) throw new AppError('CONFLICT', 'An account with this email already exists');
      await codes.takeMailTurn(email);
      const passwordHash = await crypto.hashPassword(password);
      const { principalId, registration } = await slotZero.claimEmail(emailHexOf(email));
      const [write] = await Promise.all([
        replica.writePrincipal(principalId, async (current) => {
          if (current?.status === 'deleted') throw new AppError('CONFLICT', 'This account is being deleted; try again shortly');
          if (current?.emailVerified) throw new AppError('CONFLICT', 'An account with this email already exists');
          // A later registration was written meanwhile (slot 0 counts them): it stands; this one's
          // code still goes out, and verification judges the passwords (verificationRequiresReset).
          if (current && current.registration >= registration) return undefined;
          // A re-register does replace the password (the newest registrant may be the mailbox's owner,
          // who lost the first mail or the first password), but when the passwords may differ the
          // record says so, and verification then leaves no password valid until a reset.
          const passwordResetRequired = await passwordContested(current, registration, password, crypto);
          const now = clock();
          const body: Omit<PrincipalBody, 'v'> = {
            email,
            emailVerified: false,
            passwordHash,
            ed25519PublicKey: null,
            keyProof: null,
            status: 'active',
            createdAt: current?.createdAt ?? now,
            updatedAt: now,
            registration,
            passwordResetRequired,
          };
          return { change: current ? 'reregister' : 'register', body };
        }),
        replica.write(emailIndexKind, emailHexOf(email), { principalId }),
      ]);
      const body = write.written ? write.record.body : write.current!.body;
      await codes.issue({ id: principalId, body }, 'verify');
      // Slot 0 counts registrations: the first one created the principal, whichever version landed first.
      const created = registration === 1;
      log.info({ principalId, registration, passwordResetRequired: body.passwordResetRequired === true }, 'principal registered');
      return {
        created,
        principalId,
        message: created ? 'Registration successful. A verification code has been sent to your email.' : 'Registration updated. A new verification code has been sent to your email.',
      };
    },

    async verifyEmail(rawEmail, otp) {
      const email = normalizeEmail(rawEmail);
      const found = await replica.principalByEmail(email);
      if (!found) throw new AppError('NOT_FOUND', 'Account not found');
      if (found.body.emailVerified) throw new AppError('BAD_REQUEST', 'Email already verified');
      const code = await codes.consume(found, 'verify', otp);
      // The email is verified either way: the code proves the mailbox. The password is kept only
      // when one password provably ran through every registration up to the one this code was
      // mailed for; otherwise no password is valid until the mailbox's owner sets one with
      // forgot-password → reset-password (docs/architecture.md, Web2 accounts).
      let passwordResetRequired = false;
      await replica.updatePrincipal(found, 'verifyEmail', async (current) => {
        if (current.emailVerified) throw new AppError('BAD_REQUEST', 'Email already verified');
        passwordResetRequired = verificationRequiresReset(current, code.registration);
        if (!passwordResetRequired) return { emailVerified: true };
        // An unguessable password as well as the flag: with the flag alone, the last registrant's
        // password would be one bug away from working.
        const passwordHash = await crypto.hashPassword(randomBytes(32).toString('base64url'));
        return { emailVerified: true, passwordResetRequired: true, passwordHash };
      });
      log.info({ principalId: found.id, passwordResetRequired }, 'email verified');
      return { principalId: found.id, emailVerified: true };
    },

    async resendOtp(rawEmail) {
      const email = normalizeEmail(rawEmail);
      const found = await replica.principalByEmail(email);
      // docs/http.md, Web2 accounts: an already verified email is a 400 (a wire-contract detail that does reveal it).
      if (found?.body.emailVerified) throw new AppError('BAD_REQUEST', 'Email already verified');
      await codes.takeMailTurn(email);
      if (found) await codes.issue(found, 'verify');
      else await codes.decoy();
      return { message: GENERIC_MAIL_MESSAGE };
    },

    async forgotPassword(rawEmail) {
      const email = normalizeEmail(rawEmail);
      await codes.takeMailTurn(email);
      const found = await replica.principalByEmail(email);
      // Verified accounts only, those waiting for a reset included: the code goes to the mailbox
      // that proved itself at verification.
      if (found?.body.emailVerified) await codes.issue(found, 'reset');
      else await codes.decoy();
      return { message: GENERIC_MAIL_MESSAGE };
    },

    async resetPassword(rawEmail, otp, newPassword) {
      const email = normalizeEmail(rawEmail);
      checkPassword(newPassword, 'newPassword');
      const found = await replica.principalByEmail(email);
      if (!found) throw new AppError('NOT_FOUND', 'Account not found');
      await codes.consume(found, 'reset', otp);
      await replica.updatePrincipal(found, 'resetPassword', { passwordHash: await crypto.hashPassword(newPassword), passwordResetRequired: false });
      log.info({ principalId: found.id }, 'password reset');
      return { message: 'Password has been reset.' };
    },

    async verifyCredentials(rawEmail, password) {
      const email = normalizeEmail(rawEmail);
      const found = await checkAccountPassword(await replica.principalByEmail(email), password, crypto, { notFound: 'Account not found', wrongPassword: 'Invalid credentials' });
      return { valid: true, principalId: found.id };
    },

    async requestDeletion(rawEmail, password, principalId) {
      const email = normalizeEmail(rawEmail);
      // The turn is taken whatever the triple: a 429 only after a matching one would be a password
      // oracle. (An account waiting for a reset has no valid password, so it gets no code.)
      await codes.takeMailTurn(email);
      const found = await replica.principalByEmail(email);
      // Always one password check and one code hash, whichever part of the triple is wrong.
      const passwordOk = found ? await crypto.verifyPassword(password, found.body.passwordHash) : await crypto.verifyDummy(password);
      if (found && passwordOk && found.id === principalId) await codes.issue(found, 'delete');
      else await codes.decoy();
      return { message: 'If the details match an account, a confirmation code has been sent to its email address.' };
    },

    async confirmDeletion(rawEmail, otp) {
      const email = normalizeEmail(rawEmail);
      const found = await replica.principalByEmail(email);
      if (!found) {
        await crypto.verifyDummy(otp);
        throw invalidCodeError();
      }
      await codes.consume(found, 'delete', otp);
      await replica.updatePrincipal(found, 'delete', { status: 'deleted' });
      await replica.write(emailIndexKind, emailHexOf(email), { principalId: null });
      log.info({ principalId: found.id }, 'principal deleted');
      return { success: true, message: 'Account deleted.' };
    },

    async findByEmail(query) {
      const email = emailOfQuery(query);
      const found = await replica.principalByEmail(email);
      if (!found) throw new AppError('NOT_FOUND', 'Principal not found');
      return { principalId: found.id, emailHex: emailHexOf(email) };
    },
  };
}
