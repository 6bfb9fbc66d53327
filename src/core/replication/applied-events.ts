/**
 * What ingesting reports, and how services hear about committed batches: the outcome of one ingest,
 * one committed batch as an {@link AppliedEvent}, and the listeners services subscribe with.
 */
import type { Logger } from '../../log/index.ts';
import type { ReplicatedRecord } from './record.ts';

/** Where an incoming record came from (a metrics label). */
export type RecordSource = 'local' | 'apply' | 'gossip' | 'sync';

/** A (kind, key) whose winning record changed in one committed batch. */
export interface StateChange {
  before: ReplicatedRecord | undefined;
  after: ReplicatedRecord;
}

/** Outcome of ingesting a batch. */
export interface IngestResult {
  /** Newly stored. */
  applied: number;
  /** Already present (idempotent no-op). */
  duplicates: number;
  /**
   * Refused by the validator: the reason (its code, then any detail), the code alone, and whether
   * the refusal is transient (held back: the record may pass once this node holds what it names).
   */
  rejected: Array<{ origin: string; seq: number; reason: string; code?: string; transient?: boolean }>;
}

/**
 * One committed batch: the newly stored records (never duplicates) and the state changes they made
 * (one per (kind, key) whose winner changed: the winner before the batch and after it).
 */
export interface AppliedEvent {
  records: readonly ReplicatedRecord[];
  source: RecordSource;
  changes: readonly StateChange[];
}

/** Where services hear about committed batches (the engine implements it). */
export interface AppliedEvents {
  /**
   * Call `listener` after every batch that stored new records, once they are durable. Listeners run
   * in subscription order; one that throws is logged and does not stop the others. Returns the
   * unsubscribe function.
   */
  onApplied(listener: (event: AppliedEvent) => void): () => void;
}

/** The listeners of {@link AppliedEvents}, and the delivery of each committed batch to them. */
export interface AppliedListeners extends AppliedEvents {
  /** True when anyone listens: a batch's event is built only then. */
  listening(): boolean;
  /** Deliver `event` to every listener in subscription order; one that throws is logged. */
  emit(event: AppliedEvent): void;
}

/** Create the listener set of {@link AppliedEvents}; `logger` logs a listener that throws. */
export function createAppliedListeners(logger: Logger): AppliedListeners {
  const listeners = new Set<(event: AppliedEvent) => void>();
  return {
    onApplied(listener) {
      // A wrapper per subscription: the same function subscribed twice is heard twice, and each
      // unsubscribe removes its own.
      const entry = (event: AppliedEvent) => listener(event);
      listeners.add(entry);
      return () => listeners.delete(entry);
    },
    listening: () => listeners.size > 0,
    emit(event) {
      for (const listener of listeners) {
        try {
          listener(event);
        } catch (err) {
          logger.error({ err }, 'onApplied listener failed');
        }
      }
    },
  };
}
