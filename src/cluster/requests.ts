/**
 * The requester side of the request/response protocols: `apply` (one message in flight per peer; what
 * is queued meanwhile goes together in the next), `create` to slot 0, `grant` and `shard` to a member
 * (share stores coalesced as applies are, to a member that takes them in batches), and `ping`
 * (docs/architecture.md, "Network" and "Quorum writes").
 */
import { PeerError, refusalError, type MemberService } from '../core/replication/ports.ts';
import { isAppError } from '../errors/index.ts';
import type { ReplicatedRecord } from '../core/replication/record.ts';
import { STORE_MANY_MAX_ITEMS } from '../core/secrets/shard-messages.ts';
import { PROTOCOLS } from './protocols.ts';
import type { Peer, Peers } from './peers.ts';

/** Dependencies of {@link createRequests}. */
export interface RequestsDeps {
  peers: Pick<Peers, 'get' | 'ofSlot' | 'connected' | 'request'>;
}

/** Requests to other nodes (the methods of the same names on the cluster). */
export interface Requests {
  sendApply(slot: number, records: ReplicatedRecord[], options: { signal: AbortSignal }): Promise<void>;
  /** The peer is gone: give up the messages in flight to it (applies, share stores), so the next ones go when it answers again. */
  abortInFlight(p: Peer, reason: string): void;
  requestCreate(request: unknown, options: { signal: AbortSignal }): Promise<unknown>;
  callMember(slot: number, service: MemberService, body: unknown, options: { signal: AbortSignal }): Promise<unknown>;
  ping(nodeId: string, options?: { signal?: AbortSignal }): Promise<number>;
}

/** One caller's part of a coalesced message. */
interface Pending<T> {
  item: T;
  /** Set once the caller has its answer (or gave up at its deadline): nothing more is owed to it. */
  settled: boolean;
  resolve: (value: unknown) => void;
  reject: (err: Error) => void;
}

/** One message sent: its callers, and how to give it up once every one of them has. */
interface Flight<T> {
  batch: Pending<T>[];
  controller: AbortController;
}

/** A peer's calls of one kind: those waiting for the next message, and the messages in flight. */
interface PeerQueue<T> {
  waiting: Pending<T>[];
  /** Every message sent and not yet answered or given up. */
  inFlight: Set<Flight<T>>;
  /** The message the next one waits for: the newest in flight, until it is answered or {@link HOLD_MS} pass. */
  holding: Flight<T> | undefined;
  /** A flush is scheduled for the end of this event-loop turn. */
  scheduled: boolean;
}

/** How one kind of call travels coalesced. */
interface CoalescedKind<T> {
  /** What one caller's item counts towards {@link maxSize}. */
  size(item: T): number;
  /** Most in one message (one caller's larger item still goes alone). */
  maxSize: number;
  /**
   * Send `items` as one message; one outcome per item, in order: an Error fails that caller only,
   * anything else is its answer. A throw fails every caller of the message.
   */
  send(p: Peer, items: T[], signal: AbortSignal): Promise<unknown[]>;
}

/** Cap on one coalesced message's wait; each caller's own deadline is enforced separately. */
const BATCH_DEADLINE_MS = 30_000;
/**
 * How long a message in flight holds the next one back. Answers normally come in milliseconds; one
 * that does not (a member that stopped answering without dropping the connection, a silent
 * partition that healed) delays the calls behind it by this much, not by their deadlines.
 */
const HOLD_MS = 250;
/** Most records in one apply message. */
const APPLY_BATCH_MAX_RECORDS = 1000;

/**
 * Calls of one kind coalesced per peer: one message in flight per peer, and what is submitted
 * meanwhile (or in the same event-loop turn) goes together in the next — sent when that one is
 * answered, or after {@link HOLD_MS} while it is still awaited. Each caller keeps its own deadline:
 * one that expires leaves the queue or, in flight, stops waiting; a message in flight is given up
 * once no caller waits for it, or by {@link abort} when the peer is found gone.
 */
function createCoalescer<T>(kind: CoalescedKind<T>) {
  const queues = new Map<Peer, PeerQueue<T>>();
  const queueOf = (p: Peer): PeerQueue<T> => {
    let queue = queues.get(p);
    if (!queue) {
      queue = { waiting: [], inFlight: new Set(), holding: undefined, scheduled: false };
      queues.set(p, queue);
    }
    return queue;
  };

  /** Send what waits for a peer as one message, unless one in flight holds it back: its answer (or {@link HOLD_MS}) sends the next. Callers that gave up meanwhile are left out. */
  function flush(p: Peer): void {
    const queue = queueOf(p);
    queue.scheduled = false;
    if (queue.holding) return;
    queue.waiting = queue.waiting.filter((b) => !b.settled);
    if (queue.waiting.length === 0) return;
    let n = 0;
    let take = 0;
    while (take < queue.waiting.length && (take === 0 || n + kind.size(queue.waiting[take]!.item) <= kind.maxSize)) n += kind.size(queue.waiting[take++]!.item);
    const batch = queue.waiting.splice(0, take);
    const controller = new AbortController();
    const deadline = setTimeout(() => controller.abort(new PeerError('timeout')), BATCH_DEADLINE_MS);
    const flight: Flight<T> = { batch, controller };
    queue.inFlight.add(flight);
    queue.holding = flight;
    const release = () => {
      if (queue.holding !== flight) return;
      queue.holding = undefined;
      flush(p);
    };
    const hold = setTimeout(release, HOLD_MS);
    kind
      .send(
        p,
        batch.map((b) => b.item),
        controller.signal,
      )
      .then(
        (outcomes) =>
          batch.forEach((b, i) => {
            const outcome = outcomes[i];
            if (outcome instanceof Error) b.reject(outcome);
            else b.resolve(outcome);
          }),
        (err: unknown) => {
          for (const b of batch) b.reject(err instanceof Error ? err : new Error(String(err)));
        },
      )
      .finally(() => {
        clearTimeout(deadline);
        clearTimeout(hold);
        queue.inFlight.delete(flight);
        release();
      });
  }

  return {
    submit(p: Peer, item: T, signal: AbortSignal): Promise<unknown> {
      return new Promise<unknown>((resolve, reject) => {
        const queue = queueOf(p);
        const pending: Pending<T> = {
          item,
          settled: false,
          resolve: (value) => {
            if (settle()) resolve(value);
          },
          reject: (e) => {
            if (settle()) reject(e);
          },
        };
        const onAbort = () => {
          pending.reject(signal.reason instanceof Error ? signal.reason : new PeerError('timeout'));
          // A message in flight is given up once none of its callers waits for it any more.
          for (const flight of queue.inFlight) if (flight.batch.includes(pending) && flight.batch.every((b) => b.settled)) flight.controller.abort(new PeerError('timeout'));
        };
        function settle(): boolean {
          if (pending.settled) return false;
          pending.settled = true;
          signal.removeEventListener('abort', onAbort);
          return true;
        }
        if (signal.aborted) return onAbort();
        signal.addEventListener('abort', onAbort, { once: true });
        queue.waiting.push(pending);
        // Calls submitted in this event-loop turn go together; while a message is in flight, its
        // answer sends what queued meanwhile.
        if (!queue.holding && !queue.scheduled) {
          queue.scheduled = true;
          setImmediate(() => flush(p));
        }
      });
    },
    /** The peer is gone: give up the messages in flight to it, so the next one goes when it answers again. */
    abort(p: Peer, reason: string): void {
      for (const flight of queues.get(p)?.inFlight ?? []) flight.controller.abort(new PeerError('unreachable', reason));
    },
  };
}

/** A member's answer to one call: its result, or the refusal it names as an Error. */
function memberOutcome(res: unknown): unknown {
  const answer = res as { ok?: boolean; result?: unknown; error?: string; code?: string; reason?: string } | undefined;
  return answer?.ok ? answer.result : refusalError(answer);
}

/** Whether a `shard` call is a share `store` (the calls that may travel in one `storeMany`). */
const isStore = (body: unknown): boolean => (body as { op?: unknown } | null)?.op === 'store';

/** Create the requester side. */
export function createRequests(deps: RequestsDeps): Requests {
  const { peers } = deps;
  /** Applies: the records of every write queued for a member go in one `apply` message (one verify pass, one fsync there). */
  const applies = createCoalescer<ReplicatedRecord[]>({
    size: (records) => records.length,
    maxSize: APPLY_BATCH_MAX_RECORDS,
    async send(p, items, signal) {
      const res = await peers.request(p, PROTOCOLS.apply, { records: items.flat() }, signal);
      const rejected = new Map<string, string>();
      for (const r of ((res as { rejected?: Array<{ origin: string; seq: number; reason: string }> })?.rejected ?? [])) rejected.set(`${r.origin}!${r.seq}`, r.reason);
      return items.map((records) => {
        const reasons = records.map((r) => rejected.get(`${r.origin}!${r.seq}`)).filter(Boolean);
        return reasons.length > 0 ? new PeerError('rejected', reasons.join(', ')) : undefined;
      });
    },
  });
  /**
   * Share stores to a member that takes them in batches (`NODE_FEATURES` in ./protocols.ts): one alone goes as the
   * `store` call it always was; more go as one `storeMany`, each answered on its own. A member that
   * cannot read `storeMany` (its build changed since its last ping said otherwise) gets them again as
   * one `store` each, and none in batches until its next ping says it takes them.
   */
  const storeOne = async (p: Peer, item: unknown, signal: AbortSignal) => memberOutcome(await peers.request(p, PROTOCOLS.shard, item, signal));
  const stores = createCoalescer<unknown>({
    size: () => 1,
    maxSize: STORE_MANY_MAX_ITEMS,
    async send(p, items, signal) {
      if (items.length === 1) return [await storeOne(p, items[0], signal)];
      const res = (await peers.request(p, PROTOCOLS.shard, { op: 'storeMany', items }, signal)) as { ok?: boolean; result?: { results?: unknown } };
      if (!res?.ok) {
        const refused = memberOutcome(res);
        if (!(isAppError(refused) && refused.reason === 'malformed')) throw refused as Error;
        p.storesShareBatches = false;
        return Promise.all(items.map((item) => storeOne(p, item, signal)));
      }
      const results = Array.isArray(res.result?.results) ? res.result.results : [];
      return items.map((_, i) => (i < results.length ? memberOutcome(results[i]) : new PeerError('refused', 'no answer for this share')));
    },
  });

  return {
    sendApply(slot, records, { signal }) {
      // A slot with no peer throws here, at once.
      return applies.submit(peers.ofSlot(slot), records, signal).then(() => undefined);
    },
    abortInFlight(p, reason) {
      applies.abort(p, reason);
      stores.abort(p, reason);
    },
    async requestCreate(body, { signal }) {
      const slot0 = peers.ofSlot(0);
      // Known down (no connection, or not answering pings): fail now instead of at the deadline.
      if (!peers.connected(slot0)) throw new PeerError('unreachable', 'slot 0');
      const res = (await peers.request(slot0, PROTOCOLS.create, body, signal)) as { ok?: boolean; result?: unknown; error?: string; code?: string };
      if (!res?.ok) throw refusalError(res);
      return res.result;
    },
    async callMember(slot, service, body, { signal }) {
      const p = peers.ofSlot(slot);
      if (!peers.connected(p)) throw new PeerError('unreachable');
      // A store refused on its own rejects here as any refusal does.
      if (service === 'shard' && p.storesShareBatches && isStore(body)) return stores.submit(p, body, signal);
      const outcome = memberOutcome(await peers.request(p, PROTOCOLS[service], body, signal));
      if (outcome instanceof Error) throw outcome;
      return outcome;
    },
    async ping(nodeId, opts = {}) {
      const p = peers.get(nodeId);
      if (!p) throw new Error(`unknown node ${nodeId}`);
      const t0 = performance.now();
      await peers.request(p, PROTOCOLS.ping, { t: t0 }, opts.signal ?? AbortSignal.timeout(2000));
      return performance.now() - t0;
    },
  };
}
