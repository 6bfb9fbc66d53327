/**
 * Web3 secrets (docs/web3.md, "Web3 secrets"; docs/security.md, "Web3 secrets"): what every node does with the
 * chains it serves.
 *
 * - **The confirmed view.** A secret's owner, delegate, syncing flag and type are read from the
 *   controller at `head − confirmations` — the same depth at which events are acted on — and cached
 *   per secret. A cached state is served only while this node's event follower has covered every
 *   block up to the block asked for; the follower drops a secret's entry on each of its events
 *   (`SecretCreated`, `SecretSynced`, `DelegateUpdated`, `SecretOwnershipTransferred`). So a warm read
 *   costs no RPC call and is never older than the confirmed view; a follower that lags only costs
 *   direct reads. Members use it before releasing a share, coordinators before answering. A secret
 *   it shows syncing or does not know is read again at the latest block before it is refused: clients
 *   see it ready there, and encrypting needs only the key; owner and delegate stay confirmed.
 * - **New secrets (the syncer only).** On the chain's designated syncer (`chains[].syncer`, a
 *   coordinator the controller whitelists), the follower keeps a durable cursor; for each confirmed
 *   `SecretCreated` of type 1 it deals the key exactly as for Web2 (unless the secret already has
 *   one) and sends `markSecretSynced(secretId, controllerClusterId, "cifer")`. The cursor moves only
 *   after that: a crash or a failure re-delivers the range, and the key is never dealt twice (the
 *   record is checked first, and members refuse a second key).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { createAgeOrderedMap, setWithin, type AgeOrderedMap } from '../../crypto/index.ts';
import { AppError } from '../../errors/index.ts';
import type { Logger } from '../../log/index.ts';
import type { Startable } from '../lifecycle.ts';
import type { FreshReader } from '../replication/fresh-read.ts';
import type { StateReader } from '../replication/ports.ts';
import type { ResolvedSecret } from '../secrets/types.ts';
import { SECRET_TYPE_MLKEM768 } from '../secrets/records.ts';
import { secretSyncing } from '../secrets/rules.ts';
import type { ChainEvent, EventFollower, SecretState, Web3Chain, Web3Chains } from './ports.ts';
import { MAX_WEB3_SECRET_ID, SYNCED_SENTINEL, web3SecretKey, type Web3SecretBody } from './records.ts';

/** Secret states cached per chain (public data: owners, delegates, flags). */
const STATE_CACHE_ENTRIES = 10_000;

/** What the Web3 service needs of the secrets capability: dealing a key like a Web2 secret's. */
export interface Web3Dealer {
  /** Deal a key for a Web3 secret: shares to the members (≥ threshold), then the `web3Secret` record. */
  dealWeb3Secret(chainId: number, secretId: number, createdBlock: number): Promise<void>;
}

/** Dependencies of {@link createWeb3Service}. */
export interface Web3Deps {
  chains: Web3Chains;
  state: StateReader;
  /** Client lookups catch up before a "not found". */
  fresh?: FreshReader;
  /** The syncer's durable cursor per chain (the last block whose events were acted on). */
  cursors: { get(chainId: number): Promise<number | undefined>; put(chainId: number, block: number): Promise<void> };
  /** Set once the secrets capability exists (it needs this service's reads, this needs its dealing). */
  dealer(): Web3Dealer;
  /** Whether this node is a coordinator (only a coordinator may deal). */
  isCoordinator: boolean;
  /** This node's address (lowercase 0x): the account the controller must whitelist for the syncer. */
  selfAddress: string;
  logger: Logger;
  /** Counters of dealt keys and sync transactions, by chain. */
  metrics?: { secretsDealt: { inc(labels: { chain: string }): void }; syncFailures: { inc(labels: { chain: string }): void } };
  /** The node's lifetime: when aborted, a start still waiting for a chain gives up. @default only {@link Web3Service.stop} does */
  signal?: AbortSignal;
}

/** The Web3 secrets capability. */
export interface Web3Service extends Startable {
  /**
   * A Web3 secret as a client names it, for a coordinator's answer: the cluster's key from the record,
   * owner and delegate from the confirmed view; a secret the confirmed view shows syncing or does not
   * know is read again at the latest block first. 404 unknown (or no key in this cluster), 403
   * `Secret <id> is syncing; try again shortly`, 503 CHAIN_UNAVAILABLE.
   */
  resolve(chainId: number, secretId: number): Promise<ResolvedSecret>;
  /** The same for a member about to release its share: its own replica (the catch-up gate ran first). */
  resolveOwn(chainId: number, secretId: number): Promise<ResolvedSecret>;
  /** The confirmed on-chain state of a secret (cached; see the module comment). */
  confirmedState(chainId: number, secretId: number): Promise<SecretState | undefined>;
  /** Start following every chain with a controller. */
  start(): Promise<void>;
  /** Stop the followers (waits for a handler in progress); idempotent. */
  stop(): Promise<void>;
}

interface CachedState {
  state: SecretState | undefined;
  /** Block the state was read at. */
  block: number;
}

interface ChainView {
  chain: Web3Chain;
  states: AgeOrderedMap<string, CachedState>;
  /** Events delivered per secret (only for secrets with one): a read that overlapped one is not kept. */
  epochs: Map<string, number>;
  /** Last block the follower delivered (inclusive), or undefined before the first range. */
  followedTo: number | undefined;
  /** First block the follower reads: reads at earlier blocks could miss events, so are not kept. */
  followFrom?: number;
  follower?: EventFollower;
}

/** Parse a Web3 secret id the cluster keys; 400 otherwise. */
export function assertWeb3SecretId(secretId: number): void {
  if (secretId > MAX_WEB3_SECRET_ID) throw new AppError('BAD_REQUEST', `Invalid secretId ${secretId}: too large`);
}

/** Create the Web3 service. */
export function createWeb3Service(deps: Web3Deps): Web3Service {
  const log = deps.logger.child({ module: 'web3' });
  const views = new Map<number, ChainView>(deps.chains.list().map((chain) => [chain.chainId, { chain, states: createAgeOrderedMap(), epochs: new Map(), followedTo: undefined }]));

  function viewOf(chainId: number): ChainView {
    const view = views.get(chainId);
    if (!view) throw new AppError('BAD_REQUEST', `Chain ${chainId} is not supported`);
    if (!view.chain.hasController) throw new AppError('CHAIN_UNAVAILABLE', `Chain ${chainId} (${view.chain.name}) has no secrets controller configured`, { chainId });
    return view;
  }

  /** The secret's state in the confirmed view; `freshHead` reads the head again instead of its cache. */
  async function confirmedState(chainId: number, secretId: number, freshHead = false): Promise<SecretState | undefined> {
    const view = viewOf(chainId);
    // Never behind what the follower already delivered (its head may be fresher than the cached one).
    const target = Math.max(0, (await view.chain.blockNumber({ fresh: freshHead })) - view.chain.confirmations, view.followedTo ?? 0);
    const key = String(secretId);
    const hit = view.states.get(key);
    // Valid while the follower has seen every block up to the target: an event in between dropped it.
    if (hit && (hit.block >= target || (view.followedTo !== undefined && view.followedTo >= target))) return hit.state;
    const epoch = view.epochs.get(key) ?? 0;
    const state = await view.chain.getSecretState(secretId, { blockNumber: target });
    // Kept only when the follower can still invalidate it: it reads every block after this one, and
    // delivered no event of this secret while the read was in flight (that state may predate it).
    if (view.follower && view.followFrom !== undefined && target >= view.followFrom - 1 && (view.epochs.get(key) ?? 0) === epoch && target >= (view.followedTo ?? 0)) {
      setWithin(view.states, key, { state, block: target }, STATE_CACHE_ENTRIES);
    }
    return state;
  }

  async function recordOf(chainId: number, secretId: number, fresh: boolean): Promise<Web3SecretBody | undefined> {
    const key = web3SecretKey(chainId, secretId);
    const r = fresh && deps.fresh ? await deps.fresh.get('web3Secret', key) : await deps.state.get('web3Secret', key);
    return r?.body as Web3SecretBody | undefined;
  }

  async function resolveWith(chainId: number, secretId: number, fresh: boolean): Promise<ResolvedSecret> {
    assertWeb3SecretId(secretId);
    const confirmed = await confirmedState(chainId, secretId);
    const chain = viewOf(chainId).chain;
    // Unknown or syncing in the confirmed view: the latest block decides before anything is refused
    // (docs/web3.md, "Serving a secret"). Clients judge readiness there and do not retry, while the
    // confirmed view lags it by `confirmations` blocks and a cached head. Whether the key may be
    // served follows that read; who may decrypt stays the confirmed view's.
    const state = confirmed && !confirmed.isSyncing ? confirmed : await chain.getSecretState(secretId);
    if (!state) throw new AppError('NOT_FOUND', `Secret ${secretId} not found on chain ${chainId}`);
    // Never keyed by this cluster: a type it does not serve is said as such, not as "syncing".
    if (state.secretType !== SECRET_TYPE_MLKEM768) throw new AppError('FORBIDDEN', `Secret type ${state.secretType} is not supported`);
    const record = await recordOf(chainId, secretId, fresh);
    if (!record) {
      if (state.isSyncing) throw secretSyncing(secretId);
      throw new AppError('NOT_FOUND', `Secret ${secretId} on chain ${chainId} has no key in this cluster`);
    }
    // Synced by another cluster after ours dealt (a race the controller settles): not ours to serve.
    if (!state.isSyncing && (state.clusterId !== chain.controllerClusterId || state.publicKeyCid !== SYNCED_SENTINEL)) {
      throw new AppError('NOT_FOUND', `Secret ${secretId} on chain ${chainId} is served by another cluster`);
    }
    const resolved = { chainId, secretId, publicKeyCid: record.publicKeyCid, isSyncing: state.isSyncing, secretType: state.secretType };
    // Unknown to the confirmed view but known at the latest block: the cached head may be what lags
    // (up to a block time), so the confirmed view is read again from a fresh head before the secret is
    // called unconfirmed. Not confirmed then (created within the last `confirmations` blocks): no
    // owner anyone decrypts as.
    const owned = confirmed ?? (await confirmedState(chainId, secretId, true));
    return owned ? { ...resolved, owner: owned.owner, delegate: owned.delegate } : { ...resolved, owner: '', delegate: null, unconfirmed: true };
  }

  /** The syncer's work for one confirmed range: deal and mark every new secret of type 1. */
  async function syncRange(view: ChainView, events: readonly ChainEvent[], toBlock: number): Promise<void> {
    const { chain } = view;
    for (const event of events) {
      if (event.name !== 'SecretCreated') continue;
      const secretId = Number(event.secretId);
      if (!Number.isSafeInteger(secretId) || secretId > MAX_WEB3_SECRET_ID) {
        log.warn({ chainId: chain.chainId, secretId: String(event.secretId) }, 'secret id out of range; not keyed');
        continue;
      }
      if (event.secretType !== SECRET_TYPE_MLKEM768) {
        log.info({ chainId: chain.chainId, secretId, secretType: event.secretType }, 'secret of another type; not keyed');
        continue;
      }
      // Acting is idempotent: the key is dealt once (the record says so), the sync is re-sent until done.
      if (!(await recordOf(chain.chainId, secretId, true))) {
        // What every node will check of the record, checked first: a key no node would store is never
        // dealt (and a range that cannot succeed never blocks the ones after it).
        const state = await chain.getSecretState(secretId);
        if (!state || (!state.isSyncing && (state.clusterId !== chain.controllerClusterId || state.publicKeyCid !== SYNCED_SENTINEL))) {
          log.warn({ chainId: chain.chainId, secretId, clusterId: state?.clusterId }, 'secret gone or synced by another cluster; not keyed');
          continue;
        }
        if (!(await chain.isWhitelisted(deps.selfAddress))) {
          throw new Error(`chain ${chain.chainId}: this node (${deps.selfAddress}) is not whitelisted by the secrets controller; not dealing secret ${secretId}`);
        }
        await deps.dealer().dealWeb3Secret(chain.chainId, secretId, event.blockNumber);
        deps.metrics?.secretsDealt.inc({ chain: String(chain.chainId) });
      }
      try {
        const result = await chain.markSecretSynced(secretId, chain.controllerClusterId, SYNCED_SENTINEL);
        if (result.status === 'already-synced' && (result.clusterId !== chain.controllerClusterId || result.publicKeyCid !== SYNCED_SENTINEL)) {
          log.warn({ chainId: chain.chainId, secretId, clusterId: result.clusterId }, 'secret was synced by another cluster; its key here is never served');
        }
      } catch (err) {
        deps.metrics?.syncFailures.inc({ chain: String(chain.chainId) });
        throw err;
      }
    }
    await deps.cursors.put(chain.chainId, toBlock);
  }

  async function startChain(view: ChainView): Promise<void> {
    const { chain } = view;
    const dealing = chain.syncer && deps.isCoordinator;
    if (chain.syncer && !deps.isCoordinator) log.error({ chainId: chain.chainId }, 'chains[].syncer is set on a node without the HTTP API: only a coordinator may deal keys; not syncing');
    // The syncer resumes from its durable cursor; every other node only needs events from now on
    // (its cache starts empty, so there is nothing older to invalidate).
    let fromBlock: number;
    if (dealing) {
      const cursor = await deps.cursors.get(chain.chainId);
      fromBlock = cursor === undefined ? chain.startBlock : cursor + 1;
    } else {
      // Until the head can be read: starting from `startBlock` instead would replay the whole history.
      const head = await untilRead(() => chain.blockNumber());
      if (head === undefined) return;
      fromBlock = Math.max(0, head - chain.confirmations);
    }
    if (ended.aborted) return;
    view.followFrom = fromBlock;
    view.follower = chain.followEvents({
      fromBlock,
      onEvents: async (events, toBlock) => {
        const drop = () => {
          for (const event of events) {
            const key = String(event.secretId);
            view.states.delete(key);
            view.epochs.set(key, (view.epochs.get(key) ?? 0) + 1);
          }
        };
        drop();
        if (dealing) await syncRange(view, events, toBlock);
        // Again: a read while the syncer acted may have kept a state from before these events.
        drop();
        view.followedTo = toBlock;
      },
    });
    log.info({ chainId: chain.chainId, fromBlock, dealing }, 'following the secrets controller');
  }

  const stopping = new AbortController();
  /** Aborted by stop or by the node's lifetime. */
  const ended = deps.signal ? AbortSignal.any([stopping.signal, deps.signal]) : stopping.signal;
  /** `read()` retried with backoff (1 s doubling to 30 s) until it answers; undefined once stopped. */
  async function untilRead<T>(read: () => Promise<T>): Promise<T | undefined> {
    for (let wait = 1000; !ended.aborted; wait = Math.min(wait * 2, 30_000)) {
      try {
        return await read();
      } catch (err) {
        log.warn({ err: (err as Error).message, retryInMs: wait }, 'cannot read the chain yet; following starts when it answers');
        // Ends early when stopped: rejects with an AbortError then, which only ends the wait.
        await sleep(wait, undefined, { signal: ended, ref: false }).catch(() => undefined);
      }
    }
    return undefined;
  }

  return {
    resolve: (chainId, secretId) => resolveWith(chainId, secretId, true),
    resolveOwn: (chainId, secretId) => resolveWith(chainId, secretId, false),
    confirmedState,
    async start() {
      for (const view of views.values()) {
        if (view.chain.hasController) await startChain(view);
      }
    },
    async stop() {
      stopping.abort();
      await Promise.all([...views.values()].map((view) => view.follower?.stop()));
    },
  };
}
