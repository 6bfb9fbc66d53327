/**
 * secp256k1 verification on a worker thread, for large batches (a member catching up verifies
 * thousands of record signatures: on the event loop they would take most of its time, and every other
 * request would wait behind them), and for small ones — a quorum write's apply message — while the
 * event loop is busy: a member taking writes from many clients at once spends its loop on them, not
 * on their signatures. A small batch after the loop sat idle is verified inline, where a thread's
 * round trip would only add to a lone write's latency. The results are exactly {@link verifyDigest}'s.
 */
import { verifyDigest } from './secp256k1.ts';
import type { VerifyBatch } from './verify-worker.ts';
import { isReadyNotice, loopIdleSinceLastCall, startWorker, stopWorker, type CryptoWorker } from './worker-life.ts';

/** One signature to check. */
export interface VerifyItem {
  /** 65 bytes, r ‖ s ‖ v. */
  sig: Uint8Array;
  /** 32 bytes. */
  digest: Uint8Array;
  /** 33 or 65 bytes; one length per batch is fastest (mixed lengths are verified inline). */
  publicKey: Uint8Array;
}

/** Options of {@link createVerifyPool}. */
export interface VerifyPoolOptions {
  /** Batches smaller than this are verified inline at light load (`idleInlineMs`). @default 32 */
  minBatch?: number;
  /**
   * A batch smaller than `minBatch` that comes after the event loop sat idle this long since the
   * last batch, ms, with none on the thread, is verified inline; any other goes to the thread. Idle
   * time, not elapsed time, as ./request-pool.ts judges it. 0: small batches are always inline. @default 1
   */
  idleInlineMs?: number;
  /** Items per message to the thread. @default 256 */
  chunk?: number;
  /** Told how many signatures were verified where (the node's metrics). */
  onRun?: (where: 'thread' | 'inline', count: number) => void;
}

/** Signature verification off the event loop: for large batches, and for small ones while the loop is busy. */
export interface VerifyPool {
  /** Whether each item's signature is valid, in order. */
  verify(items: readonly VerifyItem[]): Promise<boolean[]>;
  /** Stop the thread (pending batches fail). Idempotent. */
  close(): Promise<void>;
}

const WORKER_URL = new URL(import.meta.url.endsWith('.ts') ? './verify-worker.ts' : './verify-worker.js', import.meta.url);

/** Create the pool; its thread starts on the first large batch. */
export function createVerifyPool(options: VerifyPoolOptions = {}): VerifyPool {
  const minBatch = options.minBatch ?? 32;
  const chunk = options.chunk ?? 256;
  const idleInlineMs = options.idleInlineMs ?? 1;
  const quietSinceLastBatch = loopIdleSinceLastCall(idleInlineMs);
  /** Whether a small batch now is verified inline: light load, nothing on the thread. */
  const lightLoad = (): boolean => idleInlineMs <= 0 || (quietSinceLastBatch() && waiting.size === 0);
  let worker: CryptoWorker | undefined;
  let closed = false;
  let nextId = 0;
  const waiting = new Map<number, { resolve(out: Uint8Array): void; reject(err: Error): void }>();
  const failAll = (err: Error) => {
    for (const w of waiting.values()) w.reject(err);
    waiting.clear();
  };
  const thread = (): CryptoWorker => {
    if (worker) return worker;
    const started = startWorker(WORKER_URL);
    started.worker.on('message', (m: { id: number; out: Uint8Array }) => {
      if (isReadyNotice(m)) return;
      const w = waiting.get(m.id);
      waiting.delete(m.id);
      w?.resolve(m.out);
    });
    started.worker.on('error', (err) => {
      if (worker === started) worker = undefined;
      failAll(err);
    });
    started.worker.on('exit', () => {
      if (worker === started) worker = undefined;
      failAll(new Error('verify thread stopped'));
    });
    return (worker = started);
  };
  const inline = (items: readonly VerifyItem[]) => {
    options.onRun?.('inline', items.length);
    return items.map((it) => verifyDigest(it.sig, it.digest, it.publicKey));
  };
  const send = (items: readonly VerifyItem[], keyBytes: number): Promise<Uint8Array> => {
    const count = items.length;
    const sigs = new Uint8Array(count * 65);
    const digests = new Uint8Array(count * 32);
    const keys = new Uint8Array(count * keyBytes);
    items.forEach((it, i) => {
      sigs.set(it.sig, i * 65);
      digests.set(it.digest, i * 32);
      keys.set(it.publicKey, i * keyBytes);
    });
    const id = nextId++;
    const batch: VerifyBatch = { id, count, keyBytes, sigs, digests, keys };
    return new Promise<Uint8Array>((resolve, reject) => {
      waiting.set(id, { resolve, reject });
      thread().worker.postMessage(batch, [sigs.buffer, digests.buffer, keys.buffer]);
    });
  };
  return {
    async verify(items) {
      const keyBytes = items[0]?.publicKey.length ?? 0;
      // A malformed item (wrong sizes) is answered by verifyDigest inline, as false.
      if (closed || items.length === 0 || (items.length < minBatch && lightLoad()) || items.some((it) => it.sig.length !== 65 || it.digest.length !== 32 || it.publicKey.length !== keyBytes)) return inline(items);
      const parts: Array<Promise<Uint8Array>> = [];
      for (let i = 0; i < items.length; i += chunk) parts.push(send(items.slice(i, i + chunk), keyBytes));
      const outs = await Promise.all(parts);
      options.onRun?.('thread', items.length);
      return outs.flatMap((out) => Array.from(out, (b) => b === 1));
    },
    async close() {
      closed = true;
      const w = worker;
      worker = undefined;
      failAll(new Error('verify pool closed'));
      if (w) await stopWorker(w);
    },
  };
}
