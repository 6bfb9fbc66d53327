/**
 * A Web2 client for tests, doing what the service's JavaScript SDK does: register, read the OTP from
 * the mailbox, verify, register an Ed25519 key.
 */
import { randomBytes } from 'node:crypto';
import { expect } from 'vitest';
import type { CaughtMail, LocalCluster } from 'quorumkeep/testing';
import { keyRegistrationMessage } from 'quorumkeep/client';
import { signEd25519, ed25519PublicKeyOf, toHex } from '../../src/crypto/index.ts';
import { postJson, type JsonResponse } from './http.ts';

/** Subjects of the OTP mails, by purpose. */
export const OTP_SUBJECT = { verify: /verification code/i, reset: /reset/i, delete: /deletion/i } as const;

/** A fresh unique email. */
export function newEmail(tag = 'user'): string {
  return `${tag}-${randomBytes(5).toString('hex')}@example.test`;
}

/** Wait for the newest OTP mail of a purpose to an address (after `after` such mails) and return its code. */
export async function otpFrom(cluster: LocalCluster, email: string, purpose: keyof typeof OTP_SUBJECT, after = 0): Promise<string> {
  const mail = await cluster.mailbox.waitFor((m) => m.to.includes(email.toLowerCase()) && OTP_SUBJECT[purpose].test(m.subject) && cluster.mailbox.to(email).filter((x) => OTP_SUBJECT[purpose].test(x.subject)).indexOf(m) >= after, { timeoutMs: 10_000 });
  const code = /\b(\d{6})\b/.exec(mail.text)?.[1];
  if (!code) throw new Error(`no code in mail: ${mail.text}`);
  return code;
}

/** An Ed25519 key pair as the SDK holds it. */
export function newEd25519() {
  const seed = new Uint8Array(randomBytes(32));
  const publicKey = toHex(ed25519PublicKeyOf(seed));
  return { seed, publicKey, sign: (message: string) => toHex(signEd25519(seed, message)) };
}

/** Register and verify an account through `url`; returns its ids and credentials. */
export async function verifiedAccount(cluster: LocalCluster, url: string, tag = 'user') {
  const email = newEmail(tag);
  const password = `pw-${randomBytes(8).toString('hex')}`;
  const reg = await postJson<{ principalId: string }>(`${url}/web2/auth/register`, { email, password });
  if (reg.status !== 201) throw new Error(`register: ${reg.status} ${JSON.stringify(reg.body)}`);
  const otp = await otpFrom(cluster, email, 'verify');
  const ver = await postJson(`${url}/web2/auth/verify-email`, { email, otp });
  if (ver.status !== 200) throw new Error(`verify: ${ver.status} ${JSON.stringify(ver.body)}`);
  return { email, password, principalId: reg.body.principalId };
}

/** Register an Ed25519 key for an account. */
export async function registerKey(url: string, account: { principalId: string; password: string }, key = newEd25519()) {
  const res = await postJson<{ nodeRegistrationStatus: string; failedNodes: string[]; nodeErrors: Record<string, string>; emailHex: string }>(`${url}/web2/auth/register-key`, {
    principalId: account.principalId,
    password: account.password,
    publicKey: key.publicKey,
    signature: key.sign(keyRegistrationMessage(key.publicKey)),
  });
  return { ...res, key };
}

/**
 * Assert an API error reply (docs/http.md, Errors): the status, the machine `code`, and a non-empty
 * human `error` string.
 */
export function expectApiError(res: JsonResponse, status: number, code: string): void {
  const shown = JSON.stringify(res.body);
  expect(res.status, shown).toBe(status);
  expect(res.body.code, shown).toBe(code);
  expect(typeof res.body.error, shown).toBe('string');
  expect(res.body.error, shown).not.toBe('');
}

/** A 6-digit code that is not `code` (the `i`-th one after it). */
export function wrongOtp(code: string, i = 0): string {
  return String((Number(code) + 1 + i) % 1_000_000).padStart(6, '0');
}

/** Register (without verifying) an account through `url`; returns its ids and credentials. */
export async function unverifiedAccount(url: string, tag = 'user') {
  const email = newEmail(tag);
  const password = `pw-${randomBytes(8).toString('hex')}`;
  const reg = await postJson<{ principalId: string }>(`${url}/web2/auth/register`, { email, password });
  if (reg.status !== 201) throw new Error(`register: ${reg.status} ${JSON.stringify(reg.body)}`);
  return { email, password, principalId: reg.body.principalId };
}

/** OTP mails of a purpose caught so far for an address. */
export function otpMails(cluster: LocalCluster, email: string, purpose: keyof typeof OTP_SUBJECT): CaughtMail[] {
  return cluster.mailbox.to(email).filter((m) => OTP_SUBJECT[purpose].test(m.subject));
}
