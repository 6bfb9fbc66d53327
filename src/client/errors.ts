/**
 * What the client throws: an API answer that is not a success ({@link ApiError}: the status, the
 * server's machine `code` and its message, docs/http.md "Errors"), or a failure on this side
 * ({@link ClientError}: no session, an expired one, a job that failed, a timeout). Messages never carry
 * a request body, a key, a password or a plaintext.
 */

/** An error answer of a coordinator: `{ error, code, …extra }` with an HTTP status. */
export class ApiError extends Error {
  /** HTTP status. */
  readonly status: number;
  /** The machine code (`BAD_REQUEST`, `FORBIDDEN`, `OVERLOADED`, …); `HTTP_<status>` when the body had none. */
  readonly code: string;
  /** The route called, e.g. `POST /encrypt-payload` (never the query or the body). */
  readonly route: string;
  /** `retryAfterSeconds` of the answer (or its `Retry-After` header), when it had one. */
  readonly retryAfterSeconds: number | undefined;
  /** The whole JSON error body (its extra fields: `failedNodes`, `limitType`, `detail`, `chainId`…). */
  readonly body: Readonly<Record<string, unknown>>;

  constructor(route: string, status: number, body: Record<string, unknown>, retryAfterHeader?: string | null) {
    const message = typeof body['error'] === 'string' && body['error'] !== '' ? body['error'] : `HTTP ${status}`;
    super(`${route}: ${message}`);
    this.name = 'ApiError';
    this.route = route;
    this.status = status;
    this.code = typeof body['code'] === 'string' ? body['code'] : `HTTP_${status}`;
    this.body = body;
    const fromBody = typeof body['retryAfterSeconds'] === 'number' ? body['retryAfterSeconds'] : undefined;
    const fromHeader = retryAfterHeader && /^\d+$/.test(retryAfterHeader) ? Number(retryAfterHeader) : undefined;
    this.retryAfterSeconds = fromBody ?? fromHeader;
  }

  /** The server's own message, without the route. */
  get serverMessage(): string {
    return typeof this.body['error'] === 'string' ? this.body['error'] : '';
  }
}

/** Why the client itself refused or gave up. */
export type ClientErrorCode =
  /** A call that needs a session or a wallet, made without one. */
  | 'NO_SIGNER'
  /** The session's `expiresAt` has passed: log in again. */
  | 'SESSION_EXPIRED'
  /** A coordinator could not be reached (connection refused, reset, DNS). */
  | 'UNREACHABLE'
  /** A deadline passed (a request, or a job that did not finish). */
  | 'TIMEOUT'
  /** A file job ended `failed` or `expired`. */
  | 'JOB_FAILED'
  /** An answer that is not what docs/http.md says (not JSON, a field missing). */
  | 'BAD_ANSWER'
  /** The chain's RPC could not give a block number. */
  | 'CHAIN_RPC'
  /** The mail with the code did not arrive in the outbox in time. */
  | 'NO_MAIL'
  /** Bad input to a client call (a malformed key, id or option). */
  | 'INVALID_INPUT';

/** A failure on the client's side. */
export class ClientError extends Error {
  readonly code: ClientErrorCode;

  constructor(code: ClientErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ClientError';
    this.code = code;
  }
}

/**
 * A signed string refused as stale: Web3 `Block number <n> is too old (current: <c>, max window: <w>)`
 * (the form the deployed client matches, spec API.md "Web3 principals") or Web2
 * `Timestamp <t> is outside the allowed window of ±<w> ms (now: <n>)` (src/core/sessions/signed-data.ts).
 * Both are `400 BAD_REQUEST`, so only the message tells them apart from other bad input.
 */
export function isStaleRefusal(err: unknown): err is ApiError {
  return err instanceof ApiError && err.status === 400 && err.code === 'BAD_REQUEST' && /is too old \(current: \d+|outside the allowed window/.test(err.serverMessage);
}
