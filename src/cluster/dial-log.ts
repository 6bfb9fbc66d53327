/**
 * Failed dials, told to the operator at warn without flooding the log (issue 11): a node that cannot
 * reach a peer — a wrong address in the cluster file, a closed firewall port, a peer that is down —
 * retries every `reconnectIntervalMs`, and each failure used to be a trace line nobody saw. Now a
 * peer that keeps failing gets one warn line per {@link DIAL_FAILURE_LOG_INTERVAL_MS}, naming the peer,
 * the addresses dialled, why the last dial failed, and how many dials failed since the last line.
 *
 * Failures in the first {@link DIAL_FAILURE_GRACE_MS} after start are counted but not told: the nodes
 * of a cluster start at about the same time, and a peer not listening yet is not news. A peer still
 * failing when the grace ends is told at once, with the count.
 */

/** At most one line per peer in this interval, ms. */
export const DIAL_FAILURE_LOG_INTERVAL_MS = 30_000;
/** Failures this soon after start are counted, not logged, ms. */
export const DIAL_FAILURE_GRACE_MS = 10_000;

/** Options of {@link createDialFailureLog}. */
export interface DialFailureLogOptions {
  /** @default {@link DIAL_FAILURE_LOG_INTERVAL_MS} */
  intervalMs?: number;
  /** @default {@link DIAL_FAILURE_GRACE_MS} */
  graceMs?: number;
}

/** Dependencies of {@link createDialFailureLog}. */
export interface DialFailureLogDeps {
  /** Monotonic ms (performance.now). */
  now: () => number;
  /** Where a line goes (the cluster logger's `warn`). */
  warn: (fields: Record<string, unknown>, message: string) => void;
}

/** The peer a dial went to. */
export interface DialTarget {
  /** Node id in the cluster file. */
  nodeId: string;
  peerId: string;
  /** The multiaddrs dialled (the cluster file's). */
  multiaddrs: readonly string[];
}

/** Counts failed dials per peer and tells them at most once per interval. */
export interface DialFailureLog {
  /** A dial to `target` failed with `err`. */
  failed(target: DialTarget, err: unknown): void;
  /** `nodeId` is connected: its count starts again, and its next failure is told at once. */
  connected(nodeId: string): void;
}

interface PeerFailures {
  /** Failures not yet told. */
  count: number;
  /** now() of the last line, undefined before the first. */
  loggedAt: number | undefined;
}

/** Create the log; the grace period starts now. */
export function createDialFailureLog(options: DialFailureLogOptions, deps: DialFailureLogDeps): DialFailureLog {
  const intervalMs = options.intervalMs ?? DIAL_FAILURE_LOG_INTERVAL_MS;
  const graceMs = options.graceMs ?? DIAL_FAILURE_GRACE_MS;
  const startedAt = deps.now();
  const byPeer = new Map<string, PeerFailures>();
  return {
    failed(target, err) {
      const now = deps.now();
      let state = byPeer.get(target.nodeId);
      if (!state) {
        state = { count: 0, loggedAt: undefined };
        byPeer.set(target.nodeId, state);
      }
      state.count++;
      if (now - startedAt < graceMs) return;
      if (state.loggedAt !== undefined && now - state.loggedAt < intervalMs) return;
      deps.warn(
        { peer: target.nodeId, peerId: target.peerId, multiaddrs: target.multiaddrs, reason: dialErrorReason(err), failures: state.count, sinceMs: state.loggedAt === undefined ? undefined : Math.round(now - state.loggedAt) },
        'cannot dial peer',
      );
      state.count = 0;
      state.loggedAt = now;
    },
    connected(nodeId) {
      byPeer.delete(nodeId);
    },
  };
}

/** Longest reason logged: an aggregate of many addresses' errors is cut here. */
const MAX_REASON_LENGTH = 500;

/**
 * Why a dial failed, in one line: the error's message (`connect ECONNREFUSED 10.0.0.5:4010`), the
 * messages of every address's failure for an aggregate, "timed out" for a deadline.
 */
export function dialErrorReason(err: unknown): string {
  const reason = describe(err, 0);
  return reason.length > MAX_REASON_LENGTH ? reason.slice(0, MAX_REASON_LENGTH - 1) + '…' : reason;
}

function describe(err: unknown, depth: number): string {
  if (err instanceof AggregateError && depth < 2 && err.errors.length > 0) {
    return [...new Set(err.errors.map((e: unknown) => describe(e, depth + 1)))].join('; ');
  }
  if (err instanceof Error) {
    if (err.name === 'TimeoutError' || err.name === 'AbortError') return `timed out (${err.message})`;
    const code = (err as NodeJS.ErrnoException).code;
    const message = err.message.replace(/\s*[\r\n]+\s*/g, ' ');
    if (code && !message.includes(code)) return `${code}: ${message}`;
    return err.name && err.name !== 'Error' ? `${err.name}: ${message}` : message;
  }
  return String(err);
}
