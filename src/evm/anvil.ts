/**
 * anvil, Foundry's local EVM node, as a child process: the chain `npm start` runs (docs/web3.md,
 * "Local chain") and the tests' chain (test/utils/anvil.ts). The binary comes from the npm platform
 * package `@foundry-rs/anvil-linux-amd64` (Linux x64 only), or from `QK_ANVIL_BIN`.
 *
 * anvil is never left behind: it runs under a small `sh` watchdog in a process group of its own, and
 * the watchdog sends it SIGTERM as soon as its stdin — a pipe from this process — closes, whether
 * this process stopped it or died (even by SIGKILL). anvil writes its `--state` file on SIGTERM.
 * Being in its own process group, it does not get the terminal's Ctrl-C either: the local cluster
 * stops its nodes first, then the chain.
 */
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import type { Address, Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';

/** The npm package whose binary is used (a devDependency: docs/web3.md, "Where anvil comes from"). */
export const ANVIL_PACKAGE = '@foundry-rs/anvil-linux-amd64';
/** anvil's default chain id, the local chain's: it collides with no public chain (nor the default Base entry). */
export const ANVIL_CHAIN_ID = 31337;
const DEFAULT_START_TIMEOUT_MS = 10_000;
const DEFAULT_STOP_TIMEOUT_MS = 10_000;
// Enough of anvil's output for a failure message: it logs one line per RPC call.
const OUTPUT_TAIL_CHARS = 16_384;
const RPC_PROBE_INTERVAL_MS = 50;

/**
 * The watchdog: `$0` is anvil, `"$@"` its arguments. fd 3 keeps the parent's pipe; the background
 * reader returns when it closes and sends anvil SIGTERM. A SIGTERM to the watchdog itself is passed
 * on too; it exits with anvil's status once anvil is gone.
 */
const WATCHDOG_SCRIPT = [
  'exec 3<&0',
  '"$0" "$@" </dev/null 3<&- &',
  'anvil=$!',
  '(read -r _ <&3; kill -TERM "$anvil" 2>/dev/null) &',
  'watcher=$!',
  'exec 3<&-',
  `trap 'kill -TERM "$anvil" 2>/dev/null' TERM INT HUP`,
  'while :; do wait "$anvil"; status=$?; kill -0 "$anvil" 2>/dev/null || break; done',
  'kill "$watcher" 2>/dev/null',
  'exit "$status"',
].join('\n');

/** Where the anvil binary is, or why there is none on this machine. */
export type AnvilBinary = { path: string } | { unavailable: string };

/**
 * The anvil binary: `override` (`QK_ANVIL_BIN`) when set, else the npm platform package's — which
 * exists on Linux x64 only, and only where devDependencies are installed (a checkout, not a
 * production install). Never throws: `unavailable` says why in one sentence.
 */
export function findAnvilBinary(override?: string): AnvilBinary {
  if (override) return existsSync(override) ? { path: override } : { unavailable: `QK_ANVIL_BIN names ${override}, which does not exist` };
  const elsewhere = 'install Foundry and set QK_ANVIL_BIN to its anvil (docs/web3.md, "Where anvil comes from")';
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    return { unavailable: `${ANVIL_PACKAGE} runs on Linux x64 only (this is ${process.platform}-${process.arch}): ${elsewhere}` };
  }
  let packageJson: string;
  try {
    packageJson = createRequire(import.meta.url).resolve(`${ANVIL_PACKAGE}/package.json`);
  } catch {
    return { unavailable: `${ANVIL_PACKAGE} is not installed (a development dependency: npm install in the checkout), or ${elsewhere}` };
  }
  const path = join(dirname(packageJson), 'bin', 'anvil');
  return existsSync(path) ? { path } : { unavailable: `${path} is missing: reinstall ${ANVIL_PACKAGE}` };
}

/** One of anvil's prefunded dev accounts (10 000 ETH each, from the "test … junk" mnemonic). */
export interface DevAccount {
  address: Address;
  privateKey: Hex;
}

/** Options of {@link startAnvil}. */
export interface AnvilOptions {
  /** The anvil binary ({@link findAnvilBinary}). */
  binary: string;
  /** `--chain-id`. */
  chainId: number;
  /** Bind address. @default "127.0.0.1" */
  host?: string;
  /** Port; 0 takes a free one (read back from anvil's `Listening on` line). @default 0 */
  port?: number;
  /** Mine a block every this many seconds (`--block-time`). Unset: a block per transaction only. */
  blockTimeSeconds?: number;
  /** With `blockTimeSeconds`: also mine a block per transaction at once (`--mixed-mining`). @default false */
  mixedMining?: boolean;
  /** Load the chain from this file when it exists, and write it there on exit (`--state`). */
  stateFile?: string;
  /** With `stateFile`: also write it every this many seconds (`--state-interval`). */
  stateIntervalSeconds?: number;
  /** Give up when anvil does not answer within this long, ms. @default 10000 */
  startTimeoutMs?: number;
  /** SIGKILL anvil when it has not exited this long after {@link AnvilProcess.stop}, ms. @default 10000 */
  stopTimeoutMs?: number;
}

/** A running anvil. */
export interface AnvilProcess {
  chainId: number;
  /** `http://<host>:<port>` */
  rpcUrl: string;
  /** `ws://<host>:<port>` (same port). */
  wsUrl: string;
  port: number;
  /** The prefunded dev accounts, in anvil's order. */
  accounts: readonly DevAccount[];
  /** anvil's startup banner and the tail of its log, for failure messages. */
  output(): string;
  /** Resolves when anvil has exited, however: `code` and `signal` of the watchdog. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** SIGTERM (anvil writes its state file), wait for the exit; SIGKILL after `stopTimeoutMs`. Idempotent. */
  stop(): Promise<void>;
}

/**
 * Start anvil on `host:port` under the watchdog, read the port it took and its dev accounts from its
 * banner, and return once its RPC answers. Fails (anvil stopped) when it exits first — e.g. the port is
 * taken, or the state file cannot be loaded — or does not answer within `startTimeoutMs`; the error
 * carries anvil's output.
 */
export async function startAnvil(options: AnvilOptions): Promise<AnvilProcess> {
  const host = options.host ?? '127.0.0.1';
  const args = ['--host', host, '--port', String(options.port ?? 0), '--chain-id', String(options.chainId), '--accounts', '10'];
  if (options.blockTimeSeconds !== undefined) args.push('--block-time', String(options.blockTimeSeconds));
  if (options.mixedMining) args.push('--mixed-mining');
  if (options.stateFile !== undefined) {
    args.push('--state', options.stateFile);
    if (options.stateIntervalSeconds !== undefined) args.push('--state-interval', String(options.stateIntervalSeconds));
  }
  const startTimeoutMs = options.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS;
  const stopTimeoutMs = options.stopTimeoutMs ?? DEFAULT_STOP_TIMEOUT_MS;
  const child: ChildProcessByStdio<Writable, Readable, Readable> = spawn('sh', ['-c', WATCHDOG_SCRIPT, options.binary, ...args], {
    stdio: ['pipe', 'pipe', 'pipe'],
    detached: true,
  });
  // The pipe is only ever closed, never written: a write error after the watchdog died means nothing.
  child.stdin.on('error', () => undefined);

  let banner = '';
  let tail = '';
  let listening = false;
  const output = () => (tail ? `${banner}\n…\n${tail}` : banner);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolveExit) => {
    child.once('exit', (code, signal) => resolveExit({ code, signal }));
    child.once('error', () => resolveExit({ code: null, signal: null }));
  });

  const stopChild = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) {
      child.stdin.end();
      const timer = setTimeout(() => killGroup(child.pid!, 'SIGKILL'), stopTimeoutMs);
      await exited;
      clearTimeout(timer);
    }
    child.stdout.destroy();
    child.stderr.destroy();
  };

  let port: number;
  try {
    port = await new Promise<number>((resolvePort, reject) => {
      const timer = setTimeout(() => reject(new Error(`anvil did not listen within ${startTimeoutMs} ms`)), startTimeoutMs);
      const onData = (data: Buffer) => {
        if (!listening) banner += data.toString();
        else tail = (tail + data.toString()).slice(-OUTPUT_TAIL_CHARS);
        // Up to the line end: a chunk may stop in the middle of the port number.
        const match = listening ? null : /Listening on [^\s]+:(\d+)\r?\n/.exec(banner);
        if (match) {
          listening = true;
          clearTimeout(timer);
          resolvePort(Number(match[1]));
        }
      };
      child.stdout.on('data', onData);
      child.stderr.on('data', onData);
      child.once('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
      void exited.then(({ code, signal }) => {
        clearTimeout(timer);
        reject(new Error(`anvil exited (${code ?? signal}) before listening`));
      });
    });
  } catch (err) {
    await stopChild();
    throw new Error(`${(err as Error).message}\n${output()}`, { cause: err });
  }

  const rpcHost = host === '0.0.0.0' ? '127.0.0.1' : host;
  const rpcUrl = `http://${rpcHost}:${port}`;
  let stopping: Promise<void> | undefined;
  const anvil: AnvilProcess = {
    chainId: options.chainId,
    rpcUrl,
    wsUrl: `ws://${rpcHost}:${port}`,
    port,
    accounts: parseDevAccounts(banner),
    output,
    exited,
    stop: () => (stopping ??= stopChild()),
  };
  try {
    // "Listening" is printed once the socket is bound; one answered call proves the RPC is up.
    await waitForRpc(rpcUrl, startTimeoutMs, exited);
  } catch (err) {
    await anvil.stop();
    throw new Error(`anvil's RPC did not answer: ${(err as Error).message}\n${output()}`, { cause: err });
  }
  return anvil;
}

function killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    // The watchdog leads its own process group (detached): the group is the watchdog and anvil.
    process.kill(-pid, signal);
  } catch {
    // Gone already.
  }
}

/** Until `eth_chainId` answers at `rpcUrl`; fails at the deadline or when anvil exits. */
async function waitForRpc(rpcUrl: string, timeoutMs: number, exited: Promise<unknown>): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let gone = false;
  void exited.then(() => (gone = true));
  let lastError: unknown;
  while (!gone && Date.now() < deadline) {
    try {
      const response = await fetch(rpcUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] }),
        signal: AbortSignal.timeout(Math.max(1, deadline - Date.now())),
      });
      if (response.ok) return;
      lastError = new Error(`HTTP ${response.status}`);
    } catch (err) {
      lastError = err;
    }
    await new Promise((r) => setTimeout(r, RPC_PROBE_INTERVAL_MS));
  }
  throw new Error(gone ? 'anvil exited' : `no answer within ${timeoutMs} ms (${(lastError as Error | undefined)?.message ?? 'no attempt'})`);
}

/** The private keys anvil prints under "Private Keys" (`(i) 0x<64 hex>`; address lines have 40). */
function parseDevAccounts(banner: string): DevAccount[] {
  const keys = [...banner.matchAll(/^\(\d+\) (0x[0-9a-fA-F]{64})\s*$/gm)].map((m) => m[1] as Hex);
  return keys.map((privateKey) => ({ address: privateKeyToAccount(privateKey).address, privateKey }));
}
