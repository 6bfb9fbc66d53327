/**
 * A real local chain for Web3 tests: anvil (Foundry's dev node), one per suite on a free port, with
 * viem clients, and helpers that drive the test secrets controller (contracts/SecretsController.sol,
 * compiled into src/evm/artifacts/secrets-controller.json). Starting anvil, deploying, whitelisting and
 * funding are the product's (src/evm/anvil.ts, src/evm/controller-admin.ts): these wrap them.
 * docs/web3.md § "Test chain" says where the binary comes from and how to run elsewhere.
 */
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
import { findAnvilBinary, startAnvil as spawnAnvil, type DevAccount } from '../../src/evm/anvil.ts';
import { createControllerAdmin, type ControllerAdmin, type MinedTransaction } from '../../src/evm/controller-admin.ts';
import { ANVIL_BIN_ENV } from '../../src/config/index.ts';
import { secretsControllerAbi } from '../../src/evm/secrets-controller-abi.ts';

export type { DevAccount } from '../../src/evm/anvil.ts';
export { ANVIL_BIN_ENV } from '../../src/config/index.ts';
/** The chain the tests pretend to be: Base, the default in the chain list. */
export const DEFAULT_TEST_CHAIN_ID = 8453;
// Clients poll for receipts and blocks; viem's 4 s default would dominate every test.
const POLLING_INTERVAL_MS = 50;

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
  const found = findAnvilBinary(process.env[ANVIL_BIN_ENV]);
  if ('unavailable' in found) throw new Error(found.unavailable);
  return found.path;
}

/**
 * Start anvil on 127.0.0.1 with `--port 0` (src/evm/anvil.ts) and return once its RPC answers
 * (about 0.1 s), with viem clients. Stop it in `afterAll`; it is also stopped if the test process dies.
 */
export async function startAnvil(options: AnvilOptions = {}): Promise<AnvilChain> {
  const chainId = options.chainId ?? DEFAULT_TEST_CHAIN_ID;
  const anvil = await spawnAnvil({
    binary: resolveAnvilBinary(),
    chainId,
    stopTimeoutMs: 5000,
    ...(options.blockTimeSeconds !== undefined ? { blockTimeSeconds: options.blockTimeSeconds } : {}),
  });
  if (anvil.accounts.length === 0) {
    await anvil.stop();
    throw new Error(`no dev accounts in anvil's banner:\n${anvil.output()}`);
  }
  const { rpcUrl, wsUrl } = anvil;
  const chain = defineChain({
    id: chainId,
    name: `anvil ${chainId}`,
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [rpcUrl], webSocket: [wsUrl] } },
  });
  const transport = http(rpcUrl);
  return {
    chainId,
    rpcUrl,
    wsUrl,
    accounts: anvil.accounts,
    chain,
    publicClient: createPublicClient({ chain, transport, pollingInterval: POLLING_INTERVAL_MS }),
    testClient: createTestClient({ mode: 'anvil', chain, transport, pollingInterval: POLLING_INTERVAL_MS }),
    walletClient: (privateKey) => createWalletClient({ account: privateKeyToAccount(privateKey), chain, transport, pollingInterval: POLLING_INTERVAL_MS }),
    output: anvil.output,
    stop: anvil.stop,
  };
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

/** Deploy the committed test controller and `initialize` it (src/evm/controller-admin.ts); returns its address. */
export async function deployController(chain: AnvilChain, options: DeployControllerOptions = {}): Promise<Address> {
  const deployed = await adminOf(chain, options.deployer ?? firstAccount(chain)).deploy({
    ...(options.fee !== undefined ? { fee: options.fee } : {}),
    ...(options.defaultSecretType !== undefined ? { defaultSecretType: options.defaultSecretType } : {}),
  });
  return deployed.address;
}

/** Let `nodeAddress` call `markSecretSynced` (as the contract owner, `accounts[0]` unless given). */
export async function whitelist(chain: AnvilChain, controller: Address, nodeAddress: Address, owner: DevAccount = firstAccount(chain)): Promise<MinedTransaction> {
  return adminOf(chain, owner).whitelist(controller, nodeAddress);
}

/** Send `eth` (decimal string or number, in ether) to `address` from `accounts[0]`. */
export async function fund(chain: AnvilChain, address: Address, eth: string | number): Promise<void> {
  await adminOf(chain, firstAccount(chain)).fund(address, parseEther(String(eth)));
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

function adminOf(chain: AnvilChain, account: DevAccount): ControllerAdmin {
  return createControllerAdmin({ rpcUrl: chain.rpcUrl, privateKey: account.privateKey, pollingIntervalMs: POLLING_INTERVAL_MS });
}

function firstAccount(chain: AnvilChain): DevAccount {
  const account = chain.accounts[0];
  if (!account) throw new Error('anvil has no dev accounts');
  return account;
}

function sameAddress(a: string, b: string): boolean {
  return a.toLowerCase() === b.toLowerCase();
}
