/**
 * Abuse of the Web2 account flows through real HTTP on a real 5-member cluster (issue 10,
 * "Accounts"): taking over a pending registration by re-registering it, refilling the OTP guess
 * budget with new codes, and mail bombing through the four routes that send codes.
 *
 * Time moves by the cluster's injectable clock (every node reads `Date.now() + offset`), never by
 * sleeping.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalCluster, waitFor, type LocalCluster } from 'quorumkeep/testing';
import { postJson, type JsonResponse } from '../utils/http.ts';
import { expectApiError, newEd25519, newEmail, otpFrom, otpMails, registerKey, verifiedAccount, wrongOtp } from '../utils/web2.ts';

/** OTP lifetime, also the window of the guess budget (10 min). */
const OTP_TTL_MS = 10 * 60_000;
/** Cooldown between code mails to one email (60 s). */
const MAIL_COOLDOWN_MS = 60_000;
/** Wrong guesses per principal and purpose in one OTP lifetime. */
const OTP_MAX_ATTEMPTS = 5;

let cluster: LocalCluster;
let A: string;
let B: string;
let offset = 0;

beforeAll(async () => {
  cluster = await startLocalCluster({
    size: 5,
    threshold: 3,
    coordinators: 2,
    clock: () => Date.now() + offset,
    // The HTTP layer's per-account token buckets (real time, per node) would refuse some of these
    // bursts first; off here, so what is measured is the accounts service's own mail cooldown.
    nodeConfig: { http: { rateLimits: { perAccountPerMinute: 0 } } },
  });
  [A, B] = cluster.coordinators as [string, string];
});
afterAll(() => cluster?.stop());

const post = (url: string, path: string, body: unknown) => postJson(`${url}/web2/auth/${path}`, body);

function pastCooldown(): void {
  offset += MAIL_COOLDOWN_MS + 1000;
}

/** Wait until `url` answers verify-credentials for these credentials with `status`. */
async function credentialsAnswer(url: string, email: string, password: string, status: number): Promise<JsonResponse> {
  let last: JsonResponse | undefined;
  await waitFor(
    async () => {
      last = await post(url, 'verify-credentials', { email, password });
      return last.status === status;
    },
    { timeoutMs: 5000, intervalMs: 50, description: `verify-credentials ${status} on ${url}` },
  ).catch((err: Error) => {
    throw new Error(`${err.message}: last ${JSON.stringify(last)}`);
  });
  return last!;
}

describe('registration hijack', () => {
  it("victim registers, attacker re-registers with its own password, victim verifies with the newest code: the attacker's password is refused, and the victim recovers by reset", async () => {
    const email = newEmail('hijack');
    const victim = 'victim-password';
    const attacker = 'attacker-password';
    const reg = await postJson<{ principalId: string }>(`${A}/web2/auth/register`, { email, password: victim });
    expect(reg.status).toBe(201);
    await otpFrom(cluster, email, 'verify');
    pastCooldown();
    const takeover = await postJson<{ principalId: string }>(`${B}/web2/auth/register`, { email, password: attacker });
    expect(takeover.status).toBe(200);
    expect(takeover.body.principalId).toBe(reg.body.principalId);

    // The victim does what the mail says: the newest code.
    const code = await otpFrom(cluster, email, 'verify', 1);
    const ver = await post(A, 'verify-email', { email, otp: code });
    expect(ver.status).toBe(200);
    expect(ver.body).toEqual({ principalId: reg.body.principalId, emailVerified: true });

    // No password works, and every credential route says why.
    for (const url of [A, B]) {
      expectApiError(await credentialsAnswer(url, email, attacker, 403), 403, 'PASSWORD_RESET_REQUIRED');
      expectApiError(await post(url, 'verify-credentials', { email, password: victim }), 403, 'PASSWORD_RESET_REQUIRED');
    }
    const key = await registerKey(B, { principalId: reg.body.principalId, password: attacker });
    expectApiError(key, 403, 'PASSWORD_RESET_REQUIRED');
    const rotate = await postJson(`${A}/web2/permit`, {
      requestId: randomUUID(),
      action: 'rotate',
      email,
      password: attacker,
      payload: JSON.stringify({ newPublicKey: newEd25519().publicKey }),
    });
    expectApiError(rotate, 403, 'PASSWORD_RESET_REQUIRED');

    // The mailbox's owner resets, at once: using the code ended the mail cooldown.
    expect((await post(B, 'forgot-password', { email })).status).toBe(200);
    const resetCode = await otpFrom(cluster, email, 'reset');
    expect((await post(A, 'reset-password', { email, otp: resetCode, newPassword: 'victim-new-password' })).status).toBe(200);
    for (const url of [A, B]) {
      expect((await credentialsAnswer(url, email, 'victim-new-password', 200)).body).toEqual({ valid: true, principalId: reg.body.principalId });
      expectApiError(await post(url, 'verify-credentials', { email, password: attacker }), 401, 'UNAUTHORIZED');
    }
    expect((await registerKey(A, { principalId: reg.body.principalId, password: 'victim-new-password' })).status).toBe(201);

    // Nor can the attacker have the account deleted: the generic answer, and no code.
    pastCooldown();
    const triple = { email, password: attacker, principalId: reg.body.principalId };
    expect((await post(B, 'request-deletion', triple)).status).toBe(200);
    pastCooldown();
    expect((await post(A, 'request-deletion', { ...triple, password: 'victim-new-password' })).status).toBe(200);
    await otpFrom(cluster, email, 'delete');
    expect(otpMails(cluster, email, 'delete')).toHaveLength(1);
  });
});

describe('OTP guess budget', () => {
  it('six re-registers do not refill it: after 5 wrong guesses spread over 6 codes the right code is refused, until the window has passed', async () => {
    const email = newEmail('budget');
    const password = 'same-password-always';
    expect((await post(A, 'register', { email, password })).status).toBe(201);
    let code = await otpFrom(cluster, email, 'verify');
    for (let i = 0; i < 6; i++) {
      if (i < OTP_MAX_ATTEMPTS) expectApiError(await post(i % 2 ? B : A, 'verify-email', { email, otp: wrongOtp(code) }), 401, 'UNAUTHORIZED');
      pastCooldown();
      expect((await post(i % 2 ? A : B, 'register', { email, password })).status).toBe(200);
      code = await otpFrom(cluster, email, 'verify', i + 1);
    }
    // 6 × 61 s after the first wrong guess: still inside the 10-minute window.
    expectApiError(await post(A, 'verify-email', { email, otp: code }), 401, 'UNAUTHORIZED');
    expectApiError(await post(B, 'verify-email', { email, otp: code }), 401, 'UNAUTHORIZED');
    expectApiError(await post(A, 'verify-credentials', { email, password }), 403, 'FORBIDDEN');

    offset += OTP_TTL_MS;
    expect((await post(B, 'resend-otp', { email })).status).toBe(200);
    const fresh = await otpFrom(cluster, email, 'verify', 7);
    expect((await post(A, 'verify-email', { email, otp: fresh })).status).toBe(200);
    expect((await credentialsAnswer(B, email, password, 200)).status).toBe(200);
  });

  it('resends do not refill the reset budget either', async () => {
    const acct = await verifiedAccount(cluster, A, 'resetbudget');
    for (let i = 0; i < OTP_MAX_ATTEMPTS; i++) {
      pastCooldown();
      expect((await post(i % 2 ? A : B, 'forgot-password', { email: acct.email })).status).toBe(200);
      const code = await otpFrom(cluster, acct.email, 'reset', i);
      expectApiError(await post(i % 2 ? B : A, 'reset-password', { email: acct.email, otp: wrongOtp(code), newPassword: 'never-applied-password' }), 401, 'UNAUTHORIZED');
    }
    pastCooldown();
    expect((await post(A, 'forgot-password', { email: acct.email })).status).toBe(200);
    const code = await otpFrom(cluster, acct.email, 'reset', OTP_MAX_ATTEMPTS);
    expectApiError(await post(B, 'reset-password', { email: acct.email, otp: code, newPassword: 'never-applied-password' }), 401, 'UNAUTHORIZED');
    expect((await post(A, 'verify-credentials', { email: acct.email, password: acct.password })).status).toBe(200);
  });
});

describe('mail per email is bounded by the cooldown', () => {
  it('bursts of forgot-password and request-deletion through both coordinators: one code mail per cooldown', async () => {
    const acct = await verifiedAccount(cluster, A, 'bomb');
    const triple = { email: acct.email, password: acct.password, principalId: acct.principalId };
    const ROUNDS = 4;
    for (let round = 0; round < ROUNDS; round++) {
      const burst = await Promise.all(
        Array.from({ length: 8 }, (_, i) => (i % 2 ? post(A, 'forgot-password', { email: acct.email }) : post(B, 'request-deletion', triple))),
      );
      expect(burst.filter((r) => r.status === 200)).toHaveLength(1);
      for (const r of burst.filter((x) => x.status !== 200)) expectApiError(r, 429, 'RATE_LIMITED');
      // Register and resend are refused as verified (409, 400): they take no turn and send nothing.
      expectApiError(await post(A, 'register', { email: acct.email, password: 'another-password' }), 409, 'CONFLICT');
      expectApiError(await post(B, 'resend-otp', { email: acct.email }), 400, 'BAD_REQUEST');
      pastCooldown();
    }
    // A marker mail: everything the bursts sent has arrived by the time it has.
    expect((await post(A, 'request-deletion', triple)).status).toBe(200);
    await waitFor(() => otpMails(cluster, acct.email, 'reset').length + otpMails(cluster, acct.email, 'delete').length === ROUNDS + 1, {
      timeoutMs: 10_000,
      description: 'the marker mail',
    });
    // One verification code, one code per round, the marker: nothing else.
    expect(cluster.mailbox.to(acct.email)).toHaveLength(1 + ROUNDS + 1);
  });

  it('unknown emails too: a burst of registers, resends and forgot-passwords through both coordinators gets one turn', async () => {
    const email = newEmail('bombunknown');
    const burst = await Promise.all(
      Array.from({ length: 9 }, (_, i) => post(i % 2 ? A : B, ['register', 'resend-otp', 'forgot-password'][i % 3]!, { email, password: 'long-enough-password' })),
    );
    expect(burst.filter((r) => r.status < 300)).toHaveLength(1);
    for (const r of burst.filter((x) => x.status >= 300)) expectApiError(r, 429, 'RATE_LIMITED');
  });
});
