/**
 * `quorumkeep local` (what `npm start` runs) as a real child process: started, read while it runs,
 * interrupted as a person would with Ctrl-C.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { waitFor } from '../../src/testing/index.ts';
import type { cleanupStack } from './temp.ts';

const REPO = join(import.meta.dirname, '../..');
/** Bounds the wait for a first run (cluster init, a chain deployed, every node started). */
const START_TIMEOUT_MS = 60_000;

/** A running `quorumkeep local`. */
export interface LocalProcess {
  child: ChildProcess;
  /** stdout and stderr so far. */
  output(): string;
  /** Coordinator URLs, as printed. */
  coordinators: string[];
  exited: Promise<number | null>;
}

/**
 * `node src/main.ts local --dir <dir> …` with only the given QK_ variables (log level `warn` unless
 * they say otherwise); resolves once it says how to stop it. The stack kills it if still running.
 */
export async function startLocal(stack: ReturnType<typeof cleanupStack>, dir: string, args: string[], env: Record<string, string> = {}): Promise<LocalProcess> {
  const baseEnv = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('QK_')));
  const child = spawn(process.execPath, ['src/main.ts', 'local', '--dir', dir, ...args], { cwd: REPO, env: { ...baseEnv, QK_LOG_LEVEL: 'warn', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  let gone = false;
  void exited.then(() => (gone = true));
  stack.push(async () => {
    if (!gone) child.kill('SIGKILL');
    await exited;
  });
  await waitFor(
    () => {
      if (gone) throw new Error(`quorumkeep local exited:\n${out}`);
      return out.includes('press Ctrl-C');
    },
    { timeoutMs: START_TIMEOUT_MS, intervalMs: 50, description: `quorumkeep local to start:\n${out}` },
  ).catch((err: unknown) => {
    throw new Error(`${(err as Error).message}\n${out}`);
  });
  const coordinators = [...out.matchAll(/^coordinator (\S+)$/gm)].map((m) => m[1]!);
  return { child, output: () => out, coordinators, exited };
}

/** Ctrl-C: the cluster (and its chain) stop; the exit code. */
export async function interrupt(local: LocalProcess): Promise<number | null> {
  local.child.kill('SIGINT');
  return local.exited;
}
