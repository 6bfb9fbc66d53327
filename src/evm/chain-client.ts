/**
 * One EVM chain as the node sees it (docs/web3.md § "Chain client"): the
 * head block (cached for at most a block time), the secrets controller's state of a secret, its
 * events (followed in confirmed, bounded ranges) and the one transaction the cluster sends,
 * `markSecretSynced`. Every RPC call has a timeout and bounded retries with backoff and jitter; what
 * still fails becomes 503 `CHAIN_UNAVAILABLE` naming the chain — never the RPC URL, which may hold a
 * provider's API key.
 */
import {
  bytesToHex,
  createPublicClient,
  createWalletClient,
  defineChain,
  http,
  zeroAddress,
  type Address,
  type Chain,
  type Hex,
  type PublicClient,
  type TransactionReceipt,
  type Transport,
  type WalletClient,
} from 'viem';
import { privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import { redactUrl } from '../config/redact.ts';
import { serialQueue } from '../core/serial-queue.ts';
import type { Startable } from '../core/lifecycle.ts';
import type { ChainEvent, ChainEventPosition, ChainStatusView, EventFollower, FollowEventsOptions, MarkSyncedResult, SecretState, Web3Chain } from '../core/web3/ports.ts';

export type { ChainEvent, ChainEventPosition, FollowEventsOptions, MarkSyncedResult, SecretState } from '../core/web3/ports.ts';
import { AppError, isAppError } from '../errors/index.ts';
import type { Logger } from '../log/index.ts';
import type { NodeMetrics } from '../metrics/index.ts';
import { startEventFollower, DEFAULT_MAX_BLOCKS_PER_QUERY } from './event-follower.ts';
import { isInsufficientFunds, isNonceConflict, isUnavailable, isZeroData, revertOf, shortReason } from './rpc-errors.ts';
import { secretsControllerAbi } from './secrets-controller-abi.ts';

/** Default deadline of one JSON-RPC call, ms. */
export const DEFAULT_RPC_TIMEOUT_MS = 5000;
/** Default attempts of one call before it fails as `CHAIN_UNAVAILABLE`. */
export const DEFAULT_RPC_ATTEMPTS = 3;
/** Default first backoff between attempts, ms (doubled per attempt, with jitter). */
export const DEFAULT_RPC_BACKOFF_MS = 250;
/** Default longest backoff between attempts, ms. */
export const DEFAULT_RPC_BACKOFF_MAX_MS = 2000;
/** Default wait for a sent transaction's receipt, ms. */
export const DEFAULT_RECEIPT_TIMEOUT_MS = 120_000;
/** The freshness rule of Web3 signed strings: a signed block may be this old, in ms of blocks (docs/web3.md, What is built). */
const FRESHNESS_MS = 600_000;
/** `markSecretSynced` re-sent at most this many times after a nonce conflict. */
const NONCE_RETRIES = 5;

/** The JSON-RPC methods this client sends (the `method` label of the metrics); anything else is `other`. */
const RPC_METHODS = new Set([
  'eth_blockNumber', 'eth_chainId', 'eth_call', 'eth_getLogs', 'eth_estimateGas', 'eth_getTransactionCount',
  'eth_sendRawTransaction', 'eth_getTransactionReceipt', 'eth_getTransactionByHash', 'eth_gasPrice',
  'eth_maxPriorityFeePerGas', 'eth_feeHistory', 'eth_getBlockByNumber', 'eth_getBlockByHash',
]);

const FOLLOWED_EVENTS = ['SecretCreated', 'SecretSynced', 'DelegateUpdated', 'SecretOwnershipTransferred'] as const;
type ControllerAbiItem = (typeof secretsControllerAbi)[number];
type FollowedEventAbi = Extract<ControllerAbiItem, { type: 'event'; name: (typeof FOLLOWED_EVENTS)[number] }>;
const followedEventAbis = secretsControllerAbi.filter(
  (item): item is FollowedEventAbi => item.type === 'event' && (FOLLOWED_EVENTS as readonly string[]).includes(item.name),
);

/** Options of {@link createChainClient}: the chain's config (`chains[]`, src/config/schema.ts) and tuning. */
export interface ChainClientOptions {
  chainId: number;
  /** Display name, in error messages. */
  name: string;
  /** JSON-RPC over HTTP(S). Shown only redacted (no path, query or credentials). */
  rpcUrl: string;
  /** Accepted, unused: the client polls over `rpcUrl`. */
  wsRpcUrl?: string;
  /** The secrets controller; unset or the zero address: secret reads, following and syncing fail with 503. */
  secretsControllerAddress?: string;
  /** Average block interval, ms: the head cache's lifetime and the freshness window. */
  blockTimeMs: number;
  /** Default depth of {@link ChainClient.followEvents}. @default 2 */
  confirmations?: number;
  /** Where following starts on a node with no cursor. @default 0 */
  startBlock?: number;
  /** This node sends `markSecretSynced` on this chain (needs `deps.signingKey`). @default false */
  syncer?: boolean;
  /** This cluster's id in the controller (uint8), sent with `markSecretSynced`. @default 0 */
  controllerClusterId?: number;
  /** Deadline of one JSON-RPC call, ms. @default 5000 */
  rpcTimeoutMs?: number;
  /** Attempts per call before `CHAIN_UNAVAILABLE`. @default 3 */
  rpcAttempts?: number;
  /** First backoff between attempts, ms; doubles per attempt, with jitter. @default 250 */
  rpcBackoffMs?: number;
  /** Longest backoff between attempts, ms. @default 2000 */
  rpcBackoffMaxMs?: number;
  /** How often viem polls for a receipt, ms. @default blockTimeMs / 2, within 50..4000 */
  pollingIntervalMs?: number;
  /** Wait for a sent transaction to be mined, ms. @default 120000 */
  receiptTimeoutMs?: number;
}

/** Live dependencies of {@link createChainClient}. */
export interface ChainClientDeps {
  /** Root or node logger; the client takes a `{ module: "evm", chainId }` child. */
  logger: Logger;
  /** RPC latency and errors, head and cursor lag. Unset: not measured. */
  metrics?: Pick<NodeMetrics, 'chainRpcDuration' | 'chainRpcErrors' | 'chainHead' | 'chainCursorLag'>;
  /** Wall clock, Unix ms: the head cache's age and `headAt`. @default Date.now */
  now?: () => number;
  /**
   * The node's secp256k1 signing key (32 bytes; its address is the node's `nodeAddress`): the account
   * that sends `markSecretSynced` when `syncer`. Unset: the client cannot send.
   */
  signingKey?: Uint8Array;
  /** Uniform in [0, 1), for backoff jitter. @default Math.random */
  random?: () => number;
}

/** A chain's state for `/healthz` and operators. */
export interface ChainStatus extends ChainStatusView {
  /** Without path, query or credentials. */
  rpcUrl: string;
  /** Lowercase, or null when none is configured. */
  secretsControllerAddress: string | null;
  /** When the last call failed, Unix ms. */
  lastErrorAt: number | null;
  /** This node sends `markSecretSynced` on this chain. */
  syncer: boolean;
  /** The syncer's sending address (lowercase), or null. */
  syncerAddress: string | null;
}

/** One chain. Satisfies the core's {@link Web3Chain} port (src/core/web3/ports.ts). */
export interface ChainClient extends Web3Chain, Startable {
  readonly chainId: number;
  readonly name: string;
  /** `ceil(600000 / blockTimeMs)`: how many blocks a signed block number may lag the head. */
  readonly freshnessWindow: number;
  /** Default event depth. */
  readonly confirmations: number;
  /** Where following starts on a node with no cursor. */
  readonly startBlock: number;
  /** Whether a secrets controller is configured. */
  readonly hasController: boolean;
  /** Whether this node is the chain's syncer. */
  readonly syncer: boolean;
  /** The address `markSecretSynced` is sent from (lowercase), when a signing key was given. */
  readonly syncerAddress: string | undefined;
  /**
   * The head block number: a cached value younger than `blockTimeMs`, else read (concurrent reads
   * share one call). `fresh` skips the cache: re-read before rejecting a signed block as "in the
   * future". Rejects with 503 `CHAIN_UNAVAILABLE`.
   */
  blockNumber(options?: { fresh?: boolean }): Promise<number>;
  /**
   * The controller's `getSecretState(secretId)` at `blockNumber` (default: latest), or undefined for
   * a secret that does not exist (the call reverts, or the owner is the zero address). Rejects with
   * 503 `CHAIN_UNAVAILABLE` when the RPC fails or no controller is configured.
   */
  getSecretState(secretId: bigint | number, options?: { blockNumber?: number }): Promise<SecretState | undefined>;
  /** The controller's `isBlackBoxWhitelisted(address)` at `blockNumber` (default latest). 503 `CHAIN_UNAVAILABLE`. */
  isWhitelisted(address: string, options?: { blockNumber?: number }): Promise<boolean>;
  /**
   * Send `markSecretSynced(secretId, clusterId, publicKeyCid)` from the signing key and wait for it to
   * be mined. A secret that is no longer syncing (checked before sending, and after a revert) is
   * "already-synced", not an error. Sends are serialized; "nonce too low" re-sends. Rejects with
   * {@link ChainTransactionError} (reverted, e.g. not whitelisted; no funds; not mined in time) or
   * 503 `CHAIN_UNAVAILABLE`.
   */
  markSecretSynced(secretId: bigint | number, clusterId: number, publicKeyCid: string): Promise<MarkSyncedResult>;
  /** Start following the controller's events (one follower per client). */
  followEvents(options: FollowEventsOptions): EventFollower;
  /** For `/healthz`. */
  status(): ChainStatus;
  /** Stop the follower (waits for its handler). Idempotent. */
  stop(): Promise<void>;
}

/**
 * A transaction the chain refused or did not take: a revert (with the contract's reason), no funds
 * for gas, or not mined in time. Carries the chain, the sender and a short reason; never the RPC URL.
 */
export class ChainTransactionError extends Error {
  readonly chainId: number;
  readonly reason: string;
  readonly sender: string;
  readonly transactionHash: string | undefined;

  constructor(chain: { chainId: number; name: string }, call: string, sender: string, reason: string, transactionHash?: string) {
    super(`Chain ${chain.chainId} (${chain.name}): ${call} from ${sender} failed: ${reason}`);
    this.name = 'ChainTransactionError';
    this.chainId = chain.chainId;
    this.reason = reason;
    this.sender = sender;
    this.transactionHash = transactionHash;
  }
}

/** Create the client of one chain. Makes no call until used. */
export function createChainClient(options: ChainClientOptions, deps: ChainClientDeps): ChainClient {
  const { chainId, name, blockTimeMs } = options;
  const label = { chain: String(chainId) };
  const log = deps.logger.child({ module: 'evm', chainId });
  const now = deps.now ?? Date.now;
  const random = deps.random ?? Math.random;
  const metrics = deps.metrics;
  const timeoutMs = options.rpcTimeoutMs ?? DEFAULT_RPC_TIMEOUT_MS;
  const attempts = Math.max(1, options.rpcAttempts ?? DEFAULT_RPC_ATTEMPTS);
  const backoffMs = options.rpcBackoffMs ?? DEFAULT_RPC_BACKOFF_MS;
  const backoffMaxMs = options.rpcBackoffMaxMs ?? DEFAULT_RPC_BACKOFF_MAX_MS;
  const receiptTimeoutMs = options.receiptTimeoutMs ?? DEFAULT_RECEIPT_TIMEOUT_MS;
  const pollingInterval = options.pollingIntervalMs ?? Math.min(Math.max(Math.floor(blockTimeMs / 2), 50), 4000);
  const confirmations = options.confirmations ?? 2;
  const controller = normalizeController(options.secretsControllerAddress);
  const redactedRpcUrl = redactUrl(options.rpcUrl);

  // --- State shown by status() ---
  let head: { value: number; at: number } | undefined;
  let cursor: number | undefined;
  let reachable: boolean | null = null;
  let lastError: { reason: string; at: number } | undefined;

  const chain: Chain = defineChain({
    id: chainId,
    name,
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [options.rpcUrl] } },
    blockTime: blockTimeMs,
  });
  // Retries are ours (withRetries): viem's would multiply them and hide failures from the metrics.
  const transport = measured(http(options.rpcUrl, { timeout: timeoutMs, retryCount: 0 }), (method, seconds, err) => {
    const labels = { ...label, method: RPC_METHODS.has(method) ? method : 'other' };
    metrics?.chainRpcDuration.observe(labels, seconds);
    if (err !== undefined && isUnavailable(err)) {
      metrics?.chainRpcErrors.inc(labels);
      reachable = false;
      lastError = { reason: shortReason(err, timeoutMs), at: now() };
    } else {
      reachable = true;
    }
  });
  // viem caches getBlockNumber for `cacheTime` (default 4 s): never longer than a block here, and
  // blockNumber() below reads with cacheTime 0 and keeps its own cache, so that `fresh` can skip it.
  const publicClient: PublicClient<Transport, Chain> = createPublicClient({ chain, transport, cacheTime: blockTimeMs, pollingInterval });
  const account: PrivateKeyAccount | undefined = deps.signingKey ? privateKeyToAccount(bytesToHex(deps.signingKey)) : undefined;
  const wallet: WalletClient<Transport, Chain, PrivateKeyAccount> | undefined = account
    ? createWalletClient({ account, chain, transport, cacheTime: blockTimeMs, pollingInterval })
    : undefined;
  const syncerAddress = account?.address.toLowerCase();
  const sendQueue = serialQueue();

  const unavailable = (reason: string) => new AppError('CHAIN_UNAVAILABLE', `Chain ${chainId} (${name}) RPC is unavailable: ${reason}`, { chainId });

  /** Wait before retry `attempt` (1, 2, …): exponential, capped, half of it random (equal jitter). */
  const backoffDelay = (attempt: number) => {
    const ceiling = Math.min(backoffMaxMs, backoffMs * 2 ** Math.min(attempt - 1, 20));
    return ceiling / 2 + (random() * ceiling) / 2;
  };

  /**
   * Run `call` up to `attempts` times with exponential backoff and jitter. An error `isAnswer` accepts
   * (a revert, a nonce error…) is rethrown at once; the last failure becomes `CHAIN_UNAVAILABLE`.
   */
  async function withRetries<T>(operation: string, call: () => Promise<T>, isAnswer: (err: unknown) => boolean = () => false): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await call();
      } catch (err) {
        if (isAppError(err) || isAnswer(err)) throw err;
        const reason = shortReason(err, timeoutMs);
        lastError = { reason, at: now() };
        if (attempt >= attempts) {
          log.warn({ operation, attempts, reason }, 'chain RPC unavailable');
          throw unavailable(reason);
        }
        log.debug({ operation, attempt, reason }, 'chain RPC call failed; retrying');
        await delay(backoffDelay(attempt));
      }
    }
  }

  // The RPC must serve the configured chain: reading another chain's contract would be answering
  // with someone else's owners. Checked once, on first use (again after a failed check).
  let chainChecked: Promise<void> | undefined;
  function ensureChain(): Promise<void> {
    if (!chainChecked) {
      chainChecked = withRetries('eth_chainId', () => publicClient.getChainId()).then((served) => {
        if (served === chainId) return;
        const reason = `it serves chain ${served}`;
        log.error({ served }, 'chain RPC serves another chain');
        lastError = { reason, at: now() };
        throw unavailable(reason);
      });
      chainChecked.catch(() => {
        chainChecked = undefined;
      });
    }
    return chainChecked;
  }

  function requireController(): Address {
    if (controller) return controller;
    throw new AppError('CHAIN_UNAVAILABLE', `Chain ${chainId} (${name}) has no secrets controller configured`, { chainId });
  }

  function noContract(address: string): AppError {
    log.error({ controller: address }, 'no contract at the configured secrets controller address');
    return new AppError('CHAIN_UNAVAILABLE', `Chain ${chainId} (${name}) has no secrets controller at ${address}`, { chainId });
  }

  function noteHead(value: number): void {
    head = { value, at: now() };
    metrics?.chainHead.set(label, value);
    if (cursor !== undefined) metrics?.chainCursorLag.set(label, Math.max(0, value - cursor));
  }

  let headRead: Promise<number> | undefined;
  function blockNumber({ fresh = false }: { fresh?: boolean } = {}): Promise<number> {
    if (!fresh && head && now() - head.at < blockTimeMs) return Promise.resolve(head.value);
    // Join a read already in flight (fresh or not): it is at most one round trip older than this
    // call, and a flood of signed blocks "in the future" then costs one RPC call at a time.
    headRead ??= readHead().finally(() => {
      headRead = undefined;
    });
    return headRead;
  }

  async function readHead(): Promise<number> {
    await ensureChain();
    const read = Number(await withRetries('eth_blockNumber', () => publicClient.getBlockNumber({ cacheTime: 0 })));
    // Load-balanced RPCs may answer from a node a block behind: the head never moves back.
    const value = Math.max(read, head?.value ?? 0);
    noteHead(value);
    return value;
  }

  async function getSecretState(secretId: bigint | number, readOptions: { blockNumber?: number } = {}): Promise<SecretState | undefined> {
    const address = requireController();
    // Not a uint256: no such secret (callers parse ids; this keeps a bad one from becoming a 500).
    if (typeof secretId === 'number' && !Number.isSafeInteger(secretId)) return undefined;
    const id = BigInt(secretId);
    if (id < 0n || id >= 2n ** 256n) return undefined;
    await ensureChain();
    let result: readonly [Address, Address, boolean, number, number, string];
    try {
      result = await withRetries(
        'getSecretState',
        () =>
          publicClient.readContract({
            address,
            abi: secretsControllerAbi,
            functionName: 'getSecretState',
            args: [id],
            ...(readOptions.blockNumber === undefined ? {} : { blockNumber: BigInt(readOptions.blockNumber) }),
          }),
        (err) => revertOf(err) !== undefined || isZeroData(err),
      );
    } catch (err) {
      // Any revert means there is no state to serve: the text is never matched (CONTRIBUTING.md rule
      // 7), so the published controller's `Secret not found` and older test builds' wording alike.
      if (revertOf(err)) return undefined;
      if (isZeroData(err)) throw noContract(address);
      throw err;
    }
    const [owner, delegate, isSyncing, clusterId, secretType, publicKeyCid] = result;
    if (owner === zeroAddress) return undefined;
    return {
      owner: owner.toLowerCase(),
      delegate: delegate === zeroAddress ? null : delegate.toLowerCase(),
      isSyncing,
      clusterId,
      secretType,
      publicKeyCid,
    };
  }

  async function isWhitelisted(address: string, readOptions: { blockNumber?: number } = {}): Promise<boolean> {
    const controllerAddress = requireController();
    if (!/^0x[0-9a-fA-F]{40}$/.test(address)) return false;
    await ensureChain();
    try {
      return await withRetries(
        'isBlackBoxWhitelisted',
        () =>
          publicClient.readContract({
            address: controllerAddress,
            abi: secretsControllerAbi,
            functionName: 'isBlackBoxWhitelisted',
            args: [address.toLowerCase() as Address],
            ...(readOptions.blockNumber === undefined ? {} : { blockNumber: BigInt(readOptions.blockNumber) }),
          }),
        isZeroData,
      );
    } catch (err) {
      if (isZeroData(err)) throw noContract(controllerAddress);
      throw err;
    }
  }

  async function markSecretSyncedOnce(secretId: bigint, clusterId: number, publicKeyCid: string): Promise<MarkSyncedResult> {
    const address = requireController();
    if (!wallet || !syncerAddress) throw new Error(`chain ${chainId}: markSecretSynced needs the node's signing key`);
    const call = `markSecretSynced(${secretId})`;
    const txError = (reason: string, hash?: string) => new ChainTransactionError({ chainId, name }, call, syncerAddress, reason, hash);

    // After a revert, or before sending: a secret that is not syncing any more is done, whoever synced it.
    const settled = async (): Promise<MarkSyncedResult | undefined> => {
      const state = await getSecretState(secretId);
      if (!state) throw txError('Secret not found');
      return state.isSyncing ? undefined : { status: 'already-synced', clusterId: state.clusterId, publicKeyCid: state.publicKeyCid };
    };
    const before = await settled();
    if (before) return before;

    for (let nonceRetries = 0; ; nonceRetries++) {
      let hash: Hex;
      try {
        // viem estimates gas (a revert surfaces here, before sending) and takes the pending nonce.
        hash = await withRetries(
          'markSecretSynced',
          () => wallet.writeContract({ address, abi: secretsControllerAbi, functionName: 'markSecretSynced', args: [secretId, clusterId, publicKeyCid] }),
          (err) => !isUnavailable(err),
        );
      } catch (err) {
        if (isAppError(err)) throw err;
        if (isNonceConflict(err) && nonceRetries < NONCE_RETRIES) {
          // Sends of this client are serialized, so another process signs with this key: let its
          // transaction land, then re-send with the next nonce (viem reads the pending count).
          log.warn({ secretId: String(secretId), nonceRetries: nonceRetries + 1 }, 'markSecretSynced: nonce conflict; re-sending');
          await delay(backoffDelay(nonceRetries + 1));
          continue;
        }
        const revert = revertOf(err);
        if (revert) {
          const done = await settled();
          if (done) return done;
          throw txError(`reverted: ${revert.reason ?? 'no reason given'}`);
        }
        if (isInsufficientFunds(err)) throw txError('insufficient funds for gas');
        throw txError(isNonceConflict(err) ? 'nonce conflict: another sender uses this key' : shortReason(err, timeoutMs));
      }
      let receipt: TransactionReceipt;
      try {
        receipt = await withRetries('waitForTransactionReceipt', () => publicClient.waitForTransactionReceipt({ hash, timeout: receiptTimeoutMs, pollingInterval }), (err) => !isUnavailable(err));
      } catch (err) {
        if (isAppError(err)) throw err;
        throw txError(`not mined within ${receiptTimeoutMs} ms`, hash);
      }
      if (receipt.status === 'success') {
        log.info({ secretId: String(secretId), clusterId, transactionHash: hash, blockNumber: Number(receipt.blockNumber) }, 'secret marked synced');
        return { status: 'synced', transactionHash: hash, blockNumber: Number(receipt.blockNumber) };
      }
      // Mined but reverted: someone synced it between our estimate and our block?
      const done = await settled();
      if (done) return done;
      throw txError('reverted', hash);
    }
  }

  async function eventsBetween(fromBlock: number, toBlock: number): Promise<ChainEvent[]> {
    const address = requireController();
    await ensureChain();
    const logs = await withRetries('getLogs', () =>
      publicClient.getLogs({ address, events: followedEventAbis, fromBlock: BigInt(fromBlock), toBlock: BigInt(toBlock), strict: true }),
    );
    const events: ChainEvent[] = [];
    for (const entry of logs) {
      if (entry.blockNumber === null || entry.logIndex === null || entry.blockHash === null || entry.transactionHash === null) continue;
      const position: ChainEventPosition = {
        chainId,
        blockNumber: Number(entry.blockNumber),
        blockHash: entry.blockHash,
        logIndex: entry.logIndex,
        transactionHash: entry.transactionHash,
      };
      switch (entry.eventName) {
        case 'SecretCreated':
          events.push({ ...position, name: 'SecretCreated', secretId: entry.args.secretId, owner: entry.args.owner.toLowerCase(), secretType: entry.args.secretType });
          break;
        case 'SecretSynced':
          events.push({ ...position, name: 'SecretSynced', secretId: entry.args.secretId, clusterId: entry.args.clusterId, publicKeyCid: entry.args.publicKeyCid });
          break;
        case 'DelegateUpdated': {
          const delegate = entry.args.newDelegate;
          events.push({ ...position, name: 'DelegateUpdated', secretId: entry.args.secretId, delegate: delegate === zeroAddress ? null : delegate.toLowerCase() });
          break;
        }
        case 'SecretOwnershipTransferred':
          events.push({ ...position, name: 'SecretOwnershipTransferred', secretId: entry.args.secretId, from: entry.args.oldOwner.toLowerCase(), to: entry.args.newOwner.toLowerCase() });
          break;
      }
    }
    return events.sort((a, b) => a.blockNumber - b.blockNumber || a.logIndex - b.logIndex);
  }

  let follower: EventFollower | undefined;
  let stopped = false;

  return {
    chainId,
    name,
    freshnessWindow: Math.ceil(FRESHNESS_MS / blockTimeMs),
    confirmations,
    startBlock: options.startBlock ?? 0,
    hasController: controller !== undefined,
    syncer: options.syncer ?? false,
    syncerAddress,

    blockNumber,

    controllerClusterId: options.controllerClusterId ?? 0,

    getSecretState,

    isWhitelisted,

    markSecretSynced(secretId, clusterId, publicKeyCid) {
      if (!(options.syncer ?? false)) {
        return Promise.reject(new Error(`chain ${chainId}: this node is not the chain's syncer (chains[].syncer)`));
      }
      const id = BigInt(secretId);
      return sendQueue(() => markSecretSyncedOnce(id, clusterId, publicKeyCid));
    },

    followEvents(followOptions) {
      requireController();
      if (stopped) throw new Error(`chain ${chainId}: the client is stopped`);
      if (follower) throw new Error(`chain ${chainId}: events are already being followed`);
      const started = startEventFollower(
        {
          fromBlock: followOptions.fromBlock,
          confirmations: followOptions.confirmations ?? confirmations,
          maxBlocksPerQuery: followOptions.maxBlocksPerQuery ?? DEFAULT_MAX_BLOCKS_PER_QUERY,
          pollIntervalMs: followOptions.pollIntervalMs ?? blockTimeMs,
          ...(followOptions.retryBackoffMs === undefined ? {} : { retryBackoffMs: followOptions.retryBackoffMs }),
          ...(followOptions.retryBackoffMaxMs === undefined ? {} : { retryBackoffMaxMs: followOptions.retryBackoffMaxMs }),
          onEvents: followOptions.onEvents,
        },
        {
          logger: log,
          random,
          head: (fresh) => blockNumber({ fresh }),
          events: eventsBetween,
          delivered: (toBlock, judgedHead) => {
            cursor = toBlock;
            metrics?.chainCursorLag.set(label, Math.max(0, Math.max(judgedHead, head?.value ?? 0) - toBlock));
          },
        },
      );
      const handle: EventFollower = {
        get nextBlock() {
          return started.nextBlock;
        },
        stop: async () => {
          await started.stop();
          if (follower === handle) follower = undefined;
        },
      };
      follower = handle;
      return handle;
    },

    status() {
      return {
        chainId,
        name,
        rpcUrl: redactedRpcUrl,
        secretsControllerAddress: controller ?? null,
        head: head?.value ?? null,
        headAt: head?.at ?? null,
        cursor: cursor ?? null,
        lag: head && cursor !== undefined ? Math.max(0, head.value - cursor) : null,
        reachable,
        lastError: lastError?.reason ?? null,
        lastErrorAt: lastError?.at ?? null,
        syncer: options.syncer ?? false,
        syncerAddress: syncerAddress ?? null,
      };
    },

    async stop() {
      stopped = true;
      await follower?.stop();
    },
  };
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Lowercase controller address, or undefined for none (unset or the zero address). */
function normalizeController(address: string | undefined): Address | undefined {
  if (address === undefined) return undefined;
  const lower = address.toLowerCase() as Address;
  return lower === zeroAddress ? undefined : lower;
}

/** `base` with every request timed and reported to `observe` (error: the failure, if any). */
function measured(base: Transport, observe: (method: string, seconds: number, err?: unknown) => void): Transport {
  return (params) => {
    const inner = base(params);
    const request = (async (args: { method: string }, requestOptions?: unknown) => {
      const started = performance.now();
      try {
        const result = await (inner.request as (a: unknown, o?: unknown) => Promise<unknown>)(args, requestOptions);
        observe(args.method, (performance.now() - started) / 1000);
        return result;
      } catch (err) {
        observe(args.method, (performance.now() - started) / 1000, err);
        throw err;
      }
    }) as typeof inner.request;
    return { ...inner, request };
  };
}
