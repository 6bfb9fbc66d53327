/**
 * What the core needs of the EVM chains (docs/web3.md): the head block of each enabled chain, for the
 * freshness of Web3 signed strings. Implemented by src/evm (the only importer of viem); tests may
 * pass any implementation.
 */

/** One enabled chain's head, as the signed-data verifier reads it. */
export interface ChainHead {
  readonly chainId: number;
  /** Display name, e.g. `Base`. */
  readonly name: string;
  /** Blocks a signed block number may lag the head: `ceil(600000 / blockTimeMs)` (docs/http.md). */
  readonly freshnessWindow: number;
  /**
   * The head block number: cached for at most one block time; `fresh` reads the chain again. Never
   * lower than a value it returned before (a member forgets a used Web3 string by it:
   * src/core/secrets/used-strings.ts). Rejects with 503 `CHAIN_UNAVAILABLE` (naming the chain) when
   * the RPC cannot answer.
   */
  blockNumber(options?: { fresh?: boolean }): Promise<number>;
}

/** The enabled chains, by chain id. */
export interface ChainHeads {
  get(chainId: number): ChainHead | undefined;
}

/** How far a signed block number may be ahead of the head before it is "in the future" (docs/http.md). */
export const FUTURE_BLOCK_TOLERANCE = 5;

/** One chain as `/healthz` shows it to operators (`chainStatus`): what the node last saw of it. */
export interface ChainStatusView {
  chainId: number;
  name: string;
  /** Last head read, or null before the first. */
  head: number | null;
  /** When it was read, Unix ms. */
  headAt: number | null;
  /** The last block whose events were handled, or null. */
  cursor: number | null;
  /** head − cursor, or null. */
  lag: number | null;
  /** Whether the last RPC call got an answer; null before the first call. */
  reachable: boolean | null;
  /** Short reason of the last failed call (never the URL), or null. */
  lastError: string | null;
}

/** A secret's state in the secrets controller (`getSecretState`), addresses lowercase. */
export interface SecretState {
  owner: string;
  /** The delegate, or null when none (the zero address on chain). */
  delegate: string | null;
  /** True from creation until `markSecretSynced`. */
  isSyncing: boolean;
  clusterId: number;
  /** `1` is the type the cluster serves. */
  secretType: number;
  /** Empty until synced; the sentinel `cifer` for the cluster's secrets. */
  publicKeyCid: string;
}

/** Where a followed event sits on chain. */
export interface ChainEventPosition {
  chainId: number;
  blockNumber: number;
  blockHash: string;
  logIndex: number;
  transactionHash: string;
}

/** A controller event the cluster follows, decoded, addresses lowercase. */
export type ChainEvent = ChainEventPosition &
  (
    | { name: 'SecretCreated'; secretId: bigint; owner: string; secretType: number }
    | { name: 'SecretSynced'; secretId: bigint; clusterId: number; publicKeyCid: string }
    | { name: 'DelegateUpdated'; secretId: bigint; /** null: the delegate was cleared. */ delegate: string | null }
    | { name: 'SecretOwnershipTransferred'; secretId: bigint; from: string; to: string }
  );

/** Options of {@link Web3Chain.followEvents}. */
export interface FollowEventsOptions {
  /** First block to read: the saved cursor + 1; on a node with none, the chain's `startBlock`. */
  fromBlock: number;
  /** @default the chain's `confirmations` */
  confirmations?: number;
  /** @default 2000 */
  maxBlocksPerQuery?: number;
  /** Wait between head reads once caught up, ms. @default blockTimeMs */
  pollIntervalMs?: number;
  /** First backoff after a failure, ms (doubles, with jitter). @default 1000 */
  retryBackoffMs?: number;
  /** Longest backoff after failures, ms. @default 30000 */
  retryBackoffMaxMs?: number;
  /**
   * Each range's events in block and log order, and the range's last block. The next range is read
   * after this resolves; a throw re-delivers the same range after a backoff. Persist `toBlock` as the
   * cursor here, after acting on the events (at-least-once delivery: acting must be idempotent).
   */
  onEvents(events: readonly ChainEvent[], toBlock: number): Promise<void> | void;
}

/** A running event follower. */
export interface EventFollower {
  /** The next block to read (the last delivered range's end + 1). */
  readonly nextBlock: number;
  /** Stop: waits for a handler call in progress, delivers nothing after. Idempotent. */
  stop(): Promise<void>;
}

/** What `markSecretSynced` did. */
export type MarkSyncedResult =
  | { status: 'synced'; transactionHash: string; blockNumber: number }
  /** Nothing sent, or our transaction lost a race: the secret is not syncing any more. */
  | { status: 'already-synced'; clusterId: number; publicKeyCid: string };

/**
 * One enabled chain with its secrets controller, as the Web3 secrets capability uses it
 * (src/core/web3/service.ts). Implemented by src/evm's chain client.
 */
export interface Web3Chain extends ChainHead {
  /** Blocks an event or a state must be buried under before the cluster acts on it. */
  readonly confirmations: number;
  /** Where following starts on a node with no cursor. */
  readonly startBlock: number;
  /** Whether a secrets controller is configured (else every read is 503 CHAIN_UNAVAILABLE). */
  readonly hasController: boolean;
  /** Whether this node is the chain's syncer: it deals the keys of new secrets and marks them synced. */
  readonly syncer: boolean;
  /** This cluster's id in the controller (`markSecretSynced`'s uint8 `clusterId`). */
  readonly controllerClusterId: number;
  /** `getSecretState(secretId)` at `blockNumber` (default latest); undefined for no such secret. 503 CHAIN_UNAVAILABLE. */
  getSecretState(secretId: bigint | number, options?: { blockNumber?: number }): Promise<SecretState | undefined>;
  /** Whether `address` is a whitelisted black box of the controller (at `blockNumber`, default latest). */
  isWhitelisted(address: string, options?: { blockNumber?: number }): Promise<boolean>;
  /** Send `markSecretSynced` (the syncer only); "already synced" is a result, not an error. */
  markSecretSynced(secretId: bigint | number, clusterId: number, publicKeyCid: string): Promise<MarkSyncedResult>;
  /** Start following the controller's events (one follower per chain). */
  followEvents(options: FollowEventsOptions): EventFollower;
}

/** The enabled chains as the Web3 secrets capability sees them. */
export interface Web3Chains extends ChainHeads {
  get(chainId: number): Web3Chain | undefined;
  list(): readonly Web3Chain[];
}
