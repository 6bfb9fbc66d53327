/**
 * How the chain client reads viem's errors (docs/web3.md § "Chain client"): a revert is an answer
 * (the contract said no), a transport or provider failure means the chain is unavailable. Errors are
 * told apart by class and JSON-RPC code, never by message text; the short reasons built here never
 * contain the RPC URL (viem's own messages do, and providers put API keys in it).
 */
import {
  BaseError,
  ContractFunctionRevertedError,
  ContractFunctionZeroDataError,
  HttpRequestError,
  InsufficientFundsError,
  NonceTooLowError,
  RpcError,
  RpcRequestError,
  SocketClosedError,
  TimeoutError,
  WebSocketRequestError,
} from 'viem';

// JSON-RPC codes of a provider that could not serve the call (EIP-1474 and common providers'):
// internal error, resource unavailable, limit exceeded, QuickNode's rate limit, 429 in a 200 body,
// and viem's "unknown".
const UNAVAILABLE_RPC_CODES = new Set([-32603, -32002, -32005, -32007, 429, -1]);
// EIP-1474 "transaction rejected".
const TRANSACTION_REJECTED_CODE = -32003;

// Node's network error codes, as a few plain words for a 503 message.
const NETWORK_REASONS: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'DNS lookup failed',
  ETIMEDOUT: 'connection timed out',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  UND_ERR_SOCKET: 'connection closed',
  UND_ERR_CONNECT_TIMEOUT: 'connection timed out',
  CERT_HAS_EXPIRED: 'TLS certificate expired',
  DEPTH_ZERO_SELF_SIGNED_CERT: 'TLS certificate not trusted',
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: 'TLS certificate not trusted',
};

function walk<T extends Error>(err: unknown, match: (e: unknown) => e is T): T | undefined {
  if (!(err instanceof BaseError)) return match(err) ? err : undefined;
  const found = err.walk((e) => match(e));
  return found && match(found) ? found : undefined;
}

/** The contract reverted the call. `reason` is its reason string, when it gave one. */
export function revertOf(err: unknown): { reason: string | undefined } | undefined {
  const reverted = walk(err, (e): e is ContractFunctionRevertedError => e instanceof ContractFunctionRevertedError);
  if (!reverted) return undefined;
  return { reason: reverted.reason ?? reverted.data?.errorName };
}

/** The call reached an address with no contract code (`0x` returned): a wrong controller address. */
export function isZeroData(err: unknown): boolean {
  return walk(err, (e): e is ContractFunctionZeroDataError => e instanceof ContractFunctionZeroDataError) !== undefined;
}

/**
 * The transaction collided with another one of the same sender: its nonce was used already ("nonce
 * too low"), or a pending transaction holds it (rejected, -32003, e.g. "replacement transaction
 * underpriced"). Only another process sending with the same key causes this: re-send with a fresh
 * nonce.
 */
export function isNonceConflict(err: unknown): boolean {
  return walk(err, (e): e is NonceTooLowError => e instanceof NonceTooLowError) !== undefined || rpcCodeOf(err) === TRANSACTION_REJECTED_CODE;
}

/** The sender cannot pay for gas. */
export function isInsufficientFunds(err: unknown): boolean {
  return walk(err, (e): e is InsufficientFundsError => e instanceof InsufficientFundsError) !== undefined;
}

function httpStatusOf(err: unknown): number | undefined {
  const http = walk(err, (e): e is HttpRequestError | RpcRequestError => e instanceof HttpRequestError || e instanceof RpcRequestError);
  return http?.status;
}

function rpcCodeOf(err: unknown): number | undefined {
  const rpc = walk(err, (e): e is RpcError | RpcRequestError => e instanceof RpcError || e instanceof RpcRequestError);
  return typeof rpc?.code === 'number' ? rpc.code : undefined;
}

/**
 * The RPC gave no usable answer: a timeout, a network or HTTP failure, or a provider error that says
 * it could not serve the call (rate limit, internal error). What the `chain_rpc_errors_total` counter
 * counts and what marks a chain unreachable; reverts and other JSON-RPC answers are not.
 */
export function isUnavailable(err: unknown): boolean {
  if (walk(err, (e): e is TimeoutError | SocketClosedError | WebSocketRequestError => e instanceof TimeoutError || e instanceof SocketClosedError || e instanceof WebSocketRequestError)) {
    return true;
  }
  const status = httpStatusOf(err);
  if (status !== undefined && (status < 200 || status >= 300)) return true;
  const code = rpcCodeOf(err);
  if (code !== undefined) return UNAVAILABLE_RPC_CODES.has(code);
  // An HttpRequestError without a status: the request never got a response.
  return walk(err, (e): e is HttpRequestError => e instanceof HttpRequestError) !== undefined;
}

function networkCodeOf(err: unknown): string | undefined {
  let current: unknown = err;
  for (let depth = 0; depth < 10 && current instanceof Error; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    current = current.cause;
  }
  return undefined;
}

/**
 * A few words on why a call failed, safe for a client-facing message and a log line: built from the
 * error's class, HTTP status, JSON-RPC code or network error code, never from its text.
 */
export function shortReason(err: unknown, timeoutMs: number): string {
  if (walk(err, (e): e is TimeoutError => e instanceof TimeoutError)) return `timed out after ${timeoutMs} ms`;
  const status = httpStatusOf(err);
  if (status === 429) return 'rate limited (HTTP 429)';
  if (status !== undefined && (status < 200 || status >= 300)) return `HTTP ${status}`;
  const code = rpcCodeOf(err);
  if (code === -32005 || code === -32007 || code === 429) return `rate limited (RPC error ${code})`;
  if (code !== undefined) return `RPC error ${code}`;
  if (walk(err, (e): e is SocketClosedError | WebSocketRequestError => e instanceof SocketClosedError || e instanceof WebSocketRequestError)) return 'connection closed';
  const network = networkCodeOf(err);
  if (network !== undefined) return NETWORK_REASONS[network] ?? `network error (${network})`;
  if (walk(err, (e): e is HttpRequestError => e instanceof HttpRequestError)) return 'network error';
  return 'unexpected response';
}
