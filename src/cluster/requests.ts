/**
 * The requester side of the request/response protocols: `apply` (one message in flight per peer; what
 * is queued meanwhile goes together in the next), `create` to slot 0, `grant` and `shard` to a member,
 * and `ping` (docs/architecture.md, "Network" and "Quorum writes").
 */
import { PeerError, refusalError, type MemberService } from '../core/replication/ports.ts';
import type { ReplicatedRecord } from '../core/replication/record.ts';
import { PROTOCOLS } from './protocols.ts';
import type { Peer, Peers } from './peers.ts';

/** Dependencies of {@link createRequests}. */
export interface RequestsDeps {
  peers: Pick<Peers, 'get' | 'ofSlot' | 'connected' | 'request'>;
}

/** Requests to other nodes (the methods of the same names on the cluster). */
export interface Requests {
  sendApply(slot: number, records: ReplicatedRecord[], options: { signal: AbortSignal }): Promise<void>;
  /** The peer is gone: give up the apply message in flight to it, so the next one goes when it answers again. */
  abortApplies(p: Peer, reason: string): void;
  requestCreate(request: unknown, options: { signal: AbortSignal }): Promise<unknown>;
  callMember(slot: number, service: MemberService, body: unknown, options: { signal: AbortSignal }): Promise<unknown>;
  ping(nodeId: string, options?: { signal?: AbortSignal }): Promise<number>;
}

interface PendingApply {
  records: ReplicatedRecord[];
  /** Set once the caller has its answer (or gave up at its deadline): nothing more is owed to it. */
  settled: boolean;
  resolve: () => void;
  reject: (err: Error) => void;
}

/** A peer's applies: those waiting for the next message, and whether one is in flight. */
interface ApplyQueue {
  waiting: PendingApply[];
  /** The callers of the message in flight, and how to give it up once every one of them has. */
  inFlight: { batch: PendingApply[]; controller: AbortController } | undefined;
  /** A flush is scheduled for the end of this event-loop turn. */
  scheduled: boolean;
}

/** Cap on one coalesced apply message's wait; each caller's own deadline is enforced separately. */
const APPLY_BATCH_DEADLINE_MS = 30_000;
/** Most records in one apply message (one caller's larger set still goes alone). */
const APPLY_BATCH_MAX_RECORDS = 1000;

/** Create the requester side. */
export function createRequests(deps: RequestsDeps): Requests {
  const { peers } = deps;
  /** Per peer: applies wait while one message is in flight, then travel together in the next. */
  const applyQueues = new Map<Peer, ApplyQueue>();
  const applyQueueOf = (p: Peer): ApplyQueue => {
    let queue = applyQueues.get(p);
    if (!queue) {
      queue = { waiting: [], inFlight: undefined, scheduled: false };
      applyQueues.set(p, queue);
    }
    return queue;
  };

  /**
   * Send what waits for a peer as one `apply` message (one verify pass, one fsync there), unless one
   * is in flight: its answer sends the next. Callers that gave up meanwhile are left out.
   */
  function flushApplies(p: Peer): void {
    const queue = applyQueueOf(p);
    queue.scheduled = false;
    if (queue.inFlight) return;
    queue.waiting = queue.waiting.filter((b) => !b.settled);
    if (queue.waiting.length === 0) return;
    let n = 0;
    let take = 0;
    while (take < queue.waiting.length && (take === 0 || n + queue.waiting[take]!.records.length <= APPLY_BATCH_MAX_RECORDS)) n += queue.waiting[take++]!.records.length;
    const batch = queue.waiting.splice(0, take);
    const records = batch.flatMap((b) => b.records);
    const controller = new AbortController();
    const deadline = setTimeout(() => controller.abort(new PeerError('timeout')), APPLY_BATCH_DEADLINE_MS);
    queue.inFlight = { batch, controller };
    peers
      .request(p, PROTOCOLS.apply, { records }, controller.signal)
      .then(
        (res) => {
          const rejected = new Map<string, string>();
          for (const r of ((res as { rejected?: Array<{ origin: string; seq: number; reason: string }> })?.rejected ?? [])) rejected.set(`${r.origin}!${r.seq}`, r.reason);
          for (const b of batch) {
            const reasons = b.records.map((r) => rejected.get(`${r.origin}!${r.seq}`)).filter(Boolean);
            if (reasons.length > 0) b.reject(new PeerError('rejected', reasons.join(', ')));
            else b.resolve();
          }
        },
        (err: unknown) => {
          for (const b of batch) b.reject(err instanceof Error ? err : new Error(String(err)));
        },
      )
      .finally(() => {
        clearTimeout(deadline);
        queue.inFlight = undefined;
        flushApplies(p);
      });
  }

  return {
    sendApply(slot, records, { signal }) {
      const p = peers.ofSlot(slot);
      return new Promise<void>((resolve, reject) => {
        const queue = applyQueueOf(p);
        const pending: PendingApply = {
          records,
          settled: false,
          resolve: () => {
            if (settle()) resolve();
          },
          reject: (e) => {
            if (settle()) reject(e);
          },
        };
        const onAbort = () => {
          pending.reject(signal.reason instanceof Error ? signal.reason : new PeerError('timeout'));
          // The message in flight is given up once none of its callers waits for it any more, so a
          // member that stopped answering holds the next message no longer than their deadlines.
          const inFlight = queue.inFlight;
          if (inFlight?.batch.includes(pending) && inFlight.batch.every((b) => b.settled)) inFlight.controller.abort(new PeerError('timeout'));
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
        // Applies queued in this event-loop turn go together; while a message is in flight, its
        // answer sends what queued meanwhile.
        if (!queue.inFlight && !queue.scheduled) {
          queue.scheduled = true;
          setImmediate(() => flushApplies(p));
        }
      });
    },
    abortApplies(p, reason) {
      applyQueues.get(p)?.inFlight?.controller.abort(new PeerError('unreachable', reason));
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
      const res = (await peers.request(p, PROTOCOLS[service], body, signal)) as { ok?: boolean; result?: unknown; error?: string; code?: string; reason?: string };
      if (res?.ok) return res.result;
      throw refusalError(res);
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
