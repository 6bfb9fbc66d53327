/**
 * The chain of `npm start` / `quorumkeep local` (docs/web3.md, "Local chain"): by default anvil on
 * 127.0.0.1, its state under `<dir>/chain/`, with the secrets controller deployed on the first run and
 * the syncer whitelisted and funded on every run; or an existing chain and controller
 * (`--chain-rpc-url`, `--controller`); or none (`--no-chain`, or anvil unavailable on this machine).
 * The result is the `chains` entry every node of the local cluster gets, one of them as the syncer.
 */
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError, chainSchema, type ChainConfig } from '../config/index.ts';
import { ANVIL_CHAIN_ID, findAnvilBinary, startAnvil } from '../evm/anvil.ts';
import { adminFailureReason, createChainReader, createControllerAdmin } from '../evm/controller-admin.ts';

/** Where the local cluster's chain comes from. */
export type LocalChainChoice =
  /** No chain: the nodes keep the chains of their configs (Base by default, without a controller). */
  | { kind: 'none' }
  /**
   * anvil, started and stopped with the cluster. `port` 0 takes a free one. `binary` overrides the npm
   * package's (`QK_ANVIL_BIN`).
   */
  | { kind: 'anvil'; port: number; binary?: string }
  /** An existing chain with a deployed controller; the syncer must be whitelisted and funded there. */
  | { kind: 'external'; rpcUrl: string; controller: string; startBlock?: number };

/** The node that syncs secrets on the chain: slot 0, a coordinator. */
export interface LocalChainSyncer {
  id: string;
  /** Its `nodeAddress` (the address of its signing key). */
  nodeAddress: string;
}

/** A chain the local cluster uses. */
export interface LocalChain {
  kind: 'anvil' | 'external';
  /** The entry of every node's `chains` (the syncer's with `syncer: true`). */
  entry: ChainConfig;
  syncer: LocalChainSyncer;
  /** anvil's state file, for a local chain. */
  stateFile?: string;
  /** Resolves when anvil exits, for a local chain (a clean stop included). */
  exited?: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Stop anvil (it writes its state); nothing for an external chain. Idempotent. */
  stop(): Promise<void>;
}

/** The local chain's display name. */
export const LOCAL_CHAIN_NAME = 'Local (anvil)';
/**
 * anvil mines a block per transaction at once, and an empty one every this many seconds: the head
 * keeps moving (a Web3 string is single-use per block, docs/web3.md, "Web3 secrets", Limits), while the
 * state file, which holds every block, grows slowly enough for a development chain (its size per day:
 * docs/web3.md, "Local chain").
 */
const LOCAL_BLOCK_TIME_SECONDS = 5;
/**
 * The chain entry's `blockTimeMs`: how often the nodes poll the head and the events. Shorter than the
 * interval blocks because transactions mine at once; the freshness window is then 600 blocks.
 */
const LOCAL_POLL_MS = 1000;
/** anvil writes its state on exit, and this often while it runs (a crash of the machine loses at most this much). */
const STATE_INTERVAL_SECONDS = 30;
/** Loading a long-lived state file takes a while. */
const ANVIL_START_TIMEOUT_MS = 60_000;
/** The syncer is topped up to this when it has less than {@link SYNCER_LOW_WEI}, wei. */
const SYNCER_FUNDING_WEI = 10n * 10n ** 18n;
const SYNCER_LOW_WEI = 10n ** 18n;
/** anvil's polling for receipts: it mines at once. */
const LOCAL_POLLING_MS = 100;

/** The local chain's record under `<dir>/chain/`: which controller the cluster uses on it. */
interface LocalChainRecord {
  chainId: number;
  secretsControllerAddress: `0x${string}`;
  startBlock: number;
}

/** Options of {@link startLocalChain}. */
export interface StartLocalChainOptions {
  /** The local cluster's folder: the chain lives in `<dir>/chain/`. */
  dir: string;
  syncer: LocalChainSyncer;
  /** One line for the operator (e.g. anvil unavailable: no chain). */
  notice(line: string): void;
}

/**
 * Start or reach the chain `choice` names and make it ready for the cluster: for anvil, deploy the
 * controller on the first run and whitelist and fund the syncer; for an existing chain, check the
 * controller and say what the syncer lacks. Undefined: no chain (`none`, or anvil unavailable here).
 */
export async function startLocalChain(choice: LocalChainChoice, options: StartLocalChainOptions): Promise<LocalChain | undefined> {
  if (choice.kind === 'none') return undefined;
  if (choice.kind === 'external') return externalChain(choice, options);

  const binary = findAnvilBinary(choice.binary);
  if ('unavailable' in binary) {
    options.notice(`no local chain (Web3 needs one: --chain-rpc-url and --controller, or QK_CHAINS): ${binary.unavailable}`);
    return undefined;
  }
  const chainDir = join(options.dir, 'chain');
  const stateFile = join(chainDir, 'anvil-state.json');
  const recordFile = join(chainDir, 'chain.json');
  await mkdir(chainDir, { recursive: true });
  const record = await readRecord(recordFile);
  if (record && !existsSync(stateFile)) {
    // A new chain would number its secrets from 1 again, under ids the cluster has keyed already,
    // and the syncer's cursor would be ahead of its head.
    throw new ConfigError(
      `local: the local chain's state ${stateFile} is gone, but the cluster under ${options.dir} has used that chain (${recordFile}): restore the file, start with --no-chain, or use a new --dir`,
    );
  }

  const anvil = await startAnvil({
    binary: binary.path,
    chainId: ANVIL_CHAIN_ID,
    port: choice.port,
    blockTimeSeconds: LOCAL_BLOCK_TIME_SECONDS,
    mixedMining: true,
    stateFile,
    stateIntervalSeconds: STATE_INTERVAL_SECONDS,
    startTimeoutMs: ANVIL_START_TIMEOUT_MS,
  }).catch((err: unknown) => {
    throw new ConfigError(`local: the local chain (anvil) did not start on 127.0.0.1:${choice.port}: ${lastLine(err)} (another chain on that port? --chain-port <n>, or --no-chain)`, undefined, { cause: err });
  });
  try {
    const deployer = anvil.accounts[0];
    if (!deployer) throw new Error(`anvil printed no dev accounts:\n${anvil.output()}`);
    const admin = createControllerAdmin({ rpcUrl: anvil.rpcUrl, privateKey: deployer.privateKey, pollingIntervalMs: LOCAL_POLLING_MS });
    let current = record;
    if (current) {
      if (!(await admin.hasCode(current.secretsControllerAddress))) {
        throw new ConfigError(`local: the local chain's state ${stateFile} has no controller at ${current.secretsControllerAddress} (${recordFile}): restore the file, start with --no-chain, or use a new --dir`);
      }
    } else {
      const deployed = await admin.deploy();
      current = { chainId: deployed.chainId, secretsControllerAddress: deployed.address, startBlock: deployed.blockNumber };
      await writeRecord(recordFile, current);
    }
    const syncer = options.syncer.nodeAddress as `0x${string}`;
    if (!(await admin.isWhitelisted(current.secretsControllerAddress, syncer))) await admin.whitelist(current.secretsControllerAddress, syncer);
    if ((await admin.balance(syncer)) < SYNCER_LOW_WEI) await admin.fund(syncer, SYNCER_FUNDING_WEI);
    const entry = chainSchema.parse({
      chainId: ANVIL_CHAIN_ID,
      name: LOCAL_CHAIN_NAME,
      rpcUrl: anvil.rpcUrl,
      secretsControllerAddress: current.secretsControllerAddress,
      blockTimeMs: LOCAL_POLL_MS,
      // anvil never reorganises: secrets are keyed as soon as they are created.
      confirmations: 0,
      startBlock: current.startBlock,
    });
    return { kind: 'anvil', entry, syncer: options.syncer, stateFile, exited: anvil.exited, stop: () => anvil.stop() };
  } catch (err) {
    await anvil.stop();
    if (err instanceof ConfigError) throw err;
    throw new ConfigError(`local: setting up the local chain failed: ${adminFailureReason(err)}`, undefined, { cause: err });
  }
}

/** An existing chain: its id from the RPC, the controller checked, the syncer's whitelisting and gas reported. */
async function externalChain(choice: Extract<LocalChainChoice, { kind: 'external' }>, options: StartLocalChainOptions): Promise<LocalChain> {
  const controller = choice.controller as `0x${string}`;
  const reader = createChainReader({ rpcUrl: choice.rpcUrl });
  try {
    const chainId = await reader.chainId();
    if (!(await reader.hasCode(controller))) throw new ConfigError(`local: --controller: chain ${chainId} has no contract at ${choice.controller}`, 'controller');
    const syncer = options.syncer.nodeAddress as `0x${string}`;
    if (!(await reader.isWhitelisted(controller, syncer))) {
      options.notice(`the syncer ${options.syncer.id} (${syncer}) is not whitelisted by ${controller}: its owner must call addWhitelistedBlackBox(${syncer}) before secrets created there are keyed`);
    }
    if ((await reader.balance(syncer)) === 0n) options.notice(`the syncer ${options.syncer.id} (${syncer}) has no ETH on chain ${chainId} for gas: send it some`);
    const entry = chainSchema.parse({
      chainId,
      name: `chain ${chainId}`,
      rpcUrl: choice.rpcUrl,
      secretsControllerAddress: controller,
      blockTimeMs: await reader.estimateBlockTimeMs(),
      startBlock: choice.startBlock ?? 0,
    });
    return { kind: 'external', entry, syncer: options.syncer, stop: async () => undefined };
  } catch (err) {
    if (err instanceof ConfigError) throw err;
    throw new ConfigError(`local: --chain-rpc-url: cannot use the chain: ${adminFailureReason(err)}`, 'chainRpcUrl', { cause: err });
  }
}

async function readRecord(file: string): Promise<LocalChainRecord | undefined> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  const bad = () => new ConfigError(`local: ${file} is not a local chain record (chainId, secretsControllerAddress, startBlock): restore it, or use a new --dir`);
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw bad();
  }
  const parsed = chainSchema.pick({ chainId: true, secretsControllerAddress: true, startBlock: true }).safeParse(json);
  if (!parsed.success || parsed.data.secretsControllerAddress === undefined) throw bad();
  return { chainId: parsed.data.chainId, secretsControllerAddress: parsed.data.secretsControllerAddress as `0x${string}`, startBlock: parsed.data.startBlock };
}

async function writeRecord(file: string, record: LocalChainRecord): Promise<void> {
  const temp = `${file}.tmp`;
  await writeFile(temp, JSON.stringify(record, null, 2) + '\n');
  await rename(temp, file);
}

/** The last line of an error's message: anvil's own complaint closes the output it carries. */
function lastLine(err: unknown): string {
  const lines = (err instanceof Error ? err.message : String(err)).split('\n').map((l) => l.trim()).filter((l) => l !== '');
  return lines.at(-1) ?? 'unknown error';
}

