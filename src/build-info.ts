/**
 * Which build this is (docs/http.md, "GET /healthz" `version` and `commit`; the `quorumkeep_build_info`
 * metric): the version from package.json, and the git commit of the checkout it runs from.
 *
 * The commit is read from the checkout's `.git` files — no git process — when the package folder has
 * one (a clone, or a worktree whose `.git` file points at its git dir); else from dist/build.json,
 * stamped by `npm pack` (an installed package); else from `QK_COMMIT` in the
 * environment (an install without `.git`: set it when deploying); else `unknown`. Both are read once
 * per process, the commit only when a node starts: other CLI commands pay for one small file at most
 * (`--version`).
 */
import { readFileSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** This build, as `/healthz` and `quorumkeep_build_info` name it. */
export interface BuildInfo {
  /** package.json `version`. */
  version: string;
  /** Full git commit id (hex), or `unknown`. */
  commit: string;
}

/** The environment variable that names the commit where no `.git` is found (docs/configuration.md). */
export const COMMIT_ENV = 'QK_COMMIT';

/** The package's folder: src/ and dist/ both sit directly in it. */
const PACKAGE_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const COMMIT_RE = /^[0-9a-f]{40}(?:[0-9a-f]{24})?$/;

let version: string | undefined;
let gitCommit: string | null | undefined;

/** package.json's `version` (read once). */
export function packageVersion(): string {
  version ??= (JSON.parse(readFileSync(join(PACKAGE_DIR, 'package.json'), 'utf8')) as { version: string }).version;
  return version;
}

function readText(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8').trim();
  } catch {
    return undefined;
  }
}

/** The commit `HEAD` names in the git dir of `dir`, or undefined without one (or one this cannot read). */
export function gitHeadCommit(dir: string): string | undefined {
  const dotGit = join(dir, '.git');
  let gitDir: string;
  try {
    // A worktree (or submodule) has a `.git` file: `gitdir: <path>`.
    gitDir = statSync(dotGit).isDirectory() ? dotGit : resolve(dir, (readText(dotGit) ?? '').replace(/^gitdir:\s*/, ''));
  } catch {
    return undefined;
  }
  const head = readText(join(gitDir, 'HEAD'));
  if (head === undefined) return undefined;
  if (COMMIT_RE.test(head)) return head;
  const ref = /^ref:\s*(\S+)$/.exec(head)?.[1];
  if (ref === undefined) return undefined;
  // Branches live in the common git dir of a worktree; loose refs first, then packed ones.
  const commonDir = resolve(gitDir, readText(join(gitDir, 'commondir')) ?? '.');
  for (const base of new Set([gitDir, commonDir])) {
    const loose = readText(join(base, ref));
    if (loose !== undefined && COMMIT_RE.test(loose)) return loose;
  }
  for (const line of (readText(join(commonDir, 'packed-refs')) ?? '').split('\n')) {
    const [commit, name] = line.split(' ');
    if (name === ref && commit !== undefined && COMMIT_RE.test(commit)) return commit;
  }
  return undefined;
}

/** The commit `npm pack` stamped into dist/build.json (scripts/prepack.ts), in an installed package. */
function packedCommit(): string | undefined {
  const text = readText(join(PACKAGE_DIR, 'dist', 'build.json'));
  if (text === undefined) return undefined;
  try {
    const commit = (JSON.parse(text) as { commit?: unknown }).commit;
    return typeof commit === 'string' && COMMIT_RE.test(commit) ? commit : undefined;
  } catch {
    return undefined;
  }
}

/**
 * This build: the version, and the commit from `.git` (else the one stamped at pack time), else
 * `env.QK_COMMIT`, else `unknown`.
 * @param env the environment, for `QK_COMMIT` (src/main.ts hands it over; CONTRIBUTING.md rule 1)
 * @param options.checkout where to look for `.git` (tests). @default the package's folder, read once
 */
export function readBuildInfo(env: Readonly<Record<string, string | undefined>> = {}, options: { checkout?: string } = {}): BuildInfo {
  let commit: string | undefined;
  if (options.checkout !== undefined) commit = gitHeadCommit(options.checkout);
  else {
    if (gitCommit === undefined) gitCommit = gitHeadCommit(PACKAGE_DIR) ?? packedCommit() ?? null;
    commit = gitCommit ?? undefined;
  }
  const fromEnv = env[COMMIT_ENV]?.trim();
  return { version: packageVersion(), commit: commit ?? (fromEnv ? fromEnv : 'unknown') };
}
