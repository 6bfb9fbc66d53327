/**
 * Catch-up over the `sync` protocol, both sides: the requester sends its sync request and applies
 * the pages it gets back through the validator one by one; the responder streams what the requester
 * lacks in pages of `syncBatchSize` (docs/architecture.md, "Sync (catch-up)"). `sync` streams pages,
 * so it does not fit the request/response links of the other protocols.
 */
import type { Logger } from '../log/index.ts';
import type { ReplicationEngine } from '../core/replication/engine.ts';
import type { SyncRequest } from '../core/replication/ports.ts';
import { parseVersionVector } from '../core/replication/ports.ts';
import type { ClusterLibp2p } from './libp2p-node.ts';
import { PROTOCOLS } from './protocols.ts';
import { messageChannel } from './rpc.ts';
import { untilStopped, type Peer, type Peers } from './peers.ts';
import type { Track } from './background.ts';
import { createSyncTurns, type SyncTurn } from './sync-turns.ts';
import { runPeriodic, type Periodic, type Startable } from '../core/lifecycle.ts';

/** Summary of one catch-up round with one peer. */
export interface SyncResult {
  peer: string;
  applied: number;
  pages: number;
}

/** Options of {@link createSync}. */
export interface SyncOptions {
  /** Periodic catch-up interval, ms. */
  syncIntervalMs: number;
  /** Records per sync page. */
  syncBatchSize: number;
  /** Idle deadline while reading a sync page, ms. */
  syncReadTimeoutMs: number;
  /**
   * Peers a node must have completed a round with, besides every peer connected at the time, to call
   * itself caught up from its connect syncs: `threshold − 1`, so with itself a quorum agreed. @default 1
   */
  caughtUpPeers?: number;
}

/** Dependencies of {@link createSync}. */
export interface SyncDeps {
  libp2p: Pick<ClusterLibp2p, 'handle' | 'dialProtocol'>;
  peers: Peers;
  engine: Pick<ReplicationEngine, 'prepareIngest' | 'ingestPrepared' | 'missingFor' | 'syncRequest'>;
  /** Aborted when the cluster stops: running rounds end at once. */
  stopping: AbortSignal;
  /** Ends the periodic rounds when aborted: the cluster's stop, or the node's lifetime. */
  loops: AbortSignal;
  track: Track;
  /** The cluster's logger. */
  log: Logger;
}

/** Catch-up with the other nodes. */
export interface Sync extends Startable {
  /** Sync with a peer; concurrent requests coalesce into one running round plus at most one more. */
  syncPeer(p: Peer): Promise<SyncResult>;
  /** One catch-up round with every reachable node. */
  syncAll(): Promise<SyncResult[]>;
  /**
   * True once this node has completed a catch-up round with every node connected at that time: a
   * periodic round with all of them, or the rounds each one's connection starts once at least
   * `caughtUpPeers` are connected (so a restarted node is ready as soon as its connect syncs finish,
   * not at the first periodic round).
   */
  caughtUp(): boolean;
  /** Abort the running round with `p` (it disconnected: its stream would only time out). */
  abort(p: Peer, reason: string): void;
  /** Start the periodic rounds. */
  start(): void;
  /** Stop the periodic rounds (waits for the one in flight); idempotent. */
  stop(): Promise<void>;
}

interface PeerSync {
  syncing: Promise<SyncResult> | undefined;
  syncAgain: boolean;
  /** Aborts the running sync round when the peer disconnects (its stream would only time out). */
  syncAbort: AbortController | undefined;
}

/** How long the sync with another peer before it may read no page before a sync starts anyway (./sync-turns.ts). */
const SYNC_TURN_IDLE_MS = 1_000;
/** Longest a sync waits for the one before it once that one has begun, however it progresses. */
const SYNC_TURN_MAX_WAIT_MS = 10_000;
/** Sync streams per protocol per connection. */
const SYNC_MAX_STREAMS = 64;

/** Serve `sync` and create the requester side. */
export async function createSync(options: SyncOptions, deps: SyncDeps): Promise<Sync> {
  const { libp2p, peers, engine, log, stopping, track } = deps;
  const { syncReadTimeoutMs } = options;
  const state = new Map<Peer, PeerSync>();
  const stateOf = (p: Peer): PeerSync => {
    let s = state.get(p);
    if (!s) {
      s = { syncing: undefined, syncAgain: false, syncAbort: undefined };
      state.set(p, s);
    }
    return s;
  };
  let caughtUp = false;
  /** Peers this node has completed a round with since it started. */
  const synced = new WeakSet<Peer>();
  const noteSynced = (p: Peer) => {
    synced.add(p);
    if (caughtUp) return;
    const connected = [...peers.all()].filter(peers.connected);
    if (connected.length >= Math.max(1, options.caughtUpPeers ?? 1) && connected.every((q) => synced.has(q))) caughtUp = true;
  };
  let periodic: Periodic | undefined;

  // ---- responder -------------------------------------------------------------------------------

  await libp2p.handle(
    PROTOCOLS.sync,
    ({ stream, connection }) => {
      const ch = messageChannel(stream);
      track(
        (async () => {
          const remote = peers.byPeerId(connection.remotePeer.toString());
          if (!remote) throw new Error('unknown peer');
          // Fault injection (silent partition): the request is never answered.
          if (peers.silenced(remote)) return await untilStopped(stopping);
          // Fault injection (partition): refused.
          if (peers.blocked(remote)) throw new Error('peer blocked (fault injection)');
          const req = sanitizeSyncRequest(await ch.read(AbortSignal.timeout(syncReadTimeoutMs)));
          for await (const page of engine.missingFor(req, { limit: options.syncBatchSize })) {
            if (stopping.aborted) throw new Error('stopping');
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
    { maxInboundStreams: SYNC_MAX_STREAMS, maxOutboundStreams: SYNC_MAX_STREAMS },
  );

  // ---- requester -------------------------------------------------------------------------------

  /**
   * Syncs with several peers take turns (./sync-turns.ts): each waits while the one before it reads
   * pages, at most {@link SYNC_TURN_IDLE_MS} without one and {@link SYNC_TURN_MAX_WAIT_MS} in all, so
   * a member far behind receives each missing record about once, and a slow or withholding peer
   * cannot hold catch-up back.
   */
  const turns = createSyncTurns({ idleMs: SYNC_TURN_IDLE_MS, maxWaitMs: SYNC_TURN_MAX_WAIT_MS });

  async function runSync(p: Peer): Promise<SyncResult> {
    if (peers.silenced(p)) throw new Error('peer silenced (fault injection)');
    if (peers.blocked(p)) throw new Error('peer blocked (fault injection)');
    const turn = await turns.take();
    try {
      return await runSyncTurn(p, turn);
    } finally {
      turn.release();
    }
  }

  async function runSyncTurn(p: Peer, turn: SyncTurn): Promise<SyncResult> {
    const started = performance.now();
    const abort = new AbortController();
    stateOf(p).syncAbort = abort;
    // The cluster's stop ends the round too: its stream would only be closed under it.
    const round = AbortSignal.any([abort.signal, stopping]);
    const deadline = () => AbortSignal.any([round, AbortSignal.timeout(syncReadTimeoutMs)]);
    const stream = await libp2p.dialProtocol(p.peerId, PROTOCOLS.sync, { signal: deadline(), negotiateFully: false });
    const ch = messageChannel(stream);
    let applied = 0;
    let pages = 0;
    try {
      await ch.write(await engine.syncRequest());
      // Two pages in hand at most: one being checked and stored, in page order (evidence in a page may
      // rest on records of the page before), while the next is read and its signatures verified.
      let storing: Promise<void> = Promise.resolve();
      for (;;) {
        const msg = (await ch.read(deadline())) as { done?: boolean; records?: unknown[] };
        if (msg?.done) break;
        if (!Array.isArray(msg?.records)) throw new Error('malformed sync page');
        // Fault injection (partition): a round under way takes nothing more from the peer.
        if (peers.blocked(p)) throw new Error('peer blocked (fault injection)');
        pages++;
        turn.progress();
        const prepared = engine.prepareIngest(msg.records, 'sync');
        // Handled where it is awaited, below; this only keeps an early rejection from being reported as unhandled.
        prepared.catch(() => undefined);
        const previous = storing;
        storing = (async () => {
          await previous;
          applied += (await engine.ingestPrepared(await prepared)).applied;
        })();
        storing.catch(() => undefined);
        await previous;
      }
      await storing;
      await ch.close();
    } catch (err) {
      ch.abort(err instanceof Error ? err : new Error(String(err)));
      throw err;
    }
    if (applied > 0) log.info({ peer: p.entry.id, applied, pages, ms: Math.round(performance.now() - started) }, 'caught up from peer');
    return { peer: p.entry.id, applied, pages };
  }

  function syncPeer(p: Peer): Promise<SyncResult> {
    const s = stateOf(p);
    if (s.syncing) {
      s.syncAgain = true;
      return s.syncing;
    }
    const run = (async (): Promise<SyncResult> => {
      let last: SyncResult = { peer: p.entry.id, applied: 0, pages: 0 };
      do {
        s.syncAgain = false;
        last = await runSync(p);
        noteSynced(p);
      } while (s.syncAgain && !stopping.aborted && peers.connected(p));
      return last;
    })().finally(() => {
      s.syncing = undefined;
    });
    s.syncing = run;
    return track(run);
  }

  async function syncAll(): Promise<SyncResult[]> {
    const targets = [...peers.all()].filter(peers.connected);
    const results = await Promise.allSettled(targets.map(syncPeer));
    const ok: SyncResult[] = [];
    for (const r of results) {
      if (r.status === 'fulfilled') ok.push(r.value);
      else log.debug({ err: r.reason }, 'sync round failed');
    }
    // A round with fewer peers than `caughtUpPeers` (none connected yet, just after a start) proves nothing.
    if (ok.length === targets.length && targets.length >= (options.caughtUpPeers ?? 1)) caughtUp = true;
    return ok;
  }

  return {
    syncPeer,
    syncAll,
    caughtUp: () => caughtUp,
    abort(p, reason) {
      state.get(p)?.syncAbort?.abort(new Error(reason));
    },
    start() {
      // A round waits for the one before it: a slow peer delays the next round instead of stacking them.
      periodic ??= runPeriodic(
        async () => {
          await syncAll();
        },
        { intervalMs: options.syncIntervalMs, signal: deps.loops, logger: log, name: 'sync' },
      );
    },
    async stop() {
      await periodic?.stop();
    },
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
