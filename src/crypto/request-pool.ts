/**
 * The per-request crypto of the signed routes — the EIP-191 signer recovery every signed request
 * needs, and the payload seal of `POST /encrypt-payload` (an ML-KEM-768 encapsulation and AES-GCM) —
 * on a worker thread, so the event loop that parses, routes and answers requests does not also do
 * their crypto (a large share of an encrypt's CPU there: docs/http.md, "Request path cost"). Operations queued in one turn of the
 * event loop go to the thread as one message, so under load a thread round trip is shared by many
 * requests; a lone operation at light load runs inline. The answers are exactly those of the inline
 * functions (same code, ./request-ops.ts).
 */
import type { DealRecipient, DealtShares } from './deal.ts';
import type { CheckedOpen, SealedPayload } from './payload-envelope.ts';
import { privateBytesOf, runOwnedRequestOp, type OpeningKey, type RequestBatch, type RequestOp, type RequestOpKind, type RequestOpResult } from './request-ops.ts';
import { isReadyNotice, loopIdleSinceLastCall, startWorker, stopWorker, type CryptoWorker } from './worker-life.ts';

export type { OpeningKey, RequestOp, RequestOpKind } from './request-ops.ts';

/** Options of {@link createRequestCryptoPool}. */
export interface RequestCryptoPoolOptions {
  /** Run on a worker thread; false runs every operation inline, on the caller's thread. @default true */
  thread?: boolean;
  /**
   * Fewest operations queued in one turn of the event loop, with none on the thread, that go to the
   * thread; fewer run inline. At light load a lone request is answered without a thread round trip
   * (and a node that never sees concurrent requests never starts the thread). A `deal` (about a
   * millisecond of crypto, 25 times a signer recovery) goes to the thread even alone. @default 2
   */
  minThreadBatch?: number;
  /**
   * An operation that comes after the event loop sat idle this long since the last one, ms, with
   * nothing queued or on the thread, runs inline at once: a request at light load (a sequential
   * decrypt: the coordinator's and each member's signer recovery) waits for no later turn of the
   * event loop. Idle time, not elapsed time: under load a loop busy answering requests for a few ms
   * between two operations still sends the next to the thread, and a loop that is busy most of the
   * time but waits between requests (a coordinator serving one client) still runs them at once.
   * 0 turns this off. @default 1
   */
  idleInlineMs?: number;
  /** Most operations in one message to the thread. @default 64 */
  maxBatch?: number;
  /** Plaintexts larger than this are sealed inline (copying them to the thread would cost more). @default 65536 */
  maxThreadPlaintextBytes?: number;
  /**
   * The node's signing key pair, for {@link RequestCryptoPool.openBox}: the thread gets its copy once,
   * when it starts, and holds it for its life, as the node does. Without it `openBox` throws.
   */
  openingKey?: OpeningKey;
  /** Told how many operations of a kind ran where (the node's metrics). */
  onRun?: (op: RequestOpKind, where: 'thread' | 'inline', count: number) => void;
}

/** Per-request crypto, off the event loop. */
export interface RequestCryptoPool {
  /** The EIP-191 (`personal_sign`) signer of `message`: lowercase 0x address, or undefined. */
  recoverSigner(message: string, signature: string): Promise<string | undefined>;
  /** {@link sealPayload}: throws its TypeError for a bad public key. */
  seal(publicKey: Uint8Array, plaintext: Uint8Array): Promise<SealedPayload>;
  /**
   * Both for one request, in one operation (one round trip to the thread instead of two): the signer
   * of `message` as {@link recoverSigner}, and the envelope as {@link seal}; undefined when the seal
   * throws (the caller then takes the two steps apart, and gets the seal's own error).
   */
  recoverAndSeal(message: string, signature: string, publicKey: Uint8Array, plaintext: Uint8Array): Promise<{ signer: string | undefined; sealed: SealedPayload } | undefined>;
  /**
   * `sealTo` (./sealed-box.ts): a released share sealed to its coordinator. The operation takes its
   * own copy of `share` and zeroes it; the caller zeroes its own.
   */
  sealBox(recipient: Uint8Array, share: Uint8Array, aad: Uint8Array): Promise<Uint8Array>;
  /**
   * `openSealed` (./sealed-box.ts) with the pool's `openingKey` — a share dealt to this member or
   * released to this coordinator: undefined when the box does not open. The share comes back moved,
   * not copied.
   */
  openBox(box: Uint8Array, aad: Uint8Array): Promise<Uint8Array | undefined>;
  /**
   * `openPayloadWithCheckedSeed` (./payload-envelope.ts): a decrypt's envelope opened with the seed
   * its shares rebuilt. The operation takes its own copy of the seed and zeroes it; the caller
   * zeroes its own and the plaintext. Envelopes larger than `maxThreadPlaintextBytes` open inline.
   */
  openPayload(seed: Uint8Array, expectedPublicKey: Uint8Array, cifer: Uint8Array, encryptedMessage: Uint8Array): Promise<CheckedOpen>;
  /**
   * `dealShares` (./deal.ts): a new secret's public key, and its shares sealed to their members with
   * their digests. The operation takes its own copy of the seed and zeroes it; the caller zeroes its own.
   */
  deal(seed: Uint8Array, threshold: number, recipients: DealRecipient[], digestTag: string): Promise<DealtShares>;
  /** Stop the thread; operations still queued or in flight run inline. Idempotent. */
  close(): Promise<void>;
}

const WORKER_URL = new URL(import.meta.url.endsWith('.ts') ? './request-worker.ts' : './request-worker.js', import.meta.url);

interface Pending {
  op: RequestOp;
  resolve(r: RequestOpResult): void;
}

/** Create the pool; its thread starts with the first operation. */
export function createRequestCryptoPool(options: RequestCryptoPoolOptions = {}): RequestCryptoPool {
  const useThread = options.thread ?? true;
  const maxBatch = options.maxBatch ?? 64;
  const minThreadBatch = options.minThreadBatch ?? 2;
  const idleInlineMs = options.idleInlineMs ?? 1;
  /** Whether the loop sat idle `idleInlineMs` since the last operation came. */
  const quietSinceLastOp = loopIdleSinceLastCall(idleInlineMs);
  const maxThreadPlaintext = options.maxThreadPlaintextBytes ?? 65_536;
  let worker: CryptoWorker | undefined;
  let closed = false;
  let nextId = 0;
  let queue: Pending[] = [];
  let flushScheduled = false;
  /**
   * Batches on the thread, oldest first, with how many of their operations it has answered (the
   * thread answers them in order). An array, not a Map keyed by id: a long-lived Map whose entries
   * come and go with every batch keeps every request that passed through it alive through the
   * scavenges (src/http/in-flight.ts says how).
   */
  const inFlight: Array<{ id: number; batch: Pending[]; answered: number }> = [];

  /** Tell `onRun` how many operations of each kind `batch` ran, and where. */
  const counted = (batch: readonly Pending[], where: 'thread' | 'inline') => {
    if (!options.onRun) return;
    const kinds = new Map<RequestOpKind, number>();
    for (const p of batch) kinds.set(p.op.op, (kinds.get(p.op.op) ?? 0) + 1);
    for (const [kind, n] of kinds) options.onRun(kind, where, n);
  };
  const runHere = (op: RequestOp): RequestOpResult => runOwnedRequestOp(op, options.openingKey);
  const inline = (op: RequestOp): RequestOpResult => {
    options.onRun?.(op.op, 'inline', 1);
    return runHere(op);
  };
  const runInline = (batch: Pending[]) => {
    counted(batch, 'inline');
    for (const p of batch) p.resolve(runHere(p.op));
  };
  /** What the thread has not answered (it stopped or failed, or the pool closed) is answered inline: nothing is lost. */
  const answerInFlightInline = () => {
    const batches = inFlight.map((f) => f.batch.slice(f.answered));
    inFlight.length = 0;
    for (const b of batches) runInline(b);
  };
  const thread = (): CryptoWorker => {
    if (worker) return worker;
    const started = startWorker(WORKER_URL, options.openingKey ? { workerData: { openingKey: options.openingKey } } : {});
    started.worker.on('message', (m: { id: number; from: number; results: RequestOpResult[] }) => {
      if (isReadyNotice(m)) return;
      // Always the oldest batch: a thread answers in order, and a lost one's batches were answered inline.
      const flight = inFlight[0];
      if (flight?.id !== m.id) return;
      const answered = flight.batch.slice(m.from, m.from + m.results.length);
      counted(answered, 'thread');
      answered.forEach((p, i) => p.resolve(m.results[i]!));
      flight.answered = m.from + m.results.length;
      if (flight.answered >= flight.batch.length) inFlight.shift();
    });
    const lost = () => {
      if (worker === started) worker = undefined;
      answerInFlightInline();
    };
    started.worker.on('error', lost);
    started.worker.on('exit', lost);
    return (worker = started);
  };
  const flush = () => {
    flushScheduled = false;
    while (queue.length > 0) {
      const batch = queue.slice(0, maxBatch);
      queue = queue.slice(maxBatch);
      if (closed || (batch.length < minThreadBatch && inFlight.length === 0 && !batch.some((p) => p.op.op === 'deal'))) {
        runInline(batch);
        continue;
      }
      const id = nextId++;
      inFlight.push({ id, batch, answered: 0 });
      const message: RequestBatch = { id, ops: batch.map((p) => p.op) };
      // The private copies move to the thread: nothing of them stays on this one.
      const moved = batch.map((p) => privateBytesOf(p.op)?.buffer).filter((b): b is ArrayBuffer => b instanceof ArrayBuffer);
      thread().worker.postMessage(message, moved);
    }
  };
  const run = (op: RequestOp): Promise<RequestOpResult> => {
    const idle = quietSinceLastOp() && queue.length === 0 && inFlight.length === 0;
    if (!useThread || closed || (idleInlineMs > 0 && idle)) return Promise.resolve(inline(op));
    return new Promise((resolve) => {
      queue.push({ op, resolve });
      if (queue.length >= maxBatch) flush();
      else if (!flushScheduled) {
        flushScheduled = true;
        setImmediate(flush);
      }
    });
  };
  /** An operation that seals: inline when its plaintext is too large to be worth copying to the thread. */
  const runSealing = async (op: Extract<RequestOp, { plaintext: Uint8Array }>): Promise<RequestOpResult> => (op.plaintext.length > maxThreadPlaintext ? inline(op) : run(op));
  const fail = (r: RequestOpResult): never => {
    throw new TypeError('error' in r ? r.error : 'unexpected answer');
  };

  return {
    async recoverSigner(message, signature) {
      const r = await run({ op: 'recover', message, signature });
      return 'signer' in r ? (r.signer ?? undefined) : fail(r);
    },
    async seal(publicKey, plaintext) {
      const r = await runSealing({ op: 'seal', publicKey, plaintext });
      return 'cifer' in r ? { cifer: r.cifer, encryptedMessage: r.encryptedMessage } : fail(r);
    },
    async recoverAndSeal(message, signature, publicKey, plaintext) {
      const r = await runSealing({ op: 'recover-seal', message, signature, publicKey, plaintext });
      if (!('cifer' in r && 'signer' in r)) return undefined;
      return { signer: r.signer ?? undefined, sealed: { cifer: r.cifer, encryptedMessage: r.encryptedMessage } };
    },
    async sealBox(recipient, share, aad) {
      const r = await run({ op: 'seal-box', recipient, share: Uint8Array.from(share), aad });
      return 'box' in r ? r.box : fail(r);
    },
    async openBox(box, aad) {
      const r = await run({ op: 'open-box', box, aad });
      return 'opened' in r ? (r.opened ?? undefined) : fail(r);
    },
    async openPayload(seed, expectedPublicKey, cifer, encryptedMessage) {
      const op: RequestOp = { op: 'open-payload', seed: Uint8Array.from(seed), expectedPublicKey, cifer, encryptedMessage };
      const r = await (encryptedMessage.length > maxThreadPlaintext ? inline(op) : run(op));
      return 'checked' in r ? r.checked : fail(r);
    },
    async deal(seed, threshold, recipients, digestTag) {
      const r = await run({ op: 'deal', seed: Uint8Array.from(seed), threshold, recipients, digestTag });
      return 'dealt' in r ? r.dealt : fail(r);
    },
    async close() {
      closed = true;
      const w = worker;
      worker = undefined;
      flush();
      answerInFlightInline();
      if (w) await stopWorker(w);
    },
  };
}
