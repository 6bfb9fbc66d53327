/**
 * Why a node could not start with what its config gives it: something a node holds alone — a port,
 * its data directory — is held by another process (docs/operations.md, "Startup errors"). Not an HTTP
 * error: the CLI prints it as one line, the config key first, followed by the flag that changes that
 * key, and exits 2 (src/main.ts).
 */

/** Closed set of startup failure codes. */
export const STARTUP_ERROR_CODES = [
  /** A port this node binds (libp2p, API, operator) is bound by another process. */
  'ADDRESS_IN_USE',
  /** The data directory's store is open in another process (LevelDB's lock is held). */
  'DATA_DIR_IN_USE',
] as const;

/** A startup failure code (see {@link STARTUP_ERROR_CODES}). */
export type StartupErrorCode = (typeof STARTUP_ERROR_CODES)[number];

/** The config key whose value a startup error is about (docs/configuration.md). */
export type StartupErrorKey = 'listen' | 'http.port' | 'operator.port' | 'dataDir';

/** What a {@link StartupError} names besides its code. */
export interface StartupErrorDetails {
  /** The config key that changes what was taken. */
  key: StartupErrorKey;
  /** The node that could not start. */
  nodeId: string;
  /**
   * `listen` only: the address is the node's announced one, from the cluster file (its config sets no
   * `listen`). Moving it then means announcing the new one too. @default false
   */
  fromClusterFile?: boolean;
}

/** A start refused because what the config names is held by another process; the message begins with the key. */
export class StartupError extends Error {
  readonly code: StartupErrorCode;
  readonly key: StartupErrorKey;
  readonly nodeId: string;
  readonly fromClusterFile: boolean;

  constructor(code: StartupErrorCode, message: string, details: StartupErrorDetails, options?: ErrorOptions) {
    super(message, options);
    this.name = 'StartupError';
    this.code = code;
    this.key = details.key;
    this.nodeId = details.nodeId;
    this.fromClusterFile = details.fromClusterFile ?? false;
  }
}
