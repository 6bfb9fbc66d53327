/**
 * Delivery of sealed shares to the members (docs/http.md, Secrets; docs/operations.md): the `shard`
 * `store` call of a new key, and the durable list of shares a member missed — each still sealed to its
 * member, never in clear — retried in the background and by the operator (`secret-failures`).
 */
import { AppError } from '../../errors/index.ts';
import type { Logger } from '../../log/index.ts';
import { fromBase64, toBase64 } from '../../crypto/index.ts';
import { runPeriodic, withDeadline, type Periodic, type Startable } from '../lifecycle.ts';
import type { MemberRpc, MembershipView } from '../replication/ports.ts';
import { WEB2_CHAIN_ID } from '../sessions/signed-data.ts';
import type { PendingShares, PendingShareStore } from './ports.ts';
import { errorText, memberAddresses, parseRetryChainId, parseSecretId, shareLabel } from './rules.ts';
import { shareStoreRequest } from './shard-messages.ts';
import type { RetryOutcome, SecretFailure } from './types.ts';

/** Options of {@link createShareDelivery}. */
export interface ShareDeliveryOptions {
  /** Deadline of one member's share store, ms. */
  shardTimeoutMs: number;
  /** Interval of the background delivery of missing shares, ms. */
  retryIntervalMs: number;
}

/** Dependencies of {@link createShareDelivery}. */
export interface ShareDeliveryDeps {
  membership: MembershipView;
  members: MemberRpc;
  /** Shares this coordinator still has to deliver. */
  pending: PendingShareStore;
  clock: () => number;
  /** The secrets module's logger. */
  logger: Logger;
  /** The node's lifetime: ends the background delivery when aborted. @default only {@link ShareDelivery.stop} ends it */
  signal?: AbortSignal;
}

/** Which members stored their share, and the last error of each of the others. */
export interface DeliveryResult {
  stored: number[];
  errors: Map<number, string>;
}

/** A coordinator's delivery of shares. */
export interface ShareDelivery extends Startable {
  /** Deliver sealed shares (slot → box) to the members. */
  deliver(chainId: number, secretId: number, boxes: Map<number, Uint8Array>): Promise<DeliveryResult>;
  /**
   * Keep the shares that missed their member for the retries; called before the secret's record, so
   * a crash in between leaves a retry for a secret nobody knows, never a secret with shares nobody retries.
   */
  keepUndelivered(chainId: number, secretId: number, boxes: Map<number, Uint8Array>, errors: Map<number, string>, now: number): Promise<void>;
  /** GET /web2/secret-failures. */
  listFailures(): Promise<SecretFailure[]>;
  /** POST /web2/secret-failures/:secretId/retry[?chainId=]. */
  retryFailure(secretIdRaw: string, chainIdRaw?: string): Promise<RetryOutcome>;
  /** Start the background delivery loop. */
  start(): void;
  /** Stop it and wait for a running round and retries; idempotent. */
  stop(): Promise<void>;
}

/** The durable entry for the shares that missed their member, or undefined when none did. */
export function undeliveredEntry(chainId: number, secretId: number, boxes: Map<number, Uint8Array>, errors: Map<number, string>, now: number): PendingShares | undefined {
  if (errors.size === 0) return undefined;
  const missing: PendingShares['missing'] = {};
  for (const [slot, error] of errors) missing[String(slot)] = { box: toBase64(boxes.get(slot)!), error };
  return { secretId, ...(chainId === WEB2_CHAIN_ID ? {} : { chainId }), createdAt: now, retryCount: 0, missing };
}

/** An entry after one more attempt at `now`: only the members that failed again stay, with their new error. */
export function afterAttempt(p: PendingShares, errors: Map<number, string>, now: number): PendingShares {
  const next: PendingShares = { ...p, retryCount: p.retryCount + 1, lastAttemptAt: now, missing: {} };
  for (const [slot, error] of errors) next.missing[String(slot)] = { box: p.missing[String(slot)]!.box, error };
  return next;
}

/** An entry as the operator sees it. */
export function failureView(p: PendingShares, addressOf: (slot: number) => string): SecretFailure {
  const slots = Object.keys(p.missing).map(Number);
  const out: SecretFailure = {
    secretId: p.secretId,
    ...(p.chainId === undefined ? {} : { chainId: p.chainId }),
    stage: 'share-delivery',
    failedNodeAddresses: slots.map(addressOf),
    nodeErrors: Object.fromEntries(slots.map((s) => [addressOf(s), p.missing[String(s)]!.error])),
    retryCount: p.retryCount,
    createdAt: new Date(p.createdAt).toISOString(),
  };
  if (p.lastAttemptAt !== undefined) out.lastAttemptAt = new Date(p.lastAttemptAt).toISOString();
  return out;
}

/** The operator's answer after a retry left `next`. */
export function retryOutcome(next: PendingShares, addressOf: (slot: number) => string): RetryOutcome {
  const failedNodeAddresses = Object.keys(next.missing).map((s) => addressOf(Number(s)));
  return {
    message: failedNodeAddresses.length === 0 ? 'Every member now holds its share' : `${failedNodeAddresses.length} members still miss their share`,
    stage: failedNodeAddresses.length === 0 ? 'complete' : 'share-delivery',
    failedNodeAddresses,
    retryCount: next.retryCount,
  };
}

/** Create the delivery (its loop starts with {@link ShareDelivery.start}). */
export function createShareDelivery(options: ShareDeliveryOptions, deps: ShareDeliveryDeps): ShareDelivery {
  const { membership, pending, clock, logger: log } = deps;
  const addressOf = memberAddresses(membership.descriptor);

  async function deliver(chainId: number, secretId: number, boxes: Map<number, Uint8Array>): Promise<DeliveryResult> {
    const stored: number[] = [];
    const errors = new Map<number, string>();
    await Promise.all(
      [...boxes].map(async ([slot, box]) => {
        if (!membership.isReachable(slot)) {
          errors.set(slot, 'unreachable');
          return;
        }
        try {
          await withDeadline(options.shardTimeoutMs, undefined, (signal) => deps.members.call(slot, 'shard', shareStoreRequest(chainId, secretId, box), { signal }));
          stored.push(slot);
        } catch (err) {
          errors.set(slot, errorText(err));
        }
      }),
    );
    return { stored, errors };
  }

  /** One delivery attempt for a pending entry; deletes it once every member has its share. */
  async function retryPending(p: PendingShares): Promise<PendingShares> {
    const boxes = new Map(Object.entries(p.missing).map(([slot, m]) => [Number(slot), fromBase64(m.box)]));
    const chainId = p.chainId ?? WEB2_CHAIN_ID;
    const { stored, errors } = await deliver(chainId, p.secretId, boxes);
    const next = afterAttempt(p, errors, clock());
    if (Object.keys(next.missing).length === 0) {
      await pending.delete(p.secretId, p.chainId);
      log.info({ chainId, secretId: p.secretId, delivered: stored.length, retryCount: next.retryCount }, 'secret shares complete');
    } else {
      await pending.put(next);
    }
    return next;
  }

  // Background delivery: one round at a time; a manual retry of one secret waits for nothing.
  let rounds: Periodic | undefined;
  const inFlight = new Map<number | string, Promise<PendingShares>>();
  const retryOnce = (p: PendingShares): Promise<PendingShares> => {
    const label = shareLabel(p.chainId ?? WEB2_CHAIN_ID, p.secretId);
    let run = inFlight.get(label);
    if (!run) {
      run = retryPending(p).finally(() => inFlight.delete(label));
      inFlight.set(label, run);
    }
    return run;
  };
  async function backgroundRound(): Promise<void> {
    for await (const p of pending.list()) {
      if (Object.keys(p.missing).some((slot) => membership.isReachable(Number(slot)))) {
        await retryOnce(p).catch((err: unknown) => log.warn({ secretId: p.secretId, err: errorText(err) }, 'share delivery retry failed'));
      }
    }
  }

  return {
    deliver,
    async keepUndelivered(chainId, secretId, boxes, errors, now) {
      const entry = undeliveredEntry(chainId, secretId, boxes, errors, now);
      if (entry) await pending.put(entry);
    },
    async listFailures() {
      const out: SecretFailure[] = [];
      for await (const p of pending.list()) out.push(failureView(p, addressOf));
      return out;
    },
    async retryFailure(secretIdRaw, chainIdRaw) {
      const secretId = parseSecretId(secretIdRaw);
      const chainId = parseRetryChainId(chainIdRaw);
      const p = await pending.get(secretId, chainId);
      if (!p) throw new AppError('NOT_FOUND', `No undelivered shares for secret ${secretId}`);
      return retryOutcome(await retryOnce(p), addressOf);
    },
    start() {
      rounds ??= runPeriodic(backgroundRound, { intervalMs: options.retryIntervalMs, signal: deps.signal ?? new AbortController().signal, logger: log, name: 'share delivery' });
    },
    async stop() {
      await rounds?.stop();
      await Promise.allSettled([...inFlight.values()]);
    },
  };
}
