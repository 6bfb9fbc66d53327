import { zeroize } from '../../crypto/index.ts';

/**
 * A fixed set of chunk buffers handed out and given back: a job's output chunks reuse the same few
 * buffers instead of a new one per chunk (see src/crypto/chunk-crypto.ts for why that matters).
 */

/** Buffers taken with {@link BufferPool.take} and returned with {@link BufferPool.give}. */
export interface BufferPool {
  /** A free buffer; waits until one is given back when all are out. */
  take(): Promise<Buffer>;
  /** Return a buffer taken from this pool (zeroed first when the pool was made with `zero`). */
  give(buffer: Buffer): void;
  /**
   * Zero every buffer; later takes fail. Buffers still out are zeroed as well; the free ones go to
   * the pool's `release` (e.g. back to the engine they came from).
   */
  dispose(): void;
}

/** A pool of `count` buffers from `allocate`; `zero` zeroes each one given back; `release` takes the free ones on dispose. */
export function createBufferPool(count: number, allocate: () => Buffer, options: { zero?: boolean; release?: (buffers: Buffer[]) => void } = {}): BufferPool {
  if (!Number.isSafeInteger(count) || count < 1) throw new RangeError('count must be a positive integer');
  const all = Array.from({ length: count }, allocate);
  const free = [...all];
  const waiting: Array<(buffer: Buffer) => void> = [];
  let disposed = false;
  return {
    take() {
      if (disposed) return Promise.reject(new Error('buffer pool disposed'));
      const buffer = free.pop();
      if (buffer) return Promise.resolve(buffer);
      return new Promise((resolve) => waiting.push(resolve));
    },
    give(buffer) {
      if (!all.includes(buffer)) throw new Error('buffer is not from this pool');
      if (options.zero) zeroize(buffer);
      if (disposed) return;
      const next = waiting.shift();
      if (next) next(buffer);
      else free.push(buffer);
    },
    dispose() {
      disposed = true;
      zeroize(...all);
      options.release?.(free.splice(0));
    },
  };
}
