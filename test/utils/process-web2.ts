/**
 * The Web2 client of ./web2.ts and ./session.ts for a cluster of real processes
 * (./process-cluster.ts): there is no test mailbox, so OTPs are read from the nodes' outboxes — the
 * default `mail.transport` writes one `.eml` per message under `<dataDir>/outbox` (src/mail/mailer.ts).
 */
import { randomBytes } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { simpleParser, type AddressObject } from 'mailparser';
import { waitFor } from 'quorumkeep/testing';
import { postJson } from './http.ts';
import type { ProcessCluster } from './process-cluster.ts';
import { newSessionWallet, openSession, signData, type Principal } from './session.ts';
import { newEmail, OTP_SUBJECT, registerKey } from './web2.ts';

/** A message of an outbox, parsed as a mail client would. */
interface OutboxMail {
  to: string[];
  subject: string;
  text: string;
}

function addressesOf(to: AddressObject | AddressObject[] | undefined): string[] {
  const objects = to === undefined ? [] : Array.isArray(to) ? to : [to];
  return objects.flatMap((o) => o.value.map((a) => (a.address ?? '').toLowerCase()));
}

/** Every finished message in the outboxes of the cluster's nodes (temp files, dot-named, skipped). */
async function outboxMails(pc: ProcessCluster): Promise<OutboxMail[]> {
  const mails: OutboxMail[] = [];
  for (let i = 0; i < pc.size; i++) {
    const dir = join(pc.dataDir(i), 'outbox');
    const names = await readdir(dir).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return [];
      throw err;
    });
    for (const name of names.filter((n) => n.endsWith('.eml') && !n.startsWith('.'))) {
      const parsed = await simpleParser(await readFile(join(dir, name)));
      mails.push({ to: addressesOf(parsed.to), subject: parsed.subject ?? '', text: parsed.text ?? '' });
    }
  }
  return mails;
}

/** Wait for an OTP mail of a purpose to `email` in any node's outbox and return its code. */
export async function outboxOtp(pc: ProcessCluster, email: string, purpose: keyof typeof OTP_SUBJECT): Promise<string> {
  const mail = await waitFor(
    async () => (await outboxMails(pc)).find((m) => m.to.includes(email.toLowerCase()) && OTP_SUBJECT[purpose].test(m.subject)),
    { timeoutMs: 20_000, intervalMs: 100, description: `a ${purpose} mail to ${email} in an outbox` },
  );
  const code = /\b(\d{6})\b/.exec(mail.text)?.[1];
  if (!code) throw new Error(`no code in mail: ${mail.text}`);
  return code;
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
  const p: Principal = {
    ...account,
    key: key.key,
    wallet: newSessionWallet(),
    signed(subject, extra, at) {
      const data = `-1_${subject}_${p.wallet.address}_${at ?? Date.now()}` + (extra === undefined ? '' : `_${extra}`);
      return signData(p.wallet, data);
    },
  };
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
