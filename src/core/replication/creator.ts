/**
 * Slot 0's `create` service (docs/architecture.md, "Slot 0 — `create`"): cluster-wide uniqueness — ids
 * from durable counters now; principal and permit creation register their own operations later.
 * Every node calls {@link Creator.allocate}; slot 0 answers locally, the others ask it over `create`.
 */
import { AppError, isAppError } from '../../errors/index.ts';
import type { Logger } from '../../log/index.ts';
import { withDeadline } from '../lifecycle.ts';
import { isCoordinatorEntry, type ClusterNodeEntry, type Creator } from './ports.ts';

/**
 * A create operation slot 0 performs: validated params in, JSON result out. `from` is the coordinator
 * that asked, absent when slot 0 runs it for itself.
 */
export type CreateOperation = (params: Record<string, unknown>, from?: ClusterNodeEntry) => Promise<unknown>;

/** Counter names: letters, digits, `.`, `-`, `_`; up to 64 characters. */
const COUNTER_RE = /^[A-Za-z][A-Za-z0-9._-]{0,63}$/;

/** Options of {@link createCreator}. */
export interface CreatorOptions {
  /** Deadline for a round trip to slot 0, ms. */
  timeoutMs: number;
}

/** Dependencies of {@link createCreator}. */
export interface CreatorDeps {
  /** True on the slot-0 member. */
  isCreator: boolean;
  /** Slot 0's durable counters (used only when isCreator). */
  counters: { next(name: string): Promise<number> };
  /** Send a request to slot 0 (cluster module). */
  requestCreate(request: unknown, options: { signal: AbortSignal }): Promise<unknown>;
  /**
   * Waits (at most `waitMs`) while this node holds its own writes, not knowing its own log yet
   * (own-log.ts); false when they are still held. Slot 0 runs no operation meanwhile — its replica may
   * lack the latest versions it wrote, and its counters and claims may be behind (an empty data dir;
   * docs/operations.md, "Lose a disk, keep the keys"). @default never held
   */
  ownWritesReleased?(waitMs: number): Promise<boolean>;
  logger: Logger;
}

/** The creator: the Creator port for callers plus slot 0's request handler. */
export interface CreatorService extends Creator {
  /** Register an operation (slot 0 runs it); names are unique. */
  register(op: string, run: CreateOperation): void;
  /** Run an operation through slot 0 (locally when this node is slot 0). */
  call(op: string, params: Record<string, unknown>, options?: { signal?: AbortSignal }): Promise<unknown>;
  /**
   * Slot 0's handler for `create` requests; `from` is the calling node (absent for slot 0's own
   * calls). Only coordinators may ask (docs/security.md): a member without a client has no create
   * to make, and an OTP verdict or an email claim in its hands would be an attack.
   */
  handle(request: unknown, from?: ClusterNodeEntry): Promise<unknown>;
}

/** Create the creator service. */
export function createCreator(options: CreatorOptions, deps: CreatorDeps): CreatorService {
  const log = deps.logger.child({ module: 'creator' });
  const ops = new Map<string, CreateOperation>();

  const service: CreatorService = {
    register(op, run) {
      if (ops.has(op)) throw new Error(`create operation ${op} already registered`);
      ops.set(op, run);
    },
    async handle(request, from) {
      const { op, params } = (request ?? {}) as { op?: unknown; params?: unknown };
      if (!deps.isCreator) throw new Error('not the creator');
      if (from && !isCoordinatorEntry(from)) throw new AppError('FORBIDDEN', 'slot 0 serves coordinators only');
      // Half the caller's deadline, so a refusal still reaches it in time.
      if (deps.ownWritesReleased && !(await deps.ownWritesReleased(options.timeoutMs / 2))) {
        throw new AppError('NOT_READY', 'Slot 0 is catching up with its own records; try again shortly', { retryAfterSeconds: 1 });
      }
      const run = typeof op === 'string' ? ops.get(op) : undefined;
      if (!run) throw new Error('unknown create operation');
      if (!params || typeof params !== 'object' || Array.isArray(params)) throw new Error('malformed create params');
      return run(params as Record<string, unknown>, from);
    },
    async call(op, params, opts = {}) {
      if (deps.isCreator) return service.handle({ op, params });
      try {
        return await withDeadline(options.timeoutMs, opts.signal, (signal) => deps.requestCreate({ op, params }, { signal }));
      } catch (err) {
        // A refusal by a reachable slot 0 carries its AppError code (refusalError); anything else is unavailability.
        if (isAppError(err)) throw err;
        log.warn({ op, err: (err as Error).message }, 'slot 0 create failed');
        throw new AppError('SLOT0_UNAVAILABLE', 'Slot 0 (the cluster creator) is unreachable; try again shortly');
      }
    },
    async allocate(counter, opts) {
      const res = (await service.call('allocate', { counter }, opts)) as { value?: unknown };
      if (typeof res?.value !== 'number') throw new AppError('SLOT0_UNAVAILABLE', 'Slot 0 answered an allocation without a value');
      return res.value;
    },
  };

  service.register('allocate', async (params) => {
    const counter = params.counter;
    if (typeof counter !== 'string' || !COUNTER_RE.test(counter)) throw new AppError('BAD_REQUEST', 'invalid counter name');
    return { value: await deps.counters.next(counter) };
  });
  return service;
}
