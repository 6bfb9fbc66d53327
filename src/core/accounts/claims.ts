/**
 * Slot 0's account operations (docs/architecture.md, "Slot 0 — `create`"; docs/architecture.md, Web2
 * accounts): what must be decided once for the whole cluster, serialised in slot 0's durable `claims`
 * sublevel — the principal of an email and the count of its registrations (`claimEmail`), the verdict
 * on a code and the guess budget (`otpAttempt`), and the mail cooldown (`mailTurn`). So two
 * coordinators can never both create a principal, and neither guesses nor mails multiply with the
 * number of coordinators. The claims' names are this file's alone: `email:<emailHex>`,
 * `registrations:<principalId>`, `otp:<otpKey>:<issuedAt>`, `otpBudget:<otpKey>`, `mail:<emailHex>`.
 */
import { randomUUID } from 'node:crypto';
import { AppError } from '../../errors/index.ts';
import type { CreatorService } from '../replication/creator.ts';
import { serialQueue } from '../serial-queue.ts';
import type { AccountClaims } from './ports.ts';
import { OTP_MAX_ATTEMPTS } from './records.ts';
import type { AccountReplica } from './replica.ts';

/** Slot 0's answer to a registration: the email's principal and which registration of it this is. */
export interface EmailClaim {
  principalId: string;
  /** 1 for the principal's first registration, then +1 for each later one. */
  registration: number;
}

/** One try of a code, as a coordinator reports it to slot 0. */
export interface OtpAttempt {
  /** The code's `otp` record key, `<principalId>:<purpose>`. */
  key: string;
  /** The code's issue time (Unix ms): which code of the key this is. */
  issuedAt: number;
  /** Whether the code matched. */
  success: boolean;
  /** The email's hex: a used code ends its mail cooldown. */
  emailHex: string;
}

/** Slot 0's answer to one OTP try. */
export interface OtpVerdict {
  /** The code was right, unused and within the budget: the caller may act on it. */
  allowed: boolean;
  /** Wrong guesses at this principal and purpose within the budget window. */
  attempts: number;
  /** The code is used up. */
  consumed: boolean;
}

/** Slot 0's answer to a request to mail an email. */
export interface MailTurn {
  /** The turn was taken: a code may be mailed. */
  allowed: boolean;
  /** When refused: how long until the next turn, ms. */
  retryAfterMs: number;
}

/** The operations as a coordinator calls them (through slot 0, or locally on slot 0). */
export interface AccountClaimCalls {
  /** The principal of an email, allocated on its first registration, and the count of registrations. */
  claimEmail(emailHex: string): Promise<EmailClaim>;
  /** Slot 0's verdict on one try of a code. */
  otpAttempt(attempt: OtpAttempt): Promise<OtpVerdict>;
  /** The email's mail turn, taken when allowed. */
  mailTurn(emailHex: string): Promise<MailTurn>;
}

/** Options of {@link createAccountClaims}. */
export interface AccountClaimsOptions {
  /** OTP lifetime, ms: the window of the guess budget. */
  otpTtlMs: number;
  /** Cooldown between code mails to one email, ms. */
  mailCooldownMs: number;
}

/** Dependencies of {@link createAccountClaims}. */
export interface AccountClaimsDeps {
  /** Registers the operations (run on slot 0) and calls them. */
  creator: Pick<CreatorService, 'register' | 'call'>;
  /** Slot 0's durable claims (used only on slot 0). */
  claims: AccountClaims;
  /** Slot 0's replica: whether an email's principal is still active, and the email index (claims lost with a data dir). */
  replica: Pick<AccountReplica, 'principal' | 'emailIndex'>;
  /** Wall clock, Unix ms: the guess budget's window and the cooldown. */
  clock: () => number;
}

const EMAIL_HEX_RE = /^([0-9a-f]{2}){3,254}$/;
const OTP_KEY_RE = /^[0-9a-f-]{36}:(verify|reset|delete)$/;

/**
 * The mail turn of an email last mailed at `lastSentAt` (0: never, or its cooldown ended by a used
 * code): allowed once the cooldown has run out, else refused with the time left, never more than one
 * cooldown (a clock that moved back does not lengthen it).
 */
export function mailTurnVerdict(lastSentAt: number, now: number, cooldownMs: number): MailTurn {
  const waitMs = lastSentAt + cooldownMs - now;
  if (lastSentAt > 0 && waitMs > 0) return { allowed: false, retryAfterMs: Math.min(waitMs, cooldownMs) };
  return { allowed: true, retryAfterMs: 0 };
}

/** Register slot 0's account operations on the creator; returns the calls a coordinator makes. */
export function createAccountClaims(options: AccountClaimsOptions, deps: AccountClaimsDeps): AccountClaimCalls {
  const { claims, clock } = deps;
  // One queue for the three: `otpAttempt` ends the cooldown `mailTurn` keeps.
  const serialised = serialQueue();
  const readClaim = async <T>(name: string, fallback: T): Promise<T> => {
    const raw = await claims.get(name);
    return raw === undefined ? fallback : (JSON.parse(raw) as T);
  };

  // Slot 0: one principal per email, ever active at a time, and the count of its registrations.
  deps.creator.register('claimEmail', (params) =>
    serialised(async (): Promise<EmailClaim> => {
      const emailHex = params.emailHex;
      if (typeof emailHex !== 'string' || !EMAIL_HEX_RE.test(emailHex)) throw new AppError('BAD_REQUEST', 'malformed email claim');
      const claimKey = `email:${emailHex}`;
      const claimed = await claims.get(claimKey);
      // A slot 0 that lost its claims (it started on an empty data dir, and has since learnt its log:
      // docs/operations.md, "Lose a disk, keep the keys") finds the email's principal in the replica.
      let principalId = claimed ?? (await deps.replica.emailIndex.get(emailHex))?.principalId ?? undefined;
      let principal = principalId ? await deps.replica.principal(principalId) : undefined;
      // A principal this replica does not hold yet keeps its claim: only a deleted one frees it.
      if (principal && principal.body.status !== 'active') principalId = principal = undefined;
      principalId ??= randomUUID();
      if (principalId !== claimed) await claims.put(claimKey, principalId);
      // Counted here, where registrations are serialised: the coordinator compares the count with
      // the record it sees to tell whether one password provably runs through all of them. The
      // record's count is a floor (a count lost with slot 0's claims).
      const countKey = `registrations:${principalId}`;
      const registration = Math.max(await readClaim(countKey, 0), principal?.body.registration ?? 0) + 1;
      await claims.put(countKey, JSON.stringify(registration));
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
      const failures = (await readClaim<number[]>(budgetKey, [])).filter((at) => now - at < options.otpTtlMs);
      if (consumed || failures.length >= OTP_MAX_ATTEMPTS) return { allowed: false, attempts: failures.length, consumed };
      if (success) {
        await claims.put(codeKey, JSON.stringify({ consumed: true }));
        // Whoever used the code reads the mailbox: its owner's next mail (a reset right after a
        // verification, say) need not wait out the cooldown.
        if (typeof emailHex === 'string') await claims.put(`mail:${emailHex}`, JSON.stringify(0));
        return { allowed: true, attempts: failures.length, consumed: true };
      }
      failures.push(now);
      await claims.put(budgetKey, JSON.stringify(failures));
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
      const turn = mailTurnVerdict(await readClaim(turnKey, 0), now, options.mailCooldownMs);
      if (turn.allowed) await claims.put(turnKey, JSON.stringify(now));
      return turn;
    }),
  );

  // The answers are the operations' own above, carried as JSON over `create` when this is not slot 0.
  return {
    claimEmail: async (emailHex) => (await deps.creator.call('claimEmail', { emailHex })) as EmailClaim,
    otpAttempt: async (attempt) => (await deps.creator.call('otpAttempt', { ...attempt })) as OtpVerdict,
    mailTurn: async (emailHex) => (await deps.creator.call('mailTurn', { emailHex })) as MailTurn,
  };
}
