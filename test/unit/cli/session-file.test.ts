/**
 * The CLI's session file (src/cli/session-file.ts, docs/client.md "The session file"): where it is,
 * that it is written 0600 in a 0700 folder and read back, refused when others can read it, removed.
 */
import { chmod, readdir, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { readSessionFile, removeSessionFile, sessionFilePath, writeSessionFile, type SessionFile } from '../../../src/cli/session-file.ts';
import { cleanupStack, tempDir } from '../../utils/temp.ts';

const stack = cleanupStack();
afterEach(() => stack.run());

const content: SessionFile = {
  url: 'http://127.0.0.1:3010',
  email: 'a@example.org',
  session: { principalId: 'p', sessionAddress: '0x' + '1'.repeat(40), sessionKey: '2'.repeat(64), expiresAt: '2030-01-01T00:00:00.000Z', clockOffsetMs: 0 },
};

describe('the session file', () => {
  it('is the flag, else QK_SESSION_FILE, else under XDG_CONFIG_HOME, else ~/.config', () => {
    expect(sessionFilePath('/x/s.json', { QK_SESSION_FILE: '/y' })).toBe('/x/s.json');
    expect(sessionFilePath(undefined, { QK_SESSION_FILE: '/y/s.json', XDG_CONFIG_HOME: '/c' })).toBe('/y/s.json');
    expect(sessionFilePath(undefined, { XDG_CONFIG_HOME: '/c', HOME: '/h' })).toBe('/c/quorumkeep/session.json');
    expect(sessionFilePath(undefined, { HOME: '/h' })).toBe('/h/.config/quorumkeep/session.json');
  });

  it('is written 0600 in a 0700 folder, leaves no temp file, reads back, and is removed', async () => {
    const dir = await tempDir(stack);
    const path = join(dir, 'config', 'quorumkeep', 'session.json');
    expect(await readSessionFile(path)).toBeUndefined();
    await writeSessionFile(path, content);
    await writeSessionFile(path, { ...content, email: 'b@example.org' });
    expect((await stat(path)).mode & 0o777).toBe(0o600);
    expect((await stat(join(dir, 'config', 'quorumkeep'))).mode & 0o777).toBe(0o700);
    expect(await readdir(join(dir, 'config', 'quorumkeep'))).toEqual(['session.json']);
    expect(await readSessionFile(path)).toEqual({ ...content, email: 'b@example.org' });
    expect(await removeSessionFile(path)).toBe(true);
    expect(await removeSessionFile(path)).toBe(false);
  });

  it('is refused when other users can read it, or when it is not a session file', async () => {
    const dir = await tempDir(stack);
    const open = join(dir, 'open.json');
    await writeFile(open, JSON.stringify(content));
    await chmod(open, 0o640);
    await expect(readSessionFile(open)).rejects.toThrow(/readable by other users \(mode 640\)/);
    const junk = join(dir, 'junk.json');
    await writeFile(junk, 'not json', { mode: 0o600 });
    await expect(readSessionFile(junk)).rejects.toThrow(/not a session file/);
  });
});
