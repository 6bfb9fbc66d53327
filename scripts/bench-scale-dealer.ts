/**
 * The key dealing of `npm run bench -- scale-store`'s bulk part, on a worker thread so it runs on the
 * other core while the writer's engine signs and stores records. For each secret it does what a
 * coordinator and the members do to its key: a fresh ML-KEM-768 seed split threshold-of-size at
 * x = slot + 1, each slot's share digest (src/core/secrets/dealing.ts), and each member's share
 * encrypted at rest under its storage key with the associated data of the `shard` store handler
 * (src/core/secrets/shard-handler.ts). The transport seal in between (ECDH to the member and back)
 * leaves nothing on disk and is skipped. Seeds and shares are zeroed.
 *
 * Asked `{ from, count }` (secret ids from..from+count-1), it answers a {@link DealtChunk}.
 */
import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import { encryptAtRest, mlkemPublicKeyFromSeed, splitSecretForSlots, systemRandom, toBase64, zeroize } from '../src/crypto/index.ts';
import { shareAtRestAad, shareDigest } from '../src/core/secrets/records.ts';

/** What the bench hands the worker. */
export interface DealerData {
  clusterId: string;
  threshold: number;
  /** Member slots, in order, and each one's storage key (a throwaway bench cluster's). */
  slots: number[];
  storageKeys: Uint8Array[];
}

/** Bytes of a share encrypted at rest: nonce 12 + share 65 (seed 64 + x) + tag 16. */
export const AT_REST_BOX_BYTES = 93;
/** Bytes of an ML-KEM-768 seed, as the dealer draws it. */
const SEED_BYTES = 64;

/** The secrets `from`..`from + count - 1`, dealt. */
export interface DealtChunk {
  from: number;
  /** Public keys, base64 (the record's `publicKeyCid`). */
  publicKeyCids: string[];
  /** Each secret's digests by slot (the record's `shareDigests`). */
  shareDigests: string[][];
  /** By slot: `count` shares at rest of {@link AT_REST_BOX_BYTES} each, back to back. */
  boxes: Uint8Array[];
}

/** Deal what the bench asks for (this module is also imported by the bench, for its types and constant). */
function serve(port: MessagePort, { clusterId, threshold, slots, storageKeys }: DealerData): void {
  port.on('message', ({ from, count }: { from: number; count: number }) => {
  const chunk: DealtChunk = { from, publicKeyCids: [], shareDigests: [], boxes: slots.map(() => new Uint8Array(count * AT_REST_BOX_BYTES)) };
  for (let i = 0; i < count; i++) {
    const secretId = from + i;
    const seed = systemRandom(SEED_BYTES);
    const shares = splitSecretForSlots(seed, slots, threshold);
    try {
      chunk.publicKeyCids.push(toBase64(mlkemPublicKeyFromSeed(seed)));
      chunk.shareDigests.push(slots.map((slot) => shareDigest(clusterId, secretId, slot, shares[slot]!)));
      slots.forEach((slot, at) => {
        const box = encryptAtRest(storageKeys[at]!, shares[slot]!, shareAtRestAad(clusterId, secretId, slot));
        if (box.length !== AT_REST_BOX_BYTES) throw new Error(`a share at rest is ${box.length} bytes, not ${AT_REST_BOX_BYTES}`);
        chunk.boxes[at]!.set(box, i * AT_REST_BOX_BYTES);
      });
    } finally {
      zeroize(seed, ...shares);
    }
  }
  port.postMessage(chunk, chunk.boxes.map((b) => b.buffer as ArrayBuffer));
  });
}

if (parentPort) serve(parentPort, workerData as DealerData);
