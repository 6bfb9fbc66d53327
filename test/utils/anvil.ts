/**
 * A real local chain for Web3 tests: anvil (Foundry's dev node) from the npm platform package, one
 * per suite on a free port, and helpers that deploy and drive the test secrets controller
 * (contracts/SecretsController.sol, compiled into src/evm/artifacts/secrets-controller.json and
 * read through `secretsControllerArtifact` of src/evm).
 * docs/web3.md § "Test chain" says where the binary comes from and how to run elsewhere.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import {
  BaseError,
  ContractFunctionRevertedError,
  createPublicClient,
  createTestClient,
  createWalletClient,
  defineChain,
  http,
  parseEther,
  parseEventLogs,
  type Address,
  type Chain,
  type Hex,
  type PublicClient,
  type TestClient,
  type TransactionReceipt,
  type Transport,
  type WalletClient,
} from 'viem';
import { privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import { secretsControllerAbi } from '../../src/evm/secrets-controller-abi.ts';
import { secretsControllerArtifact } from '../../src/evm/secrets-controller-artifact.ts';
import { waitFor } from '../../src/testing/wait.ts';

/** Environment variable naming an anvil binary to use instead of the npm package's. */
export const ANVIL_BIN_ENV = 'QK_ANVIL_BIN';
/** The chain the tests pretend to be: Base, the default in the chain list. */
export const DEFAULT_TEST_CHAIN_ID = 8453;
const ANVIL_PACKAGE = '@foundry-rs/anvil-linux-amd64';
const START_TIMEOUT_MS = 10_000;
const STOP_TIMEOUT_MS = 5_000;
// Clients poll for receipts and blocks; viem's 4 s default would dominate every test.
const POLLING_INTERVAL_MS = 50;
// Enough of anvil's output for a failure message: it logs one line per RPC call.
const OUTPUT_TAIL_CHARS = 16_384;

/** One of anvil's prefunded dev accounts (10 000 ETH each, from the "test … junk" mnemonic). */
export interface DevAccount {
  address: Address;
  privateKey: Hex;
}

/** Options of {@link startAnvil}. */
export interface AnvilOptions {
  /** `--chain-id`. @default 8453 */
  chainId?: number;
  /** Mine a block every this many seconds (`--block-time`). Unset: a block per transaction. */
  blockTimeSeconds?: number;
}

/** A running anvil. */
export interface AnvilChain {
  chainId: number;
  /** `http://127.0.0.1:<port>` */
  rpcUrl: string;
  /** `ws://127.0.0.1:<port>` (same port). */
  wsUrl: string;
  /** The prefunded dev accounts, in anvil's order; `accounts[0]` deploys and owns the controller. */
  accounts: readonly DevAccount[];
  /** viem's description of this chain. */
  chain: Chain;
  publicClient: PublicClient<Transport, Chain>;
  /** anvil's cheat methods (`anvil_mine`, `anvil_setBalance`, …). */
  testClient: TestClient<'anvil', Transport, Chain>;
  /** A client that signs as `privateKey`. */
  walletClient(privateKey: Hex): WalletClient<Transport, Chain, PrivateKeyAccount>;
  /** anvil's startup banner and the tail of its log, for failure messages. */
  output(): string;
  /** SIGTERM and wait for the exit (SIGKILL after 5 s). Idempotent. */
  stop(): Promise<void>;
}

/**
 * The anvil binary: `$QK_ANVIL_BIN` if set, else the one in the npm platform package (Linux x64
 * only — the package is a plain devDependency, so `npm ci` refuses other platforms).
 */
export function resolveAnvilBinary(): string {
  const override = process.env[ANVIL_BIN_ENV];
  if (override) return override;
  const unavailable = `anvil from ${ANVIL_PACKAGE} runs on Linux x64 only (this is ${process.platform}-${process.arch}): install Foundry and set ${ANVIL_BIN_ENV} to its anvil binary (docs/web3.md § "Test chain")`;
  if (process.platform !== 'linux' || process.arch !== 'x64') throw new Error(unavailable);
  let packageJson: string;
  try {
    packageJson = createRequire(import.meta.url).resolve(`${ANVIL_PACKAGE}/package.json`);
  } catch {
    throw new Error(`${ANVIL_PACKAGE} is not installed (run npm ci); or ${unavailable}`);
  }
  const binary = join(dirname(packageJson), 'bin', 'anvil');
  if (!existsSync(binary)) throw new Error(`${binary} is missing; reinstall ${ANVIL_PACKAGE}`);
  return binary;
}

/**
 * Start anvil on 127.0.0.1 with `--port 0`, read the port it took from its `Listening on` line and
 * return once `eth_blockNumber` answers (about 0.1 s). Stop it in `afterAll`.
 */
export async function startAnvil(options: AnvilOptions = {}): Promise<AnvilChain> {
  const chainId = options.chainId ?? DEFAULT_TEST_CHAIN_ID;
  const args = ['--host', '127.0.0.1', '--port', '0', '--chain-id', String(chainId), '--accounts', '10'];
  if (options.blockTimeSeconds !== undefined) args.push('--block-time', String(options.blockTimeSeconds));
  const child = spawn(resolveAnvilBinary(), args, { stdio: ['ignore', 'pipe', 'pipe'] });
  // A crashed test process must not leave anvil behind.
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);

  let banner = '';
  let tail = '';
  let listening = false;
  const output = () => (tail ? `${banner}\n…\n${tail}` : banner);
  const append = (text: string) => {
    if (!listening) banner += text;
    else tail = (tail + text).slice(-OUTPUT_TAIL_CHARS);
  };

  const stopChild = async () => {
    process.removeListener('exit', killOnExit);
    if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((r) => child.once('exit', () => r()));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
    await exited;
    clearTimeout(timer);
  };

  let port: number;
  try {
    port = await new Promise<number>((resolvePort, reject) => {
      const timer = setTimeout(() => reject(new Error(`anvil did not listen within ${START_TIMEOUT_MS} ms`)), START_TIMEOUT_MS);
      const onData = (data: Buffer) => {
        append(data.toString());
        // Up to the line end: a chunk may stop in the middle of the port number.
        const match = /Listening on [^\s:]+:(\d+)\r?\n/.exec(banner);
        if (!listening && match) {
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
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`anvil exited (${code ?? signal}) before listening`));
      });
    });
  } catch (err) {
    await stopChild();
    throw new Error(`${(err as Error).message}\n${output()}`, { cause: err });
  }

  const accounts = parseDevAccounts(banner);
  const rpcUrl = `http://127.0.0.1:${port}`;
  const wsUrl = `ws://127.0.0.1:${port}`;
  const chain = defineChain({
    id: chainId,
    name: `anvil ${chainId}`,
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [rpcUrl], webSocket: [wsUrl] } },
  });
  const transport = http(rpcUrl);
  const publicClient = createPublicClient({ chain, transport, pollingInterval: POLLING_INTERVAL_MS });
  const testClient = createTestClient({ mode: 'anvil', chain, transport, pollingInterval: POLLING_INTERVAL_MS });

  let stopping: Promise<void> | undefined;
  const anvil: AnvilChain = {
    chainId,
    rpcUrl,
    wsUrl,
    accounts,
    chain,
    publicClient,
    testClient,
    walletClient: (privateKey) =>
      createWalletClient({ account: privateKeyToAccount(privateKey), chain, transport, pollingInterval: POLLING_INTERVAL_MS }),
    output,
    stop: () => (stopping ??= stopChild()),
  };
  try {
    // "Listening" is printed once the socket is bound; one answered call proves the RPC is up.
    await waitForRpc(publicClient);
  } catch (err) {
    await anvil.stop();
    throw new Error(`anvil's RPC did not answer: ${(err as Error).message}\n${output()}`, { cause: err });
  }
  return anvil;
}

async function waitForRpc(client: PublicClient<Transport, Chain>): Promise<void> {
  await waitFor(() => client.getBlockNumber({ cacheTime: 0 }).then(() => true), { timeoutMs: START_TIMEOUT_MS, description: 'eth_blockNumber answers' });
}

/** The private keys anvil prints under "Private Keys" (`(i) 0x<64 hex>`; address lines have 40). */
function parseDevAccounts(banner: string): DevAccount[] {
  const keys = [...banner.matchAll(/^\(\d+\) (0x[0-9a-fA-F]{64})\s*$/gm)].map((m) => m[1] as Hex);
  if (keys.length === 0) throw new Error(`no dev accounts in anvil's banner:\n${banner}`);
  return keys.map((privateKey) => ({ address: privateKeyToAccount(privateKey).address, privateKey }));
}

// --- The test secrets controller ---

/** Options of {@link deployController}. */
export interface DeployControllerOptions {
  /** `secretCreationFee`, wei. @default 0n */
  fee?: bigint;
  /** `defaultSecretType`. @default 1 (the type the cluster serves) */
  defaultSecretType?: number;
  /** Deploys, initializes and so owns the controller. @default accounts[0] */
  deployer?: DevAccount;
}

/** Deploy the committed test controller and `initialize` it; returns its address. */
export async function deployController(chain: AnvilChain, options: DeployControllerOptions = {}): Promise<Address> {
  const deployer = options.deployer ?? firstAccount(chain);
  const wallet = chain.walletClient(deployer.privateKey);
  const hash = await wallet.deployContract({ abi: secretsControllerArtifact.abi, bytecode: secretsControllerArtifact.bytecode });
  const receipt = await waitForSuccess(chain, hash);
  if (!receipt.contractAddress) throw new Error(`deployment ${hash} created no contract`);
  const controller = receipt.contractAddress;
  await waitForSuccess(
    chain,
    await wallet.writeContract({ address: controller, abi: secretsControllerAbi, functionName: 'initialize', args: [options.fee ?? 0n, options.defaultSecretType ?? 1] }),
  );
  return controller;
}

/** Let `nodeAddress` call `markSecretSynced` (as the contract owner, `accounts[0]` unless given). */
export async function whitelist(chain: AnvilChain, controller: Address, nodeAddress: Address, owner: DevAccount = firstAccount(chain)): Promise<TransactionReceipt> {
  const wallet = chain.walletClient(owner.privateKey);
  return waitForSuccess(chain, await wallet.writeContract({ address: controller, abi: secretsControllerAbi, functionName: 'addWhitelistedBlackBox', args: [nodeAddress] }));
}

/** Add `eth` (decimal string or number, in ether) to `address`'s balance (`anvil_setBalance`). */
export async function fund(chain: AnvilChain, address: Address, eth: string | number): Promise<void> {
  const balance = await chain.publicClient.getBalance({ address });
  await chain.testClient.setBalance({ address, value: balance + parseEther(String(eth)) });
}

/** Options of {@link createSecretOnChain}. */
export interface CreateSecretOptions {
  /** Calls `createSecret(secretType)`. Unset: `createSecret()`, the controller's default type. */
  secretType?: number;
  /** Wei sent along. @default the controller's current `secretCreationFee` */
  value?: bigint;
}

/** `createSecret` as `walletPrivateKey`'s wallet; returns the id from the `SecretCreated` event. */
export async function createSecretOnChain(chain: AnvilChain, controller: Address, walletPrivateKey: Hex, options: CreateSecretOptions = {}): Promise<bigint> {
  const value = options.value ?? (await chain.publicClient.readContract({ address: controller, abi: secretsControllerAbi, functionName: 'secretCreationFee' }));
  const wallet = chain.walletClient(walletPrivateKey);
  const hash =
    options.secretType === undefined
      ? await wallet.writeContract({ address: controller, abi: secretsControllerAbi, functionName: 'createSecret', args: [], value })
      : await wallet.writeContract({ address: controller, abi: secretsControllerAbi, functionName: 'createSecret', args: [options.secretType], value });
  const receipt = await waitForSuccess(chain, hash);
  const [created] = parseEventLogs({ abi: secretsControllerAbi, eventName: 'SecretCreated', logs: receipt.logs.filter((l) => sameAddress(l.address, controller)) });
  if (!created) throw new Error(`createSecret ${receipt.transactionHash} emitted no SecretCreated`);
  return created.args.secretId;
}

/** Options of {@link markSecretSyncedOnChain}. */
export interface MarkSyncedOptions {
  /** @default 1 */
  clusterId?: number;
  /** @default "cifer", the sentinel the cluster writes (docs/web3.md) */
  publicKeyCid?: string;
}

/** `markSecretSynced` as the black box `blackBoxPrivateKey` (what the designated node does). */
export async function markSecretSyncedOnChain(chain: AnvilChain, controller: Address, blackBoxPrivateKey: Hex, secretId: bigint, options: MarkSyncedOptions = {}): Promise<TransactionReceipt> {
  const wallet = chain.walletClient(blackBoxPrivateKey);
  const args = [secretId, options.clusterId ?? 1, options.publicKeyCid ?? 'cifer'] as const;
  return waitForSuccess(chain, await wallet.writeContract({ address: controller, abi: secretsControllerAbi, functionName: 'markSecretSynced', args }));
}

/** `setDelegate` as the secret's owner; `delegate` `zeroAddress` clears it. */
export async function setDelegateOnChain(chain: AnvilChain, controller: Address, ownerPrivateKey: Hex, secretId: bigint, delegate: Address): Promise<TransactionReceipt> {
  const wallet = chain.walletClient(ownerPrivateKey);
  return waitForSuccess(chain, await wallet.writeContract({ address: controller, abi: secretsControllerAbi, functionName: 'setDelegate', args: [secretId, delegate] }));
}

/** `transferSecret` as the secret's owner (the test controller also clears the delegate). */
export async function transferSecretOnChain(chain: AnvilChain, controller: Address, ownerPrivateKey: Hex, secretId: bigint, newOwner: Address): Promise<TransactionReceipt> {
  const wallet = chain.walletClient(ownerPrivateKey);
  return waitForSuccess(chain, await wallet.writeContract({ address: controller, abi: secretsControllerAbi, functionName: 'transferSecret', args: [secretId, newOwner] }));
}

/** A secret's on-chain state, `getSecretState` with names. */
export interface OnChainSecretState {
  owner: Address;
  delegate: Address;
  isSyncing: boolean;
  clusterId: number;
  secretType: number;
  publicKeyCid: string;
}

/**
 * `getSecretState(secretId)` at the latest block, or at `blockNumber` (reverts "Secret not found" for
 * an unknown id, as the published controller).
 */
export async function readSecretState(chain: AnvilChain, controller: Address, secretId: bigint, blockNumber?: number): Promise<OnChainSecretState> {
  const [owner, delegate, isSyncing, clusterId, secretType, publicKeyCid] = await chain.publicClient.readContract({
    address: controller,
    abi: secretsControllerAbi,
    functionName: 'getSecretState',
    args: [secretId],
    ...(blockNumber === undefined ? {} : { blockNumber: BigInt(blockNumber) }),
  });
  return { owner, delegate, isSyncing, clusterId, secretType, publicKeyCid };
}

/** The chain's head block number, read now (viem's block-number cache skipped). */
export async function headOf(chain: AnvilChain): Promise<number> {
  return Number(await chain.publicClient.getBlockNumber({ cacheTime: 0 }));
}

/**
 * One JSON-RPC call to the chain made as the real client's RPC reader makes it: a plain POST, an
 * error answer thrown as `RPC error: <message> (code: <code>)` — the text its error mapping reads
 * (e.g. `Secret not found` for its "not found" error). For tests that replicate the client's reads.
 */
export async function clientRpc<T>(chain: AnvilChain, method: string, params: unknown[]): Promise<T> {
  const res = await fetch(chain.rpcUrl, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }) });
  const json = (await res.json()) as { result?: T; error?: { message: string; code: number } };
  if (json.error) throw new Error(`RPC error: ${json.error.message} (code: ${json.error.code})`);
  if (json.result === undefined) throw new Error('RPC response missing result');
  return json.result;
}

/** Mine `blocks` empty blocks at once (`anvil_mine`), e.g. to reach a confirmation depth. */
export async function mine(chain: AnvilChain, blocks = 1): Promise<void> {
  await chain.testClient.mine({ blocks });
}

/**
 * The reason string a contract call reverted with: awaits `call` and throws if it did not revert
 * (or failed for another reason). viem surfaces the revert while estimating gas, before sending.
 */
export async function revertReasonOf(call: Promise<unknown>): Promise<string> {
  try {
    await call;
  } catch (err) {
    const reverted = err instanceof BaseError ? err.walk((e) => e instanceof ContractFunctionRevertedError) : null;
    if (reverted instanceof ContractFunctionRevertedError && reverted.reason !== undefined) return reverted.reason;
    throw err;
  }
  throw new Error('the call did not revert');
}

// --- Internals ---

/** Wait for `hash`'s receipt; throws if the transaction reverted. */
async function waitForSuccess(chain: AnvilChain, hash: Hex): Promise<TransactionReceipt> {
  const receipt = await chain.publicClient.waitForTransactionReceipt({ hash, pollingInterval: POLLING_INTERVAL_MS });
  if (receipt.status !== 'success') throw new Error(`transaction ${hash} reverted`);
  return receipt;
}

function firstAccount(chain: AnvilChain): DevAccount {
  const account = chain.accounts[0];
  if (!account) throw new Error('anvil has no dev accounts');
  return account;
}

function sameAddress(a: string, b: string): boolean {
  return a.toLowerCase() === b.toLowerCase();
}
