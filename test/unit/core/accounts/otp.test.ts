/**
 * Email codes (src/core/accounts/otp.ts) over stub deps: an in-memory replica, slot 0's verdicts
 * chosen by the test, a "hash" that shows what it hashes, and a mailbox.
 */
import { describe, expect, it } from 'vitest';
import type { MailTurn, OtpAttempt, OtpVerdict } from '../../../../src/core/accounts/claims.ts';
import { createOtpCodes } from '../../../../src/core/accounts/otp.ts';
import { OTP_MAX_ATTEMPTS, type OtpBody } from '../../../../src/core/accounts/records.ts';
import { createAccountReplica } from '../../../../src/core/accounts/replica.ts';
import { emailHexOf } from '../../../../src/core/accounts/rules.ts';
import type { OutgoingMail } from '../../../../src/core/mail-port.ts';
import { NOW, PRINCIPAL_ID, memoryReplica, principalBody } from './fixtures.ts';

const OTP_TTL_MS = 600_000;
const CODE = '123456';

function setup(options: { verdict?: OtpVerdict; turn?: MailTurn; mailFails?: boolean } = {}) {
  let now = NOW;
  const memory = memoryReplica();
  const replica = createAccountReplica({ state: memory.state, replicator: memory.replicator, versions: memory.versions, clock: () => now });
  const attempts: OtpAttempt[] = [];
  const turns: string[] = [];
  const cryptoCalls: string[] = [];
  const mails: OutgoingMail[] = [];
  const codes = createOtpCodes(
    { otpTtlMs: OTP_TTL_MS, publicUrl: 'https://keep.example' },
    {
      replica,
      slotZero: {
        otpAttempt: async (attempt) => {
          attempts.push(attempt);
          return options.verdict ?? { allowed: attempt.success, attempts: 0, consumed: attempt.success };
        },
        mailTurn: async (emailHex) => {
          turns.push(emailHex);
          return options.turn ?? { allowed: true, retryAfterMs: 0 };
        },
      },
      crypto: {
        generateOtp: () => CODE,
        hashOtp: async (code, context) => {
          cryptoCalls.push(`hash ${context}`);
          return `$argon2id$otp$${context}$${code}`;
        },
        verifyOtp: async (code, context, phc) => {
          cryptoCalls.push('verify');
          return phc === `$argon2id$otp$${context}$${code}`;
        },
        verifyDummy: async () => {
          cryptoCalls.push('dummy');
          return false;
        },
      },
      mail: {
        send: async (message) => {
          if (options.mailFails) throw new Error('smtp down');
          mails.push(message);
        },
        otpMail: ({ purpose, code, ttlMinutes, publicUrl }) => ({ subject: purpose, text: `${code} ${ttlMinutes} ${publicUrl}`, html: code }),
      },
      clock: () => now,
    },
  );
  const found = { id: PRINCIPAL_ID, body: principalBody({ registration: 3 }) };
  const otp = (purpose = 'verify') => memory.body('otp', `${PRINCIPAL_ID}:${purpose}`) as OtpBody | undefined;
  return { codes, memory, attempts, turns, cryptoCalls, mails, found, otp, advance: (ms: number) => void (now += ms) };
}

describe('issue', () => {
  it('writes the code bound to principal, purpose and issue time, then mails it', async () => {
    const s = setup();
    await s.codes.issue(s.found, 'verify');
    expect(s.otp()).toEqual({
      principalId: PRINCIPAL_ID,
      purpose: 'verify',
      codeHash: `$argon2id$otp$${PRINCIPAL_ID}:verify:${NOW}$${CODE}`,
      issuedAt: NOW,
      expiresAt: NOW + OTP_TTL_MS,
      attempts: 0,
      consumed: false,
      registration: 3,
    });
    await expect.poll(() => s.mails).toEqual([{ to: s.found.body.email, subject: 'verify', text: `${CODE} 10 https://keep.example`, html: CODE, category: 'otp-verify' }]);
  });

  it('only a verify code names a registration', async () => {
    const s = setup();
    await s.codes.issue(s.found, 'reset');
    await s.codes.issue(s.found, 'delete');
    expect(s.otp('reset')).not.toHaveProperty('registration');
    expect(s.otp('delete')).not.toHaveProperty('registration');
  });

  it('does not wait for, or fail with, the mail', async () => {
    const s = setup({ mailFails: true });
    await expect(s.codes.issue(s.found, 'delete')).resolves.toBeUndefined();
    expect(s.otp('delete')?.purpose).toBe('delete');
  });
});

describe('consume', () => {
  it('a right code: slot 0 is asked with the email, the record marked consumed, the code returned', async () => {
    const s = setup();
    await s.codes.issue(s.found, 'verify');
    const issued = s.otp()!;
    await expect(s.codes.consume(s.found, 'verify', CODE)).resolves.toEqual(issued);
    expect(s.attempts).toEqual([{ key: `${PRINCIPAL_ID}:verify`, issuedAt: NOW, success: true, emailHex: emailHexOf(s.found.body.email) }]);
    expect(s.otp()).toEqual({ ...issued, consumed: true });
  });

  it('a wrong code: 401, and the record takes slot 0’s count of wrong guesses', async () => {
    const s = setup({ verdict: { allowed: false, attempts: 4, consumed: false } });
    await s.codes.issue(s.found, 'reset');
    await expect(s.codes.consume(s.found, 'reset', '654321')).rejects.toMatchObject({ code: 'UNAUTHORIZED', message: 'Invalid or expired code' });
    expect(s.attempts.map((a) => a.success)).toEqual([false]);
    expect(s.otp('reset')).toMatchObject({ attempts: 4, consumed: false });
  });

  it('a right code slot 0 refuses (used elsewhere, or over the budget) is a 401 too', async () => {
    const s = setup({ verdict: { allowed: false, attempts: 2, consumed: true } });
    await s.codes.issue(s.found, 'verify');
    await expect(s.codes.consume(s.found, 'verify', CODE)).rejects.toMatchObject({ code: 'UNAUTHORIZED' });
    expect(s.otp()).toMatchObject({ attempts: 2, consumed: true });
  });

  it('something that is not six digits is a wrong guess without a hash check', async () => {
    const s = setup();
    await s.codes.issue(s.found, 'verify');
    s.cryptoCalls.length = 0;
    await expect(s.codes.consume(s.found, 'verify', `${CODE}0`)).rejects.toMatchObject({ code: 'UNAUTHORIZED' });
    expect(s.cryptoCalls).toEqual([]);
    expect(s.attempts.map((a) => a.success)).toEqual([false]);
  });

  it.each([
    ['no code issued', () => undefined],
    ['an expired code', (s: ReturnType<typeof setup>) => s.advance(OTP_TTL_MS + 1)],
    ['a consumed code', (s: ReturnType<typeof setup>) => void s.memory.put('otp', `${PRINCIPAL_ID}:verify`, { ...s.otp()!, consumed: true })],
    ['a code out of guesses', (s: ReturnType<typeof setup>) => void s.memory.put('otp', `${PRINCIPAL_ID}:verify`, { ...s.otp()!, attempts: OTP_MAX_ATTEMPTS })],
  ])('%s: a dummy check, a 401, and slot 0 is not asked', async (name, arrange) => {
    const s = setup();
    if (name !== 'no code issued') await s.codes.issue(s.found, 'verify');
    arrange(s);
    s.cryptoCalls.length = 0;
    const writes = s.memory.writes.length;
    await expect(s.codes.consume(s.found, 'verify', CODE)).rejects.toMatchObject({ code: 'UNAUTHORIZED', message: 'Invalid or expired code' });
    expect(s.cryptoCalls).toEqual(['dummy']);
    expect(s.attempts).toEqual([]);
    expect(s.memory.writes).toHaveLength(writes);
  });
});

describe('takeMailTurn and decoy', () => {
  it('asks slot 0 for the email’s turn', async () => {
    const s = setup();
    await s.codes.takeMailTurn('a@example.test');
    expect(s.turns).toEqual([emailHexOf('a@example.test')]);
  });

  it('a refused turn is a 429 with the seconds to wait', async () => {
    const s = setup({ turn: { allowed: false, retryAfterMs: 12_300 } });
    await expect(s.codes.takeMailTurn('a@example.test')).rejects.toMatchObject({ code: 'RATE_LIMITED', extra: { retryAfterSeconds: 13 } });
  });

  it('a decoy hashes a code and writes and mails nothing', async () => {
    const s = setup();
    await s.codes.decoy();
    expect(s.cryptoCalls).toEqual(['hash timing']);
    expect(s.memory.writes).toEqual([]);
    expect(s.mails).toEqual([]);
  });
});
