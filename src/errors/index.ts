/**
 * The error hierarchy and its one map to HTTP status (CONTRIBUTING.md rule 7).
 *
 * Every failure a user can cause or observe is an {@link AppError} with a code from the closed set
 * {@link ERROR_CODES}. The HTTP layer maps code → status with {@link httpStatusOf}; nothing matches
 * errors by message text. A node that cannot start because another process holds its port or data
 * directory throws a {@link StartupError} (./startup.ts) instead: it never reaches HTTP.
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
  /**
   * The secret's shares are lost: fewer than `threshold` members hold one (they said so), so it can
   * never be decrypted again. Permanent: a retry gets the same answer (docs/operations.md, "Data safety").
   */
  SECRET_LOST: 410,
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
  /**
   * A permit's confirmation mail did not go out, or could not be recorded as sent (docs/permits.md,
   * "The confirmation mail"): the permit is kept, and the exact retry (same requestId) mails the link.
   */
  MAIL_UNAVAILABLE: 503,
} as const;

/** A machine-readable error code. */
export type ErrorCode = keyof typeof ERROR_CODES;

/** Extra JSON fields an error may carry to the client (e.g. `retryAfterSeconds`, `limitType`). */
export type ErrorExtra = Record<string, string | number | boolean | null | string[] | Record<string, string>>;

/**
 * Why a member refused a `grant` or `shard` call (docs/security.md, "Member refusals"): a closed set,
 * carried next to the code in the member's answer, so a caller or a test tells one refusal from
 * another without reading its message. Never sent to HTTP clients.
 */
export const REFUSAL_REASONS = [
  /** The call does not decode: unknown op, a field missing, of the wrong type or out of bounds, a bad helper set. */
  'malformed',
  /** This node holds no slot, or (recovery) the caller holds none. */
  'not_member',
  /** Shares are dealt and released, and grants given, to coordinators only. */
  'not_coordinator',
  /** The catch-up gate: this member does not yet hold what the requester held. */
  'not_ready',
  /** The client's signed string or proof does not verify: format, chain, freshness, signature or session. */
  'unverified',
  /** A release whose string and envelope are not a decrypt's (a payload's non-empty message and 1104-byte cifer, or a file's 4 parts). */
  'not_a_decrypt',
  /** The signed string names another secret than the call. */
  'names_another_secret',
  /** This member cannot serve the secret: no record of it here, syncing, an unsupported type, or its chain unreadable. */
  'secret_unavailable',
  /** The string's principal is neither the owner nor the delegate of the secret. */
  'not_owner_or_delegate',
  /** This member already released its share for this string to another coordinator. */
  'string_used',
  /** This member holds no share of the secret it can use (none, or one that does not open). */
  'no_share',
  /** A share that is not this slot's: it does not open for this member, is at another coordinate, differs from the record's digest or from the share held. */
  'share_mismatch',
  /** A recovery request for a slot whose status is not `recovering`. */
  'not_recovering',
  /** A share dealt at a random coordinate (before share recovery existed): nothing can be rebuilt from it. */
  'not_recoverable',
  /** A grant for no active principal with a registered key. */
  'unknown_principal',
  /** A grant for a session address bound to another principal's live session. */
  'address_in_use',
  /** A grant whose issue time is too far from the member's clock. */
  'clock_skew',
  /** Slot 0 writes this transition only for itself (a permit's request or token reissue) or only on its own claim (a secret's creation). */
  'not_proposable',
  /** A proposed version every member would refuse (its record refusal code is in the message). */
  'record_refused',
] as const;

/** A member's refusal reason (see {@link REFUSAL_REASONS}). */
export type RefusalReason = (typeof REFUSAL_REASONS)[number];

/** True for a reason of the closed set (a peer's answer is checked before it is believed). */
export function isRefusalReason(value: unknown): value is RefusalReason {
  return typeof value === 'string' && (REFUSAL_REASONS as readonly string[]).includes(value);
}

/** Options of an {@link AppError}: the standard `cause`, and a member's refusal reason. */
export interface AppErrorOptions extends ErrorOptions {
  reason?: RefusalReason;
}

/** An expected failure with a code from {@link ERROR_CODES}; safe to show its message to a client. */
export class AppError extends Error {
  readonly code: ErrorCode;
  readonly extra: ErrorExtra | undefined;
  /** Why a member refused, when this is a member's refusal (never part of an HTTP answer). */
  readonly reason: RefusalReason | undefined;

  constructor(code: ErrorCode, message: string, extra?: ErrorExtra, options?: AppErrorOptions) {
    super(message, options);
    this.name = 'AppError';
    this.code = code;
    this.extra = extra;
    this.reason = options?.reason;
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

/** A member's refusal: `code` for the caller's answer, `reason` for the caller's logic. */
export function refusal(code: ErrorCode, reason: RefusalReason, message: string): AppError {
  return new AppError(code, message, undefined, { reason });
}

/**
 * `err` as a member's refusal for `reason`, for a check a member runs through another module (the
 * signed-data verifier, a secret lookup, a decode): an AppError that names no reason yet gets this
 * one (same code and message); anything else is returned as it was.
 */
export function withReason(err: unknown, reason: RefusalReason): unknown {
  return err instanceof AppError && err.reason === undefined ? new AppError(err.code, err.message, err.extra, { cause: err, reason }) : err;
}

/** A `.catch` handler that rethrows {@link withReason}. */
export function refusedAs(reason: RefusalReason): (err: unknown) => never {
  return (err) => {
    throw withReason(err, reason);
  };
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

export { STARTUP_ERROR_CODES, StartupError, type StartupErrorCode, type StartupErrorKey, type StartupErrorDetails } from './startup.ts';
