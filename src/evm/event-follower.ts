/**
 * Following the secrets controller's events (docs/web3.md § "Event
 * following"): poll the head, read the logs of the next bounded block range that is `confirmations`
 * deep, hand them to the caller in block and log order, and move on only once the caller's handler
 * resolved — the caller saves its cursor there, so a crash re-delivers a range, never skips one.
 * Failures (RPC or handler) back off and retry the same range; the follower never gives up.
 */
import type { EventFollower } from '../core/web3/ports.ts';
import type { Logger } from '../log/index.ts';

export type { EventFollower } from '../core/web3/ports.ts';

/** Options of {@link startEventFollower}. */
export interface EventFollowerOptions<E> {
  /** First block to read: the saved cursor + 1, or the chain's `startBlock` on a node with none. */
  fromBlock: number;
  /** Blocks an event must be buried under before it is delivered (head − confirmations is the last block read). */
  confirmations: number;
  /** Most blocks per log query; a failing range is halved (down to 1 block) and grows back after successes. @default 2000 */
  maxBlocksPerQuery?: number;
  /** Wait between head reads once caught up, ms. */
  pollIntervalMs: number;
  /** First wait after a failure, ms; doubles per consecutive failure (with jitter). @default 1000 */
  retryBackoffMs?: number;
  /** Longest wait after failures, ms. @default 30000 */
  retryBackoffMaxMs?: number;
  /**
   * Called once per range, in order, with the range's events (possibly none) and its last block.
   * The follower reads the next range only after this resolves; if it throws, the same range is
   * delivered again after a backoff. Save the cursor (`toBlock`) here, after acting on the events.
   */
  onEvents(events: readonly E[], toBlock: number): Promise<void> | void;
}

/** What the follower needs of the chain client. */
export interface EventFollowerDeps<E> {
  logger: Logger;
  /** The head block; `fresh` when the follower waited for new blocks. */
  head(fresh: boolean): Promise<number>;
  /** The events of blocks `fromBlock`..`toBlock` (inclusive), in block and log order. */
  events(fromBlock: number, toBlock: number): Promise<E[]>;
  /** A range was delivered: `toBlock` is the cursor now, `head` the head it was judged against. */
  delivered(toBlock: number, head: number): void;
  /** Uniform in [0, 1), for backoff jitter. @default Math.random */
  random?: () => number;
}

/** Default most blocks per `eth_getLogs` call: within what public RPCs accept for a narrow filter. */
export const DEFAULT_MAX_BLOCKS_PER_QUERY = 2000;
const DEFAULT_RETRY_BACKOFF_MS = 1000;
const DEFAULT_RETRY_BACKOFF_MAX_MS = 30_000;

/** Start following; the first head read happens at once. */
export function startEventFollower<E>(options: EventFollowerOptions<E>, deps: EventFollowerDeps<E>): EventFollower {
  const log = deps.logger;
  const random = deps.random ?? Math.random;
  const maxSpan = Math.max(1, options.maxBlocksPerQuery ?? DEFAULT_MAX_BLOCKS_PER_QUERY);
  const backoffMs = options.retryBackoffMs ?? DEFAULT_RETRY_BACKOFF_MS;
  const backoffMaxMs = options.retryBackoffMaxMs ?? DEFAULT_RETRY_BACKOFF_MAX_MS;
  const abort = new AbortController();
  let next = options.fromBlock;
  let span = maxSpan;
  let failures = 0;
  let stopped = false;

  const pause = (ms: number) => sleep(ms, abort.signal);
  const backoff = () => {
    failures++;
    const ceiling = Math.min(backoffMaxMs, backoffMs * 2 ** Math.min(failures - 1, 20));
    return pause(ceiling / 2 + (random() * ceiling) / 2);
  };

  const loop = async () => {
    let fresh = true;
    while (!stopped) {
      let head: number | undefined;
      let toBlock: number;
      let events: E[];
      try {
        head = await deps.head(fresh);
        const safe = head - options.confirmations;
        if (safe < next) {
          fresh = true;
          await pause(options.pollIntervalMs);
          continue;
        }
        toBlock = Math.min(safe, next + span - 1);
        events = await deps.events(next, toBlock);
      } catch (err) {
        if (stopped) break;
        // The logs failed (the head was read): a provider may refuse a range with too many logs, so
        // ask for less next time.
        if (head !== undefined) span = Math.max(1, Math.floor(span / 2));
        log.warn({ fromBlock: next, span, failures: failures + 1, err: describe(err) }, 'event follower: chain read failed; backing off');
        await backoff();
        continue;
      }
      if (stopped) break;
      try {
        await options.onEvents(events, toBlock);
      } catch (err) {
        log.error({ fromBlock: next, toBlock, events: events.length, failures: failures + 1, err: describe(err) }, 'event follower: handler failed; the range will be delivered again');
        if (stopped) break;
        await backoff();
        continue;
      }
      next = toBlock + 1;
      failures = 0;
      span = Math.min(maxSpan, span * 2);
      deps.delivered(toBlock, head);
      // Caught up: wait for new blocks, then read the head again; behind: the next range at once.
      fresh = toBlock >= head - options.confirmations;
      if (fresh) await pause(options.pollIntervalMs);
    }
  };
  const running = loop();
  let stopping: Promise<void> | undefined;

  return {
    get nextBlock() {
      return next;
    },
    stop() {
      stopping ??= (async () => {
        stopped = true;
        abort.abort();
        await running;
      })();
      return stopping;
    },
  };
}

/** Resolve after `ms`, or at once when `signal` aborts (never rejects). */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

// For a log line: an AppError's message names the chain and a short reason, never the RPC URL; other
// errors (the caller's handler) by their message.
function describe(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
