/**
 * Where `quorumkeep login` keeps its session between commands (docs/client.md, "The session file"):
 * one JSON file, `$XDG_CONFIG_HOME/quorumkeep/session.json` (else `~/.config/quorumkeep/session.json`),
 * or `--session-file` / `QK_SESSION_FILE`. It holds the session wallet's private key — an ephemeral
 * key good until the session ends, never the password or the account key — so it is written mode
 * 0600 in a 0700 folder, atomically, and removed by `quorumkeep logout`.
 */
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import type { StoredSession } from '../client/index.ts';

/** What the file holds. */
export interface SessionFile {
  /** The coordinator the session was opened through (the default URL of later commands). */
  url: string;
  email: string;
  session: StoredSession;
}

/** The session file's path: the flag, else `QK_SESSION_FILE`, else under the user's config folder. */
export function sessionFilePath(flag: string | undefined, env: Readonly<Record<string, string | undefined>>): string {
  if (flag) return flag;
  if (env['QK_SESSION_FILE']) return env['QK_SESSION_FILE'];
  const config = env['XDG_CONFIG_HOME'] || join(env['HOME'] || homedir(), '.config');
  return join(config, 'quorumkeep', 'session.json');
}

/** The stored session, or undefined when there is no file. A file others may read is refused. */
export async function readSessionFile(path: string): Promise<SessionFile | undefined> {
  let text: string;
  try {
    const info = await stat(path);
    if ((info.mode & 0o077) !== 0) {
      throw new Error(`${path} is readable by other users (mode ${(info.mode & 0o777).toString(8)}): it holds a session key; remove it or chmod 600 it`);
    }
    text = await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  try {
    const parsed = JSON.parse(text) as SessionFile;
    if (typeof parsed.url !== 'string' || typeof parsed.session !== 'object') throw new Error('fields missing');
    return parsed;
  } catch {
    throw new Error(`${path} is not a session file: remove it, or run quorumkeep login again`);
  }
}

/** Write the session file atomically: a 0600 temp file beside it, flushed to disk, renamed into place. */
export async function writeSessionFile(path: string, content: SessionFile): Promise<void> {
  const dir = dirname(path);
  if ((await mkdir(dir, { recursive: true, mode: 0o700 })) !== undefined) await chmod(dir, 0o700);
  const temp = join(dir, `.${randomBytes(6).toString('hex')}.tmp`);
  try {
    await writeFile(temp, JSON.stringify(content, null, 2) + '\n', { flag: 'wx', mode: 0o600, flush: true });
    await rename(temp, path);
  } catch (err) {
    await rm(temp, { force: true });
    throw err;
  }
}

/** Remove the session file; false when there was none. */
export async function removeSessionFile(path: string): Promise<boolean> {
  try {
    await rm(path);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
}
