/**
 * The worker thread of ./request-pool.ts: a batch of the per-request crypto of the signed routes
 * (./request-ops.ts), answered in order a few operations at a time — a request waits for its own
 * operation and the few before it, not for the whole batch.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { ANSWER_EVERY, runOwnedRequestOp, type OpeningKey, type RequestBatch, type RequestOpResult } from './request-ops.ts';
import { announceReady } from './worker-life.ts';

/** The node's signing key pair, when the pool opens boxes (./request-pool.ts, `openingKey`). */
const key = (workerData as { openingKey?: OpeningKey } | undefined)?.openingKey;

function answer(id: number, from: number, results: RequestOpResult[]): void {
  // Buffers that are wholly one result's are moved, not copied; views into shared ones are copied.
  const transfer = new Set<ArrayBuffer>();
  for (const r of results) {
    const owned =
      'cifer' in r ? [r.cifer, r.encryptedMessage]
      : 'box' in r ? [r.box]
      : 'opened' in r && r.opened ? [r.opened]
      : 'checked' in r && r.checked.ok ? [r.checked.plaintext]
      : 'dealt' in r ? [r.dealt.publicKey, ...r.dealt.boxes, ...r.dealt.digests]
      : [];
    for (const bytes of owned) {
      if (bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength && bytes.buffer instanceof ArrayBuffer) transfer.add(bytes.buffer);
    }
  }
  parentPort!.postMessage({ id, from, results }, [...transfer]);
}

parentPort?.on('message', (b: RequestBatch) => {
  // An opened share or payload is moved to the event loop's thread (transferred), so no copy of it stays here.
  for (let from = 0; from < b.ops.length; from += ANSWER_EVERY) answer(b.id, from, b.ops.slice(from, from + ANSWER_EVERY).map((op) => runOwnedRequestOp(op, key)));
});
announceReady();
