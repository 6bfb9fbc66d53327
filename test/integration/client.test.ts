/**
 * `quorumkeep/client` against a real local cluster (docs/client.md): the first-encrypt flow of a
 * Web2 user — register, the code read from the nodes' outboxes, verify, login, create, list, encrypt,
 * decrypt, a file round trip with its progress — a stored session used again by another client through
 * the other coordinator, the retry of a string refused as stale, and the API's errors as typed errors.
 * 3 members, 2 coordinators, mail written to each node's outbox (no SMTP catcher).
 */
import { randomBytes } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getFreePorts, startLocalCluster, type LocalCluster } from 'quorumkeep/testing';
import { ApiError, ClientError, createClient, readOutboxCode, restoreSession, storeSession, type ClientDeps, type ClientOptions, type FileProgress, type QuorumkeepClient } from 'quorumkeep/client';
import { patterned } from '../utils/files.ts';
import { newEmail } from '../utils/web2.ts';
import { cleanupStack, tempDir } from '../utils/temp.ts';

const CHUNK = 1000;
const TEN_MINUTES_MS = 600_000;

let cluster: LocalCluster;
let A: string;
let B: string;
let work: string;
const open: QuorumkeepClient[] = [];
const cleanup = cleanupStack();

function client(url: string, options: Partial<ClientOptions> = {}, deps: ClientDeps = {}): QuorumkeepClient {
  const c = createClient({ url, pollIntervalMs: 50, ...options }, deps);
  open.push(c);
  return c;
}

/** A verified account through the client, the code read from the outboxes. */
async function verifiedUser(c: QuorumkeepClient, tag: string): Promise<{ email: string; password: string; principalId: string }> {
  const email = newEmail(tag);
  const password = `pw-${randomBytes(8).toString('hex')}`;
  const registered = await c.register(email, password);
  expect(registered.created).toBe(true);
  const otp = await readOutboxCode({ dir: cluster.dir, email });
  const verified = await c.verifyEmail(email, otp);
  expect(verified).toEqual({ principalId: registered.principalId, emailVerified: true });
  return { email, password, principalId: registered.principalId };
}

beforeAll(async () => {
  cluster = await startLocalCluster({ size: 3, threshold: 2, coordinators: 2, mailbox: false, nodeConfig: { files: { chunkBytes: CHUNK } } });
  [A, B] = cluster.coordinators as [string, string];
  work = await tempDir(cleanup, 'qk-client-');
});

afterAll(async () => {
  for (const c of open) c.close();
  await cluster?.stop();
  await cleanup.run();
});

describe('the first-encrypt flow', () => {
  it('register, verify, login, create, list, encrypt, decrypt; the stored session works through the other coordinator', async () => {
    const alice = client(A);
    const account = await verifiedUser(alice, 'alice');
    const session = await alice.login({ email: account.email, password: account.password, ttlMs: 3_600_000 });
    expect(session.principalId).toBe(account.principalId);
    expect(session.expiresAt).toBeGreaterThan(Date.now() + 3_500_000);
    await expect(alice.sessionStatus()).resolves.toMatchObject({ active: true, principalId: account.principalId, sessionAddress: session.sessionAddress });

    const secret = await alice.createSecret();
    expect(secret.secretId).toBeGreaterThan(0);
    expect(['complete', 'propagating']).toContain(secret.status);
    expect(Buffer.from(secret.publicKey, 'base64')).toHaveLength(1184);
    const listed = await alice.listSecrets();
    expect(listed.map((s) => s.secretId)).toContain(secret.secretId);

    const plaintext = 'hello_world: underscores, ünïcödé and a "quote"';
    const sealed = await alice.encrypt({ secretId: secret.secretId, plaintext });
    expect(sealed).toMatchObject({ chainId: -1, secretId: secret.secretId, outputFormat: 'hex' });
    await expect(alice.decrypt(sealed)).resolves.toBe(plaintext);

    // As the CLI does between two commands: the session as JSON, then a new client at B.
    const stored = JSON.parse(JSON.stringify(storeSession(alice.session!)));
    const again = client(B, { session: restoreSession(stored) });
    await expect(again.decrypt(sealed)).resolves.toBe(plaintext);
    const base64 = await again.encrypt({ secretId: secret.secretId, plaintext: 'b64', outputFormat: 'base64' });
    await expect(alice.decrypt(base64)).resolves.toBe('b64');

    // Logging in again with the same password: the same account key, a new session.
    const other = client(B);
    const second = await other.login({ email: account.email, password: account.password });
    expect(second.sessionAddress).not.toBe(session.sessionAddress);
    await expect(other.decrypt(sealed)).resolves.toBe(plaintext);
  });

  it('a file round trip: upload, job, download, with progress; the decrypt job is deleted after its download', async () => {
    const bob = client(A);
    const account = await verifiedUser(bob, 'bob');
    await bob.login(account);
    const { secretId } = await bob.createSecret();
    const input = join(work, 'report "final".bin');
    const content = patterned(CHUNK * 3 + 17, 3);
    await writeFile(input, content);

    const events: FileProgress[] = [];
    const encrypted = await bob.encryptFile({ secretId, path: input, out: join(work, 'report.cifer'), onProgress: (p) => events.push(p) });
    expect(encrypted.job).toMatchObject({ type: 'encrypt', status: 'completed', originalSize: content.length, resultFileName: 'report "final".bin.cifer' });
    expect(events.filter((e) => e.stage === 'upload').at(-1)).toEqual({ stage: 'upload', bytes: content.length, total: content.length });
    expect(events.some((e) => e.stage === 'job' && e.status === 'completed' && e.progress === 100)).toBe(true);
    expect(events.filter((e) => e.stage === 'download').at(-1)).toEqual({ stage: 'download', bytes: encrypted.bytes, total: encrypted.bytes });

    // Through the other coordinator: the .cifer is uploaded there.
    const atB = client(B, { session: restoreSession(storeSession(bob.session!)) });
    const decrypted = await atB.decryptFile({ secretId, path: encrypted.out, out: join(work, 'report.out') });
    expect(await readFile(decrypted.out)).toEqual(content);
    expect(decrypted.job).toMatchObject({ type: 'decrypt', status: 'completed' });
    await expect(atB.jobStatus(decrypted.jobId)).resolves.toMatchObject({ status: 'expired' });
  });
});

describe('retries and errors', () => {
  it('a machine whose clock is 11 minutes slow: login and signed calls are refused as stale once, then signed on the server clock', async () => {
    const fetched: string[] = [];
    const countingFetch: typeof fetch = (input, init) => {
      fetched.push(`${init?.method ?? 'GET'} ${new URL(String(input)).pathname}`);
      return fetch(input, init);
    };
    const slow = client(A, {}, { clock: () => Date.now() - TEN_MINUTES_MS - 60_000, fetch: countingFetch });
    const account = await verifiedUser(slow, 'slow');
    await slow.login(account);
    expect(fetched.filter((f) => f === 'POST /web2/session')).toHaveLength(2);
    expect(slow.session!.clockOffsetMs).toBeGreaterThan(TEN_MINUTES_MS);
    const { secretId } = await slow.createSecret();
    const sealed = await slow.encrypt({ secretId, plaintext: 'late' });
    await expect(slow.decrypt(sealed)).resolves.toBe('late');
    // The offset learnt at login served every later call: one refusal in all.
    expect(fetched.filter((f) => f === 'GET /healthz')).toHaveLength(1);

    // A session stored without the offset: the first call is refused, measured again, sent again.
    const forgetful = client(A, { session: restoreSession({ ...storeSession(slow.session!), clockOffsetMs: 0 }) }, { clock: () => Date.now() - TEN_MINUTES_MS - 60_000, fetch: countingFetch });
    fetched.length = 0;
    await expect(forgetful.decrypt(sealed)).resolves.toBe('late');
    expect(fetched).toEqual(['POST /decrypt-payload', 'GET /healthz', 'POST /decrypt-payload']);
  });

  it("errors are typed: the server's code and status, or the client's own", async () => {
    const carol = client(A);
    const account = await verifiedUser(carol, 'carol');
    const wrong = await carol.login({ email: account.email, password: 'not the password' }).catch((err: unknown) => err);
    expect(wrong).toBeInstanceOf(ApiError);
    expect(wrong).toMatchObject({ status: 401, code: 'UNAUTHORIZED' });

    const unverified = client(A);
    const email = newEmail('unverified');
    await unverified.register(email, 'password-1');
    await expect(unverified.login({ email, password: 'password-1' })).rejects.toMatchObject({ status: 403, code: 'FORBIDDEN' });

    await expect(client(A).createSecret()).rejects.toMatchObject({ code: 'NO_SIGNER' });
    await carol.login(account);
    const { secretId } = await carol.createSecret();
    const sealed = await carol.encrypt({ secretId, plaintext: 'mine' });
    const dave = client(B);
    await dave.login(await verifiedUser(dave, 'dave'));
    await expect(dave.decrypt(sealed)).rejects.toMatchObject({ status: 403, code: 'FORBIDDEN' });

    const expired = client(A, { session: { ...restoreSession(storeSession(carol.session!)), expiresAt: Date.now() - 1 } });
    await expect(expired.encrypt({ secretId, plaintext: 'x' })).rejects.toSatisfy((err: unknown) => err instanceof ClientError && err.code === 'SESSION_EXPIRED');

    const [closed] = await getFreePorts(1);
    const nowhere = client(`http://127.0.0.1:${closed}`, { retry: { attempts: 1 } });
    await expect(nowhere.register(newEmail('x'), 'password-1')).rejects.toMatchObject({ code: 'UNREACHABLE' });
  });
});
