/**
 * Web2 accounts (API.md, Web2 accounts): registration with email OTP, credentials, password reset,
 * deletion, Ed25519 key registration propagated to the members, and principal lookup.
 *
 * Every state change is a replicated record (principal, emailIndex, otp, mailCooldown,
 * nodeRegistration); the uniqueness of an email's principal goes through slot 0 (`claimEmail`), so
 * two coordinators can never both create one.
 */
import { randomUUID } from 'node:crypto';
import { AppError } from '../../errors/index.ts';
import type { Logger } from '../../log/index.ts';
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
  /** OTP lifetime, ms. @default 600000 */
  otpTtlMs?: number;
  /** Cooldown between OTP mails to one email (resend-otp and forgot-password share it), ms. @default 60000 */
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
  // API.md: must contain `@`; we also refuse what no mail system can deliver to, and anything that
  // would read as more than one address (`,` `;` `<` `>` quotes, brackets).
  if (email.length < 3 || Buffer.byteLength(email, 'utf8') > MAX_EMAIL_LENGTH || !/^[^@\s,;<>()[\]\\"]+@[^@\s,;<>()[\]\\"]+$/.test(email) || /\p{Cc}/u.test(email)) {
    throw new AppError('BAD_REQUEST', 'Invalid email address');
  }
  return email;
}

/** Hex of the normalised email's UTF-8 bytes (API.md, byEmail). */
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
  attempts: number;
  consumed: boolean;
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
    };
    await write('otp', `${found.id}:${purpose}`, body);
    const mail = deps.mail.otpMail({ purpose, code, ttlMinutes: Math.round(otpTtlMs / 60_000), publicUrl: options.publicUrl });
    sendInBackground({ to: found.body.email, ...mail, category: `otp-${purpose}` });
  }

  /** Check and consume an OTP: single use, expiring, dead after OTP_MAX_ATTEMPTS wrong guesses. */
  async function consumeOtp(found: Found, purpose: OtpPurpose, code: string): Promise<void> {
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
    // The verdict is slot 0's, serialised per code: parallel guesses through several coordinators
    // can't exceed the try limit, and a code can't be consumed twice.
    const verdict = (await deps.creator.call('otpAttempt', { key, issuedAt: otp.issuedAt, success: ok })) as OtpVerdict;
    await write('otp', key, { ...otp, attempts: Math.max(otp.attempts, verdict.attempts), consumed: otp.consumed || verdict.consumed });
    if (!ok || !verdict.allowed) throw invalid;
  }

  async function cooldown(email: string): Promise<void> {
    const key = emailHexOf(email);
    const now = clock();
    const last = (await state.get('mailCooldown', key))?.body as { lastSentAt: number } | undefined;
    if (last && now - last.lastSentAt < cooldownMs) {
      const retryAfterSeconds = Math.max(1, Math.ceil((last.lastSentAt + cooldownMs - now) / 1000));
      throw new AppError('RATE_LIMITED', `Please wait ${retryAfterSeconds} seconds before requesting another code`, { retryAfterSeconds });
    }
    await write('mailCooldown', key, { lastSentAt: now });
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

  // Slot 0: one principal per email, ever active at a time.
  let claimChain: Promise<unknown> = Promise.resolve();
  deps.creator.register('claimEmail', (params) => {
    const run = claimChain.then(async () => {
      const emailHex = params.emailHex;
      if (typeof emailHex !== 'string' || !/^([0-9a-f]{2}){3,254}$/.test(emailHex)) throw new AppError('BAD_REQUEST', 'malformed email claim');
      const claimKey = `email:${emailHex}`;
      const existing = await deps.claims.get(claimKey);
      if (existing) {
        const p = await principalById(existing);
        if (!p || p.body.status === 'active') return { principalId: existing };
      }
      const principalId = randomUUID();
      await deps.claims.put(claimKey, principalId);
      return { principalId };
    });
    claimChain = run.catch(() => undefined);
    return run;
  });

  // Slot 0: the authoritative count of tries and the single use of each code.
  let otpChain: Promise<unknown> = Promise.resolve();
  deps.creator.register('otpAttempt', (params) => {
    const run = otpChain.then(async (): Promise<OtpVerdict> => {
      const { key, issuedAt, success } = params;
      if (typeof key !== 'string' || !/^[0-9a-f-]{36}:(verify|reset|delete)$/.test(key) || !Number.isSafeInteger(issuedAt) || typeof success !== 'boolean') {
        throw new AppError('BAD_REQUEST', 'malformed otp attempt');
      }
      const claimKey = `otp:${key}:${issuedAt as number}`;
      const raw = await deps.claims.get(claimKey);
      const seen: { attempts: number; consumed: boolean } = raw ? (JSON.parse(raw) as { attempts: number; consumed: boolean }) : { attempts: 0, consumed: false };
      if (seen.consumed || seen.attempts >= OTP_MAX_ATTEMPTS) return { allowed: false, ...seen };
      const next = success ? { attempts: seen.attempts, consumed: true } : { attempts: seen.attempts + 1, consumed: false };
      await deps.claims.put(claimKey, JSON.stringify(next));
      return { allowed: success, ...next };
    });
    otpChain = run.catch(() => undefined);
    return run;
  });

  const service: AccountsCapability = {
    async register(rawEmail, password) {
      const email = normalizeEmail(rawEmail);
      checkPassword(password);
      const passwordHash = await crypto.hashPassword(password);
      const { principalId } = (await deps.creator.call('claimEmail', { emailHex: emailHexOf(email) })) as { principalId: string };
      const current = await principalById(principalId);
      if (current?.body.status === 'deleted') throw new AppError('CONFLICT', 'This account is being deleted; try again shortly');
      if (current?.body.emailVerified) throw new AppError('CONFLICT', 'An account with this email already exists');
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
      };
      await Promise.all([write('principal', principalId, body), write('emailIndex', emailHexOf(email), { principalId })]);
      await issueOtp({ id: principalId, body }, 'verify');
      log.info({ principalId, reregister: !!current }, 'principal registered');
      return {
        created: !current,
        principalId,
        message: current ? 'Registration updated. A new verification code has been sent to your email.' : 'Registration successful. A verification code has been sent to your email.',
      };
    },

    async verifyEmail(rawEmail, otp) {
      const email = normalizeEmail(rawEmail);
      const found = await principalByEmail(email);
      if (!found) throw new AppError('NOT_FOUND', 'Account not found');
      if (found.body.emailVerified) throw new AppError('BAD_REQUEST', 'Email already verified');
      await consumeOtp(found, 'verify', otp);
      await updatePrincipal(found, { emailVerified: true });
      log.info({ principalId: found.id }, 'email verified');
      return { principalId: found.id, emailVerified: true };
    },

    async resendOtp(rawEmail) {
      const email = normalizeEmail(rawEmail);
      const found = await principalByEmail(email);
      // API.md: an already verified email is a 400 (a wire-contract detail that does reveal it).
      if (found?.body.emailVerified) throw new AppError('BAD_REQUEST', 'Email already verified');
      await cooldown(email);
      if (found) await issueOtp(found, 'verify');
      else await crypto.hashOtp(crypto.generateOtp(), 'timing');
      return { message: GENERIC_MAIL_MESSAGE };
    },

    async forgotPassword(rawEmail) {
      const email = normalizeEmail(rawEmail);
      await cooldown(email);
      const found = await principalByEmail(email);
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
      await updatePrincipal(found, { passwordHash: await crypto.hashPassword(newPassword) });
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
