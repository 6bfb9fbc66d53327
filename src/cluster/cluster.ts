/**
 * The cluster: membership, the `apply`, `sync`, `create` and `ping` protocols, gossip, and the
 * maintenance loop that keeps a connection to every node of the cluster file and catches up on every
 * (re)connection and periodically (docs/architecture.md, "Network", "Records" and "Sync (catch-up)").
 *
 * Implements the core's PeerTransport and MembershipView ports; nothing outside this folder sees a
 * libp2p type.
 */
import { peerIdFromString } from '@libp2p/peer-id';
import { multiaddr } from '@multiformats/multiaddr';
import type { PeerId, PrivateKey, Stream } from '@libp2p/interface';
import type { Logger } from '../log/index.ts';
import type { NodeMetrics } from '../metrics/index.ts';
import type { ReplicationEngine } from '../core/replication/engine.ts';
import type { ClusterDescriptor, ClusterNodeEntry, MemberHandler, MemberService, MembershipView, PeerTransport, SyncRequest } from '../core/replication/ports.ts';
import { AppError, isAppError, ERROR_CODES, type ErrorCode } from '../errors/index.ts';
import { membersOf, parseVersionVector } from '../core/replication/ports.ts';
import type { ReplicatedRecord } from '../core/replication/record.ts';
import { createLibp2pNode, type ClusterLibp2p } from './libp2p-node.ts';
import { PROTOCOLS, recordsTopic } from './protocols.ts';
import { messageChannel, encodeMessage, decodeMessage } from './rpc.ts';
import { createLink, serveLink, type Link } from './link.ts';
import { createDialFailureLog, type DialFailureLog } from './dial-log.ts';
import { announcedAddressUnbound } from './announce-check.ts';

/** Options of {@link createCluster}. */
export interface ClusterOptions {
  /** Listen multiaddrs. */
  listen: string[];
  /** Re-dial interval for unreachable nodes, ms. */
  reconnectIntervalMs: number;
  /** Periodic catch-up interval, ms. */
  syncIntervalMs: number;
  /** Records per sync page. */
  syncBatchSize: number;
  /** Idle deadline while reading a sync page, ms. @default 15000 */
  syncReadTimeoutMs?: number;
  /** Streams per protocol per connection. @default 1024 */
  maxStreams?: number;
  /** How often each connected node is pinged, ms. @default 300 */
  livenessIntervalMs?: number;
  /**
   * A node not heard from (no ping answered) for this long is unreachable: writes stop waiting for
   * it, `/healthz` says so, and its connection is dropped and re-dialled, ms. @default 1200
   */
  livenessTimeoutMs?: number;
}

/** Handles a `create` request on slot 0; the result is sent back as JSON. */
export type CreateHandler = (request: unknown, from: ClusterNodeEntry) => Promise<unknown>;

/** Dependencies of {@link createCluster}. */
export interface ClusterDeps {
  descriptor: ClusterDescriptor;
  self: ClusterNodeEntry;
  privateKey: PrivateKey;
  /** Live set of peer ids to refuse (fault injection). */
  blockedPeers: ReadonlySet<string>;
  /**
   * Live set of peer ids to go silent on (fault injection: a partition that drops packets): nothing
   * is sent to them or answered, their connections are not hung up, new ones are refused.
   */
  silencedPeers?: ReadonlySet<string>;
  engine: Pick<ReplicationEngine, 'ingest' | 'versionVector' | 'missingFor' | 'syncRequest'>;
  /** Slot 0's create handler (absent on other nodes). */
  createHandler?: CreateHandler;
  /** This member's `grant` and `shard` handlers (absent on gateways). */
  memberHandlers?: Partial<Record<MemberService, MemberHandler>>;
  logger: Logger;
  metrics: NodeMetrics;
}

/** Summary of one catch-up round with one peer. */
export interface SyncResult {
  peer: string;
  applied: number;
  pages: number;
}

/** The running cluster. */
export interface Cluster extends PeerTransport {
  readonly membership: MembershipView;
  start(): Promise<void>;
  stop(): Promise<void>;
  /** Send a `create` request to slot 0 and return its result; rejects when unreachable or refused. */
  requestCreate(request: unknown, options: { signal: AbortSignal }): Promise<unknown>;
  /**
   * Call a member's `grant` or `shard` service. Rejects with an AppError carrying the member's code
   * when it refused, with a plain Error when unreachable or timed out.
   */
  callMember(slot: number, service: MemberService, body: unknown, options: { signal: AbortSignal }): Promise<unknown>;
  /** One catch-up round with a node (by id). */
  syncWith(nodeId: string): Promise<SyncResult>;
  /** One catch-up round with every reachable node. */
  syncAll(): Promise<SyncResult[]>;
  /** Round-trip time to a node over the `ping` protocol, ms. */
  ping(nodeId: string, options?: { signal?: AbortSignal }): Promise<number>;
  /** True once a catch-up round with every node reachable at that time has completed. */
  caughtUp(): boolean;
  /** Bound listen addresses. */
  listenAddresses(): string[];
}

interface PendingApply {
  records: ReplicatedRecord[];
  resolve: () => void;
  reject: (err: Error) => void;
}

interface Peer {
  entry: ClusterNodeEntry;
  peerId: PeerId;
  idStr: string;
  dialing: boolean;
  syncing: Promise<SyncResult> | undefined;
  syncAgain: boolean;
  /** One long-lived link per request protocol. */
  links: Map<string, Link>;
  /** Applies queued in this event-loop turn, sent as one message. */
  applyQueue: PendingApply[];
  /** Aborts the running sync round when the peer disconnects (its stream would only time out). */
  syncAbort: AbortController | undefined;
  /** performance.now() when it last answered a ping (or connected). */
  lastHeard: number;
  /** A liveness ping is in flight. */
  pinging: boolean;
  /** Marked unreachable by silence: not heard from within the liveness timeout. */
  silent: boolean;
}

/** Cap on one coalesced apply message's wait; each caller's own deadline is enforced separately. */
const APPLY_BATCH_DEADLINE_MS = 30_000;
/** Longest a sync waits for the sync with another peer before it (see takeSyncTurn). */
const SYNC_TURN_WAIT_MS = 1_000;

/** Create the cluster (not started). */
export async function createCluster(options: ClusterOptions, deps: ClusterDeps): Promise<Cluster> {
  const log = deps.logger.child({ module: 'cluster' });
  const { descriptor, self, engine } = deps;
  const topic = recordsTopic(descriptor.clusterId);
  const maxStreams = options.maxStreams ?? 1024;
  const syncReadTimeoutMs = options.syncReadTimeoutMs ?? 15_000;

  const peers = new Map<string, Peer>(); // by node id
  const byPeerId = new Map<string, Peer>();
  for (const n of descriptor.nodes) {
    if (n.id === self.id) continue;
    const p: Peer = { entry: n, peerId: peerIdFromString(n.peerId), idStr: n.peerId, dialing: false, syncing: undefined, syncAgain: false, links: new Map(), applyQueue: [], syncAbort: undefined, lastHeard: 0, pinging: false, silent: false };
    peers.set(n.id, p);
    byPeerId.set(n.peerId, p);
  }
  const memberSlots = new Map<number, Peer | 'self'>();
  for (const m of membersOf(descriptor)) memberSlots.set(m.slot, m.id === self.id ? 'self' : peers.get(m.id)!);

  const libp2p: ClusterLibp2p = await createLibp2pNode({
    privateKey: deps.privateKey,
    listen: options.listen,
    allowedPeers: new Set(descriptor.nodes.map((n) => n.peerId)),
    blockedPeers: deps.blockedPeers,
    ...(deps.silencedPeers ? { silencedPeers: deps.silencedPeers } : {}),
    onStrangerRefused: () => deps.metrics.peersRefused.inc(),
  });
  const livenessIntervalMs = options.livenessIntervalMs ?? 300;
  const livenessTimeoutMs = options.livenessTimeoutMs ?? 1200;
  const silenced = (p: Peer) => deps.silencedPeers?.has(p.idStr) === true;

  // Reachable = an open connection AND answering: a TCP connection that stays open while packets are
  // dropped would otherwise count as reachable until keep-alives time out, seconds later.
  const connected = (p: Peer) => !deps.blockedPeers.has(p.idStr) && !p.silent && libp2p.getConnections(p.peerId).some((c) => c.status === 'open');

  const membership: MembershipView = {
    descriptor,
    self,
    isReachable(slot) {
      const p = memberSlots.get(slot);
      if (!p) return false;
      return p === 'self' ? true : connected(p);
    },
    reachableCount() {
      let n = 0;
      for (const slot of memberSlots.keys()) if (membership.isReachable(slot)) n++;
      return n;
    },
  };

  let stopped = false;
  let started = false;
  /** Aborted on stop: ends what fault injection left waiting. */
  const stopping = new AbortController();
  let caughtUp = false;
  let maintenanceTimer: NodeJS.Timeout | undefined;
  let livenessTimer: NodeJS.Timeout | undefined;
  let syncTimer: NodeJS.Timeout | undefined;
  /** Failed dials, told at warn at most once per peer per 30 s (created at start: its grace period starts then). */
  let dialFailures: DialFailureLog | undefined;
  const background = new Set<Promise<unknown>>();
  const track = <T>(p: Promise<T>): Promise<T> => {
    background.add(p);
    p.finally(() => background.delete(p)).catch(() => undefined);
    return p;
  };

  async function openChannel(p: Peer, protocol: string, signal: AbortSignal) {
    const stream: Stream = await libp2p.dialProtocol(p.peerId, protocol, { signal, negotiateFully: false });
    return messageChannel(stream);
  }

  /** A request over the peer's long-lived link for `protocol`. */
  function request(p: Peer, protocol: string, body: unknown, signal: AbortSignal): Promise<unknown> {
    // Fault injection: a silent partition loses the request; only the caller's deadline ends it.
    if (silenced(p)) return new Promise((_resolve, reject) => signal.addEventListener('abort', () => reject(signal.reason instanceof Error ? signal.reason : new Error('timeout')), { once: true }));
    let link = p.links.get(protocol);
    if (!link) {
      link = createLink((sig) => libp2p.dialProtocol(p.peerId, protocol, { signal: sig, negotiateFully: false }));
      p.links.set(protocol, link);
    }
    return link.request(body, signal);
  }

  function closeLinks(p: Peer, reason: string): void {
    for (const link of p.links.values()) link.close(reason);
  }

  function peerOfSlot(slot: number): Peer {
    const p = memberSlots.get(slot);
    if (!p || p === 'self') throw new Error(`no peer at slot ${slot}`);
    return p;
  }

  /** Send everything queued for a peer as one `apply` message (one verify pass, one fsync there). */
  function flushApplies(p: Peer): void {
    const batch = p.applyQueue.splice(0);
    if (batch.length === 0) return;
    const records = batch.flatMap((b) => b.records);
    request(p, PROTOCOLS.apply, { records }, AbortSignal.timeout(APPLY_BATCH_DEADLINE_MS)).then(
      (res) => {
        const rejected = new Map<string, string>();
        for (const r of ((res as { rejected?: Array<{ origin: string; seq: number; reason: string }> })?.rejected ?? [])) rejected.set(`${r.origin}!${r.seq}`, r.reason);
        for (const b of batch) {
          const reasons = b.records.map((r) => rejected.get(`${r.origin}!${r.seq}`)).filter(Boolean);
          if (reasons.length > 0) b.reject(new Error(`rejected: ${reasons.join(', ')}`));
          else b.resolve();
        }
      },
      (err: unknown) => {
        for (const b of batch) b.reject(err instanceof Error ? err : new Error(String(err)));
      },
    );
  }

  // ---- protocol handlers -------------------------------------------------------------------

  type Handler = (body: unknown, remote: Peer) => Promise<unknown>;
  async function serve(protocol: string, handler: Handler): Promise<void> {
    await libp2p.handle(
      protocol,
      ({ stream, connection }) => {
        const remote = byPeerId.get(connection.remotePeer.toString());
        if (!remote) {
          stream.abort(new Error('unknown peer'));
          return;
        }
        // Fault injection: a silent partition: requests arrive into nothing and are never answered.
        track(serveLink(stream, (body) => (silenced(remote) ? new Promise<never>((_r, reject) => stopping.signal.addEventListener('abort', () => reject(new Error('stopping')), { once: true })) : handler(body, remote))));
      },
      { maxInboundStreams: maxStreams, maxOutboundStreams: maxStreams },
    );
  }

  await serve(PROTOCOLS.apply, async (body) => {
    const records = (body as { records?: unknown })?.records;
    if (!Array.isArray(records) || records.length === 0) throw new Error('rejected: malformed apply');
    const res = await engine.ingest(records, 'apply');
    return { applied: res.applied, duplicates: res.duplicates, rejected: res.rejected };
  });

  await serve(PROTOCOLS.ping, async (body) => body);

  await serve(PROTOCOLS.create, async (body, remote) => {
    if (!deps.createHandler) return { ok: false, error: 'not the creator' };
    try {
      return { ok: true, result: await deps.createHandler(body, remote.entry) };
    } catch (err) {
      return { ok: false, error: err instanceof Error ? err.message : 'create failed', code: (err as { code?: string }).code };
    }
  });

  for (const service of ['grant', 'shard'] as const) {
    await serve(PROTOCOLS[service], async (body, remote) => {
      const handler = deps.memberHandlers?.[service];
      if (!handler) return { ok: false, error: 'not a member', code: 'FORBIDDEN' };
      try {
        return { ok: true, result: await handler(body, remote.entry) };
      } catch (err) {
        // Refusals carry their code; anything else is reported without internals.
        if (isAppError(err)) return { ok: false, error: err.message, code: err.code };
        log.warn({ err, service, peer: remote.entry.id }, 'member service failed');
        return { ok: false, error: 'member service failed' };
      }
    });
  }

  // sync streams pages, so it does not fit the request/response link.
  await libp2p.handle(
    PROTOCOLS.sync,
    ({ stream, connection }) => {
      const ch = messageChannel(stream);
      track(
        (async () => {
          const remote = byPeerId.get(connection.remotePeer.toString());
          if (!remote) throw new Error('unknown peer');
          // Fault injection (silent partition): the request is never answered.
          if (silenced(remote)) return await new Promise<never>((_r, reject) => stopping.signal.addEventListener('abort', () => reject(new Error('stopping')), { once: true }));
          const req = sanitizeSyncRequest(await ch.read(AbortSignal.timeout(syncReadTimeoutMs)));
          for await (const page of engine.missingFor(req, { limit: options.syncBatchSize })) {
            if (stopped) throw new Error('stopping');
            await ch.write({ records: page }, AbortSignal.timeout(syncReadTimeoutMs));
          }
          await ch.write({ done: true });
          await ch.close();
        })().catch((err: unknown) => {
          log.debug({ err }, 'sync responder failed');
          ch.abort(err instanceof Error ? err : new Error(String(err)));
        }),
      );
    },
    { maxInboundStreams: 64, maxOutboundStreams: 64 },
  );

  // ---- sync (requester side) -----------------------------------------------------------------

  /**
   * Syncs with several peers at once would each bring every missing record, and a member far behind
   * would receive (and decode) each several times: they take turns. Each waits for the one before it
   * at most {@link SYNC_TURN_WAIT_MS}, so a slow or withholding peer cannot hold catch-up back.
   */
  let syncTurn: Promise<void> = Promise.resolve();
  async function takeSyncTurn(): Promise<() => void> {
    const previous = syncTurn;
    let release!: () => void;
    syncTurn = new Promise<void>((resolve) => (release = resolve));
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([previous, new Promise<void>((resolve) => (timer = setTimeout(resolve, SYNC_TURN_WAIT_MS)))]);
    clearTimeout(timer);
    return release;
  }

  async function runSync(p: Peer): Promise<SyncResult> {
    if (silenced(p)) throw new Error('peer silenced (fault injection)');
    const release = await takeSyncTurn();
    try {
      return await runSyncTurn(p);
    } finally {
      release();
    }
  }

  async function runSyncTurn(p: Peer): Promise<SyncResult> {
    const started = performance.now();
    const abort = new AbortController();
    p.syncAbort = abort;
    const deadline = () => AbortSignal.any([abort.signal, AbortSignal.timeout(syncReadTimeoutMs)]);
    const ch = await openChannel(p, PROTOCOLS.sync, deadline());
    let applied = 0;
    let pages = 0;
    try {
      await ch.write(await engine.syncRequest());
      for (;;) {
        const msg = (await ch.read(deadline())) as { done?: boolean; records?: unknown[] };
        if (msg?.done) break;
        if (!Array.isArray(msg?.records)) throw new Error('malformed sync page');
        pages++;
        const res = await engine.ingest(msg.records, 'sync');
        applied += res.applied;
      }
      await ch.close();
    } catch (err) {
      ch.abort(err instanceof Error ? err : new Error(String(err)));
      throw err;
    }
    if (applied > 0) log.info({ peer: p.entry.id, applied, pages, ms: Math.round(performance.now() - started) }, 'caught up from peer');
    return { peer: p.entry.id, applied, pages };
  }

  /** Sync with a peer; concurrent requests coalesce into one running round plus at most one more. */
  function syncPeer(p: Peer): Promise<SyncResult> {
    if (p.syncing) {
      p.syncAgain = true;
      return p.syncing;
    }
    const run = (async (): Promise<SyncResult> => {
      let last: SyncResult = { peer: p.entry.id, applied: 0, pages: 0 };
      do {
        p.syncAgain = false;
        last = await runSync(p);
      } while (p.syncAgain && !stopped && connected(p));
      return last;
    })().finally(() => {
      p.syncing = undefined;
    });
    p.syncing = run;
    return track(run);
  }

  async function syncAll(): Promise<SyncResult[]> {
    const targets = [...peers.values()].filter(connected);
    const results = await Promise.allSettled(targets.map(syncPeer));
    const ok: SyncResult[] = [];
    for (const r of results) {
      if (r.status === 'fulfilled') ok.push(r.value);
      else log.debug({ err: r.reason }, 'sync round failed');
    }
    if (ok.length === targets.length) caughtUp = true;
    return ok;
  }

  // ---- maintenance: connections ------------------------------------------------------------------

  /**
   * Liveness: ping every connected node; one not heard from within the timeout is unreachable at once
   * (pending requests to it fail now, writes stop waiting for it) and its connection is dropped so the
   * reconnect loop dials it afresh — which fails while the network is down.
   */
  function checkLiveness(): void {
    if (stopped) return;
    const now = performance.now();
    for (const p of peers.values()) {
      if (p.silent || deps.blockedPeers.has(p.idStr) || !libp2p.getConnections(p.peerId).some((c) => c.status === 'open')) continue;
      if (now - p.lastHeard > livenessTimeoutMs) {
        p.silent = true;
        deps.metrics.connectedMembers.set(membership.reachableCount());
        log.warn({ peer: p.entry.id, silentMs: Math.round(now - p.lastHeard) }, 'peer stopped answering; marked unreachable');
        closeLinks(p, 'peer not answering');
        p.syncAbort?.abort(new Error('peer not answering'));
        void libp2p.hangUp(p.peerId).catch(() => undefined);
        continue;
      }
      if (p.pinging) continue;
      p.pinging = true;
      request(p, PROTOCOLS.ping, { t: now }, AbortSignal.timeout(livenessTimeoutMs))
        .then(() => {
          p.lastHeard = performance.now();
        })
        .catch(() => undefined)
        .finally(() => {
          p.pinging = false;
        });
    }
  }

  function maintain(): void {
    if (stopped) return;
    deps.metrics.connectedMembers.set(membership.reachableCount());
    for (const p of peers.values()) {
      if (deps.blockedPeers.has(p.idStr)) {
        if (libp2p.getConnections(p.peerId).length > 0) void libp2p.hangUp(p.peerId).catch(() => undefined);
        continue;
      }
      if (connected(p) || p.dialing) continue;
      p.dialing = true;
      track(
        libp2p
          .dial(p.peerId, { signal: AbortSignal.timeout(Math.max(1000, options.reconnectIntervalMs * 2)) })
          .catch((err: unknown) => {
            log.trace({ err, peer: p.entry.id }, 'dial failed');
            if (!stopped) dialFailures?.failed({ nodeId: p.entry.id, peerId: p.idStr, multiaddrs: p.entry.multiaddrs }, err);
          })
          .finally(() => {
            p.dialing = false;
          }),
      );
    }
  }

  libp2p.addEventListener('peer:connect', (evt) => {
    const p = byPeerId.get(evt.detail.toString());
    if (p) {
      p.lastHeard = performance.now();
      p.silent = false;
    }
    deps.metrics.connectedMembers.set(membership.reachableCount());
    if (!p || stopped) return;
    dialFailures?.connected(p.entry.id);
    log.info({ peer: p.entry.id }, 'peer connected');
    // Catch up on every (re)connection.
    syncPeer(p).catch((err: unknown) => log.debug({ err, peer: p.entry.id }, 'sync on connect failed'));
  });
  libp2p.addEventListener('peer:disconnect', (evt) => {
    const p = byPeerId.get(evt.detail.toString());
    deps.metrics.connectedMembers.set(membership.reachableCount());
    if (!p) return;
    closeLinks(p, 'peer disconnected');
    p.syncAbort?.abort(new Error('peer disconnected'));
    if (!stopped) log.info({ peer: p.entry.id }, 'peer disconnected');
  });

  libp2p.services.pubsub.addEventListener('message', (evt) => {
    if (evt.detail.topic !== topic) return;
    const from = (evt.detail as { from?: { toString(): string } }).from?.toString();
    if (from !== undefined && deps.silencedPeers?.has(from)) return;
    let record: unknown;
    try {
      record = decodeMessage(evt.detail.data);
    } catch {
      deps.metrics.recordsRejected.inc({ reason: 'malformed_gossip' });
      return;
    }
    engine.ingest([record], 'gossip').catch((err: unknown) => log.warn({ err }, 'gossip apply failed'));
  });

  return {
    membership,
    async start() {
      if (started) return;
      started = true;
      for (const p of peers.values()) {
        await libp2p.peerStore.merge(p.peerId, { multiaddrs: p.entry.multiaddrs.map((a) => multiaddr(a)) });
      }
      await libp2p.start();
      dialFailures = createDialFailureLog({}, { now: () => performance.now(), warn: (fields, message) => log.warn(fields, message) });
      const bound = libp2p.getMultiaddrs().map(String);
      if (announcedAddressUnbound(self.multiaddrs, [...options.listen, ...bound])) {
        log.warn(
          {
            announced: self.multiaddrs,
            listen: options.listen,
            bound,
            hint: 'other nodes dial the announced address (this node\'s multiaddrs in the cluster file): fix it or the config listen; ignore if a NAT or port forward maps it here',
          },
          'node does not listen on its announced address',
        );
      }
      libp2p.services.pubsub.subscribe(topic);
      maintain();
      maintenanceTimer = setInterval(maintain, options.reconnectIntervalMs);
      livenessTimer = setInterval(checkLiveness, livenessIntervalMs);
      syncTimer = setInterval(() => void syncAll(), options.syncIntervalMs);
      log.info({ listen: libp2p.getMultiaddrs().map(String), peerId: self.peerId }, 'cluster started');
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      stopping.abort();
      clearInterval(maintenanceTimer);
      clearInterval(syncTimer);
      clearInterval(livenessTimer);
      for (const p of peers.values()) closeLinks(p, 'stopping');
      try {
        libp2p.services.pubsub.unsubscribe(topic);
      } catch {
        // not started
      }
      await libp2p.stop();
      await Promise.allSettled([...background]);
    },
    sendApply(slot, records: ReplicatedRecord[], { signal }) {
      const p = peerOfSlot(slot);
      return new Promise<void>((resolve, reject) => {
        const onAbort = () => reject(signal.reason instanceof Error ? signal.reason : new Error('timeout'));
        if (signal.aborted) return onAbort();
        signal.addEventListener('abort', onAbort, { once: true });
        const done = () => signal.removeEventListener('abort', onAbort);
        if (p.applyQueue.length === 0) setImmediate(() => flushApplies(p));
        p.applyQueue.push({ records, resolve: () => (done(), resolve()), reject: (e) => (done(), reject(e)) });
      });
    },
    async publish(record) {
      await libp2p.services.pubsub.publish(topic, encodeMessage(record));
    },
    async requestCreate(body, { signal }) {
      const slot0 = peerOfSlot(0);
      // Known down (no connection, or not answering pings): fail now instead of at the deadline.
      if (!connected(slot0)) throw new Error('slot 0 unreachable');
      const res = (await request(slot0, PROTOCOLS.create, body, signal)) as { ok?: boolean; result?: unknown; error?: string; code?: string };
      if (!res?.ok) throw Object.assign(new Error(res?.error ?? 'create refused'), { code: res?.code, refused: true });
      return res.result;
    },
    async callMember(slot, service, body, { signal }) {
      const p = peerOfSlot(slot);
      if (!connected(p)) throw new Error('unreachable');
      const res = (await request(p, PROTOCOLS[service], body, signal)) as { ok?: boolean; result?: unknown; error?: string; code?: string };
      if (res?.ok) return res.result;
      const code = typeof res?.code === 'string' && res.code in ERROR_CODES ? (res.code as ErrorCode) : undefined;
      const message = typeof res?.error === 'string' ? res.error.slice(0, 300) : 'refused';
      throw code ? new AppError(code, message) : new Error(message);
    },
    syncWith(nodeId) {
      const p = peers.get(nodeId);
      if (!p) return Promise.reject(new Error(`unknown node ${nodeId}`));
      return syncPeer(p);
    },
    syncAll,
    async ping(nodeId, opts = {}) {
      const p = peers.get(nodeId);
      if (!p) throw new Error(`unknown node ${nodeId}`);
      const t0 = performance.now();
      await request(p, PROTOCOLS.ping, { t: t0 }, opts.signal ?? AbortSignal.timeout(2000));
      return performance.now() - t0;
    },
    caughtUp: () => caughtUp,
    listenAddresses: () => libp2p.getMultiaddrs().map(String),
  };
}

/** A peer's sync request, with everything malformed dropped (a dropped part only costs resends). */
function sanitizeSyncRequest(raw: unknown): SyncRequest {
  const r = (raw ?? {}) as Record<string, unknown>;
  const req: SyncRequest = { vv: parseVersionVector(r.vv), max: parseVersionVector(r.max), gaps: {}, fp: {} };
  if (r.gaps && typeof r.gaps === 'object') {
    for (const [origin, list] of Object.entries(r.gaps as Record<string, unknown>)) {
      if (!/^0x[0-9a-f]{40}$/.test(origin) || !Array.isArray(list) || list.length > 1000 || !list.every((s) => Number.isSafeInteger(s) && (s as number) > 0)) continue;
      req.gaps![origin] = list as number[];
    }
  }
  // `max` without its gap list would skip the gaps: keep the two together.
  for (const origin of Object.keys(req.max!)) if (!req.gaps![origin]) delete req.max![origin];
  if (r.fp && typeof r.fp === 'object') {
    for (const [origin, fp] of Object.entries(r.fp as Record<string, unknown>)) if (/^0x[0-9a-f]{40}$/.test(origin) && typeof fp === 'string' && /^[0-9a-f]{1,64}$/.test(fp)) req.fp![origin] = fp;
  }
  return req;
}
