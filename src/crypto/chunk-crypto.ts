/**
 * The bulk crypto of file jobs (./chunk-ops.ts) off the event loop: on worker threads (one by
 * default) with their own small heaps, reading and writing the callers' buffers in shared memory,
 * so a 1 GiB job allocates no megabyte buffers on the thread that runs the node. On the node's own
 * thread (in the bench, one heap for five nodes) most of a job's AES-256-GCM CPU went to collecting
 * those buffers; here the work costs a fraction of that, none of it on the event loop.
 *
 * The inline variant (`thread: false`) runs the same functions on the calling thread: for tests and
 * small work; buffers need not be shared then.
 *
 * With several threads, a hash lives on one thread and every request that feeds it goes there (so
 * it sees its chunks in order); any other request goes to the thread with the fewest requests in
 * flight. One is the default: the callers' pipelines keep one busy, and on the 2-core bench host a
 * second thread gained nothing measurable in alternating `npm run bench -- files` runs.
 *
 * Private material: keys cross as KeyObjects (their bytes stay in OpenSSL memory, shared by both
 * threads); a chunk's shared secret is copied into a fresh 32-byte shared slot, zeroed by the thread
 * once the key is derived and again here when the request ends; plaintext is only ever in the
 * callers' buffers, which they zero.
 */
import type { KeyObject } from 'node:crypto';
import type { Worker } from 'node:worker_threads';
import { concatBytes, copyBytes, zeroize } from './bytes.ts';
import { MLKEM768_CIPHERTEXT_BYTES, mlkemEncapsulate } from './mlkem.ts';
import type { PayloadOpener } from './payload-envelope.ts';
import { ChunkHashes, runChunkRequest, type ChunkRequest, type ChunkResult, type SharedView } from './chunk-ops.ts';
import { isReadyNotice, startWorker, stopWorker, type CryptoWorker } from './worker-life.ts';

/** Options of {@link createChunkCrypto}. */
export interface ChunkCryptoOptions {
  /** Run on worker threads (started on first use). Buffers passed must then be {@link allocateShared}. @default true */
  thread?: boolean;
  /** With `thread`: how many worker threads. @default {@link DEFAULT_CHUNK_THREADS} */
  threads?: number;
  /** Most bytes of free buffers kept for reuse. @default {@link DEFAULT_CACHED_BUFFER_BYTES} */
  cachedBufferBytes?: number;
}

/** Worker threads of a threaded chunk crypto. */
export const DEFAULT_CHUNK_THREADS = 1;

/**
 * Most bytes of free buffers a chunk crypto keeps for reuse ({@link ChunkCrypto.borrow}): a few
 * jobs' chunk buffers. A job's buffers were new ones each time before, and freed ones are not given
 * back to the system at once (glibc keeps megabyte blocks freed from its heap; shared memory is
 * freed only once every thread that saw it has collected it): a coordinator's RSS grew with every
 * job that way (`npm run bench -- files`). New pages also cost more than reused ones to fill.
 */
export const DEFAULT_CACHED_BUFFER_BYTES = 48 * 1024 * 1024;

/** An incremental SHA-256 kept where the chunks pass (see {@link ChunkCrypto.startHash}). */
export interface ChunkHash {
  readonly id: number;
}

/**
 * Chunk crypto into callers' buffers. Requests that name the same hash run one at a time, in the
 * order made; others may run at the same time on another thread. Every promise settles once the
 * buffers it names are no longer read or written.
 */
export interface ChunkCrypto {
  /** Whether requests run on the worker thread (buffers must be shared). */
  readonly threaded: boolean;
  /**
   * A zero-filled buffer of `bytes` this engine can read and write (shared memory when threaded): one
   * given back earlier when one of that size is free, else a new one.
   */
  borrow(bytes: number): Buffer;
  /**
   * Zero `buffers` (each a whole buffer from {@link borrow}) and keep them for later borrows, up to
   * the engine's cache size (the rest are left to the GC). Only once nothing reads or writes them
   * any more, requests of this engine included: the next borrower may be another job. A buffer given
   * back twice is kept once.
   */
  giveBack(...buffers: Array<Buffer | undefined>): void;
  /** AES-256-GCM of `input` into `output` (ciphertext ‖ tag), after hashing `input` into `hash`. */
  seal(key: KeyObject, nonce: Uint8Array, aad: Uint8Array, input: Uint8Array, output: Uint8Array, hash?: ChunkHash): Promise<number>;
  /** Open ciphertext ‖ tag into `output`: the plaintext's length, or undefined when the tag fails. */
  open(key: KeyObject, nonce: Uint8Array, aad: Uint8Array, sealed: Uint8Array, output: Uint8Array): Promise<number | undefined>;
  /** A chunk's payload AEAD (./payload-envelope.ts) into `output`; zeroes `sharedSecret`. */
  payloadSeal(sharedSecret: Uint8Array, plaintext: Uint8Array, output: Uint8Array): Promise<{ tag: Uint8Array; crc32: number }>;
  /**
   * Open a chunk's payload ciphertext into `output` (hashed into `hash` once its tag holds): the
   * plaintext's length, or undefined when the tag fails. Zeroes `sharedSecret`.
   */
  payloadOpen(sharedSecret: Uint8Array, tag: Uint8Array, ciphertext: Uint8Array, output: Uint8Array, hash?: ChunkHash): Promise<number | undefined>;
  /** A new SHA-256, fed by {@link seal} and {@link payloadOpen}. */
  startHash(): ChunkHash;
  /** The digest of everything hashed so far into `hash`, which is then forgotten. */
  digest(hash: ChunkHash): Promise<Uint8Array>;
  /** Forget a hash that will not be finished. */
  dropHash(hash: ChunkHash): void;
  /** Stop the worker thread (requests still running fail). Idempotent; a later request starts a new one. */
  close(): Promise<void>;
}

/** A zero-filled buffer in shared memory: one a threaded {@link ChunkCrypto} can read and write. */
export function allocateShared(bytes: number): Buffer {
  return Buffer.from(new SharedArrayBuffer(bytes));
}

/** Free buffers by size, for {@link ChunkCrypto.borrow} and {@link ChunkCrypto.giveBack}. */
function createBufferCache(shared: boolean, maxBytes: number): Pick<ChunkCrypto, 'borrow' | 'giveBack'> {
  const free = new Map<number, Buffer[]>();
  /** The buffers in `free`, to keep one given back twice only once. */
  const kept = new Set<Buffer>();
  let keptBytes = 0;
  return {
    borrow(bytes) {
      const buffer = free.get(bytes)?.pop();
      if (!buffer) return shared ? allocateShared(bytes) : Buffer.alloc(bytes);
      kept.delete(buffer);
      keptBytes -= buffer.length;
      return buffer;
    },
    giveBack(...buffers) {
      for (const buffer of buffers) {
        if (!buffer) continue;
        zeroize(buffer);
        // Only whole buffers the engine can use: a view, or private memory for a thread, is not kept.
        const whole = buffer.byteOffset === 0 && buffer.length === buffer.buffer.byteLength;
        if (!whole || (shared && !(buffer.buffer instanceof SharedArrayBuffer)) || kept.has(buffer)) continue;
        if (buffer.length === 0 || keptBytes + buffer.length > maxBytes) continue;
        kept.add(buffer);
        keptBytes += buffer.length;
        const sameSize = free.get(buffer.length);
        if (sameSize) sameSize.push(buffer);
        else free.set(buffer.length, [buffer]);
      }
    },
  };
}

/** The worker's file: the .ts source when running from source, the compiled .js from dist. */
const WORKER_URL = new URL(import.meta.url.endsWith('.ts') ? './chunk-worker.ts' : './chunk-worker.js', import.meta.url);

/** Create the chunk crypto (see the module comment). */
export function createChunkCrypto(options: ChunkCryptoOptions = {}): ChunkCrypto {
  const threaded = options.thread ?? true;
  let nextHash = 0;
  let run: (request: ChunkRequest<Uint8Array>) => Promise<ChunkResult>;
  let close: () => Promise<void>;
  if (!threaded) {
    const hashes = new ChunkHashes();
    run = async (request) => runChunkRequest(hashes, request);
    close = async () => undefined;
  } else {
    const count = options.threads ?? DEFAULT_CHUNK_THREADS;
    if (!Number.isSafeInteger(count) || count < 1) throw new RangeError('threads must be a positive integer');
    /** One per thread: its worker (started on first use) and its requests in flight. */
    const lanes = Array.from({ length: count }, () => ({ thread: undefined as CryptoWorker | undefined, inFlight: 0 }));
    type Lane = (typeof lanes)[number];
    /** The lane that holds each live hash. */
    const hashLanes = new Map<number, Lane>();
    let nextId = 0;
    const waiting = new Map<number, { lane: Lane; worker: Worker; resolve(result: ChunkResult): void; reject(err: Error): void }>();
    /** Fail the requests sent to `worker` (not those of a thread started since in its lane). */
    const failWorker = (worker: Worker, err: Error): void => {
      for (const [id, call] of waiting) {
        if (call.worker !== worker) continue;
        waiting.delete(id);
        call.lane.inFlight -= 1;
        call.reject(err);
      }
    };
    const start = (lane: Lane): CryptoWorker => {
      // Unref'd: a node stops without waiting for it; nothing runs on it between jobs.
      const thread = startWorker(WORKER_URL);
      const started = thread.worker;
      started.on('message', (message: { id: number; result?: ChunkResult; error?: string }) => {
        if (isReadyNotice(message)) return;
        const call = waiting.get(message.id);
        if (!call) return;
        waiting.delete(message.id);
        lane.inFlight -= 1;
        if (message.error !== undefined) call.reject(new Error(message.error));
        else call.resolve(message.result);
      });
      started.on('error', (err) => {
        if (lane.thread === thread) lane.thread = undefined;
        failWorker(started, err);
      });
      started.on('exit', () => {
        if (lane.thread === thread) lane.thread = undefined;
        failWorker(started, new Error('chunk crypto thread stopped'));
      });
      return thread;
    };
    const leastBusy = (): Lane => lanes.reduce((best, lane) => (lane.inFlight < best.inFlight ? lane : best));
    const laneOf = (request: ChunkRequest<Uint8Array>): Lane => {
      if (request.op === 'hashStart') {
        const lane = leastBusy();
        hashLanes.set(request.hash, lane);
        return lane;
      }
      const hash = 'hash' in request ? request.hash : undefined;
      const lane = hash === undefined ? undefined : hashLanes.get(hash);
      if (request.op === 'hashDigest' || request.op === 'hashDrop') hashLanes.delete(request.hash);
      // An unknown hash goes anywhere: the thread answers that it does not know it.
      return lane ?? leastBusy();
    };
    const viewOf = (bytes: Uint8Array): SharedView => {
      if (!(bytes.buffer instanceof SharedArrayBuffer)) throw new TypeError('chunk crypto on a thread needs buffers from allocateShared');
      return { buffer: bytes.buffer, offset: bytes.byteOffset, length: bytes.byteLength };
    };
    run = (request) => {
      let message: ChunkRequest<SharedView> & { id: number };
      const id = nextId++;
      let slot: Uint8Array | undefined;
      switch (request.op) {
        case 'payloadSeal':
        case 'payloadOpen': {
          slot = allocateShared(request.secret.length);
          copyBytes(request.secret, slot);
          zeroize(request.secret);
          message = { ...request, id, secret: viewOf(slot), input: viewOf(request.input), output: viewOf(request.output) };
          break;
        }
        case 'seal':
        case 'open':
          message = { ...request, id, input: viewOf(request.input), output: viewOf(request.output) };
          break;
        default:
          message = { ...request, id };
      }
      const lane = laneOf(request);
      lane.thread ??= start(lane);
      const target = lane.thread.worker;
      const done = new Promise<ChunkResult>((resolve, reject) => {
        waiting.set(id, { lane, worker: target, resolve, reject });
        lane.inFlight += 1;
        target.postMessage(message);
      });
      return slot ? done.finally(() => zeroize(slot)) : done;
    };
    close = async () => {
      const stopping = lanes.map((lane) => lane.thread);
      for (const lane of lanes) lane.thread = undefined;
      hashLanes.clear();
      await Promise.all(stopping.map((thread) => (thread ? stopWorker(thread) : undefined)));
    };
  }
  return {
    threaded,
    ...createBufferCache(threaded, options.cachedBufferBytes ?? DEFAULT_CACHED_BUFFER_BYTES),
    seal: async (key, nonce, aad, input, output, hash) => (await run({ op: 'seal', key, nonce, aad, input, output, hash: hash?.id })) as number,
    open: async (key, nonce, aad, input, output) => (await run({ op: 'open', key, nonce, aad, input, output })) as number | undefined,
    payloadSeal: async (secret, input, output) => (await run({ op: 'payloadSeal', secret, input, output })) as { tag: Uint8Array; crc32: number },
    payloadOpen: async (secret, tag, input, output, hash) => (await run({ op: 'payloadOpen', secret, tag, input, output, hash: hash?.id })) as number | undefined,
    startHash() {
      const hash = { id: nextHash++ };
      // A failure here fails the hash's later requests.
      run({ op: 'hashStart', hash: hash.id }).catch(() => undefined);
      return hash;
    },
    digest: async (hash) => (await run({ op: 'hashDigest', hash: hash.id })) as Uint8Array,
    dropHash(hash) {
      run({ op: 'hashDrop', hash: hash.id }).catch(() => undefined);
    },
    close,
  };
}

/**
 * One chunk of a `.cifer` archive, sealed like a payload (./payload-envelope.ts) with its own ML-KEM
 * encapsulation to `publicKey`: the ciphertext goes into `output` (as long as `plaintext`), and the
 * answer holds its `cifer` and the CRC-32 of the ciphertext. The encapsulation runs here (it is
 * small), the AEAD through `engine`.
 */
export async function sealChunkPayload(
  engine: ChunkCrypto,
  publicKey: Uint8Array,
  plaintext: Uint8Array,
  output: Uint8Array,
): Promise<{ cifer: Uint8Array; crc32: number }> {
  const { sharedSecret, ciphertext } = mlkemEncapsulate(publicKey);
  try {
    const { tag, crc32 } = await engine.payloadSeal(sharedSecret, plaintext, output);
    return { cifer: concatBytes(ciphertext, tag), crc32 };
  } finally {
    zeroize(sharedSecret);
  }
}

/**
 * Open one chunk of a `.cifer` archive into `output` (hashed into `hash` once its tag holds): the
 * plaintext's length, or undefined when `cifer` is malformed or the tag fails.
 */
export async function openChunkPayload(
  engine: ChunkCrypto,
  opener: PayloadOpener,
  cifer: Uint8Array,
  ciphertext: Uint8Array,
  output: Uint8Array,
  hash?: ChunkHash,
): Promise<number | undefined> {
  const sharedSecret = opener.decapsulate(cifer);
  if (!sharedSecret) return undefined;
  try {
    return await engine.payloadOpen(sharedSecret, cifer.subarray(MLKEM768_CIPHERTEXT_BYTES), ciphertext, output, hash);
  } finally {
    zeroize(sharedSecret);
  }
}
