/**
 * src/build-info.ts: the version from package.json; the commit read from a checkout's `.git` files
 * (a clone's loose or packed branch, a detached HEAD, a worktree's `.git` file), else `QK_COMMIT`,
 * else `unknown`.
 */
import { execFileSync } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { gitHeadCommit, packageVersion, readBuildInfo } from '../../src/build-info.ts';
import { cleanupStack, tempDir } from '../utils/temp.ts';
import { onPath, requireTool } from '../utils/tools.ts';

const stack = cleanupStack();
afterEach(() => stack.run());

const A = 'a'.repeat(40);
const B = 'b'.repeat(40);
const REPO = new URL('../..', import.meta.url).pathname;
const gitNeed = requireTool('build-info (git HEAD check)', 'git', onPath('git'));

async function files(dir: string, entries: Record<string, string>): Promise<void> {
  for (const [path, content] of Object.entries(entries)) {
    await mkdir(join(dir, path, '..'), { recursive: true });
    await writeFile(join(dir, path), content);
  }
}

describe('build info', () => {
  it('the version is package.json’s', async () => {
    const pkg = JSON.parse(await readFile(join(REPO, 'package.json'), 'utf8')) as { version: string };
    expect(packageVersion()).toBe(pkg.version);
    expect(readBuildInfo().version).toBe(pkg.version);
  });

  it('reads HEAD through loose refs, packed refs, a detached HEAD and a worktree’s .git file', async () => {
    const dir = await tempDir(stack, 'qk-build-info-');
    await files(dir, { 'clone/.git/HEAD': 'ref: refs/heads/main\n', 'clone/.git/refs/heads/main': `${A}\n` });
    expect(gitHeadCommit(join(dir, 'clone'))).toBe(A);
    await files(dir, { 'packed/.git/HEAD': 'ref: refs/heads/main\n', 'packed/.git/packed-refs': `# pack-refs with: peeled\n${B} refs/heads/other\n${A} refs/heads/main\n` });
    expect(gitHeadCommit(join(dir, 'packed'))).toBe(A);
    await files(dir, { 'detached/.git/HEAD': `${B}\n` });
    expect(gitHeadCommit(join(dir, 'detached'))).toBe(B);
    // A worktree: `.git` names its git dir, whose commondir holds the branches.
    await files(dir, {
      'main/.git/refs/heads/feature': `${B}\n`,
      'main/.git/worktrees/wt/HEAD': 'ref: refs/heads/feature\n',
      'main/.git/worktrees/wt/commondir': '../..\n',
      'wt/.git': `gitdir: ${join(dir, 'main/.git/worktrees/wt')}\n`,
    });
    expect(gitHeadCommit(join(dir, 'wt'))).toBe(B);
    // A branch with no commit yet, and no .git at all.
    await files(dir, { 'empty/.git/HEAD': 'ref: refs/heads/main\n' });
    expect(gitHeadCommit(join(dir, 'empty'))).toBeUndefined();
    expect(gitHeadCommit(join(dir, 'nothing'))).toBeUndefined();
  });

  it('without .git: QK_COMMIT, else unknown; .git wins over QK_COMMIT', async () => {
    const dir = await tempDir(stack, 'qk-build-info-');
    expect(readBuildInfo({ QK_COMMIT: 'deadbeef' }, { checkout: dir }).commit).toBe('deadbeef');
    expect(readBuildInfo({}, { checkout: dir }).commit).toBe('unknown');
    await files(dir, { '.git/HEAD': `${A}\n` });
    expect(readBuildInfo({ QK_COMMIT: 'deadbeef' }, { checkout: dir }).commit).toBe(A);
  });

  it.skipIf(gitNeed.skip)('this checkout’s commit is git’s own HEAD', () => {
    gitNeed.assertPresent();
    let head: string;
    try {
      head = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: REPO, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    } catch {
      // Not a git checkout (a source tarball): nothing to compare against.
      expect(readBuildInfo().commit).toMatch(/^[0-9a-f]{40}$|^unknown$/);
      return;
    }
    expect(readBuildInfo().commit).toBe(head);
  });
});
