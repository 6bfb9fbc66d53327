/**
 * The runnable examples of examples/ (docs/client.md), run as a user runs them — `sh
 * examples/first-encrypt.sh` with the `quorumkeep` command on PATH, `node examples/first-encrypt.ts`
 * importing `quorumkeep/client` — as real processes over real HTTP against a local cluster whose
 * nodes write their mail to outboxes; then what the CLI verbs do around them: the session file, the
 * password on stdin, pipes, and one-line failures.
 */
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalCluster, type LocalCluster } from 'quorumkeep/testing';
import { runProcess, type ProcessRun } from '../utils/process-cluster.ts';
import { cleanupStack, tempDir } from '../utils/temp.ts';
import { newEmail } from '../utils/web2.ts';

const REPO_ROOT = join(import.meta.dirname, '../..');
/** Each test runs a dozen CLI processes, each loading the CLI anew: minutes on a loaded 2-core machine. */
const PROCESSES_TIMEOUT_MS = 180_000;
const stack = cleanupStack();

let cluster: LocalCluster;
let home: string;
let bin: string;

/**
 * Run a command as a user would: `quorumkeep` on PATH (the repository's bin/quorumkeep.js under this
 * Node), HOME a temp folder (so the session file is under it), QK_URL and QK_OUTBOX naming the
 * cluster, no other QK_ variable of this process.
 */
function run(command: string, args: string[], options: { env?: Record<string, string>; input?: string } = {}): Promise<ProcessRun> {
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('QK_') && name !== 'XDG_CONFIG_HOME'));
  const env = { ...inherited, PATH: `${bin}:${process.env['PATH'] ?? ''}`, HOME: home, QK_URL: cluster.coordinators[0]!, QK_OUTBOX: cluster.dir, ...options.env };
  return runProcess(command, args, { env, input: options.input ?? '' });
}

const qk = (args: string[], options?: Parameters<typeof run>[2]) => run('quorumkeep', args, options);

beforeAll(async () => {
  cluster = await startLocalCluster({ size: 3, threshold: 2, coordinators: 2, mailbox: false });
  home = await tempDir(stack, 'qk-home-');
  bin = join(home, 'bin');
  await mkdir(bin);
  await writeFile(join(bin, 'quorumkeep'), `#!/bin/sh\nexec "${process.execPath}" "${join(REPO_ROOT, 'bin/quorumkeep.js')}" "$@"\n`);
  await chmod(join(bin, 'quorumkeep'), 0o755);
});

afterAll(async () => {
  await cluster?.stop();
  await stack.run();
});

describe('examples/', () => {
  it('first-encrypt.sh: the CLI verbs from register to a file round trip', async () => {
    const result = await run('sh', ['examples/first-encrypt.sh']);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^secret: \d+$/m);
    expect(result.stdout).toContain('decrypted: hello, quorumkeep');
    expect(result.stdout).toContain('file round trip: identical');
    // The session it left: under the user's config folder, readable by the user alone.
    const file = join(home, '.config', 'quorumkeep', 'session.json');
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect((await stat(join(home, '.config', 'quorumkeep'))).mode & 0o777).toBe(0o700);
    const stored = JSON.parse(await readFile(file, 'utf8')) as Record<string, unknown>;
    expect(Object.keys(stored).sort()).toEqual(['email', 'session', 'url']);
    expect(JSON.stringify(stored)).not.toContain('correct horse');
  }, PROCESSES_TIMEOUT_MS);

  it('first-encrypt.ts: the same flow through quorumkeep/client', async () => {
    const result = await run(process.execPath, ['--conditions=source', 'examples/first-encrypt.ts']);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^secret: \d+$/m);
    expect(result.stdout).toContain('decrypted: hello, quorumkeep');
    expect(result.stdout).toContain('file round trip: identical');
  }, PROCESSES_TIMEOUT_MS);
});

describe('the CLI verbs', () => {
  it('password on stdin, a session file of its own, a pipe from encrypt to decrypt, logout', async () => {
    const email = newEmail('cli');
    const password = `pw-${randomBytes(6).toString('hex')}\n`;
    const session = join(home, 'own-session.json');
    const register = await qk(['register', '--email', email, '--password-stdin'], { input: password });
    expect(register.code, register.stderr).toBe(0);
    expect(register.stdout.trim()).toMatch(/^[0-9a-f-]{36}$/);
    expect((await qk(['verify', '--email', email, '--outbox', cluster.dir])).code).toBe(0);
    const login = await qk(['login', '--email', email, '--password-stdin', '--ttl', '1h', '--session-file', session], { input: password });
    expect(login.code, login.stderr).toBe(0);
    expect((await stat(session)).mode & 0o777).toBe(0o600);

    // Through the other coordinator, with the session file named by the environment.
    const atB = { env: { QK_URL: cluster.coordinators[1]!, QK_SESSION_FILE: session } };
    const secretId = (await qk(['secret', 'create'], atB)).stdout.trim();
    const text = 'line one\nline_two ünïcödé\n';
    const sealed = await qk(['encrypt', '--secret', secretId, '--format', 'base64'], { ...atB, input: text });
    expect(sealed.code, sealed.stderr).toBe(0);
    expect(JSON.parse(sealed.stdout)).toMatchObject({ secretId: Number(secretId), outputFormat: 'base64' });
    const opened = await qk(['decrypt', '--session-file', session], { input: sealed.stdout });
    expect(opened.code, opened.stderr).toBe(0);
    expect(opened.stdout).toBe(text);
    const list = await qk(['secret', 'list', '--json'], atB);
    expect((JSON.parse(list.stdout) as Array<{ secretId: number }>).map((s) => s.secretId)).toEqual([Number(secretId)]);

    expect((await qk(['logout', '--session-file', session])).code).toBe(0);
    const after = await qk(['secret', 'list', '--session-file', session]);
    expect(after.code).toBe(2);
    expect(after.stderr.trim().split('\n')).toHaveLength(1);
    expect(after.stderr).toContain('quorumkeep login');
  }, PROCESSES_TIMEOUT_MS);

  it("failures are one line with the server's code, exit 2; a session file others can read is refused", async () => {
    const email = newEmail('fail');
    await qk(['register', '--email', email, '--password-stdin'], { input: 'password-1\n' });
    const wrong = await qk(['verify', '--email', email, '--code', '000000']);
    expect(wrong.code).toBe(2);
    expect(wrong.stderr.trim().split('\n')).toHaveLength(1);
    expect(wrong.stderr).toContain('HTTP 401 UNAUTHORIZED');

    const noPassword = await qk(['login', '--email', email]);
    expect(noPassword.code).toBe(2);
    expect(noPassword.stderr).toContain('--password-stdin');

    const open = join(home, 'open-session.json');
    await writeFile(open, '{}', { mode: 0o644 });
    await chmod(open, 0o644);
    const refused = await qk(['secret', 'list', '--session-file', open]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('readable by other users');
  }, PROCESSES_TIMEOUT_MS);
});
