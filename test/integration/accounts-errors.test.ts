/**
 * Every error row of docs/http.md "Web2 accounts" (its errors by route, byEmail included),
 * plus the OTP rules (5 wrong tries, purposes, single use, lifetime) and the shared mail cooldown,
 * through real HTTP on a real 5-member cluster.
 *
 * Time-dependent rules (OTP lifetime, 60 s cooldown) are driven by the cluster's injectable clock:
 * every node reads `Date.now() + offset`, and a test moves `offset` forward instead of sleeping. A
 * registration takes the email's mail turn too, so a test that mails a newly registered email again
 * first moves past the cooldown.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalCluster, waitFor, type LocalCluster } from 'quorumkeep/testing';
import { getJson, postJson, type JsonResponse } from '../utils/http.ts';
import { expectApiError, newEmail, otpFrom, otpMails, unverifiedAccount, verifiedAccount, wrongOtp } from '../utils/web2.ts';

/** OTP lifetime (docs/http.md, Web2 accounts: 10 min). */
const OTP_TTL_MS = 10 * 60_000;
/** Cooldown between OTP mails to one email (docs/http.md, Web2 accounts: 60 s), shared by register, resend, forgot and deletion. */
const MAIL_COOLDOWN_MS = 60_000;

let cluster: LocalCluster;
let A: string;
let B: string;
/** Added to the wall clock of every node; only ever moves forward. */
let offset = 0;

beforeAll(async () => {
  cluster = await startLocalCluster({ size: 5, threshold: 3, coordinators: 2, clock: () => Date.now() + offset });
  [A, B] = cluster.coordinators as [string, string];
});
afterAll(() => cluster?.stop());

const hex = (s: string) => Buffer.from(s, 'utf8').toString('hex');
const post = (url: string, path: string, body: unknown) => postJson(`${url}/web2/auth/${path}`, body);

/** Emails the service must refuse (docs/http.md, Web2 accounts: one `local@domain` address). */
const NO_AT = 'no-at-sign.example.test';

/** Wait until `url` accepts these credentials (the other coordinator may apply a write a few ms later). */
async function credentialsWork(url: string, email: string, password: string): Promise<void> {
  await waitFor(async () => (await post(url, 'verify-credentials', { email, password })).status === 200, {
    timeoutMs: 5000,
    intervalMs: 50,
    description: `credentials to work on ${url}`,
  });
}

/** Move every node's clock past the mail cooldown of every email. */
function pastCooldown(): void {
  offset += MAIL_COOLDOWN_MS + 1000;
}

/** The 429 of the shared cooldown: code, message and a whole number of seconds in (0, 60]. */
function expectCooldown(res: JsonResponse): void {
  expectApiError(res, 429, 'RATE_LIMITED');
  const retry = res.body.retryAfterSeconds;
  expect(Number.isInteger(retry), JSON.stringify(res.body)).toBe(true);
  expect(retry).toBeGreaterThan(0);
  expect(retry).toBeLessThanOrEqual(MAIL_COOLDOWN_MS / 1000);
}

describe('POST /web2/auth/register', () => {
  it('400 BAD_REQUEST for an email without @', async () => {
    expectApiError(await post(A, 'register', { email: NO_AT, password: 'long-enough-password' }), 400, 'BAD_REQUEST');
  });

  it('400 BAD_REQUEST for a password shorter than 8 characters', async () => {
    expectApiError(await post(A, 'register', { email: newEmail('short'), password: '7-chars' }), 400, 'BAD_REQUEST');
  });

  it('409 CONFLICT when a verified account exists, through either coordinator', async () => {
    const acct = await verifiedAccount(cluster, A, 'conflict');
    expectApiError(await post(A, 'register', { email: acct.email, password: 'another-password' }), 409, 'CONFLICT');
    await credentialsWork(B, acct.email, acct.password);
    expectApiError(await post(B, 'register', { email: ` ${acct.email.toUpperCase()} `, password: 'another-password' }), 409, 'CONFLICT');
    // The refused registrations changed nothing.
    expect((await post(A, 'verify-credentials', { email: acct.email, password: acct.password })).status).toBe(200);
  });

  it('429 RATE_LIMITED within the mail cooldown, whoever started it, known or unknown email', async () => {
    const acct = await unverifiedAccount(A, 'regcooldown');
    expectCooldown(await post(B, 'register', { email: acct.email, password: acct.password }));
    const unknown = newEmail('regcooldownunknown');
    expect((await post(A, 'forgot-password', { email: unknown })).status).toBe(200);
    expectCooldown(await post(B, 'register', { email: unknown, password: 'long-enough-password' }));
    pastCooldown();
    expect((await post(B, 'register', { email: unknown, password: 'long-enough-password' })).status).toBe(201);
    expect((await post(A, 'register', { email: acct.email, password: acct.password })).status).toBe(200);
  });
});

describe('POST /web2/auth/verify-email', () => {
  it('400 BAD_REQUEST for an email without @', async () => {
    expectApiError(await post(A, 'verify-email', { email: NO_AT, otp: '123456' }), 400, 'BAD_REQUEST');
  });

  it('400 BAD_REQUEST when the email is already verified', async () => {
    const acct = await verifiedAccount(cluster, A, 'twice');
    const otp = await otpFrom(cluster, acct.email, 'verify');
    expectApiError(await post(A, 'verify-email', { email: acct.email, otp }), 400, 'BAD_REQUEST');
  });

  it('401 UNAUTHORIZED for a wrong OTP', async () => {
    const acct = await unverifiedAccount(A, 'wrongotp');
    const otp = await otpFrom(cluster, acct.email, 'verify');
    expectApiError(await post(A, 'verify-email', { email: acct.email, otp: wrongOtp(otp) }), 401, 'UNAUTHORIZED');
    expectApiError(await post(A, 'verify-credentials', { email: acct.email, password: acct.password }), 403, 'FORBIDDEN');
  });

  it('401 UNAUTHORIZED for an expired OTP (10 min + 1 s later); a fresh code then works', async () => {
    const acct = await unverifiedAccount(A, 'expired');
    const otp = await otpFrom(cluster, acct.email, 'verify');
    offset += OTP_TTL_MS + 1000;
    expectApiError(await post(A, 'verify-email', { email: acct.email, otp }), 401, 'UNAUTHORIZED');
    expectApiError(await post(B, 'verify-email', { email: acct.email, otp }), 401, 'UNAUTHORIZED');
    // The account itself is fine: a new code (no cooldown yet for this email) verifies it.
    expect((await post(A, 'resend-otp', { email: acct.email })).status).toBe(200);
    const fresh = await otpFrom(cluster, acct.email, 'verify', 1);
    expect((await post(A, 'verify-email', { email: acct.email, otp: fresh })).status).toBe(200);
  });

  it('404 NOT_FOUND for an unknown email', async () => {
    expectApiError(await post(A, 'verify-email', { email: newEmail('nobody'), otp: '123456' }), 404, 'NOT_FOUND');
  });
});

describe('OTP rules', () => {
  it('after 5 wrong guesses (alternating coordinators) the right code is refused, and stays refused', async () => {
    const acct = await unverifiedAccount(A, 'fivewrong');
    const otp = await otpFrom(cluster, acct.email, 'verify');
    for (let i = 0; i < 5; i++) {
      expectApiError(await post(i % 2 ? B : A, 'verify-email', { email: acct.email, otp: wrongOtp(otp, i) }), 401, 'UNAUTHORIZED');
    }
    expectApiError(await post(B, 'verify-email', { email: acct.email, otp }), 401, 'UNAUTHORIZED');
    expectApiError(await post(A, 'verify-email', { email: acct.email, otp }), 401, 'UNAUTHORIZED');
    expectApiError(await post(A, 'verify-credentials', { email: acct.email, password: acct.password }), 403, 'FORBIDDEN');
  });

  it('concurrent wrong guesses count too: after 10 parallel wrong guesses the right code is refused', async () => {
    const acct = await unverifiedAccount(A, 'parallelwrong');
    const otp = await otpFrom(cluster, acct.email, 'verify');
    const guesses = await Promise.all(Array.from({ length: 10 }, (_, i) => post(i % 2 ? B : A, 'verify-email', { email: acct.email, otp: wrongOtp(otp, i) })));
    expect(guesses.map((g) => g.status)).toEqual(Array(10).fill(401));
    expectApiError(await post(A, 'verify-email', { email: acct.email, otp }), 401, 'UNAUTHORIZED');
    expectApiError(await post(A, 'verify-credentials', { email: acct.email, password: acct.password }), 403, 'FORBIDDEN');
  });

  it('a code of another purpose is refused: reset code on confirm-deletion, delete code on reset-password', async () => {
    const acct = await verifiedAccount(cluster, A, 'purpose');
    expect((await post(A, 'forgot-password', { email: acct.email })).status).toBe(200);
    const resetCode = await otpFrom(cluster, acct.email, 'reset');
    pastCooldown();
    expect((await post(A, 'request-deletion', { email: acct.email, password: acct.password, principalId: acct.principalId })).status).toBe(200);
    const deleteCode = await otpFrom(cluster, acct.email, 'delete');

    expectApiError(await post(A, 'confirm-deletion', { email: acct.email, otp: resetCode }), 401, 'UNAUTHORIZED');
    expectApiError(await post(A, 'reset-password', { email: acct.email, otp: deleteCode, newPassword: 'never-applied-password' }), 401, 'UNAUTHORIZED');
    expectApiError(await post(A, 'verify-credentials', { email: acct.email, password: 'never-applied-password' }), 401, 'UNAUTHORIZED');

    // Both codes were alive: each works for its own purpose.
    expect((await post(A, 'reset-password', { email: acct.email, otp: resetCode, newPassword: 'the-new-password' })).status).toBe(200);
    const conf = await post(A, 'confirm-deletion', { email: acct.email, otp: deleteCode });
    expect(conf.status).toBe(200);
    expect(conf.body).toMatchObject({ success: true });
  });

  it('a code is single use: the same reset code twice, the second is 401 and its password is not applied', async () => {
    const acct = await verifiedAccount(cluster, A, 'singleuse');
    expect((await post(A, 'forgot-password', { email: acct.email })).status).toBe(200);
    const code = await otpFrom(cluster, acct.email, 'reset');
    expect((await post(A, 'reset-password', { email: acct.email, otp: code, newPassword: 'first-new-password' })).status).toBe(200);
    expectApiError(await post(A, 'reset-password', { email: acct.email, otp: code, newPassword: 'second-new-password' }), 401, 'UNAUTHORIZED');
    expectApiError(await post(A, 'verify-credentials', { email: acct.email, password: 'second-new-password' }), 401, 'UNAUTHORIZED');
    expect((await post(A, 'verify-credentials', { email: acct.email, password: 'first-new-password' })).status).toBe(200);
  });

  it('a code is single use under concurrency: the same reset code sent twice at once through both coordinators succeeds once', async () => {
    const acct = await verifiedAccount(cluster, A, 'doubleuse');
    expect((await post(A, 'forgot-password', { email: acct.email })).status).toBe(200);
    const code = await otpFrom(cluster, acct.email, 'reset');
    const both = await Promise.all([
      post(A, 'reset-password', { email: acct.email, otp: code, newPassword: 'racing-password-a' }),
      post(B, 'reset-password', { email: acct.email, otp: code, newPassword: 'racing-password-b' }),
    ]);
    expect(both.map((r) => r.status).sort()).toEqual([200, 401]);
  });
});

describe('POST /web2/auth/resend-otp', () => {
  it('200 with the same generic body for a known unverified email and an unknown one', async () => {
    const acct = await unverifiedAccount(A, 'resendknown');
    pastCooldown();
    const known = await post(A, 'resend-otp', { email: acct.email });
    const unknown = await post(A, 'resend-otp', { email: newEmail('resendunknown') });
    expect(known.status).toBe(200);
    expect(typeof known.body.message).toBe('string');
    expect({ status: unknown.status, body: unknown.body }).toEqual({ status: known.status, body: known.body });
    // The known one really got a second code.
    await otpFrom(cluster, acct.email, 'verify', 1);
  });

  it('400 BAD_REQUEST for an email without @', async () => {
    expectApiError(await post(A, 'resend-otp', { email: NO_AT }), 400, 'BAD_REQUEST');
  });

  it('400 BAD_REQUEST when the email is already verified', async () => {
    const acct = await verifiedAccount(cluster, A, 'resendverified');
    expectApiError(await post(A, 'resend-otp', { email: acct.email }), 400, 'BAD_REQUEST');
  });

  it('429 RATE_LIMITED within the 60 s cooldown (the registration started one) with retryAfterSeconds in (0, 60]; 200 again 61 s later', async () => {
    const acct = await unverifiedAccount(A, 'cooldown');
    expectCooldown(await post(A, 'resend-otp', { email: acct.email }));
    expectCooldown(await post(B, 'resend-otp', { email: acct.email }));
    pastCooldown();
    expect((await post(A, 'resend-otp', { email: acct.email })).status).toBe(200);
    // That one started a new cooldown.
    expectCooldown(await post(A, 'resend-otp', { email: acct.email }));
  });

  it('the cooldown is shared with forgot-password, in both orders', async () => {
    const first = await unverifiedAccount(A, 'shared1');
    const second = await unverifiedAccount(A, 'shared2');
    pastCooldown();
    expect((await post(A, 'resend-otp', { email: first.email })).status).toBe(200);
    expectCooldown(await post(A, 'forgot-password', { email: first.email }));
    expect((await post(A, 'forgot-password', { email: second.email })).status).toBe(200);
    expectCooldown(await post(A, 'resend-otp', { email: second.email }));
  });

  it('429 also for an unknown email, so a 429 never tells whether an account exists', async () => {
    const unknown = newEmail('cooldownunknown');
    expect((await post(A, 'resend-otp', { email: unknown })).status).toBe(200);
    const again = await post(A, 'resend-otp', { email: unknown });
    expectCooldown(again);
    expectCooldown(await post(A, 'forgot-password', { email: unknown }));
    // Same shape as for a known email.
    const acct = await unverifiedAccount(A, 'cooldownknown');
    const known = await post(A, 'resend-otp', { email: acct.email });
    expectCooldown(known);
    expect(Object.keys(again.body).sort()).toEqual(Object.keys(known.body).sort());
  });
});

describe('POST /web2/auth/forgot-password', () => {
  it('200 with the same generic body for known verified, known unverified and unknown emails; only the verified one gets a code', async () => {
    const verified = await verifiedAccount(cluster, A, 'forgotverified');
    const unverified = await unverifiedAccount(A, 'forgotunverified');
    const unknownEmail = newEmail('forgotunknown');
    pastCooldown();
    const rUnverified = await post(A, 'forgot-password', { email: unverified.email });
    const rUnknown = await post(B, 'forgot-password', { email: unknownEmail });
    const rVerified = await post(A, 'forgot-password', { email: verified.email });
    expect(rVerified.status).toBe(200);
    expect(typeof rVerified.body.message).toBe('string');
    for (const r of [rUnverified, rUnknown]) expect({ status: r.status, body: r.body }).toEqual({ status: rVerified.status, body: rVerified.body });

    await otpFrom(cluster, verified.email, 'reset');
    // Mail goes out before the answer; a later mail to the same address is a marker that anything
    // the forgot-password requests sent has had its turn.
    pastCooldown();
    expect((await post(A, 'register', { email: unverified.email, password: unverified.password })).status).toBe(200);
    expect((await post(B, 'register', { email: unknownEmail, password: 'marker-password' })).status).toBe(201);
    await otpFrom(cluster, unverified.email, 'verify', 1);
    await otpFrom(cluster, unknownEmail, 'verify');
    expect(otpMails(cluster, unverified.email, 'reset')).toHaveLength(0);
    expect(cluster.mailbox.to(unknownEmail)).toHaveLength(1);
    expect(otpMails(cluster, verified.email, 'reset')).toHaveLength(1);
  });

  it('400 BAD_REQUEST for an email without @', async () => {
    expectApiError(await post(A, 'forgot-password', { email: NO_AT }), 400, 'BAD_REQUEST');
  });

  it('429 RATE_LIMITED within the cooldown', async () => {
    const acct = await verifiedAccount(cluster, A, 'forgotcooldown');
    expect((await post(A, 'forgot-password', { email: acct.email })).status).toBe(200);
    expectCooldown(await post(A, 'forgot-password', { email: acct.email }));
    expectCooldown(await post(B, 'forgot-password', { email: acct.email }));
  });
});

describe('POST /web2/auth/reset-password', () => {
  it('forgot → code by mail → reset; on the other coordinator the old password is 401 and the new one 200', async () => {
    const acct = await verifiedAccount(cluster, A, 'reset');
    expect((await post(A, 'forgot-password', { email: acct.email })).status).toBe(200);
    const otp = await otpFrom(cluster, acct.email, 'reset');
    const res = await post(A, 'reset-password', { email: acct.email, otp, newPassword: 'brand-new-password' });
    expect(res.status).toBe(200);
    expect(typeof res.body.message).toBe('string');
    await credentialsWork(B, acct.email, 'brand-new-password');
    expect((await post(B, 'verify-credentials', { email: acct.email, password: 'brand-new-password' })).body).toEqual({ valid: true, principalId: acct.principalId });
    expectApiError(await post(B, 'verify-credentials', { email: acct.email, password: acct.password }), 401, 'UNAUTHORIZED');
  });

  it('400 BAD_REQUEST for a newPassword shorter than 8 characters', async () => {
    const acct = await verifiedAccount(cluster, A, 'resetshort');
    expect((await post(A, 'forgot-password', { email: acct.email })).status).toBe(200);
    const otp = await otpFrom(cluster, acct.email, 'reset');
    expectApiError(await post(A, 'reset-password', { email: acct.email, otp, newPassword: 'short' }), 400, 'BAD_REQUEST');
    // The code was not spent on the refused request.
    expect((await post(A, 'reset-password', { email: acct.email, otp, newPassword: 'long-enough-now' })).status).toBe(200);
  });

  it('401 UNAUTHORIZED for a bad OTP; the password is unchanged', async () => {
    const acct = await verifiedAccount(cluster, A, 'resetbadotp');
    expect((await post(A, 'forgot-password', { email: acct.email })).status).toBe(200);
    const otp = await otpFrom(cluster, acct.email, 'reset');
    expectApiError(await post(A, 'reset-password', { email: acct.email, otp: wrongOtp(otp), newPassword: 'not-applied-password' }), 401, 'UNAUTHORIZED');
    expect((await post(A, 'verify-credentials', { email: acct.email, password: acct.password })).status).toBe(200);
  });

  it('404 NOT_FOUND for an unknown email', async () => {
    expectApiError(await post(A, 'reset-password', { email: newEmail('resetunknown'), otp: '123456', newPassword: 'long-enough-password' }), 404, 'NOT_FOUND');
  });
});

describe('POST /web2/auth/verify-credentials', () => {
  it('400 BAD_REQUEST for an email without @', async () => {
    expectApiError(await post(A, 'verify-credentials', { email: NO_AT, password: 'long-enough-password' }), 400, 'BAD_REQUEST');
  });

  it('401 UNAUTHORIZED for a wrong password', async () => {
    const acct = await verifiedAccount(cluster, A, 'credwrong');
    expectApiError(await post(B, 'verify-credentials', { email: acct.email, password: 'wrong-password' }), 401, 'UNAUTHORIZED');
  });

  it('403 FORBIDDEN for the right password of an unverified account', async () => {
    const acct = await unverifiedAccount(A, 'credunverified');
    expectApiError(await post(A, 'verify-credentials', { email: acct.email, password: acct.password }), 403, 'FORBIDDEN');
  });

  it('404 NOT_FOUND for an unknown email', async () => {
    expectApiError(await post(A, 'verify-credentials', { email: newEmail('credunknown'), password: 'long-enough-password' }), 404, 'NOT_FOUND');
  });
});

describe('POST /web2/auth/request-deletion', () => {
  it('200 with the same generic body for a matching triple, a wrong password, a wrong principalId and an unknown email; only the match gets a code', async () => {
    const acct = await verifiedAccount(cluster, A, 'reqdel');
    const other = await unverifiedAccount(A, 'reqdelother');
    const match = await post(A, 'request-deletion', { email: acct.email, password: acct.password, principalId: acct.principalId });
    expect(match.status).toBe(200);
    expect(typeof match.body.message).toBe('string');
    // One at a time: every request for the email takes its mail turn, whether it sends or not.
    const others: JsonResponse[] = [];
    for (const [url, body] of [
      [B, { email: acct.email, password: 'wrong-password', principalId: acct.principalId }],
      [A, { email: acct.email, password: acct.password, principalId: other.principalId }],
      [B, { email: acct.email, password: acct.password, principalId: randomUUID() }],
      [A, { email: newEmail('reqdelunknown'), password: acct.password, principalId: acct.principalId }],
    ] as const) {
      pastCooldown();
      others.push(await post(url, 'request-deletion', body));
    }
    for (const r of others) expect({ status: r.status, body: r.body }).toEqual({ status: match.status, body: match.body });
    await otpFrom(cluster, acct.email, 'delete');
    // A later mail to the same address marks that whatever the other requests sent has had its turn.
    pastCooldown();
    expect((await post(B, 'forgot-password', { email: acct.email })).status).toBe(200);
    await otpFrom(cluster, acct.email, 'reset');
    expect(otpMails(cluster, acct.email, 'delete')).toHaveLength(1);
    expect(otpMails(cluster, other.email, 'delete')).toHaveLength(0);
  });

  it('400 BAD_REQUEST for an email without @', async () => {
    expectApiError(await post(A, 'request-deletion', { email: NO_AT, password: 'long-enough-password', principalId: randomUUID() }), 400, 'BAD_REQUEST');
  });

  it('429 RATE_LIMITED within the shared cooldown, whatever the triple, known or unknown email; no second code', async () => {
    const acct = await verifiedAccount(cluster, A, 'reqdelcooldown');
    const triple = { email: acct.email, password: acct.password, principalId: acct.principalId };
    expect((await post(A, 'request-deletion', triple)).status).toBe(200);
    expectCooldown(await post(B, 'request-deletion', triple));
    expectCooldown(await post(A, 'request-deletion', { ...triple, password: 'wrong-password' }));
    expectCooldown(await post(B, 'forgot-password', { email: acct.email }));
    const unknown = newEmail('reqdelcooldownunknown');
    expect((await post(A, 'request-deletion', { ...triple, email: unknown })).status).toBe(200);
    expectCooldown(await post(B, 'request-deletion', { ...triple, email: unknown }));
    await otpFrom(cluster, acct.email, 'delete');
    pastCooldown();
    expect((await post(B, 'request-deletion', triple)).status).toBe(200);
    await otpFrom(cluster, acct.email, 'delete', 1);
    expect(otpMails(cluster, acct.email, 'delete')).toHaveLength(2);
  });
});

describe('POST /web2/auth/confirm-deletion', () => {
  it('400 BAD_REQUEST for an email without @', async () => {
    expectApiError(await post(A, 'confirm-deletion', { email: NO_AT, otp: '123456' }), 400, 'BAD_REQUEST');
  });

  it('401 UNAUTHORIZED for a bad OTP; the account stays', async () => {
    const acct = await verifiedAccount(cluster, A, 'confbad');
    expect((await post(A, 'request-deletion', { email: acct.email, password: acct.password, principalId: acct.principalId })).status).toBe(200);
    const otp = await otpFrom(cluster, acct.email, 'delete');
    expectApiError(await post(A, 'confirm-deletion', { email: acct.email, otp: wrongOtp(otp) }), 401, 'UNAUTHORIZED');
    expect((await post(A, 'verify-credentials', { email: acct.email, password: acct.password })).status).toBe(200);
  });
});

describe('GET /web2/principal/byEmail', () => {
  const byEmail = (url: string, query: string) => getJson(`${url}/web2/principal/byEmail${query}`);

  it('400 VALIDATION_FAILED when neither emailHex nor email is given', async () => {
    expectApiError(await byEmail(A, ''), 400, 'VALIDATION_FAILED');
    expectApiError(await byEmail(B, '?other=x'), 400, 'VALIDATION_FAILED');
  });

  it('400 for a malformed emailHex: not hex (VALIDATION_FAILED), or the hex of no email (BAD_REQUEST)', async () => {
    for (const bad of ['zz', 'abc', hex('a@b.test').slice(1), `${hex('a@b.test')}g0`]) {
      expectApiError(await byEmail(A, `?emailHex=${bad}`), 400, 'VALIDATION_FAILED');
    }
    expectApiError(await byEmail(B, `?emailHex=${hex(NO_AT)}`), 400, 'BAD_REQUEST');
  });

  it('404 NOT_FOUND when no principal has the email', async () => {
    const email = newEmail('lookupnone');
    expectApiError(await byEmail(A, `?emailHex=${hex(email)}`), 404, 'NOT_FOUND');
    expectApiError(await byEmail(B, `?email=${encodeURIComponent(email)}`), 404, 'NOT_FOUND');
  });

  it('200 with email= (0.5.x clients) and with an uppercase emailHex', async () => {
    const acct = await unverifiedAccount(A, 'lookup');
    const expected = { principalId: acct.principalId, emailHex: hex(acct.email) };
    const plain = await byEmail(A, `?email=${encodeURIComponent(acct.email)}`);
    expect(plain.status).toBe(200);
    expect(plain.body).toEqual(expected);
    const upper = await byEmail(A, `?emailHex=${hex(acct.email).toUpperCase()}`);
    expect(upper.status).toBe(200);
    expect(upper.body).toEqual(expected);
  });
});

describe('node registration: retry and status', () => {
  it('POST retry-node-registration: 400 BAD_REQUEST for a malformed principalId', async () => {
    expectApiError(await post(A, 'retry-node-registration', { principalId: 'not-a-principal-id' }), 400, 'BAD_REQUEST');
  });

  it('POST retry-node-registration: 404 NOT_FOUND for an unknown principalId', async () => {
    expectApiError(await post(A, 'retry-node-registration', { principalId: randomUUID() }), 404, 'NOT_FOUND');
  });

  it('GET node-registration-status: 400 BAD_REQUEST for a malformed principalId', async () => {
    expectApiError(await getJson(`${A}/web2/auth/node-registration-status?principalId=not-a-principal-id`), 400, 'BAD_REQUEST');
  });

  it('GET node-registration-status: 404 NOT_FOUND for an unknown principalId', async () => {
    expectApiError(await getJson(`${B}/web2/auth/node-registration-status?principalId=${randomUUID()}`), 404, 'NOT_FOUND');
  });
});
