/**
 * `quorumkeep local` (what `npm start` runs) as a real child process, and what a wallet of its local
 * chain needs: the chain id, anvil's dev mnemonic, viem's description of the chain
 * (docs/web3.md, "Local chain").
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { defineChain, type Chain } from 'viem';
import { waitFor } from '../../src/testing/index.ts';
import type { cleanupStack } from './temp.ts';

const REPO = join(import.meta.dirname, '../..');
/** The local chain's id: anvil's own. */
export const LOCAL_CHAIN_ID = 31337;
/** anvil's dev accounts come from this mnemonic: a wallet of the local chain, as a client would hold it. */
export const ANVIL_MNEMONIC = 'test test test test test test test test test test test junk';
const START_TIMEOUT_MS = 60_000;

/** A running `quorumkeep local`. */
export interface LocalProcess {
  child: ChildProcess;
  /** Everything it printed so far, stdout and stderr. */
  output(): string;
  /** Coordinator URLs, as printed. */
  coordinators: string[];
  exited: Promise<number | null>;
}

/** Where {@link startLocal} runs the CLI from. */
export interface LocalCli {
  /** The CLI's entry script. @default src/main.ts of this checkout */
  entry?: string;
  /** Its working directory. @default this checkout */
  cwd?: string;
  /** How long it may take to say it runs, ms. @default 60 s */
  timeoutMs?: number;
}

/**
 * `node src/main.ts local --dir <dir> …` (or another entry: an installed package's bin) with only the
 * given QK_ variables; resolves once it says it runs. The stack kills it (SIGKILL) if it still runs then.
 */
export async function startLocal(stack: ReturnType<typeof cleanupStack>, dir: string, args: string[], env: Record<string, string> = {}, cli: LocalCli = {}): Promise<LocalProcess> {
  const baseEnv = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('QK_')));
  const child = spawn(process.execPath, [cli.entry ?? 'src/main.ts', 'local', '--dir', dir, ...args], {
    cwd: cli.cwd ?? REPO,
    env: { ...baseEnv, QK_LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
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
    { timeoutMs: cli.timeoutMs ?? START_TIMEOUT_MS, intervalMs: 50, description: `quorumkeep local to start:\n${out}` },
  ).catch((err: unknown) => {
    throw new Error(`${(err as Error).message}\n${out}`);
  });
  const coordinators = [...out.matchAll(/^coordinator (\S+)$/gm)].map((m) => m[1]!);
  return { child, output: () => out, coordinators, exited };
}

/** viem's description of the local chain behind `rpcUrl`. */
export function localViemChain(rpcUrl: string): Chain {
  return defineChain({ id: LOCAL_CHAIN_ID, name: 'local', nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 }, rpcUrls: { default: { http: [rpcUrl] } } });
}

/** Ctrl-C: the cluster (and its chain) stop; the exit code. */
export async function interrupt(local: LocalProcess): Promise<number | null> {
  local.child.kill('SIGINT');
  return local.exited;
}
