/**
 * Group commit (docs/architecture.md, "Records"): applies queue up while a batch is being written, and
 * the next batch takes them all (up to `maxBatchRecords`) at the end of the event-loop turn, so
 * durability costs one fsync per batch, not per record. What committing a batch means is the
 * `commit` dependency's (src/core/replication/apply-batch.ts); this module only groups and orders.
 */
import { AppError } from '../../errors/index.ts';
import type { Logger } from '../../log/index.ts';
import type { Startable } from '../lifecycle.ts';
import type { IngestResult, RecordSource } from './applied-events.ts';
import type { WriteIntent } from './ports.ts';
import type { ReplicatedRecord } from './record.ts';

/** One queued apply: records from one ingest, or this node's own writes. */
export interface PendingApply {
  records: ReplicatedRecord[];
  /**
   * This node's own writes, signed when their batch commits: a seq is taken only by a record that is
   * then durably stored, so a failed commit never leaves a gap in this origin's sequence.
   */
  own?: WriteIntent[];
  source: RecordSource;
  resolve: (r: IngestResult) => void;
  reject: (e: unknown) => void;
}

/** Options of {@link createCommitQueue}. */
export interface CommitQueueOptions {
  /** Most records committed in one batch (one queued apply larger than this still goes alone). */
  maxBatchRecords: number;
  /**
   * How long an own write waits for held own writes to be released before it fails with a retryable
   * `NOT_READY` (docs/architecture.md, "Failure model"), ms. @default waits for the release
   */
  heldWriteWaitMs?: number;
}

/** Dependencies of {@link createCommitQueue}. */
export interface CommitQueueDeps {
  /**
   * Commit one batch durably and settle each of its applies (`resolve`); when it throws, every apply
   * of the batch is rejected with the error.
   */
  commit(batch: PendingApply[]): Promise<void>;
  logger: Logger;
  /** Told when own writes become held (true) and when they are released (false): the `ownWritesHeld` gauge. */
  onHeldChange?(held: boolean): void;
}

/** The queue of applies, committed in batches one at a time. */
export interface CommitQueue extends Startable {
  /** Queue records (already validated) for the next batch; resolves once that batch is durable. */
  enqueue(records: ReplicatedRecord[], source: RecordSource): Promise<IngestResult>;
  /** Queue this node's own writes; they are signed, numbered and committed in the next batch. */
  enqueueOwn(intents: WriteIntent[]): Promise<ReplicatedRecord[]>;
  /**
   * Hold own writes until `until` resolves: they wait, unnumbered (at most `heldWriteWaitMs`, then
   * they fail with `NOT_READY` without having taken a seq); if it rejects, they and every later one
   * fail with its reason.
   */
  holdOwnWrites(until: Promise<void>): void;
  /** True while own writes are held. */
  ownWritesHeld(): boolean;
  /** Wait for held own writes to be released, at most `waitMs`: true once released (at once when none are held), false when the time ran out. */
  ownWritesReleased(waitMs: number): Promise<boolean>;
  /** Wait until every queued apply has been committed (or failed). New applies are still taken. */
  stop(): Promise<void>;
}

/** Resolves in this event-loop turn's check phase, after the I/O callbacks and microtasks queued before it. */
const endOfTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Create the commit queue. */
export function createCommitQueue(options: CommitQueueOptions, deps: CommitQueueDeps): CommitQueue {
  const maxBatch = options.maxBatchRecords;
  const queue: PendingApply[] = [];
  let working: Promise<void> | undefined;
  /** Set while own writes are held ({@link CommitQueue.holdOwnWrites}). */
  let ownWritesHeld: Promise<void> | undefined;

  /**
   * Wait until no hold is set, at most `waitMs` (undefined: as long as it takes): true when released,
   * false when the time ran out; rejects when the hold failed.
   */
  async function untilReleased(waitMs: number | undefined): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const timedOut = waitMs === undefined ? undefined : new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), waitMs)));
    try {
      while (ownWritesHeld) if ((await (timedOut ? Promise.race([ownWritesHeld, timedOut]) : ownWritesHeld)) === false) return false;
      return true;
    } finally {
      clearTimeout(timer);
    }
  }

  function kick(): void {
    if (working) return;
    working = (async () => {
      while (queue.length > 0) {
        // A batch is taken at the end of the event-loop turn, so that everything queued in the turn
        // goes in it: what one message, one answer or one burst of finished writes sets off arrives
        // over several microtasks, and a batch taken at the first of them would commit it alone,
        // the rest behind it (docs/architecture.md, "Records").
        await endOfTurn();
        const batch: PendingApply[] = [];
        let n = 0;
        while (queue.length > 0 && (batch.length === 0 || n + queue[0]!.records.length <= maxBatch)) {
          const p = queue.shift()!;
          n += p.records.length;
          batch.push(p);
        }
        try {
          await deps.commit(batch);
        } catch (err) {
          deps.logger.error({ err }, 'apply batch failed');
          for (const p of batch) p.reject(err);
        }
      }
    })().finally(() => {
      working = undefined;
      if (queue.length > 0) kick();
    });
  }

  return {
    enqueue(records, source) {
      return new Promise((resolve, reject) => {
        queue.push({ records, source, resolve, reject });
        kick();
      });
    },
    async enqueueOwn(intents) {
      if (ownWritesHeld && !(await untilReleased(options.heldWriteWaitMs))) {
        throw new AppError('NOT_READY', 'This node is catching up with its own records; try again shortly', { retryAfterSeconds: 1 });
      }
      return new Promise((resolve, reject) => {
        const p: PendingApply = { records: [], own: intents, source: 'local', resolve: () => resolve(p.records), reject };
        queue.push(p);
        kick();
      });
    },
    holdOwnWrites(until) {
      // Released when `until` resolves; a rejected hold stays, so every later own write fails too.
      const held: Promise<void> = until.then(() => {
        if (ownWritesHeld !== held) return;
        ownWritesHeld = undefined;
        deps.onHeldChange?.(false);
      });
      // Each waiter gets a rejection through its own await; none is left unhandled.
      held.catch(() => undefined);
      ownWritesHeld = held;
      deps.onHeldChange?.(true);
    },
    ownWritesHeld: () => ownWritesHeld !== undefined,
    ownWritesReleased: (waitMs) => (ownWritesHeld ? untilReleased(waitMs) : Promise.resolve(true)),
    async stop() {
      while (working) await working;
    },
  };
}
