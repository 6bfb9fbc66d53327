/**
 * The one-time code of a mail in a local outbox. A node whose `mail.transport` is `outbox` (the
 * default, and what `quorumkeep local` runs) writes each message as one `.eml` file under
 * `<dataDir>/outbox`, named `<ISO time>-<category>-<random>.eml` (src/mail/mailer.ts, docs/mail.md);
 * a code mail's category is `otp-<purpose>`. This reads the newest such mail to an address — on a
 * developer's machine, what a person would copy from their inbox.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { simpleParser, type AddressObject } from 'mailparser';
import { ClientError } from './errors.ts';

/** What a code is for: the `otp-<purpose>` category of its mail. */
export type OtpPurpose = 'verify' | 'reset' | 'delete';

/** Options of {@link readOutboxCode}. */
export interface OutboxCodeOptions {
  /**
   * An outbox folder, a node's data folder (holding `outbox/`), or a local cluster's folder (holding
   * `node-<i>/outbox/`, as `quorumkeep local --dir` and `startLocalCluster` make), or several: every
   * outbox found there is read, since the coordinator that took the request is the one that mails.
   */
  dir: string | readonly string[];
  /** The address the mail went to (compared trimmed and lowercased). */
  email: string;
  /** @default "verify" */
  purpose?: OtpPurpose;
  /** How long to wait for the mail, ms: a node mails in the background, after it answered. @default 10000 */
  timeoutMs?: number;
  /** Only mails written at or after this time, Unix ms (from the file name). @default any */
  since?: number;
  /** How often to look again while waiting, ms. @default 100 */
  intervalMs?: number;
}

/** The outbox folders under `dir`: itself, `dir/outbox`, and `dir/<any>/outbox`. */
async function outboxDirs(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true }).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return [];
    throw new ClientError('INVALID_INPUT', `outbox ${dir}: ${err.code ?? err.message}`);
  });
  const dirs = [dir];
  for (const entry of entries) {
    if (!entry.isDirectory()) continue;
    if (entry.name === 'outbox') dirs.push(join(dir, 'outbox'));
    else dirs.push(join(dir, entry.name, 'outbox'));
  }
  return dirs;
}

/** The time in a mail file's name (`2030-01-02T03-04-05.678Z-…`), Unix ms. */
function stampOf(name: string): number {
  const match = /^(\d{4}-\d{2}-\d{2}T\d{2})-(\d{2})-(\d{2}(?:\.\d+)?Z)-/.exec(name);
  return match ? Date.parse(`${match[1]}:${match[2]}:${match[3]}`) : NaN;
}

function recipientsOf(to: AddressObject | AddressObject[] | undefined): string[] {
  const objects = to === undefined ? [] : Array.isArray(to) ? to : [to];
  return objects.flatMap((o) => o.value.map((a) => (a.address ?? '').toLowerCase()));
}

/** The code of the newest matching mail now in the outboxes, or undefined. */
async function findCode(options: OutboxCodeOptions): Promise<string | undefined> {
  const email = options.email.trim().toLowerCase();
  const category = `-otp-${options.purpose ?? 'verify'}-`;
  const files: Array<{ path: string; name: string }> = [];
  const roots = typeof options.dir === 'string' ? [options.dir] : options.dir;
  for (const dir of (await Promise.all(roots.map(outboxDirs))).flat()) {
    const names = await readdir(dir).catch(() => [] as string[]);
    // Dot-named files are messages still being written (src/mail/mailer.ts writes atomically).
    for (const name of names) if (name.endsWith('.eml') && !name.startsWith('.') && name.includes(category)) files.push({ path: join(dir, name), name });
  }
  files.sort((a, b) => (a.name < b.name ? 1 : a.name > b.name ? -1 : 0));
  for (const file of files) {
    if (options.since !== undefined && !(stampOf(file.name) >= options.since)) break;
    const mail = await simpleParser(await readFile(file.path));
    if (!recipientsOf(mail.to).includes(email)) continue;
    const code = /\b(\d{6})\b/.exec(mail.text ?? '')?.[1];
    if (code) return code;
  }
  return undefined;
}

/**
 * Wait for the newest code mail of a purpose to `email` in the outboxes under `dir` and return its
 * 6-digit code; `NO_MAIL` when none arrives in time.
 */
export async function readOutboxCode(options: OutboxCodeOptions): Promise<string> {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const intervalMs = options.intervalMs ?? 100;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const code = await findCode(options);
    if (code !== undefined) return code;
    if (Date.now() >= deadline) {
      throw new ClientError('NO_MAIL', `no ${options.purpose ?? 'verify'} code mail to ${options.email} in the outboxes under ${String(options.dir)} within ${timeoutMs} ms`);
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
