/**
 * The requester side of the request/response protocols: `apply` (queued per peer and sent as one
 * message per event-loop turn), `create` to slot 0, `grant` and `shard` to a member, and `ping`
 * (docs/architecture.md, "Network").
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
  requestCreate(request: unknown, options: { signal: AbortSignal }): Promise<unknown>;
  callMember(slot: number, service: MemberService, body: unknown, options: { signal: AbortSignal }): Promise<unknown>;
  ping(nodeId: string, options?: { signal?: AbortSignal }): Promise<number>;
}

interface PendingApply {
  records: ReplicatedRecord[];
  resolve: () => void;
  reject: (err: Error) => void;
}

/** Cap on one coalesced apply message's wait; each caller's own deadline is enforced separately. */
const APPLY_BATCH_DEADLINE_MS = 30_000;

/** Create the requester side. */
export function createRequests(deps: RequestsDeps): Requests {
  const { peers } = deps;
  /** Applies queued in this event-loop turn, per peer, sent as one message. */
  const applyQueues = new Map<Peer, PendingApply[]>();
  const applyQueueOf = (p: Peer): PendingApply[] => {
    let queue = applyQueues.get(p);
    if (!queue) {
      queue = [];
      applyQueues.set(p, queue);
    }
    return queue;
  };

  /** Send everything queued for a peer as one `apply` message (one verify pass, one fsync there). */
  function flushApplies(p: Peer): void {
    const batch = applyQueueOf(p).splice(0);
    if (batch.length === 0) return;
    const records = batch.flatMap((b) => b.records);
    peers.request(p, PROTOCOLS.apply, { records }, AbortSignal.timeout(APPLY_BATCH_DEADLINE_MS)).then(
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
    );
  }

  return {
    sendApply(slot, records, { signal }) {
      const p = peers.ofSlot(slot);
      return new Promise<void>((resolve, reject) => {
        const onAbort = () => reject(signal.reason instanceof Error ? signal.reason : new PeerError('timeout'));
        if (signal.aborted) return onAbort();
        signal.addEventListener('abort', onAbort, { once: true });
        const done = () => signal.removeEventListener('abort', onAbort);
        const queue = applyQueueOf(p);
        if (queue.length === 0) setImmediate(() => flushApplies(p));
        queue.push({ records, resolve: () => (done(), resolve()), reject: (e) => (done(), reject(e)) });
      });
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
