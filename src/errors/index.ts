/**
 * The error hierarchy and its one map to HTTP status (CONTRIBUTING.md rule 7).
 *
 * Every failure a user can cause or observe is an {@link AppError} with a code from the closed set
 * {@link ERROR_CODES}. The HTTP layer maps code → status with {@link httpStatusOf}; nothing matches
 * errors by message text.
 */

/** Closed set of machine codes, each with its HTTP status. */
export const ERROR_CODES = {
  BAD_REQUEST: 400,
  VALIDATION_FAILED: 400,
  INVALID_JSON: 400,
  /** Valid input that does not decrypt: wrong key, tampered cifer or message. */
  DECRYPTION_FAILED: 400,
  UNAUTHORIZED: 401,
  /** A session that expired, was revoked (key rotation, account deletion) or never existed. */
  SESSION_INACTIVE: 401,
  FORBIDDEN: 403,
  /**
   * Web2 credentials while the account waits for a password reset (a contested registration, see
   * docs/architecture.md "Web2 accounts"): no password is valid until forgot-password → reset-password.
   */
  PASSWORD_RESET_REQUIRED: 403,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  CONFLICT: 409,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  RATE_LIMITED: 429,
  /**
   * A plan limit (docs/http.md, Usage): the `error` is exactly "Limit exceeded", with `detail`, `limitType`
   * and `retryAfterSeconds` (also sent as `Retry-After`).
   */
  LIMIT_EXCEEDED: 429,
  INTERNAL: 500,
  /** Fewer than `threshold` members reachable, or a quorum write got fewer acks. */
  QUORUM_UNAVAILABLE: 503,
  /** The slot-0 creator could not be reached for an id allocation or create. */
  SLOT0_UNAVAILABLE: 503,
  NOT_READY: 503,
  /**
   * An EVM chain could not be read (its RPC failed, timed out or serves another chain, after retries)
   * or has no secrets controller configured; the message names the chain, never the RPC URL, and the
   * body carries `chainId` (docs/web3.md § "Chain client").
   */
  CHAIN_UNAVAILABLE: 503,
  /**
   * The node is shedding load (its argon2 queue is full): nothing was done; retry after
   * `retryAfterSeconds` (also sent as `Retry-After`).
   */
  OVERLOADED: 503,
} as const;

/** A machine-readable error code. */
export type ErrorCode = keyof typeof ERROR_CODES;

/** Extra JSON fields an error may carry to the client (e.g. `retryAfterSeconds`, `limitType`). */
export type ErrorExtra = Record<string, string | number | boolean | null | string[] | Record<string, string>>;

/** An expected failure with a code from {@link ERROR_CODES}; safe to show its message to a client. */
export class AppError extends Error {
  readonly code: ErrorCode;
  readonly extra: ErrorExtra | undefined;

  constructor(code: ErrorCode, message: string, extra?: ErrorExtra, options?: ErrorOptions) {
    super(message, options);
    this.name = 'AppError';
    this.code = code;
    this.extra = extra;
  }

  /** HTTP status for this error. */
  get status(): number {
    return ERROR_CODES[this.code];
  }
}

/** HTTP status for a code. */
export function httpStatusOf(code: ErrorCode): number {
  return ERROR_CODES[code];
}

/** True when `err` is an {@link AppError}. */
export function isAppError(err: unknown): err is AppError {
  return err instanceof AppError;
}

/** A member that did not acknowledge a replicated write, and why. */
export interface MemberFailure {
  /** The member's node address (0x…). */
  nodeAddress: string;
  /** The member's slot. */
  slot: number;
  /** Short reason, e.g. `timeout`, `unreachable`, `rejected: <reason>`. */
  error: string;
}

/**
 * A quorum write or quorum read that reached fewer than `threshold` members. Mapped to 503.
 * Carries which members failed so operators and callers can see the membership picture.
 */
export class QuorumError extends AppError {
  readonly failed: MemberFailure[];
  readonly acked: string[];

  constructor(message: string, acked: string[], failed: MemberFailure[]) {
    super('QUORUM_UNAVAILABLE', message, { failedNodes: failed.map((f) => f.nodeAddress) });
    this.name = 'QuorumError';
    this.acked = acked;
    this.failed = failed;
  }
}
