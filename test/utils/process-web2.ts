/**
 * The Web2 client of ./web2.ts and ./session.ts for a cluster of real processes
 * (./process-cluster.ts): there is no test mailbox, so OTPs are read from the nodes' outboxes — the
 * default `mail.transport` writes one `.eml` per message under `<dataDir>/outbox` (src/mail/mailer.ts).
 */
import { randomBytes } from 'node:crypto';
import { readOutboxCode, type OtpPurpose } from 'quorumkeep/client';
import { postJson } from './http.ts';
import type { ProcessCluster } from './process-cluster.ts';
import { openSession, principalOf, type Principal } from './session.ts';
import { newEmail, registerKey } from './web2.ts';

/** Wait for an OTP mail of a purpose to `email` in any node's outbox and return its code. */
export function outboxOtp(pc: ProcessCluster, email: string, purpose: OtpPurpose): Promise<string> {
  const dataDirs = Array.from({ length: pc.size }, (_, i) => pc.dataDir(i));
  return readOutboxCode({ dir: dataDirs, email, purpose, timeoutMs: 20_000 });
}

/**
 * Register, verify (the OTP read from the outbox), register a key and open a session through `url`:
 * `principalWithSession` of ./session.ts, for a process cluster.
 */
export async function outboxPrincipalWithSession(pc: ProcessCluster, url: string, tag = 'user'): Promise<Principal> {
  const email = newEmail(tag);
  const password = `pw-${randomBytes(8).toString('hex')}`;
  const reg = await postJson<{ principalId: string }>(`${url}/web2/auth/register`, { email, password });
  if (reg.status !== 201) throw new Error(`register: ${reg.status} ${JSON.stringify(reg.body)}`);
  const otp = await outboxOtp(pc, email, 'verify');
  const ver = await postJson(`${url}/web2/auth/verify-email`, { email, otp });
  if (ver.status !== 200) throw new Error(`verify: ${ver.status} ${JSON.stringify(ver.body)}`);
  const account = { email, password, principalId: reg.body.principalId };
  const key = await registerKey(url, account);
  if (key.status !== 201) throw new Error(`register-key: ${key.status} ${JSON.stringify(key.body)}`);
  const p = principalOf(account, key.key);
  await openSession(url, p);
  return p;
}

/** A secret created through the API with one payload sealed under it. */
export interface SealedSecret {
  id: number;
  cifer: string;
  encryptedMessage: string;
  plaintext: string;
}

/** Create `count` secrets for `p` on the coordinator at `url` (each held by every member) and seal one payload under each. */
export async function sealSecrets(url: string, p: Principal, count: number): Promise<SealedSecret[]> {
  const sealed: SealedSecret[] = [];
  for (let i = 0; i < count; i++) {
    const created = await postJson<{ secretId: number; status: string }>(`${url}/web2/secret`, p.signed(0, undefined, Date.now() + i));
    if (created.status !== 201 || created.body.status !== 'complete') throw new Error(`create secret: ${created.status} ${JSON.stringify(created.body)}`);
    const plaintext = `secret ${i}`;
    const enc = await postJson<{ cifer: string; encryptedMessage: string }>(`${url}/encrypt-payload`, p.signed(created.body.secretId, plaintext));
    if (enc.status !== 200) throw new Error(`encrypt: ${enc.status} ${JSON.stringify(enc.body)}`);
    sealed.push({ id: created.body.secretId, plaintext, ...enc.body });
  }
  return sealed;
}

/** Decrypt each sealed payload on the coordinator at `url`: its HTTP status and plaintext, in order. */
export async function openSealed(url: string, p: Principal, sealed: readonly SealedSecret[]): Promise<Array<{ status: number; plaintext: string | undefined }>> {
  const out: Array<{ status: number; plaintext: string | undefined }> = [];
  for (const s of sealed) {
    const dec = await postJson<{ decryptedMessage?: string }>(`${url}/decrypt-payload`, { cifer: s.cifer, ...p.signed(s.id, s.encryptedMessage) });
    out.push({ status: dec.status, plaintext: dec.body.decryptedMessage });
  }
  return out;
}
