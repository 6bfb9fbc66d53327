/**
 * Slot 0's registry (docs/architecture.md, "Slot 0 — `create`"): its counters and claims, decided in
 * memory one operation at a time, written in group commits. While one batch is being written, every
 * change staged meanwhile waits for the next, and that one batch carries them all in one durable
 * write — so slot 0's answers cost one fsync per batch, not one per operation, while every answer
 * it gives (an id, a claim, a lease, a release) is still durable before it is given.
 *
 * An operation runs alone in its queue ({@link Slot0Registry.serialised}): its reads see every change
 * staged before it, durable or not, and its answer waits until every batch holding a change it made
 * or read is durable. A failed batch fails every operation that wrote or read it, and every change
 * staged after it too (they may rest on it): nothing of them is written, the changes still in
 * memory are dropped and the counters read again from the disk, so no value it would have handed
 * out is handed out, and none that is durable is handed out again.
 */
import { AppError } from '../errors/index.ts';
import { serialQueue } from './serial-queue.ts';

/** One durable write of the registry: counters' last values and claims, by name. */
export interface RegistryChange {
  counters: Map<string, number>;
  claims: Map<string, string>;
}

/** The registry's storage (slot 0's `counters` and `claims` sublevels). */
export interface RegistryStore {
  /** A claim as stored, undefined when none. */
  getClaim(name: string): Promise<string | undefined>;
  /** A counter's last value stored, 0 when none. */
  getCounter(name: string): Promise<number>;
  /** Write one change in one durable (fsynced, atomic) batch. */
  write(change: RegistryChange): Promise<void>;
}

/** What an operation reads and stages, through {@link Slot0Registry.serialised}. */
export interface RegistryTx {
  /** A claim, with every change staged before it. */
  get(name: string): Promise<string | undefined>;
  /** Stage a claim. */
  put(name: string, value: string): void;
  /** Allocate the next value of a counter (1, 2, 3…). */
  next(counter: string): Promise<number>;
  /** Allocate the next value of a counter and stage a claim naming it, in one batch. */
  nextWithClaim(counter: string, claim: string, value: (allocated: number) => string): Promise<number>;
  /** Make the counter's last value at least `atLeast` (nothing at or below it is handed out again); the last value before. */
  raiseTo(counter: string, atLeast: number): Promise<number>;
}

/** Slot 0's registry. */
export interface Slot0Registry {
  /**
   * A queue of operations: each runs after every one queued before it in this queue has decided,
   * and resolves with its result once every batch it wrote or read is durable. Queues are
   * independent of one another (each module keeps its own order); all share the registry's batches.
   */
  serialised(): <T>(op: (tx: RegistryTx) => Promise<T>) => Promise<T>;
  /** A claim, with every change staged (outside any queue: a read that decides nothing). */
  get(name: string): Promise<string | undefined>;
  /** Wait until everything staged so far is durable (or failed). */
  flush(): Promise<void>;
}

/** Dependencies of {@link createSlot0Registry}. */
export interface Slot0RegistryDeps {
  store: RegistryStore;
  /** Told of a failed batch (the operations it fails answer the error). */
  onWriteFailed?(err: unknown): void;
}

/** A batch: the changes staged into it, and its durability. */
interface Batch {
  change: RegistryChange;
  durable: Promise<void>;
  settle(err?: unknown): void;
}

function newBatch(): Batch {
  let settle!: (err?: unknown) => void;
  const durable = new Promise<void>((resolve, reject) => (settle = (err) => (err === undefined ? resolve() : reject(err))));
  // Awaited by the operations that touched it; one that none did must not be an unhandled rejection.
  durable.catch(() => undefined);
  return { change: { counters: new Map(), claims: new Map() }, durable, settle };
}

/**
 * What the operations of a failed batch answer, and those begun before it that would stage after it:
 * retryable — the next attempt decides again from what is durable.
 */
function writeFailed(cause: unknown): AppError {
  return new AppError('NOT_READY', 'Slot 0 could not store its decision; try again shortly', { retryAfterSeconds: 1 }, { cause });
}

/** Create the registry. */
export function createSlot0Registry(deps: Slot0RegistryDeps): Slot0Registry {
  const { store } = deps;
  /** The batch changes are staged into now. */
  let open: Batch = newBatch();
  /** The write in flight, if any. */
  let writing: Promise<void> | undefined;
  /** Claims staged and not yet durable: their value and the batch that carries it. */
  const pendingClaims = new Map<string, { value: string; batch: Batch }>();
  /**
   * Counters' last values as decided (staged or durable), loaded from the disk once; `batch` while
   * the value is not yet durable. Slot 0 alone allocates, so memory is the truth once loaded.
   */
  const counters = new Map<string, { value: number; batch?: Batch }>();
  const loading = new Map<string, Promise<number>>();
  /** Bumped by a failed batch: an operation begun before it stages nothing more. */
  let generation = 0;

  function kick(): void {
    if (writing || (open.change.counters.size === 0 && open.change.claims.size === 0)) return;
    const batch = open;
    open = newBatch();
    writing = (async () => {
      try {
        await store.write(batch.change);
      } catch (err) {
        failFrom(batch, err);
        return;
      }
      for (const [name, p] of pendingClaims) if (p.batch === batch) pendingClaims.delete(name);
      for (const c of counters.values()) if (c.batch === batch) delete c.batch;
      batch.settle();
    })().finally(() => {
      writing = undefined;
      kick();
    });
  }

  /**
   * A failed batch: it and everything staged after it (the open batch) fail; what is in memory goes,
   * and the counters are read from the disk again.
   */
  function failFrom(batch: Batch, err: unknown): void {
    deps.onWriteFailed?.(err);
    generation++;
    const failed = writeFailed(err);
    const later = open;
    open = newBatch();
    pendingClaims.clear();
    counters.clear();
    batch.settle(failed);
    later.settle(failed);
  }

  /** Stage into the open batch; the write starts once the staging code in hand has run. */
  function touchOpen(): Batch {
    queueMicrotask(kick);
    return open;
  }

  async function counterOf(name: string): Promise<{ value: number; batch?: Batch }> {
    for (;;) {
      const known = counters.get(name);
      if (known) return known;
      let load = loading.get(name);
      if (!load) {
        load = store.getCounter(name).finally(() => loading.delete(name));
        loading.set(name, load);
      }
      const value = await load;
      // Another caller (or a failure's clear) may have been first: the map decides.
      if (!counters.has(name) && !loading.has(name)) counters.set(name, { value });
    }
  }

  async function readClaim(name: string): Promise<{ value: string | undefined; batch?: Batch }> {
    const pending = pendingClaims.get(name);
    if (pending) return pending;
    const value = await store.getClaim(name);
    // Staged while the disk was read: the staged value is the newer.
    return pendingClaims.get(name) ?? { value };
  }

  function transaction(): { tx: RegistryTx; durable(): Promise<void> } {
    const began = generation;
    const touched = new Set<Batch>();
    const current = () => {
      if (generation !== began) throw writeFailed(undefined);
    };
    const stageCounter = (name: string, value: number) => {
      const batch = touchOpen();
      batch.change.counters.set(name, value);
      counters.set(name, { value, batch });
      touched.add(batch);
    };
    const stageClaim = (name: string, value: string) => {
      current();
      const batch = touchOpen();
      batch.change.claims.set(name, value);
      pendingClaims.set(name, { value, batch });
      touched.add(batch);
    };
    /** The counter's next value, staged, and `then` staged in the same synchronous step (the same batch). */
    const allocate = async (counter: string, then?: (allocated: number) => void) => {
      const c = await counterOf(counter);
      current();
      stageCounter(counter, c.value + 1);
      then?.(c.value + 1);
      return c.value + 1;
    };
    const tx: RegistryTx = {
      async get(name) {
        const { value, batch } = await readClaim(name);
        if (batch) touched.add(batch);
        return value;
      },
      put: stageClaim,
      next: (counter) => allocate(counter),
      nextWithClaim: (counter, claim, value) => allocate(counter, (allocated) => stageClaim(claim, value(allocated))),
      async raiseTo(counter, atLeast) {
        const c = await counterOf(counter);
        current();
        if (c.batch) touched.add(c.batch);
        if (atLeast > c.value) stageCounter(counter, atLeast);
        return c.value;
      },
    };
    return {
      tx,
      async durable() {
        await Promise.all([...touched].map((b) => b.durable));
      },
    };
  }

  return {
    serialised() {
      const queue = serialQueue();
      return async (op) => {
        // Decided in the queue; made durable outside it, so the next operation decides meanwhile.
        const { result, durable } = await queue(async () => {
          const t = transaction();
          return { result: await op(t.tx), durable: t.durable };
        });
        await durable();
        return result;
      };
    },
    async get(name) {
      return (await readClaim(name)).value;
    },
    async flush() {
      while (writing || open.change.counters.size > 0 || open.change.claims.size > 0) {
        kick();
        await writing;
      }
    },
  };
}
