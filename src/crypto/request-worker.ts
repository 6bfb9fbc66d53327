/**
 * The worker thread of ./request-pool.ts: a batch of the per-request crypto of the signed routes
 * (./request-ops.ts), answered in order a few operations at a time — a request waits for its own
 * operation and the few before it, not for the whole batch.
 */
import { parentPort } from 'node:worker_threads';
import { ANSWER_EVERY, runRequestOp, type RequestBatch, type RequestOpResult } from './request-ops.ts';

function answer(id: number, from: number, results: RequestOpResult[]): void {
  // Buffers that are wholly one result's are moved, not copied; views into shared ones are copied.
  const transfer = new Set<ArrayBuffer>();
  for (const r of results) {
    if (!('cifer' in r)) continue;
    for (const bytes of [r.cifer, r.encryptedMessage]) {
      if (bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength && bytes.buffer instanceof ArrayBuffer) transfer.add(bytes.buffer);
    }
  }
  parentPort!.postMessage({ id, from, results }, [...transfer]);
}

parentPort?.on('message', (b: RequestBatch) => {
  for (let from = 0; from < b.ops.length; from += ANSWER_EVERY) answer(b.id, from, b.ops.slice(from, from + ANSWER_EVERY).map(runRequestOp));
});
