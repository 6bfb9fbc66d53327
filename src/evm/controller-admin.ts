/**
 * Administration of a secrets controller, as its owner (docs/web3.md, "Deploying a controller"): deploy
 * the compiled test controller and `initialize` it, whitelist a node as black box (the syncer), and
 * send a node ETH for gas. What `npm start`'s local chain does on its first run, what `quorumkeep chain
 * deploy-controller` does on any chain, and what the tests' helpers call (test/utils/anvil.ts).
 *
 * The private key stays in the viem account: nothing here logs it or puts it in an error. Failures are
 * viem's own errors; {@link adminFailureReason} turns one into a few words without the RPC URL.
 */
import { createPublicClient, createWalletClient, defineChain, http, type Address, type Hex } from 'viem';
import { privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import { isInsufficientFunds, revertOf, shortReason } from './rpc-errors.ts';
import { secretsControllerArtifact } from './secrets-controller-artifact.ts';

const DEFAULT_POLLING_INTERVAL_MS = 1000;
const DEFAULT_RECEIPT_TIMEOUT_MS = 120_000;
const DEFAULT_RPC_TIMEOUT_MS = 10_000;
/** Blocks back from the head that {@link ControllerAdmin.estimateBlockTimeMs} averages over. */
const BLOCK_TIME_SAMPLE = 64;
/** The least block interval {@link ChainReader.estimateBlockTimeMs} answers, ms. */
const MIN_BLOCK_TIME_MS = 1000;

/** A transaction that was mined but failed, or a deployment that created no contract. */
export class AdminTransactionError extends Error {
  /** A few words: `reverted`, `created no contract`. */
  readonly reason: string;
  readonly transactionHash: Hex;

  constructor(reason: string, transactionHash: Hex) {
    super(`transaction ${transactionHash} ${reason}`);
    this.name = 'AdminTransactionError';
    this.reason = reason;
    this.transactionHash = transactionHash;
  }
}

/** Options of {@link createChainReader}. */
export interface ChainReaderOptions {
  /** JSON-RPC over HTTP(S). */
  rpcUrl: string;
  /** How often receipts are polled for, ms. @default 1000 */
  pollingIntervalMs?: number;
  /** Deadline of one JSON-RPC call, ms. @default 10000 */
  rpcTimeoutMs?: number;
}

/** Options of {@link createControllerAdmin}. */
export interface ControllerAdminOptions extends ChainReaderOptions {
  /** The owner's key (0x and 64 hex digits): deploys, owns, whitelists, pays. Never logged. */
  privateKey: Hex;
  /** Wait for a transaction to be mined at most this long, ms. @default 120000 */
  receiptTimeoutMs?: number;
}

/** A mined transaction. */
export interface MinedTransaction {
  transactionHash: Hex;
  blockNumber: number;
}

/** A freshly deployed and initialized controller. */
export interface DeployedController {
  chainId: number;
  /** The contract's address (checksummed). */
  address: Address;
  /** Its owner: the deploying account. */
  owner: Address;
  /** The deployment's block: the `startBlock` of a chain entry using it. */
  blockNumber: number;
  deployTransaction: Hex;
  initializeTransaction: Hex;
}

/** Options of {@link ControllerAdmin.deploy}. */
export interface DeployOptions {
  /** `secretCreationFee`, wei. @default 0n */
  fee?: bigint;
  /** `defaultSecretType`. @default 1 (the type a cluster serves) */
  defaultSecretType?: number;
}

/** What anyone may read of a chain and its controller: enough to check a chain entry before using it. */
export interface ChainReader {
  /** `eth_chainId` (asked once). */
  chainId(): Promise<number>;
  /** The head block, read now. */
  head(): Promise<number>;
  /** Whether `address` holds contract code. */
  hasCode(address: Address): Promise<boolean>;
  /** `isBlackBoxWhitelisted(address)` on `controller`. */
  isWhitelisted(controller: Address, address: Address): Promise<boolean>;
  /** `address`'s balance, wei. */
  balance(address: Address): Promise<bigint>;
  /** The average block interval over the last blocks, ms; at least 1000 (block timestamps are seconds). */
  estimateBlockTimeMs(): Promise<number>;
}

/** The owner's view of one chain: the reads, and the owner's transactions. */
export interface ControllerAdmin extends ChainReader {
  /** The owner's address (checksummed). */
  readonly account: Address;
  /** Deploy the compiled controller (secretsControllerArtifact) and `initialize` it: the deployer is its owner. */
  deploy(options?: DeployOptions): Promise<DeployedController>;
  /** `addWhitelistedBlackBox(address)`: only the controller's owner may. Reverts with the controller's reason. */
  whitelist(controller: Address, address: Address): Promise<MinedTransaction>;
  /** Send `wei` to `address` (a plain transfer: works on any chain). */
  fund(address: Address, wei: bigint): Promise<MinedTransaction>;
}

/** viem's clients for the chain at `rpcUrl`, made once its id is known (viem signs for that id). */
function connector(options: ChainReaderOptions, account?: PrivateKeyAccount) {
  const pollingInterval = options.pollingIntervalMs ?? DEFAULT_POLLING_INTERVAL_MS;
  const transport = http(options.rpcUrl, { timeout: options.rpcTimeoutMs ?? DEFAULT_RPC_TIMEOUT_MS, retryCount: 0 });
  const clientsFor = (id: number) => {
    const chain = defineChain({ id, name: `chain ${id}`, nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 }, rpcUrls: { default: { http: [options.rpcUrl] } } });
    return {
      chain,
      pollingInterval,
      read: createPublicClient({ chain, transport, pollingInterval }),
      write: account ? createWalletClient({ account, chain, transport, pollingInterval }) : undefined,
    };
  };
  let clients: Promise<ReturnType<typeof clientsFor>> | undefined;
  return () =>
    (clients ??= createPublicClient({ transport })
      .getChainId()
      .then(clientsFor)
      .catch((err: unknown) => {
        // A chain that could not be asked is asked again next time.
        clients = undefined;
        throw err;
      }));
}

/** Reads of the chain at `options.rpcUrl`; no key needed. */
export function createChainReader(options: ChainReaderOptions): ChainReader {
  return readerOf(connector(options));
}

function readerOf(connect: ReturnType<typeof connector>): ChainReader {
  return {
    chainId: async () => (await connect()).chain.id,
    head: async () => Number(await (await connect()).read.getBlockNumber({ cacheTime: 0 })),
    hasCode: async (address) => {
      const code = await (await connect()).read.getCode({ address });
      return code !== undefined && code !== '0x';
    },
    isWhitelisted: async (controller, address) =>
      (await connect()).read.readContract({ address: controller, abi: secretsControllerArtifact.abi, functionName: 'isBlackBoxWhitelisted', args: [address] }),
    balance: async (address) => (await connect()).read.getBalance({ address }),
    async estimateBlockTimeMs() {
      const { read } = await connect();
      const head = await read.getBlock({ blockTag: 'latest' });
      const span = Math.min(BLOCK_TIME_SAMPLE, Number(head.number));
      if (span === 0) return MIN_BLOCK_TIME_MS;
      const earlier = await read.getBlock({ blockNumber: head.number - BigInt(span) });
      // Block timestamps are in seconds: a chain mining on demand shows 0.
      return Math.max(MIN_BLOCK_TIME_MS, Math.round((Number(head.timestamp - earlier.timestamp) * 1000) / span));
    },
  };
}

/** A client for a controller's owner (`options.privateKey`) on the chain at `options.rpcUrl`. */
export function createControllerAdmin(options: ControllerAdminOptions): ControllerAdmin {
  const account = privateKeyToAccount(options.privateKey);
  const receiptTimeout = options.receiptTimeoutMs ?? DEFAULT_RECEIPT_TIMEOUT_MS;
  const connect = connector(options, account);
  const writer = async () => {
    const clients = await connect();
    return { ...clients, write: clients.write! };
  };

  async function mined(hash: Hex): Promise<MinedTransaction & { contractAddress: Address | null | undefined }> {
    const { read, pollingInterval } = await connect();
    const receipt = await read.waitForTransactionReceipt({ hash, pollingInterval, timeout: receiptTimeout });
    if (receipt.status !== 'success') throw new AdminTransactionError('reverted', hash);
    return { transactionHash: hash, blockNumber: Number(receipt.blockNumber), contractAddress: receipt.contractAddress };
  }
  const summary = ({ transactionHash, blockNumber }: MinedTransaction): MinedTransaction => ({ transactionHash, blockNumber });

  return {
    ...readerOf(connect),
    account: account.address,
    async deploy(deployOptions = {}) {
      const { chain, write } = await writer();
      const deployTransaction = await write.deployContract({ abi: secretsControllerArtifact.abi, bytecode: secretsControllerArtifact.bytecode });
      const deployed = await mined(deployTransaction);
      if (!deployed.contractAddress) throw new AdminTransactionError('created no contract', deployTransaction);
      const address = deployed.contractAddress;
      const initializeTransaction = await write.writeContract({
        address,
        abi: secretsControllerArtifact.abi,
        functionName: 'initialize',
        args: [deployOptions.fee ?? 0n, deployOptions.defaultSecretType ?? 1],
      });
      await mined(initializeTransaction);
      return { chainId: chain.id, address, owner: account.address, blockNumber: deployed.blockNumber, deployTransaction, initializeTransaction };
    },
    async whitelist(controller, address) {
      const { write } = await writer();
      return summary(await mined(await write.writeContract({ address: controller, abi: secretsControllerArtifact.abi, functionName: 'addWhitelistedBlackBox', args: [address] })));
    },
    async fund(address, wei) {
      const { write } = await writer();
      return summary(await mined(await write.sendTransaction({ to: address, value: wei })));
    },
  };
}

/**
 * Why an administration call failed, in a few words safe to print: the controller's revert reason,
 * `insufficient funds for gas`, or what the RPC did (`connection refused`, `HTTP 503`, …) — never
 * viem's message, which carries the RPC URL.
 */
export function adminFailureReason(err: unknown, rpcTimeoutMs = DEFAULT_RPC_TIMEOUT_MS): string {
  if (err instanceof AdminTransactionError) return err.reason;
  const revert = revertOf(err);
  if (revert) return `reverted: ${revert.reason ?? 'no reason given'}`;
  if (isInsufficientFunds(err)) return 'insufficient funds for gas';
  return shortReason(err, rpcTimeoutMs);
}
