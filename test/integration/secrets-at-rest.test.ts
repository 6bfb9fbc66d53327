/**
 * Secrets never at rest in the clear (CONTRIBUTING.md rule 9; docs/http.md, Web2 accounts: codes "stored only as
 * argon2id hashes"). A real cluster logging at debug level into a capturing stream goes through every account
 * flow that carries a secret — register, verify, forgot/reset, request/confirm deletion,
 * register-key — and is stopped with its data kept. Then no captured log line holds a password, an
 * OTP or the key-registration signature, and no LevelDB file of any node holds a password (raw,
 * hex or base64) or an OTP.
 */
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalCluster, waitFor, type LocalCluster } from 'quorumkeep/testing';
import { captureClusterLogs, filesUnder, postExpecting } from '../utils/at-rest.ts';
import { postJson } from '../utils/http.ts';
import { cleanupStack, tempDir } from '../utils/temp.ts';
import { newEmail, otpFrom, registerKey } from '../utils/web2.ts';

const SIZE = 5;

/** Every log line of every node, as written; `captureLogs` is the cluster's log destination. */
const { lines: logLines, destination: captureLogs } = captureClusterLogs();

const stack = cleanupStack();
let cluster: LocalCluster;
let dir: string;

/** A long random password nobody could have typed by chance. */
const randomPassword = (tag: string) => `${tag}-${randomBytes(24).toString('base64url')}`;

const secrets = {
  passwords: [] as string[],
  otps: [] as string[],
  signatures: [] as string[],
};
/** Ids that must appear in the store: proof the raw files are readable as text. */
const principalIds: string[] = [];

/** POST to /web2/auth/`path` and require the status, so a broken flow fails here rather than as a vacuous pass below. */
const call = (url: string, path: string, body: unknown, status = 200) => postExpecting(`${url}/web2/auth/`, path, body, status);

beforeAll(async () => {
  dir = await tempDir(stack, 'qk-secrets-');
  // With `dir` given the cluster keeps its data on stop; the stack removes the dir afterwards.
  cluster = await startLocalCluster({ size: SIZE, threshold: 3, coordinators: 2, dir, logLevel: 'debug', logDestination: captureLogs });
  stack.push(() => cluster.stop());
  const [A, B] = cluster.coordinators as [string, string];

  // Account 1: register, verify, a wrong password, forgot → reset, register-key with the new password.
  const email = newEmail('atrest');
  const password = randomPassword('pw');
  const wrongPassword = randomPassword('wrong');
  const newPassword = randomPassword('new');
  secrets.passwords.push(password, wrongPassword, newPassword);
  const { principalId } = (await call(A, 'register', { email, password }, 201)) as { principalId: string };
  principalIds.push(principalId);
  const verifyOtp = await otpFrom(cluster, email, 'verify');
  secrets.otps.push(verifyOtp);
  await call(B, 'verify-email', { email, otp: verifyOtp });
  await call(A, 'verify-credentials', { email, password: wrongPassword }, 401);
  await call(B, 'forgot-password', { email });
  const resetOtp = await otpFrom(cluster, email, 'reset');
  secrets.otps.push(resetOtp);
  await call(A, 'reset-password', { email, otp: resetOtp, newPassword });
  await waitFor(async () => (await postJson(`${B}/web2/auth/verify-credentials`, { email, password: newPassword })).status === 200, {
    timeoutMs: 5000,
    intervalMs: 50,
    description: 'the new password to work on the other coordinator',
  });
  const key = await registerKey(B, { principalId, password: newPassword });
  if (key.status !== 201) throw new Error(`register-key: ${key.status} ${JSON.stringify(key.body)}`);
  secrets.signatures.push(key.key.sign(`cifer_register:${key.key.publicKey}`));

  // Account 2: register, verify, request deletion, confirm it.
  const email2 = newEmail('atrest-del');
  const password2 = randomPassword('pw2');
  secrets.passwords.push(password2);
  const reg2 = (await call(B, 'register', { email: email2, password: password2 }, 201)) as { principalId: string };
  principalIds.push(reg2.principalId);
  const verifyOtp2 = await otpFrom(cluster, email2, 'verify');
  secrets.otps.push(verifyOtp2);
  await call(A, 'verify-email', { email: email2, otp: verifyOtp2 });
  await call(B, 'request-deletion', { email: email2, password: password2, principalId: reg2.principalId });
  const deleteOtp = await otpFrom(cluster, email2, 'delete');
  secrets.otps.push(deleteOtp);
  await call(A, 'confirm-deletion', { email: email2, otp: deleteOtp });

  // Every member holds every record, then everything is flushed to disk by a clean stop.
  await cluster.waitForConvergence({ timeoutMs: 10_000 });
  await cluster.stop();
});
afterAll(() => stack.run());

/** The encodings a password could be stored under. */
function encodingsOf(secret: string): string[] {
  const bytes = Buffer.from(secret, 'utf8');
  return [secret, bytes.toString('hex'), bytes.toString('hex').toUpperCase(), bytes.toString('base64'), bytes.toString('base64').replace(/=+$/, ''), bytes.toString('base64url')];
}

/**
 * An OTP as a token of its own, not inside a longer run of digits. (Hex ids and base64 hashes hold
 * such tokens by chance, but the logs and stores here are a few KB: a false match is ~1e-4 likely.)
 */
const otpToken = (otp: string) => new RegExp(`(?<!\\d)${otp}(?!\\d)`);

describe('after every account flow', () => {
  it('the flows produced secrets to look for and logs from every node', () => {
    expect(secrets.passwords).toHaveLength(4);
    expect(secrets.otps).toHaveLength(4);
    expect(secrets.otps.every((o) => /^\d{6}$/.test(o))).toBe(true);
    expect(secrets.signatures[0]).toMatch(/^[0-9a-f]{128}$/);
    for (let i = 0; i < SIZE; i++) expect(logLines.some((l) => l.includes(`"node":"node-${i}"`)), `lines of node-${i}`).toBe(true);
    // The account flows themselves were logged (so the absence of secrets below means something).
    for (const msg of ['principal registered', 'email verified', 'password reset', 'key registered', 'principal deleted']) {
      expect(logLines.some((l) => l.includes(msg)), msg).toBe(true);
    }
  });

  it('no log line contains a password, an OTP or the Ed25519 signature', () => {
    for (const [i, line] of logLines.entries()) {
      for (const p of secrets.passwords) expect(line.includes(p), `password in log line ${i}: ${line}`).toBe(false);
      for (const o of secrets.otps) expect(otpToken(o).test(line), `OTP ${o} in log line ${i}: ${line}`).toBe(false);
      for (const s of secrets.signatures) expect(line.toLowerCase().includes(s), `signature in log line ${i}: ${line}`).toBe(false);
    }
  });

  it('no LevelDB file of any node contains a password (raw, hex or base64) or an OTP', async () => {
    for (let i = 0; i < SIZE; i++) {
      const files = await filesUnder(join(dir, `node-${i}`, 'db'));
      expect(files.length, `files of node-${i}`).toBeGreaterThan(0);
      const seen = new Set<string>();
      for (const file of files) {
        const raw = await readFile(file);
        const text = raw.toString('latin1');
        const utf8 = raw.toString('utf8');
        for (const id of principalIds) if (text.includes(id)) seen.add(id);
        for (const p of secrets.passwords) {
          for (const enc of encodingsOf(p)) expect(raw.includes(Buffer.from(enc, 'utf8')), `password (${enc}) in ${file}`).toBe(false);
        }
        for (const o of secrets.otps) {
          expect(utf8.includes(`"${o}"`), `OTP ${o} as a JSON string in ${file}`).toBe(false);
          expect(otpToken(o).test(text), `OTP ${o} in ${file}`).toBe(false);
        }
      }
      // The records are there and readable as text: the searches above looked at real data.
      expect([...seen].sort(), `principal ids in the files of node-${i}`).toEqual([...principalIds].sort());
    }
  });
});
