/**
 * The client's one way to a coordinator: a request with a deadline, the answer parsed as JSON (or
 * handed back raw for downloads), an error answer turned into an {@link ApiError}, and the retries
 * docs/http.md calls safe — a `503` that carries `retryAfterSeconds` (`OVERLOADED`: nothing was done;
 * `NOT_READY`: a replica catching up, a job's coordinator out of reach), after its `Retry-After`; and,
 * for a request whose repetition is the same request (`POST /web2/secret` with the same signed string
 * answers the secret it created), any `503` or a connection that failed. A `429` is never retried
 * here: plan limits and abuse limits are the caller's to wait out (spec API.md, "Usage").
 */
import { ApiError, ClientError } from './errors.ts';

/** Retry settings. */
export interface RetryOptions {
  /** Tries of one request in all, the first included. @default 3 */
  attempts?: number;
  /** Longest wait before a retry, ms (a longer `Retry-After` is cut to it). @default 5000 */
  maxWaitMs?: number;
}

/** Which failures a request may be repeated after. */
export type RetryPolicy =
  /** Only a 503 with `retryAfterSeconds`: the server says to come back. */
  | 'retry-after'
  /** Any 503, and a connection that failed: the request is idempotent by its signed string. */
  | 'idempotent'
  /** Never (an upload whose body cannot be sent again). */
  | 'never';

/** What {@link createTransport} needs. */
export interface TransportDeps {
  fetch: typeof fetch;
  sleep: (ms: number) => Promise<void>;
}

/** Options of {@link createTransport}. */
export interface TransportOptions {
  /** Coordinator base URL. */
  url: string;
  /** Deadline of a request until its answer's headers (a download's body then has none), ms. @default 30000 */
  timeoutMs?: number;
  retry?: RetryOptions;
}

/** One request. */
export interface RequestSpec {
  method: 'GET' | 'POST';
  /** Path and query, e.g. `/jobs/<id>/status`. */
  path: string;
  /** A JSON body. */
  json?: unknown;
  /** A raw body (a multipart upload), made anew for each try. */
  body?: () => { body: AsyncIterable<Uint8Array>; headers: Record<string, string> };
  retry?: RetryPolicy;
  /**
   * Deadline until the answer's headers, ms; 0 for none (an upload: the answer comes only once the
   * whole file is sent). @default the transport's `timeoutMs`
   */
  timeoutMs?: number;
  /** Ends the request (and its retries) early. */
  signal?: AbortSignal;
}

/** A coordinator at one URL. */
export interface Transport {
  readonly url: string;
  /** Send and parse a JSON answer; throws ApiError for an error status. */
  json<T>(spec: RequestSpec): Promise<T>;
  /** Send and return the successful response unread (a download); throws ApiError for an error status. */
  raw(spec: RequestSpec): Promise<Response>;
}

const DEFAULT_TIMEOUT_MS = 30_000;
const DEFAULT_ATTEMPTS = 3;
const DEFAULT_MAX_WAIT_MS = 5_000;
/** The wait before retrying a 503 that named none. */
const DEFAULT_RETRY_WAIT_MS = 1_000;

/** The route a request names in errors: method and path without the query (job ids stay: they are not secret). */
function routeOf(spec: RequestSpec): string {
  return `${spec.method} ${spec.path.split('?')[0]}`;
}

/** The innermost reason of a failed fetch (`ECONNREFUSED`, `ENOTFOUND`, …). */
function reasonOf(err: unknown): string {
  let current = err;
  while (current instanceof Error && current.cause !== undefined) current = current.cause;
  return (current as NodeJS.ErrnoException | undefined)?.code ?? (current instanceof Error ? current.message : String(current));
}

/** Create a transport to `options.url`. */
export function createTransport(options: TransportOptions, deps: TransportDeps): Transport {
  const base = options.url.replace(/\/+$/, '');
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const attempts = Math.max(1, options.retry?.attempts ?? DEFAULT_ATTEMPTS);
  const maxWaitMs = options.retry?.maxWaitMs ?? DEFAULT_MAX_WAIT_MS;

  async function once(spec: RequestSpec): Promise<Response> {
    const route = routeOf(spec);
    const made = spec.body?.();
    const headers: Record<string, string> = { accept: 'application/json', ...(made?.headers ?? {}) };
    if (spec.json !== undefined) headers['content-type'] = 'application/json';
    const limitMs = spec.timeoutMs ?? timeoutMs;
    const deadline = new AbortController();
    const timer = limitMs > 0 ? setTimeout(() => deadline.abort(new ClientError('TIMEOUT', `${route}: no answer from ${base} within ${limitMs} ms`)), limitMs) : undefined;
    let response: Response;
    try {
      response = await deps.fetch(`${base}${spec.path}`, {
        method: spec.method,
        headers,
        ...(spec.json !== undefined ? { body: JSON.stringify(spec.json) } : made ? { body: made.body, duplex: 'half' } : {}),
        signal: spec.signal ? AbortSignal.any([spec.signal, deadline.signal]) : deadline.signal,
      } as RequestInit);
    } catch (err) {
      if (spec.signal?.aborted) throw err;
      if (deadline.signal.aborted) throw deadline.signal.reason as ClientError;
      throw new ClientError('UNREACHABLE', `${route}: cannot reach ${base} (${reasonOf(err)})`, { cause: err });
    } finally {
      // The deadline covers the wait for an answer, not the reading of a long download's body.
      clearTimeout(timer);
    }
    if (response.ok) return response;
    const text = await response.text().catch(() => '');
    let body: Record<string, unknown> = {};
    try {
      const parsed: unknown = JSON.parse(text);
      if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) body = parsed as Record<string, unknown>;
    } catch {
      // Not JSON (a proxy's page): the status alone.
    }
    throw new ApiError(route, response.status, body, response.headers.get('retry-after'));
  }

  /** The wait before another try, or undefined when this failure is not retried. */
  function retryWait(err: unknown, policy: RetryPolicy): number | undefined {
    if (policy === 'never') return undefined;
    if (err instanceof ApiError && err.status === 503) {
      if (err.retryAfterSeconds !== undefined) return Math.min(err.retryAfterSeconds * 1000, maxWaitMs);
      return policy === 'idempotent' ? Math.min(DEFAULT_RETRY_WAIT_MS, maxWaitMs) : undefined;
    }
    if (err instanceof ClientError && err.code === 'UNREACHABLE' && policy === 'idempotent') return Math.min(DEFAULT_RETRY_WAIT_MS, maxWaitMs);
    return undefined;
  }

  async function send(spec: RequestSpec): Promise<Response> {
    const policy = spec.retry ?? 'retry-after';
    for (let attempt = 1; ; attempt++) {
      try {
        return await once(spec);
      } catch (err) {
        const wait = attempt < attempts ? retryWait(err, policy) : undefined;
        if (wait === undefined || spec.signal?.aborted) throw err;
        await deps.sleep(wait);
      }
    }
  }

  return {
    url: base,
    raw: send,
    async json<T>(spec: RequestSpec): Promise<T> {
      const response = await send(spec);
      try {
        return (await response.json()) as T;
      } catch (err) {
        throw new ClientError('BAD_ANSWER', `${routeOf(spec)}: the answer is not JSON`, { cause: err });
      }
    },
  };
}
