/**
 * Email codes (docs/http.md, Web2 accounts): issuing one (an `otp` record, then the mail), checking
 * and consuming one against slot 0's verdict, and the mail cooldown every code mail waits for.
 */
import type { OutgoingMail } from '../mail-port.ts';
import type { AccountClaimCalls } from './claims.ts';
import type { AccountCrypto, AccountMail } from './ports.ts';
import { OTP_MAX_ATTEMPTS, otpKind, type OtpBody, type OtpPurpose } from './records.ts';
import type { AccountReplica, Principal } from './replica.ts';
import { emailHexOf, invalidCodeError, mailCooldownError } from './rules.ts';

/** Options of {@link createOtpCodes}. */
export interface OtpCodesOptions {
  /** OTP lifetime, ms. */
  otpTtlMs: number;
  /** Public URL of the service, for emails. */
  publicUrl: string;
}

/** Dependencies of {@link createOtpCodes}. */
export interface OtpCodesDeps {
  replica: Pick<AccountReplica, 'otps' | 'write'>;
  /** Slot 0's verdicts on codes and mail turns. */
  slotZero: Pick<AccountClaimCalls, 'otpAttempt' | 'mailTurn'>;
  crypto: Pick<AccountCrypto, 'generateOtp' | 'hashOtp' | 'verifyOtp' | 'verifyDummy'>;
  mail: AccountMail;
  /** Wall clock, Unix ms: issue and expiry times. */
  clock: () => number;
}

/** Codes of one coordinator. */
export interface OtpCodes {
  /** Issue a code of `purpose` to the principal (replacing any earlier one) and mail it without waiting. */
  issue(found: Pick<Principal, 'id' | 'body'>, purpose: OtpPurpose): Promise<void>;
  /**
   * Check and consume a code: single use, expiring, and within the guess budget of its principal and
   * purpose (OTP_MAX_ATTEMPTS wrong guesses per OTP lifetime, whatever the number of codes issued).
   * Returns the code's record; 401 otherwise.
   */
  consume(found: Pick<Principal, 'id' | 'body'>, purpose: OtpPurpose, code: string): Promise<OtpBody>;
  /** What issuing a code costs, with none issued: the answer's timing says nothing about the account. */
  decoy(): Promise<void>;
  /**
   * Take the email's mail turn or answer 429: one code mail per cooldown per email, whichever of
   * register, resend-otp, forgot-password and request-deletion asks. Slot 0 decides (`mailTurn`), so
   * parallel requests through several coordinators share one turn. Taken for unknown emails too, so a
   * 429 never tells whether an account exists.
   */
  takeMailTurn(email: string): Promise<void>;
}

/** Create the codes of one coordinator. */
export function createOtpCodes(options: OtpCodesOptions, deps: OtpCodesDeps): OtpCodes {
  const { replica, crypto, clock } = deps;

  /** Send mail without making the caller wait: response time must not depend on delivery. */
  function sendInBackground(message: OutgoingMail): void {
    // The mailer logs the failure (without the recipient or the code); nothing to add here.
    deps.mail.send(message).catch(() => undefined);
  }

  return {
    async issue(found, purpose) {
      const code = crypto.generateOtp();
      const issuedAt = clock();
      const body: OtpBody = {
        principalId: found.id,
        purpose,
        codeHash: await crypto.hashOtp(code, `${found.id}:${purpose}:${issuedAt}`),
        issuedAt,
        expiresAt: issuedAt + options.otpTtlMs,
        attempts: 0,
        consumed: false,
        // A verify code names the registration it was mailed for (see verifyEmail).
        ...(purpose === 'verify' && found.body.registration !== undefined ? { registration: found.body.registration } : {}),
      };
      await replica.write(otpKind, `${found.id}:${purpose}`, body);
      const mail = deps.mail.otpMail({ purpose, code, ttlMinutes: Math.round(options.otpTtlMs / 60_000), publicUrl: options.publicUrl });
      sendInBackground({ to: found.body.email, ...mail, category: `otp-${purpose}` });
    },

    async consume(found, purpose, code) {
      const key = `${found.id}:${purpose}`;
      const otp = await replica.otps.get(key);
      if (!otp || otp.consumed || otp.attempts >= OTP_MAX_ATTEMPTS || clock() > otp.expiresAt) {
        // Spend the same time as a real check so the answer's timing says nothing.
        await crypto.verifyDummy(code);
        throw invalidCodeError();
      }
      const ok = /^\d{6}$/.test(code) && (await crypto.verifyOtp(code, `${key}:${otp.issuedAt}`, otp.codeHash));
      // The verdict is slot 0's, serialised per principal and purpose: parallel guesses through several
      // coordinators can't exceed the budget, new codes don't refill it, and a code can't be consumed
      // twice.
      const verdict = await deps.slotZero.otpAttempt({ key, issuedAt: otp.issuedAt, success: ok, emailHex: emailHexOf(found.body.email) });
      await replica.write(otpKind, key, { ...otp, attempts: Math.max(otp.attempts, verdict.attempts), consumed: otp.consumed || verdict.consumed });
      if (!ok || !verdict.allowed) throw invalidCodeError();
      return otp;
    },

    async decoy() {
      await crypto.hashOtp(crypto.generateOtp(), 'timing');
    },

    async takeMailTurn(email) {
      const turn = await deps.slotZero.mailTurn(emailHexOf(email));
      if (!turn.allowed) throw mailCooldownError(turn.retryAfterMs);
    },
  };
}
