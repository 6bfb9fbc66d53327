/**
 * Slot 0's account operations (src/core/accounts/claims.ts) over stub deps: a creator that runs the
 * registered operations locally, an in-memory claims store, a replica of chosen principals and a
 * clock moved by hand.
 */
import { describe, expect, it } from 'vitest';
import { createAccountClaims, mailTurnVerdict } from '../../../../src/core/accounts/claims.ts';
import { OTP_MAX_ATTEMPTS, type PrincipalBody } from '../../../../src/core/accounts/records.ts';
import type { AccountReplica, Principal } from '../../../../src/core/accounts/replica.ts';
import { emailHexOf } from '../../../../src/core/accounts/rules.ts';
import type { CreateOperation } from '../../../../src/core/replication/creator.ts';

const OTP_TTL_MS = 600_000;
const COOLDOWN_MS = 60_000;
const EMAIL_HEX = emailHexOf('a@example.test');

function slotZero() {
  let now = 1_800_000_000_000;
  const ops = new Map<string, CreateOperation>();
  const claims = new Map<string, string>();
  const principals = new Map<string, Principal>();
  /** The replicated email index: emailHex → principal id. */
  const emailIndex = new Map<string, string | null>();
  const calls = createAccountClaims(
    { otpTtlMs: OTP_TTL_MS, mailCooldownMs: COOLDOWN_MS },
    {
      creator: {
        register: (op, run) => void ops.set(op, run),
        call: (op, params) => ops.get(op)!(params),
      },
      claims: { get: async (name) => claims.get(name), put: async (name, value) => void claims.set(name, value) },
      replica: {
        principal: async (id) => principals.get(id),
        emailIndex: { get: async (hex: string) => (emailIndex.has(hex) ? { principalId: emailIndex.get(hex)! } : undefined) } as unknown as AccountReplica['emailIndex'],
      },
      clock: () => now,
    },
  );
  return {
    calls,
    ops,
    claims,
    emailIndex,
    advance: (ms: number) => void (now += ms),
    /** Store a principal of `status` in slot 0's replica. */
    hold: (id: string, status: PrincipalBody['status'], registration = 1) => void principals.set(id, { id, body: { status, registration } as PrincipalBody, record: {} as Principal['record'] }),
  };
}

describe('mailTurnVerdict', () => {
  it('allows a never-mailed email, and one whose cooldown ran out', () => {
    expect(mailTurnVerdict(0, 5_000, COOLDOWN_MS)).toEqual({ allowed: true, retryAfterMs: 0 });
    expect(mailTurnVerdict(1_000, 1_000 + COOLDOWN_MS, COOLDOWN_MS)).toEqual({ allowed: true, retryAfterMs: 0 });
  });

  it('refuses within the cooldown with the time left, never more than one cooldown', () => {
    expect(mailTurnVerdict(1_000, 1_000 + 15_000, COOLDOWN_MS)).toEqual({ allowed: false, retryAfterMs: COOLDOWN_MS - 15_000 });
    // The clock moved back: the wait stays one cooldown.
    expect(mailTurnVerdict(100_000, 50_000, COOLDOWN_MS)).toEqual({ allowed: false, retryAfterMs: COOLDOWN_MS });
  });
});

describe('claimEmail', () => {
  it('allocates a principal once per email and counts its registrations', async () => {
    const s = slotZero();
    const first = await s.calls.claimEmail(EMAIL_HEX);
    expect(first.registration).toBe(1);
    expect(await s.calls.claimEmail(EMAIL_HEX)).toEqual({ principalId: first.principalId, registration: 2 });
    const other = await s.calls.claimEmail(emailHexOf('b@example.test'));
    expect(other.principalId).not.toBe(first.principalId);
    expect(other.registration).toBe(1);
  });

  it('keeps the claim of a principal slot 0 holds active or not yet at all; a deleted one frees the email', async () => {
    const s = slotZero();
    const { principalId } = await s.calls.claimEmail(EMAIL_HEX);
    s.hold(principalId, 'active');
    expect((await s.calls.claimEmail(EMAIL_HEX)).principalId).toBe(principalId);
    s.hold(principalId, 'deleted');
    const next = await s.calls.claimEmail(EMAIL_HEX);
    expect(next.principalId).not.toBe(principalId);
    expect(next.registration).toBe(1);
  });

  it('without its claims (an empty data dir) finds the principal through the replicated email index, and counts on from its record', async () => {
    const s = slotZero();
    s.emailIndex.set(EMAIL_HEX, 'p-1');
    s.hold('p-1', 'active', 3);
    expect(await s.calls.claimEmail(EMAIL_HEX)).toEqual({ principalId: 'p-1', registration: 4 });
    // The claim is written back: the index is read once.
    expect(s.claims.get(`email:${EMAIL_HEX}`)).toBe('p-1');
    s.emailIndex.clear();
    expect(await s.calls.claimEmail(EMAIL_HEX)).toEqual({ principalId: 'p-1', registration: 5 });
    // An index entry of a deleted principal, or none, allocates afresh.
    const other = emailHexOf('b@example.test');
    s.emailIndex.set(other, 'p-2');
    s.hold('p-2', 'deleted');
    const fresh = await s.calls.claimEmail(other);
    expect(fresh.principalId).not.toBe('p-2');
    expect(fresh.registration).toBe(1);
  });

  it('serialises concurrent claims: one principal, consecutive counts', async () => {
    const s = slotZero();
    const claims = await Promise.all(Array.from({ length: 5 }, () => s.calls.claimEmail(EMAIL_HEX)));
    expect(new Set(claims.map((c) => c.principalId)).size).toBe(1);
    expect(claims.map((c) => c.registration).sort()).toEqual([1, 2, 3, 4, 5]);
  });

  it('refuses a malformed email hex', async () => {
    const s = slotZero();
    for (const emailHex of ['ab', 'ABCDEF', 'xyz', 42]) {
      await expect(s.ops.get('claimEmail')!({ emailHex })).rejects.toMatchObject({ code: 'BAD_REQUEST', message: 'malformed email claim' });
    }
  });
});

describe('otpAttempt', () => {
  const KEY = '0b5c7a52-1f0e-4b8e-9a3d-5c2f1e0d9b8a:verify';
  const attempt = (success: boolean, issuedAt = 1) => ({ key: KEY, issuedAt, success, emailHex: EMAIL_HEX });

  it('a right code is allowed once; the same code again is refused as consumed', async () => {
    const s = slotZero();
    expect(await s.calls.otpAttempt(attempt(true))).toEqual({ allowed: true, attempts: 0, consumed: true });
    expect(await s.calls.otpAttempt(attempt(true))).toEqual({ allowed: false, attempts: 0, consumed: true });
    // Another code of the same key is its own.
    expect(await s.calls.otpAttempt(attempt(true, 2))).toEqual({ allowed: true, attempts: 0, consumed: true });
  });

  it('wrong guesses count per key across codes; at the budget even the right code is refused, until the window slides', async () => {
    const s = slotZero();
    for (let i = 1; i <= OTP_MAX_ATTEMPTS; i++) {
      expect(await s.calls.otpAttempt(attempt(false, i))).toEqual({ allowed: false, attempts: i, consumed: false });
      s.advance(1_000);
    }
    expect(await s.calls.otpAttempt(attempt(true, 99))).toEqual({ allowed: false, attempts: OTP_MAX_ATTEMPTS, consumed: false });
    // The first wrong guess ages out of the window: one more try.
    s.advance(OTP_TTL_MS - OTP_MAX_ATTEMPTS * 1_000 + 1);
    expect(await s.calls.otpAttempt(attempt(true, 99))).toEqual({ allowed: true, attempts: OTP_MAX_ATTEMPTS - 1, consumed: true });
  });

  it('a used code ends the email’s mail cooldown; a wrong one does not', async () => {
    const s = slotZero();
    expect((await s.calls.mailTurn(EMAIL_HEX)).allowed).toBe(true);
    await s.calls.otpAttempt(attempt(false));
    expect((await s.calls.mailTurn(EMAIL_HEX)).allowed).toBe(false);
    await s.calls.otpAttempt(attempt(true));
    expect((await s.calls.mailTurn(EMAIL_HEX)).allowed).toBe(true);
  });

  it('refuses malformed attempts', async () => {
    const s = slotZero();
    const good = attempt(true);
    for (const params of [
      { ...good, key: 'not-a-key:verify' },
      { ...good, key: KEY.replace('verify', 'login') },
      { ...good, issuedAt: 1.5 },
      { ...good, issuedAt: '1' },
      { ...good, success: 'yes' },
      { ...good, emailHex: 'AB' },
    ]) {
      await expect(s.ops.get('otpAttempt')!(params)).rejects.toMatchObject({ code: 'BAD_REQUEST', message: 'malformed otp attempt' });
    }
    // An attempt without an email (from an earlier version) is fine.
    await expect(s.ops.get('otpAttempt')!({ key: KEY, issuedAt: 1, success: true })).resolves.toMatchObject({ allowed: true });
  });
});

describe('mailTurn', () => {
  it('one turn per email per cooldown', async () => {
    const s = slotZero();
    expect(await s.calls.mailTurn(EMAIL_HEX)).toEqual({ allowed: true, retryAfterMs: 0 });
    expect((await s.calls.mailTurn(emailHexOf('b@example.test'))).allowed).toBe(true);
    s.advance(20_000);
    expect(await s.calls.mailTurn(EMAIL_HEX)).toEqual({ allowed: false, retryAfterMs: COOLDOWN_MS - 20_000 });
    s.advance(COOLDOWN_MS - 20_000);
    expect((await s.calls.mailTurn(EMAIL_HEX)).allowed).toBe(true);
  });

  it('concurrent requests share one turn', async () => {
    const s = slotZero();
    const turns = await Promise.all(Array.from({ length: 4 }, () => s.calls.mailTurn(EMAIL_HEX)));
    expect(turns.filter((t) => t.allowed)).toHaveLength(1);
  });

  it('refuses a malformed email hex', async () => {
    const s = slotZero();
    await expect(s.ops.get('mailTurn')!({ emailHex: 'nothex' })).rejects.toMatchObject({ code: 'BAD_REQUEST', message: 'malformed mail turn' });
  });
});
