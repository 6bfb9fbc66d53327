/**
 * Group commit (docs/architecture.md, "Records"): applies queue up while a batch is being written, and
 * the next batch takes them all (up to `maxBatchRecords`), so durability costs one fsync per batch,
 * not per record. What committing a batch means is the `commit` dependency's
 * (src/core/replication/apply-batch.ts); this module only groups and orders.
 */
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
}

/** Dependencies of {@link createCommitQueue}. */
export interface CommitQueueDeps {
  /**
   * Commit one batch durably and settle each of its applies (`resolve`); when it throws, every apply
   * of the batch is rejected with the error.
   */
  commit(batch: PendingApply[]): Promise<void>;
  logger: Logger;
}

/** The queue of applies, committed in batches one at a time. */
export interface CommitQueue extends Startable {
  /** Queue records (already validated) for the next batch; resolves once that batch is durable. */
  enqueue(records: ReplicatedRecord[], source: RecordSource): Promise<IngestResult>;
  /** Queue this node's own writes; they are signed, numbered and committed in the next batch. */
  enqueueOwn(intents: WriteIntent[]): Promise<ReplicatedRecord[]>;
  /**
   * Hold own writes until `until` resolves: they wait, unnumbered; if it rejects, they and every
   * later one fail with its reason.
   */
  holdOwnWrites(until: Promise<void>): void;
  /** True while own writes are held. */
  ownWritesHeld(): boolean;
  /** Wait until every queued apply has been committed (or failed). New applies are still taken. */
  stop(): Promise<void>;
}

/** Create the commit queue. */
export function createCommitQueue(options: CommitQueueOptions, deps: CommitQueueDeps): CommitQueue {
  const maxBatch = options.maxBatchRecords;
  const queue: PendingApply[] = [];
  let working: Promise<void> | undefined;
  /** Set while own writes are held ({@link CommitQueue.holdOwnWrites}). */
  let ownWritesHeld: Promise<void> | undefined;

  function kick(): void {
    if (working) return;
    working = (async () => {
      while (queue.length > 0) {
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
      if (ownWritesHeld) await ownWritesHeld;
      return new Promise((resolve, reject) => {
        const p: PendingApply = { records: [], own: intents, source: 'local', resolve: () => resolve(p.records), reject };
        queue.push(p);
        kick();
      });
    },
    holdOwnWrites(until) {
      // Released when `until` resolves; a rejected hold stays, so every later own write fails too.
      const held: Promise<void> = until.then(() => {
        if (ownWritesHeld === held) ownWritesHeld = undefined;
      });
      // Each waiter gets a rejection through its own await; none is left unhandled.
      held.catch(() => undefined);
      ownWritesHeld = held;
    },
    ownWritesHeld: () => ownWritesHeld !== undefined,
    async stop() {
      while (working) await working;
    },
  };
}
