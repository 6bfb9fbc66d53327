/**
 * System tools that `npm ci` does not install — Chromium, `ip` and `iptables`, `promtool`, `unzip`,
 * `git` — and the tests that need them. A developer's `npm test` on a fresh machine passes without
 * them: such a test skips with one line naming what is missing. CI (`CI` set; `.ci/run` installs the
 * tools) never skips: there a missing tool fails the test that needs it.
 */
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

/** What a probe finds: `undefined` when the tool is there, else what is missing (a few words). */
export type ToolProbe = () => string | undefined;

/** A test's need of a system tool. */
export interface ToolNeed {
  /** The tests needing the tool skip: it is missing and `CI` is not set. */
  readonly skip: boolean;
  /** What is missing, or `undefined` when everything is there. */
  readonly missing: string | undefined;
  /** Throws naming what is missing, so that under CI a missing tool fails with that and not deep in the test. */
  assertPresent(): void;
}

/**
 * `test` needs `what` (e.g. "Debian's chromium"): probe once, and print the one-line notice when the
 * test skips.
 * @param env where `CI` is read. @default process.env
 */
export function requireTool(test: string, what: string, probe: ToolProbe, env: NodeJS.ProcessEnv = process.env): ToolNeed {
  const missing = probe();
  const skip = missing !== undefined && !env['CI'];
  // Straight to stderr: one line, not a console block.
  if (skip) process.stderr.write(`${test}: skipped, needs ${what} (${missing}); with CI set it runs, and fails\n`);
  return {
    skip,
    missing,
    assertPresent() {
      if (missing !== undefined) throw new Error(`${test} needs ${what} (${missing}): .ci/run installs the tests' tools`);
    },
  };
}

/** The executable `command` on PATH, or undefined. */
export function findOnPath(command: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  for (const dir of (env['PATH'] ?? '').split(delimiter)) {
    if (dir === '') continue;
    const path = join(dir, command);
    try {
      accessSync(path, constants.X_OK);
      return path;
    } catch {
      // Not in this directory.
    }
  }
  return undefined;
}

/** Probe: every one of `commands` is an executable on PATH. */
export function onPath(...commands: string[]): ToolProbe {
  return () => {
    const absent = commands.filter((command) => findOnPath(command) === undefined);
    return absent.length > 0 ? `${absent.join(' and ')} not on PATH` : undefined;
  };
}

/** Probe: this process runs as root (network namespaces and iptables rules need it). */
export const asRoot: ToolProbe = () => (process.getuid?.() === 0 ? undefined : 'not root');

/** Probe: every probe finds its part; else what all of them miss. */
export function allOf(...probes: ToolProbe[]): ToolProbe {
  return () => {
    const missing = probes.map((probe) => probe()).filter((m): m is string => m !== undefined);
    return missing.length > 0 ? missing.join('; ') : undefined;
  };
}
