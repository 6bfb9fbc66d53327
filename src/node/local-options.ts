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
/** `quorumkeep local`'s first coordinator on its default ports: where the CLI's client verbs look by default. */
export const DEFAULT_LOCAL_COORDINATOR_URL = 'http://127.0.0.1:3010';
/** The environment variable that names the coordinator (or node) the CLI talks to, instead of `--url`. */
export const URL_ENV = 'QK_URL';
