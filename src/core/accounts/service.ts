/**
 * Web2 accounts (docs/http.md, Web2 accounts): registration with email OTP, credentials, password reset,
 * deletion, Ed25519 key registration propagated to the members, and principal lookup.
 *
 * Every account change is a replicated record (principal, emailIndex, otp, nodeRegistration). What
 * must be decided once for the whole cluster goes through slot 0, which serialises it in its durable
 * `claims` sublevel: the principal of an email and the count of its registrations (`claimEmail`),
 * the verdict on a code and the guess budget (`otpAttempt`), and the mail cooldown (`mailTurn`). So
 * two coordinators can never both create a principal, and neither guesses nor mails multiply with
 * the number of coordinators.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { AppError } from '../../errors/index.ts';
import type { Logger } from '../../log/index.ts';
import { serialQueue } from '../serial-queue.ts';
import type { CreatorService } from '../replication/creator.ts';
import type { MembershipView, Replicator, StateReader, WriteReport } from '../replication/ports.ts';
import { membersOf } from '../replication/ports.ts';
import type { ReplicatedRecord } from '../replication/record.ts';
import type { OutgoingMail } from '../mail-port.ts';
import type { Json } from '../replication/canonical-json.ts';
import type { AccountsService, KeyRegistrationResult, NodeRegistrationStatus, NodeRegistrationView } from './types.ts';
import {
  MAX_EMAIL_LENGTH,
  OTP_MAX_ATTEMPTS,
  PRINCIPAL_ID_RE,
  keyRegistrationMessage,
  type EmailIndexBody,
  type NodeRegistrationBody,
  type OtpBody,
  type OtpPurpose,
  type PrincipalBody,
} from './records.ts';

/** Password and OTP hashing (argon2id behind a concurrency limit), Ed25519 checks, OTP codes. */
export interface AccountCrypto {
  hashPassword(password: string): Promise<string>;
  verifyPassword(password: string, phc: string): Promise<boolean>;
  /** Same cost as a real verify, always false: unknown accounts cost what known ones do. */
  verifyDummy(password: string): Promise<false>;
  generateOtp(): string;
  hashOtp(code: string, context: string): Promise<string>;
  verifyOtp(code: string, context: string, phc: string): Promise<boolean>;
  isEd25519PublicKeyHex(hex: string): boolean;
  verifyEd25519(publicKeyHex: string, message: string, signatureHex: string): boolean;
}

/** Mail delivery and the OTP templates. */
export interface AccountMail {
  send(message: OutgoingMail): Promise<unknown>;
  otpMail(input: { purpose: OtpPurpose; code: string; ttlMinutes: number; publicUrl: string }): { subject: string; text: string; html: string };
}

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
  state: StateReader;
  creator: CreatorService;
  membership: MembershipView;
  /** Slot 0's durable email claims (used only on slot 0). */
  claims: { get(name: string): Promise<string | undefined>; put(name: string, value: string): Promise<void> };
  crypto: AccountCrypto;
  mail: AccountMail;
  clock: () => number;
  logger: Logger;
}

/** The service plus the hook the node calls after records are applied. */
export interface AccountsCapability extends AccountsService {
  /** After records are stored: a member acknowledges keys it now holds (nodeRegistration). */
  onRecordsApplied(records: ReplicatedRecord[]): void;
  /**
   * At start: acknowledge every held key whose ack is missing — an ack in flight when the node
   * stopped is otherwise lost, since the principal record will not be applied again. Returns how
   * many acks it wrote.
   */
  reconcileNodeRegistrations(): Promise<number>;
}

const MIN_PASSWORD = 8;
const MAX_PASSWORD = 1024;
const GENERIC_MAIL_MESSAGE = 'If the account exists, a code has been sent to its email address.';

/** Normalise an email (trim + lowercase) and check it; 400 when unusable. */
export function normalizeEmail(raw: string): string {
  const email = raw.trim().toLowerCase();
  // docs/http.md, Web2 accounts: one `local@domain` address; we also refuse what no mail system can deliver to, and anything that
  // would read as more than one address (`,` `;` `<` `>` quotes, brackets).
  if (email.length < 3 || Buffer.byteLength(email, 'utf8') > MAX_EMAIL_LENGTH || !/^[^@\s,;<>()[\]\\"]+@[^@\s,;<>()[\]\\"]+$/.test(email) || /\p{Cc}/u.test(email)) {
    throw new AppError('BAD_REQUEST', 'Invalid email address');
  }
  return email;
}

/** Hex of the normalised email's UTF-8 bytes (docs/http.md, Web2 accounts). */
export function emailHexOf(email: string): string {
  return Buffer.from(email, 'utf8').toString('hex');
}

function checkPassword(password: string, field = 'password'): void {
  if (password.length < MIN_PASSWORD) throw new AppError('BAD_REQUEST', `${field} must be at least ${MIN_PASSWORD} characters`);
  if (password.length > MAX_PASSWORD) throw new AppError('BAD_REQUEST', `${field} must be at most ${MAX_PASSWORD} characters`);
}

function checkPrincipalId(id: string): void {
  if (!PRINCIPAL_ID_RE.test(id)) throw new AppError('BAD_REQUEST', 'principalId is malformed');
}

function registrationStatus(acked: number, size: number, threshold: number): NodeRegistrationStatus {
  return acked >= size ? 'complete' : acked >= threshold ? 'partial' : acked > 0 ? 'pending' : 'failed';
}

/** Slot 0's answer to one OTP try. */
interface OtpVerdict {
  allowed: boolean;
  /** Wrong guesses at this principal and purpose within the budget window. */
  attempts: number;
  consumed: boolean;
}

/** Slot 0's answer to a request to mail an email. */
interface MailTurn {
  allowed: boolean;
  /** When refused: how long until the next turn, ms. */
  retryAfterMs: number;
}

/** Slot 0's answer to a registration: the email's principal and which registration of it this is. */
interface EmailClaim {
  principalId: string;
  /** 1 for the principal's first registration, then +1 for each later one. */
  registration: number;
}

const EMAIL_HEX_RE = /^([0-9a-f]{2}){3,254}$/;
const OTP_KEY_RE = /^[0-9a-f-]{36}:(verify|reset|delete)$/;

/**
 * The registration a principal record provably stands for, with every registration before it under
 * the same password; undefined when that is not known (a contested record, or one from before
 * registrations were counted that was rewritten by a re-register).
 */
function provenRegistration(body: PrincipalBody): number | undefined {
  if (body.passwordResetRequired) return undefined;
  // Written before registrations were counted: one registration only if never rewritten.
  if (body.registration === undefined) return body.createdAt === body.updatedAt ? 0 : undefined;
  return body.registration;
}

function resetRequiredError(): AppError {
  return new AppError('PASSWORD_RESET_REQUIRED', 'A password reset is required: request a code with forgot-password, then set a new password with reset-password');
}

interface Found {
  id: string;
  body: PrincipalBody;
  record: ReplicatedRecord;
}

/** Create the accounts capability and register its slot-0 operation. */
export function createAccountsService(options: AccountsOptions, deps: AccountsDeps): AccountsCapability {
  const { replicator, state, crypto, clock } = deps;
  const log = deps.logger.child({ module: 'accounts' });
  const otpTtlMs = options.otpTtlMs ?? 600_000;
  const cooldownMs = options.mailCooldownMs ?? 60_000;
  const descriptor = deps.membership.descriptor;
  const members = membersOf(descriptor);
  const self = deps.membership.self;

  const write = (kind: string, key: string, body: unknown, opts?: { requireQuorum?: boolean }) =>
    replicator.replicate({ kind, key, body: body as Json }, opts);

  async function principalById(id: string): Promise<Found | undefined> {
    const record = await state.get('principal', id);
    if (!record) return undefined;
    return { id, body: record.body as PrincipalBody, record };
  }

  async function principalByEmail(email: string): Promise<Found | undefined> {
    const idx = await state.get('emailIndex', emailHexOf(email));
    const id = (idx?.body as EmailIndexBody | undefined)?.principalId;
    if (!id) return undefined;
    const found = await principalById(id);
    return found && found.body.status === 'active' ? found : undefined;
  }

  /** Send mail without making the caller wait: response time must not depend on delivery. */
  function sendInBackground(message: OutgoingMail): void {
    // The mailer logs the failure (without the recipient or the code); nothing to add here.
    deps.mail.send(message).catch(() => undefined);
  }

  async function issueOtp(found: Pick<Found, 'id' | 'body'>, purpose: OtpPurpose): Promise<void> {
    const code = crypto.generateOtp();
    const issuedAt = clock();
    const body: OtpBody = {
      principalId: found.id,
      purpose,
      codeHash: await crypto.hashOtp(code, `${found.id}:${purpose}:${issuedAt}`),
      issuedAt,
      expiresAt: issuedAt + otpTtlMs,
      attempts: 0,
      consumed: false,
      // A verify code names the registration it was mailed for (see verifyEmail).
      ...(purpose === 'verify' && found.body.registration !== undefined ? { registration: found.body.registration } : {}),
    };
    await write('otp', `${found.id}:${purpose}`, body);
    const mail = deps.mail.otpMail({ purpose, code, ttlMinutes: Math.round(otpTtlMs / 60_000), publicUrl: options.publicUrl });
    sendInBackground({ to: found.body.email, ...mail, category: `otp-${purpose}` });
  }

  /**
   * Check and consume an OTP: single use, expiring, and within the guess budget of its principal and
   * purpose (OTP_MAX_ATTEMPTS wrong guesses per OTP lifetime, whatever the number of codes issued).
   * Returns the code's record.
   */
  async function consumeOtp(found: Found, purpose: OtpPurpose, code: string): Promise<OtpBody> {
    const key = `${found.id}:${purpose}`;
    const record = await state.get('otp', key);
    const otp = record?.body as OtpBody | undefined;
    const invalid = new AppError('UNAUTHORIZED', 'Invalid or expired code');
    if (!otp || otp.consumed || otp.attempts >= OTP_MAX_ATTEMPTS || clock() > otp.expiresAt) {
      // Spend the same time as a real check so the answer's timing says nothing.
      await crypto.verifyDummy(code);
      throw invalid;
    }
    const ok = /^\d{6}$/.test(code) && (await crypto.verifyOtp(code, `${key}:${otp.issuedAt}`, otp.codeHash));
    // The verdict is slot 0's, serialised per principal and purpose: parallel guesses through several
    // coordinators can't exceed the budget, new codes don't refill it, and a code can't be consumed
    // twice.
    const verdict = (await deps.creator.call('otpAttempt', { key, issuedAt: otp.issuedAt, success: ok, emailHex: emailHexOf(found.body.email) })) as OtpVerdict;
    await write('otp', key, { ...otp, attempts: Math.max(otp.attempts, verdict.attempts), consumed: otp.consumed || verdict.consumed });
    if (!ok || !verdict.allowed) throw invalid;
    return otp;
  }

  /**
   * Take the email's mail turn or answer 429: one code mail per cooldown per email, whichever of
   * register, resend-otp, forgot-password and request-deletion asks. Slot 0 decides (`mailTurn`), so
   * parallel requests through several coordinators share one turn. Taken for unknown emails too, so a
   * 429 never tells whether an account exists.
   */
  async function takeMailTurn(email: string): Promise<void> {
    const turn = (await deps.creator.call('mailTurn', { emailHex: emailHexOf(email) })) as MailTurn;
    if (!turn.allowed) {
      const retryAfterSeconds = Math.max(1, Math.ceil(turn.retryAfterMs / 1000));
      throw new AppError('RATE_LIMITED', `Please wait ${retryAfterSeconds} seconds before requesting another code`, { retryAfterSeconds });
    }
  }

  /**
   * Whether registration `registration` leaves a password the person who verifies the email may not
   * have chosen (docs/architecture.md, Web2 accounts). Whoever verifies proves only that they read the
   * mailbox; every registration's code goes there, so after registrations with different passwords
   * nothing tells which password the mailbox's owner chose. Only a provably single password is
   * uncontested: the first registration, or one over the registration just before it (seen here,
   * itself uncontested) whose password checks against it. Anything unseen counts as different: a
   * false alarm costs the owner one password reset, a miss would hand the account to whoever
   * re-registered.
   */
  async function contestedBy(current: Found | undefined, registration: number, password: string): Promise<boolean> {
    if (!current) return registration !== 1;
    if (provenRegistration(current.body) !== registration - 1) return true;
    return !(await crypto.verifyPassword(password, current.body.passwordHash));
  }

  async function updatePrincipal(found: Found, change: Partial<PrincipalBody>, opts?: { requireQuorum?: boolean }): Promise<WriteReport> {
    return write('principal', found.id, { ...found.body, ...change, updatedAt: Math.max(clock(), found.body.updatedAt) }, opts);
  }

  /** Members whose nodeRegistration says they hold `key` for the principal. */
  async function holders(principalId: string, key: string): Promise<Set<string>> {
    const out = new Set<string>();
    for await (const r of state.list('nodeRegistration', { prefix: `${principalId}:` })) {
      const b = r.body as NodeRegistrationBody;
      const m = members.find((x) => x.slot === b.slot);
      if (m && b.ed25519PublicKey === key) out.add(m.nodeAddress);
    }
    return out;
  }

  /**
   * A member's ack that it holds a principal's current key: written once per key. Returns true when
   * it wrote one.
   */
  async function acknowledgeKey(principalId: string): Promise<boolean> {
    if (self.slot === null) return false;
    const key = ((await state.get('principal', principalId))?.body as PrincipalBody | undefined)?.ed25519PublicKey;
    if (!key) return false;
    const mine = (await state.get('nodeRegistration', `${principalId}:${self.slot}`))?.body as NodeRegistrationBody | undefined;
    if (mine?.ed25519PublicKey === key) return false;
    await write('nodeRegistration', `${principalId}:${self.slot}`, { principalId, slot: self.slot, ed25519PublicKey: key, storedAt: clock() }, { requireQuorum: false });
    return true;
  }

  const serialised = serialQueue();
  const readClaim = async <T>(name: string, fallback: T): Promise<T> => {
    const raw = await deps.claims.get(name);
    return raw === undefined ? fallback : (JSON.parse(raw) as T);
  };

  // Slot 0: one principal per email, ever active at a time, and the count of its registrations.
  deps.creator.register('claimEmail', (params) =>
    serialised(async (): Promise<EmailClaim> => {
      const emailHex = params.emailHex;
      if (typeof emailHex !== 'string' || !EMAIL_HEX_RE.test(emailHex)) throw new AppError('BAD_REQUEST', 'malformed email claim');
      const claimKey = `email:${emailHex}`;
      let principalId = await deps.claims.get(claimKey);
      if (principalId) {
        const p = await principalById(principalId);
        if (p && p.body.status !== 'active') principalId = undefined;
      }
      if (!principalId) {
        principalId = randomUUID();
        await deps.claims.put(claimKey, principalId);
      }
      // Counted here, where registrations are serialised: the coordinator compares the count with
      // the record it sees to tell whether one password provably runs through all of them.
      const countKey = `registrations:${principalId}`;
      const registration = (await readClaim(countKey, 0)) + 1;
      await deps.claims.put(countKey, JSON.stringify(registration));
      return { principalId, registration };
    }),
  );

  // Slot 0: the single use of each code, and the guess budget of each principal and purpose — a
  // sliding window of wrong-guess times, so neither a new code nor a re-register refills it.
  deps.creator.register('otpAttempt', (params) =>
    serialised(async (): Promise<OtpVerdict> => {
      const { key, issuedAt, success, emailHex } = params;
      if (
        typeof key !== 'string' ||
        !OTP_KEY_RE.test(key) ||
        !Number.isSafeInteger(issuedAt) ||
        typeof success !== 'boolean' ||
        (emailHex !== undefined && (typeof emailHex !== 'string' || !EMAIL_HEX_RE.test(emailHex)))
      ) {
        throw new AppError('BAD_REQUEST', 'malformed otp attempt');
      }
      const now = clock();
      const codeKey = `otp:${key}:${issuedAt as number}`;
      const budgetKey = `otpBudget:${key}`;
      const { consumed } = await readClaim<{ consumed: boolean }>(codeKey, { consumed: false });
      const failures = (await readClaim<number[]>(budgetKey, [])).filter((at) => now - at < otpTtlMs);
      if (consumed || failures.length >= OTP_MAX_ATTEMPTS) return { allowed: false, attempts: failures.length, consumed };
      if (success) {
        await deps.claims.put(codeKey, JSON.stringify({ consumed: true }));
        // Whoever used the code reads the mailbox: its owner's next mail (a reset right after a
        // verification, say) need not wait out the cooldown.
        if (typeof emailHex === 'string') await deps.claims.put(`mail:${emailHex}`, JSON.stringify(0));
        return { allowed: true, attempts: failures.length, consumed: true };
      }
      failures.push(now);
      await deps.claims.put(budgetKey, JSON.stringify(failures));
      return { allowed: false, attempts: failures.length, consumed: false };
    }),
  );

  // Slot 0: one mail turn per email per cooldown, for every coordinator together.
  deps.creator.register('mailTurn', (params) =>
    serialised(async (): Promise<MailTurn> => {
      const emailHex = params.emailHex;
      if (typeof emailHex !== 'string' || !EMAIL_HEX_RE.test(emailHex)) throw new AppError('BAD_REQUEST', 'malformed mail turn');
      const now = clock();
      const turnKey = `mail:${emailHex}`;
      const lastSentAt = await readClaim(turnKey, 0);
      const waitMs = lastSentAt + cooldownMs - now;
      if (lastSentAt > 0 && waitMs > 0) return { allowed: false, retryAfterMs: Math.min(waitMs, cooldownMs) };
      await deps.claims.put(turnKey, JSON.stringify(now));
      return { allowed: true, retryAfterMs: 0 };
    }),
  );

  const service: AccountsCapability = {
    async register(rawEmail, password) {
      const email = normalizeEmail(rawEmail);
      checkPassword(password);
      // A verified email is refused before anything is spent on it, its mail turn included.
      if ((await principalByEmail(email))?.body.emailVerified) throw new AppError('CONFLICT', 'An account with this email already exists');
      await takeMailTurn(email);
      const passwordHash = await crypto.hashPassword(password);
      const { principalId, registration } = (await deps.creator.call('claimEmail', { emailHex: emailHexOf(email) })) as EmailClaim;
      const current = await principalById(principalId);
      if (current?.body.status === 'deleted') throw new AppError('CONFLICT', 'This account is being deleted; try again shortly');
      if (current?.body.emailVerified) throw new AppError('CONFLICT', 'An account with this email already exists');
      // A re-register does replace the password (the newest registrant may be the mailbox's owner,
      // who lost the first mail or the first password), but when the passwords may differ the
      // record says so, and verification then leaves no password valid until a reset.
      const passwordResetRequired = await contestedBy(current, registration, password);
      const now = clock();
      const body: PrincipalBody = {
        email,
        emailVerified: false,
        passwordHash,
        ed25519PublicKey: null,
        keyProof: null,
        status: 'active',
        createdAt: current?.body.createdAt ?? now,
        updatedAt: now,
        registration,
        passwordResetRequired,
      };
      await Promise.all([write('principal', principalId, body), write('emailIndex', emailHexOf(email), { principalId })]);
      await issueOtp({ id: principalId, body }, 'verify');
      const created = !current && registration === 1;
      log.info({ principalId, registration, passwordResetRequired }, 'principal registered');
      return {
        created,
        principalId,
        message: created ? 'Registration successful. A verification code has been sent to your email.' : 'Registration updated. A new verification code has been sent to your email.',
      };
    },

    async verifyEmail(rawEmail, otp) {
      const email = normalizeEmail(rawEmail);
      const found = await principalByEmail(email);
      if (!found) throw new AppError('NOT_FOUND', 'Account not found');
      if (found.body.emailVerified) throw new AppError('BAD_REQUEST', 'Email already verified');
      const code = await consumeOtp(found, 'verify', otp);
      // The email is verified either way: the code proves the mailbox. The password is kept only
      // when one password provably ran through every registration up to the one this code was
      // mailed for; otherwise no password is valid until the mailbox's owner sets one with
      // forgot-password → reset-password (docs/architecture.md, Web2 accounts). A code mailed for a
      // registration this coordinator has not seen yet counts as contested too.
      const proven = provenRegistration(found.body);
      const passwordResetRequired = proven === undefined || (code.registration ?? 0) > proven;
      if (passwordResetRequired) {
        // An unguessable password as well as the flag: with the flag alone, the last registrant's
        // password would be one bug away from working.
        const passwordHash = await crypto.hashPassword(randomBytes(32).toString('base64url'));
        await updatePrincipal(found, { emailVerified: true, passwordResetRequired: true, passwordHash });
      } else {
        await updatePrincipal(found, { emailVerified: true });
      }
      log.info({ principalId: found.id, passwordResetRequired }, 'email verified');
      return { principalId: found.id, emailVerified: true };
    },

    async resendOtp(rawEmail) {
      const email = normalizeEmail(rawEmail);
      const found = await principalByEmail(email);
      // docs/http.md, Web2 accounts: an already verified email is a 400 (a wire-contract detail that does reveal it).
      if (found?.body.emailVerified) throw new AppError('BAD_REQUEST', 'Email already verified');
      await takeMailTurn(email);
      if (found) await issueOtp(found, 'verify');
      else await crypto.hashOtp(crypto.generateOtp(), 'timing');
      return { message: GENERIC_MAIL_MESSAGE };
    },

    async forgotPassword(rawEmail) {
      const email = normalizeEmail(rawEmail);
      await takeMailTurn(email);
      const found = await principalByEmail(email);
      // Verified accounts only, those waiting for a reset included: the code goes to the mailbox
      // that proved itself at verification.
      if (found?.body.emailVerified) await issueOtp(found, 'reset');
      else await crypto.hashOtp(crypto.generateOtp(), 'timing');
      return { message: GENERIC_MAIL_MESSAGE };
    },

    async resetPassword(rawEmail, otp, newPassword) {
      const email = normalizeEmail(rawEmail);
      checkPassword(newPassword, 'newPassword');
      const found = await principalByEmail(email);
      if (!found) throw new AppError('NOT_FOUND', 'Account not found');
      await consumeOtp(found, 'reset', otp);
      await updatePrincipal(found, { passwordHash: await crypto.hashPassword(newPassword), passwordResetRequired: false });
      log.info({ principalId: found.id }, 'password reset');
      return { message: 'Password has been reset.' };
    },

    async verifyCredentials(rawEmail, password) {
      const email = normalizeEmail(rawEmail);
      const found = await principalByEmail(email);
      if (!found) {
        await crypto.verifyDummy(password);
        throw new AppError('NOT_FOUND', 'Account not found');
      }
      if (found.body.emailVerified && found.body.passwordResetRequired) {
        // No password is valid, so say what to do rather than "invalid credentials"; same cost.
        await crypto.verifyDummy(password);
        throw resetRequiredError();
      }
      if (!(await crypto.verifyPassword(password, found.body.passwordHash))) throw new AppError('UNAUTHORIZED', 'Invalid credentials');
      if (!found.body.emailVerified) throw new AppError('FORBIDDEN', 'Email not verified');
      return { valid: true, principalId: found.id };
    },

    async registerKey(principalId, password, rawPublicKey, rawSignature) {
      checkPrincipalId(principalId);
      const publicKey = rawPublicKey;
      if (!crypto.isEd25519PublicKeyHex(publicKey)) throw new AppError('BAD_REQUEST', 'publicKey must be an Ed25519 public key: 64 lowercase hex characters');
      const signature = rawSignature.toLowerCase().replace(/^0x/, '');
      if (!/^[0-9a-f]{128}$/.test(signature)) throw new AppError('BAD_REQUEST', 'signature must be 128 hex characters');
      const found = await principalById(principalId);
      if (!found || found.body.status !== 'active') {
        await crypto.verifyDummy(password);
        throw new AppError('NOT_FOUND', 'Principal not found');
      }
      if (found.body.emailVerified && found.body.passwordResetRequired) {
        await crypto.verifyDummy(password);
        throw resetRequiredError();
      }
      if (!(await crypto.verifyPassword(password, found.body.passwordHash))) throw new AppError('UNAUTHORIZED', 'Invalid password');
      if (!found.body.emailVerified) throw new AppError('FORBIDDEN', 'Email not verified');
      if (!crypto.verifyEd25519(publicKey, keyRegistrationMessage(publicKey), signature)) throw new AppError('UNAUTHORIZED', 'Invalid Ed25519 signature');
      if (found.body.ed25519PublicKey && found.body.ed25519PublicKey !== publicKey) {
        throw new AppError('CONFLICT', 'A different key is already registered; rotate it with a permit');
      }
      // Send the key to every member, whatever the membership: the status says how far it got.
      const report = await updatePrincipal(found, { ed25519PublicKey: publicKey, keyProof: signature }, { requireQuorum: false });
      const nodeErrors: Record<string, string> = Object.fromEntries(report.failed.map((f) => [f.nodeAddress, f.error]));
      const result: KeyRegistrationResult = {
        principalId,
        emailHex: emailHexOf(found.body.email),
        nodeRegistrationStatus: registrationStatus(report.acked.length, descriptor.size, descriptor.threshold),
        failedNodes: report.failed.map((f) => f.nodeAddress),
        nodeErrors,
      };
      log.info({ principalId, status: result.nodeRegistrationStatus, acked: report.acked.length }, 'key registered');
      if (result.nodeRegistrationStatus === 'failed') {
        throw new AppError('CONFLICT', 'Key registration reached no member', { ...result, failedNodes: result.failedNodes, nodeErrors });
      }
      return result;
    },

    async retryNodeRegistration(principalId) {
      checkPrincipalId(principalId);
      const found = await principalById(principalId);
      if (!found || found.body.status !== 'active') throw new AppError('NOT_FOUND', 'Principal not found');
      const key = found.body.ed25519PublicKey;
      if (!key) throw new AppError('BAD_REQUEST', 'No key registered for this principal');
      const have = await holders(principalId, key);
      const missing = members.filter((m) => !have.has(m.nodeAddress));
      if (missing.length === 0) return { principalId, nodeRegistrationStatus: 'complete', failedNodes: [], message: 'Every member already holds the key' };
      const report = await replicator.resend(found.record, missing.map((m) => m.slot));
      for (const a of report.acked) have.add(a);
      const failedNodes = members.filter((m) => !have.has(m.nodeAddress)).map((m) => m.nodeAddress);
      return {
        principalId,
        nodeRegistrationStatus: registrationStatus(have.size, descriptor.size, descriptor.threshold),
        failedNodes,
        message: `Re-sent to ${missing.length} member(s); ${report.acked.length} stored it`,
      };
    },

    async nodeRegistrationStatus(principalId): Promise<NodeRegistrationView> {
      checkPrincipalId(principalId);
      const found = await principalById(principalId);
      if (!found || found.body.status !== 'active') throw new AppError('NOT_FOUND', 'Principal not found');
      const key = found.body.ed25519PublicKey;
      if (!key) throw new AppError('NOT_FOUND', 'No key registered for this principal');
      const have = await holders(principalId, key);
      return {
        principalId,
        nodeRegistrationStatus: registrationStatus(have.size, descriptor.size, descriptor.threshold),
        successNodes: members.filter((m) => have.has(m.nodeAddress)).map((m) => m.nodeAddress),
        failedNodes: members.filter((m) => !have.has(m.nodeAddress)).map((m) => m.nodeAddress),
      };
    },

    async requestDeletion(rawEmail, password, principalId) {
      const email = normalizeEmail(rawEmail);
      // The turn is taken whatever the triple: a 429 only after a matching one would be a password
      // oracle. (An account waiting for a reset has no valid password, so it gets no code.)
      await takeMailTurn(email);
      const found = await principalByEmail(email);
      // Always one password check and one code hash, whichever part of the triple is wrong.
      const passwordOk = found ? await crypto.verifyPassword(password, found.body.passwordHash) : await crypto.verifyDummy(password);
      if (found && passwordOk && found.id === principalId) await issueOtp(found, 'delete');
      else await crypto.hashOtp(crypto.generateOtp(), 'timing');
      return { message: 'If the details match an account, a confirmation code has been sent to its email address.' };
    },

    async confirmDeletion(rawEmail, otp) {
      const email = normalizeEmail(rawEmail);
      const found = await principalByEmail(email);
      if (!found) {
        await crypto.verifyDummy(otp);
        throw new AppError('UNAUTHORIZED', 'Invalid or expired code');
      }
      await consumeOtp(found, 'delete', otp);
      await updatePrincipal(found, { status: 'deleted' });
      await write('emailIndex', emailHexOf(email), { principalId: null });
      log.info({ principalId: found.id }, 'principal deleted');
      return { success: true, message: 'Account deleted.' };
    },

    async findByEmail(query) {
      let email: string;
      if (query.emailHex !== undefined) {
        if (!/^([0-9a-fA-F]{2})+$/.test(query.emailHex)) throw new AppError('BAD_REQUEST', 'emailHex must be hex');
        email = normalizeEmail(Buffer.from(query.emailHex, 'hex').toString('utf8'));
      } else if (query.email !== undefined) {
        email = normalizeEmail(query.email);
      } else {
        throw new AppError('BAD_REQUEST', 'emailHex or email is required');
      }
      const found = await principalByEmail(email);
      if (!found) throw new AppError('NOT_FOUND', 'Principal not found');
      return { principalId: found.id, emailHex: emailHexOf(email) };
    },

    onRecordsApplied(records) {
      for (const r of records) {
        if (r.kind !== 'principal' || !(r.body as PrincipalBody).ed25519PublicKey) continue;
        acknowledgeKey(r.key).catch((err: unknown) => log.warn({ err: (err as Error).message, principalId: r.key }, 'node registration ack failed'));
      }
    },

    async reconcileNodeRegistrations() {
      let written = 0;
      for await (const r of state.list('principal')) {
        if ((r.body as PrincipalBody).ed25519PublicKey && (await acknowledgeKey(r.key))) written++;
      }
      if (written > 0) log.info({ written }, 'node registration acks reconciled');
      return written;
    },
  };
  return service;
}
