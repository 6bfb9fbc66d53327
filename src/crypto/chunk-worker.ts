/**
 * The worker thread of ./chunk-crypto.ts: runs each request of ./chunk-ops.ts on the shared memory
 * it names and answers `{ id, result }` or `{ id, error }`, in the order received (a hash sees its
 * chunks in the order they were sent).
 */
import { parentPort } from 'node:worker_threads';
import { ChunkHashes, runChunkRequest, type ChunkRequest, type SharedView } from './chunk-ops.ts';
import { youngGarbage } from './young-garbage.ts';
import { announceReady } from './worker-life.ts';

const hashes = new ChunkHashes();
const bytesOf = (view: SharedView): Uint8Array => new Uint8Array(view.buffer, view.offset, view.length);

parentPort?.on('message', (message: ChunkRequest<SharedView> & { id: number }) => {
  try {
    let request: ChunkRequest<Uint8Array>;
    switch (message.op) {
      case 'seal':
      case 'open':
      case 'payloadSeal':
      case 'payloadOpen':
        request = { ...message, input: bytesOf(message.input), output: bytesOf(message.output) } as ChunkRequest<Uint8Array>;
        if ('secret' in message) (request as { secret: Uint8Array }).secret = bytesOf(message.secret);
        break;
      default:
        request = message;
    }
    const result = runChunkRequest(hashes, request);
    parentPort!.postMessage({ id: message.id, result });
    // node:crypto allocated a new buffer the size of the input for this chunk, now dead.
    if ('input' in request) youngGarbage.add(request.input.length);
  } catch (err) {
    parentPort!.postMessage({ id: message.id, error: err instanceof Error ? err.message : String(err) });
  }
});
announceReady();
