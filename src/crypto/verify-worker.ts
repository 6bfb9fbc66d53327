/**
 * The worker thread of ./verify-pool.ts: verifies a batch of secp256k1 signatures over digests and
 * answers one byte per item (1 valid, 0 not).
 */
import { parentPort } from 'node:worker_threads';
import { verifyDigest } from './secp256k1.ts';
import { announceReady } from './worker-life.ts';

/** A batch: `count` items, packed — signatures of 65 bytes, digests of 32, public keys of `keyBytes`. */
export interface VerifyBatch {
  id: number;
  count: number;
  keyBytes: number;
  sigs: Uint8Array;
  digests: Uint8Array;
  keys: Uint8Array;
}

parentPort?.on('message', (b: VerifyBatch) => {
  const out = new Uint8Array(b.count);
  for (let i = 0; i < b.count; i++) {
    const ok = verifyDigest(b.sigs.subarray(i * 65, i * 65 + 65), b.digests.subarray(i * 32, i * 32 + 32), b.keys.subarray(i * b.keyBytes, (i + 1) * b.keyBytes));
    out[i] = ok ? 1 : 0;
  }
  parentPort!.postMessage({ id: b.id, out }, [out.buffer]);
});
announceReady();
