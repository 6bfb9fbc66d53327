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
   * The head block number: cached for at most one block time; `fresh` reads the chain again.
   * Rejects with 503 `CHAIN_UNAVAILABLE` (naming the chain) when the RPC cannot answer.
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
