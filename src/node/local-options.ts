/**
 * Defaults of `npm start` / `quorumkeep local` (src/node/local.ts), apart from it so that the CLI can
 * show them without loading the nodes' code.
 */

/** Member slots of a new local cluster. */
export const DEFAULT_LOCAL_SIZE = 5;
/** Its quorum. */
export const DEFAULT_LOCAL_THRESHOLD = 3;
/** The local chain's RPC port: anvil's usual one, where wallets and tools look first. */
export const DEFAULT_LOCAL_CHAIN_PORT = 8545;
