/**
 * The accounts capability's plain rules (docs/http.md, Web2 accounts; docs/architecture.md, Web2
 * accounts): what an email, a password, a principal id or a key proof must look like, when a password
 * is contested, how far a key registration got, and the errors they answer. No I/O: what they need
 * (a password check) comes as an argument.
 */
import { AppError } from '../../errors/index.ts';
import type { AccountCrypto } from './ports.ts';
import { MAX_EMAIL_LENGTH, PRINCIPAL_ID_RE, type PrincipalBody } from './records.ts';
import type { NodeRegistrationStatus } from './types.ts';

const MIN_PASSWORD_CHARS = 8;
const MAX_PASSWORD_CHARS = 1024;

/** The answer to a code request, whether or not a code was sent: it never tells if the account exists. */
export const GENERIC_MAIL_MESSAGE = 'If the account exists, a code has been sent to its email address.';

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

/** The normalised email of a principal lookup: `emailHex` (UTF-8 hex) first, else `email`; 400 when neither is usable. */
export function emailOfQuery(query: { emailHex?: string; email?: string }): string {
  if (query.emailHex !== undefined) {
    if (!/^([0-9a-fA-F]{2})+$/.test(query.emailHex)) throw new AppError('BAD_REQUEST', 'emailHex must be hex');
    return normalizeEmail(Buffer.from(query.emailHex, 'hex').toString('utf8'));
  }
  if (query.email !== undefined) return normalizeEmail(query.email);
  throw new AppError('BAD_REQUEST', 'emailHex or email is required');
}

/** A new password's length; 400 naming `field` otherwise. */
export function checkPassword(password: string, field = 'password'): void {
  if (password.length < MIN_PASSWORD_CHARS) throw new AppError('BAD_REQUEST', `${field} must be at least ${MIN_PASSWORD_CHARS} characters`);
  if (password.length > MAX_PASSWORD_CHARS) throw new AppError('BAD_REQUEST', `${field} must be at most ${MAX_PASSWORD_CHARS} characters`);
}

/** A principal id's shape (UUIDv4); 400 otherwise. */
export function checkPrincipalId(id: string): void {
  if (!PRINCIPAL_ID_RE.test(id)) throw new AppError('BAD_REQUEST', 'principalId is malformed');
}

/**
 * The signature of a key registration (register-key), lowercased and without `0x`, once the key is
 * an Ed25519 public key and the signature 128 hex characters; 400 otherwise. Whether it verifies is
 * checked after the password.
 */
export function parseKeyProof(publicKey: string, rawSignature: string, crypto: Pick<AccountCrypto, 'isEd25519PublicKeyHex'>): string {
  if (!crypto.isEd25519PublicKeyHex(publicKey)) throw new AppError('BAD_REQUEST', 'publicKey must be an Ed25519 public key: 64 lowercase hex characters');
  const signature = rawSignature.toLowerCase().replace(/^0x/, '');
  if (!/^[0-9a-f]{128}$/.test(signature)) throw new AppError('BAD_REQUEST', 'signature must be 128 hex characters');
  return signature;
}

/** How far a key got, from how many members hold it (see {@link NodeRegistrationStatus}). */
export function registrationStatus(acked: number, size: number, threshold: number): NodeRegistrationStatus {
  return acked >= size ? 'complete' : acked >= threshold ? 'partial' : acked > 0 ? 'pending' : 'failed';
}

/** 403 for a verified account no password is valid for until a reset. */
export function resetRequiredError(): AppError {
  return new AppError('PASSWORD_RESET_REQUIRED', 'A password reset is required: request a code with forgot-password, then set a new password with reset-password');
}

/** 401 for a code that is wrong, used, expired or over its guess budget: the answer never says which. */
export function invalidCodeError(): AppError {
  return new AppError('UNAUTHORIZED', 'Invalid or expired code');
}

/** 429 while an email's mail cooldown runs, with whole seconds to wait (at least 1). */
export function mailCooldownError(retryAfterMs: number): AppError {
  const retryAfterSeconds = Math.max(1, Math.ceil(retryAfterMs / 1000));
  return new AppError('RATE_LIMITED', `Please wait ${retryAfterSeconds} seconds before requesting another code`, { retryAfterSeconds });
}

/**
 * The password check of an operation that takes one (verify-credentials, register-key): one argon2
 * verification whatever the outcome, so the timing tells nothing, then 404 (`notFound`), 403
 * PASSWORD_RESET_REQUIRED, 401 (`wrongPassword`), 403 for an unverified email, in that order. Returns
 * the account it checked.
 */
export async function checkAccountPassword<P extends { body: PrincipalBody }>(
  found: P | undefined,
  password: string,
  crypto: Pick<AccountCrypto, 'verifyPassword' | 'verifyDummy'>,
  messages: { notFound: string; wrongPassword: string },
): Promise<P> {
  if (!found) {
    await crypto.verifyDummy(password);
    throw new AppError('NOT_FOUND', messages.notFound);
  }
  if (found.body.emailVerified && found.body.passwordResetRequired) {
    // No password is valid, so say what to do rather than "invalid credentials"; same cost.
    await crypto.verifyDummy(password);
    throw resetRequiredError();
  }
  if (!(await crypto.verifyPassword(password, found.body.passwordHash))) throw new AppError('UNAUTHORIZED', messages.wrongPassword);
  if (!found.body.emailVerified) throw new AppError('FORBIDDEN', 'Email not verified');
  return found;
}

/**
 * The registration a principal record provably stands for, with every registration before it under
 * the same password; undefined when that is not known (a contested record, or one from before
 * registrations were counted that was rewritten by a re-register).
 */
export function provenRegistration(body: PrincipalBody): number | undefined {
  if (body.passwordResetRequired) return undefined;
  // Written before registrations were counted: one registration only if never rewritten.
  if (body.registration === undefined) return body.createdAt === body.updatedAt ? 0 : undefined;
  return body.registration;
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
export async function passwordContested(
  current: PrincipalBody | undefined,
  registration: number,
  password: string,
  crypto: Pick<AccountCrypto, 'verifyPassword'>,
): Promise<boolean> {
  if (!current) return registration !== 1;
  if (provenRegistration(current) !== registration - 1) return true;
  return !(await crypto.verifyPassword(password, current.passwordHash));
}

/**
 * Whether verifying with a code mailed for `codeRegistration` (absent on codes from before
 * registrations were counted) leaves no password valid until a reset: unless one password provably ran
 * through every registration up to that one. A code mailed for a registration this coordinator has
 * not seen yet counts as contested too (docs/architecture.md, Web2 accounts).
 */
export function verificationRequiresReset(body: PrincipalBody, codeRegistration: number | undefined): boolean {
  const proven = provenRegistration(body);
  return proven === undefined || (codeRegistration ?? 0) > proven;
}
