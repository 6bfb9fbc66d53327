/**
 * The composition root (CONTRIBUTING.md rule 2): the only place that imports every folder. Starts
 * components in dependency order — keys, store, replication engine, cluster, operator port, HTTP — and
 * stops them in reverse, store last, under one lifetime AbortSignal (CONTRIBUTING.md, "Lifecycle").
 * `stop()` is idempotent.
 */
import { join } from 'node:path';
import type { NodeConfig } from '../config/schema.ts';
import { loadClusterFile, parseClusterProposal } from '../config/cluster-file.ts';
import { createLogger, resolveLogFormat, type Logger } from '../log/index.ts';
import { createMetrics, type NodeMetrics } from '../metrics/index.ts';
import { readBuildInfo } from '../build-info.ts';
import { AppError, refusal } from '../errors/index.ts';
import { createHash } from 'node:crypto';
import { stopAll, type Startable } from '../core/lifecycle.ts';
import { recordContentId } from '../core/replication/record.ts';
import { createEvidenceChecker } from '../core/sessions/evidence.ts';
import { createFreshReader } from '../core/replication/fresh-read.ts';
import { openStore, type NodeStore } from '../store/index.ts';
import { createCluster, loadOrCreateNodeKeys, describeNodeKeys, type Cluster } from '../cluster/index.ts';
import { createReplicationEngine, type ReplicationEngine } from '../core/replication/engine.ts';
import { createKindRegistry } from '../core/replication/kinds.ts';
import { createCreator, type CreatorService } from '../core/replication/creator.ts';
import { createSequencer } from '../core/replication/sequencer.ts';
import { createOwnLogCatchUp, membersToLearnOwnLog, type OwnLogCatchUp } from '../core/replication/own-log.ts';
import type { ClusterDescriptor, ClusterNodeEntry, MemberHandler, MemberRpc, MemberService } from '../core/replication/ports.ts';
import { isCoordinatorEntry, membersOf } from '../core/replication/ports.ts';
import { clusterHealthOf, type HealthSource } from '../core/health/index.ts';
import { createProbeService, probeKind } from '../core/probe/index.ts';
import { createHttpApp, createOperatorApp, listenHttp } from '../http/index.ts';
import {
  zeroize,
  createVerifyPool,
  publicKeyOf,
  createRequestCryptoPool,
  type RequestCryptoPool,
  type VerifyPool,
  createHashLimiter,
  createTimingEqualizer,
  hashPassword,
  verifyPassword,
  generateOtp,
  hashOtp,
  verifyOtp,
  isEd25519PublicKeyHex,
  verifyEd25519,
  signDigest,
  toHex,
  openSealed,
  secp256k1EcdhX,
  aesKeyObject,
  encryptAtRest,
  decryptAtRest,
  systemRandom,
} from '../crypto/index.ts';
import { createMailer, otpMail, permitMail, type Mailer } from '../mail/index.ts';
import { accountKinds } from '../core/accounts/records.ts';
import { createAccountsService, type AccountCrypto } from '../core/accounts/service.ts';
import { sessionKind } from '../core/sessions/records.ts';
import { createSignedDataVerifier } from '../core/sessions/signed-data.ts';
import { createSignerMemo, signerPrefetch, type SignerMemo } from '../core/sessions/signer-memo.ts';
import { createSessionsService } from '../core/sessions/service.ts';
import { secretKind } from '../core/secrets/records.ts';
import { createSecretsService, type SecretsCapability } from '../core/secrets/service.ts';
import type { NodeKeyring } from '../core/secrets/ports.ts';
import { createPayloadsService } from '../core/payloads/service.ts';
import { createFilesService, type FilesCapability } from '../core/files/service.ts';
import { permitKind } from '../core/permits/records.ts';
import { createPermitsService, type PermitsCapability } from '../core/permits/service.ts';
import { usageKinds } from '../core/usage/records.ts';
import { createUsageService, type UsageCapability } from '../core/usage/service.ts';
import type { NodeDeps, QuorumNode } from './types.ts';
// chain-clients.ts, not the folder's index: viem loads only when a chain is enabled (see there).
import { createChainClients, type ChainClients } from '../evm/chain-clients.ts';
import type { Web3Chains } from '../core/web3/ports.ts';
import { web3SecretKind } from '../core/web3/records.ts';
import { memberStatusKind } from '../core/secrets/member-records.ts';
import { createMemberAdmin, createShareRecovery, type ShareRecovery } from '../core/secrets/recovery.ts';
import { createShareInventory, type ShareInventory } from '../core/secrets/inventory.ts';
import { createDataSafety, type DataSafety, type DataSafetyMonitor } from '../core/secrets/data-safety.ts';
import { lostSecretKind } from '../core/secrets/lost-records.ts';
import { parseShardRequest } from '../core/secrets/shard-messages.ts';
import { raiseSecretIdCounter } from '../core/secrets/create.ts';
import { createSlot0Registry } from '../core/slot0-registry.ts';
import { createWeb3Service, type Web3Service } from '../core/web3/service.ts';
import { createNodeBackup } from '../backup/index.ts';
import { membershipChangeProblem } from '../core/membership/epoch.ts';
import { createEpochApprover } from '../core/membership/approve.ts';
import { clusterStartFailure, httpBindFailure, storeOpenFailure } from './startup-errors.ts';

export type { NodeDeps, QuorumNode } from './types.ts';
export { NODE_PROCESS_SETTINGS, missingProcessSettings, tuneHeapForNodes } from './v8-heap.ts';

/**
 * Every record kind this build knows. `chains`: what Web3 secret records are checked against;
 * `acceptLegacyPermits`: whether this node takes permits backed by the legacy 4-part string.
 */
function recordKinds(descriptor: ClusterDescriptor, chains: Web3Chains, acceptLegacyPermits: boolean, signers?: SignerMemo) {
  // One evidence checker per node: its cache of verified session proofs serves every kind.
  const evidence = createEvidenceChecker(descriptor, signers);
  return createKindRegistry([
    probeKind,
    ...accountKinds(descriptor),
    sessionKind(descriptor),
    secretKind(descriptor, evidence),
    web3SecretKind(descriptor, chains),
    memberStatusKind(descriptor),
    lostSecretKind(descriptor),
    permitKind(descriptor, evidence, { acceptLegacy: acceptLegacyPermits }),
    ...usageKinds,
  ]);
}

/**
 * The node's private-key operations for shares; the keys stay here, the core gets functions. The
 * release boxes go through `requestCrypto`, whose thread holds the same signing key (`openingKey`).
 */
function nodeKeyring(signingKey: Uint8Array, storageKey: Uint8Array, requestCrypto: Pick<RequestCryptoPool, 'openBox' | 'sealBox'>): NodeKeyring {
  const signingPublicKey = publicKeyOf(signingKey, true);
  // Every share read and write opens a box under the storage key: one KeyObject for all of them.
  const storage = aesKeyObject(storageKey);
  return {
    openSealed: (box, aad) => openSealed(signingKey, box, aad, signingPublicKey),
    openBox: (box, aad) => requestCrypto.openBox(box, aad),
    sealRelease: (recipient, share, aad) => requestCrypto.sealBox(recipient, share, aad),
    encryptAtRest: (plaintext, aad) => encryptAtRest(storage, plaintext, aad),
    decryptAtRest: (box, aad) => decryptAtRest(storage, box, aad),
    ecdhX: (publicKey) => secp256k1EcdhX(signingKey, publicKey),
  };
}

/**
 * Retry-After of a shed argon2 job: a full queue (`accounts.maxQueuedHashes`) drains in well under a
 * second at the defaults, so one second is the earliest a retry can do better.
 */
const OVERLOADED_RETRY_AFTER_S = 1;

/** Deadline of one request on the operator port: its answers are small and local. */
const OPERATOR_REQUEST_TIMEOUT_MS = 10_000;
/** Store metadata key of the membership (cluster descriptor) this node last accepted. */
const MEMBERSHIP_META = 'membership';

/** argon2id work for accounts, all behind one concurrency limit and one bounded queue. */
function accountCrypto(options: NodeConfig['accounts'], metrics: Pick<NodeMetrics, 'hashJobsShed'>): AccountCrypto {
  const limiter = createHashLimiter(options.maxConcurrentHashes, {
    maxQueued: options.maxQueuedHashes,
    overloaded: () => {
      metrics.hashJobsShed.inc();
      return new AppError('OVERLOADED', 'Server busy; retry shortly', { retryAfterSeconds: OVERLOADED_RETRY_AFTER_S });
    },
  });
  const equalizer = createTimingEqualizer();
  return {
    hashPassword: (pw) => limiter.run(() => hashPassword(pw)),
    verifyPassword: (pw, phc) => limiter.run(() => verifyPassword(pw, phc)),
    verifyDummy: (pw) => limiter.run(() => equalizer.verifyAgainstDummy(pw)),
    generateOtp: () => generateOtp(),
    hashOtp: (code, context) => limiter.run(() => hashOtp(code, context)),
    verifyOtp: (code, context, phc) => limiter.run(() => verifyOtp(code, context, phc)),
    isEd25519PublicKeyHex,
    verifyEd25519,
  };
}

/** The data-safety gauges (src/metrics) from one round of the monitor; fixed label sets: the member slots. */
function publishSafety(metrics: NodeMetrics, view: DataSafety): void {
  const now = Date.now();
  for (const m of view.members) {
    const slot = String(m.slot);
    metrics.memberReachable.set({ slot }, m.reachable ? 1 : 0);
    metrics.memberRecovering.set({ slot }, m.status === 'recovering' ? 1 : 0);
    metrics.memberRecoveringSeconds.set({ slot }, m.status === 'recovering' && m.since !== null ? Math.max(0, (now - m.since) / 1000) : 0);
    if (m.shares) {
      metrics.memberSharesHeld.set({ slot }, m.shares.held);
      metrics.memberSharesExpected.set({ slot }, m.shares.expected);
    }
  }
  metrics.slot0Reachable.set(view.members.find((m) => m.slot === 0)?.reachable ? 1 : 0);
  metrics.secretsAtRisk.set(view.secretsAtRisk);
  metrics.secretsLost.set(view.secretsLost);
  metrics.secretsLostAcknowledged.set(view.secretsLostAcknowledged);
}

interface Running {
  store: NodeStore;
  engine: ReplicationEngine;
  cluster: Cluster;
  /** The start-time hold of own writes until this node knows its own log. */
  ownLog: OwnLogCatchUp;
  creator: CreatorService;
  http: { url: string; close(): Promise<void> } | undefined;
  /** The operator port (health, readiness, metrics), when `operator.enabled`. */
  operator: { url: string; close(): Promise<void> } | undefined;
  mailer: Mailer;
  secrets: SecretsCapability;
  permits: PermitsCapability;
  files: FilesCapability;
  usage: UsageCapability;
  chains: ChainClients;
  web3: Web3Service | undefined;
  recovery: ShareRecovery | undefined;
  /** A member's inventory of its own shares (none on a node without a slot). */
  inventory: ShareInventory | undefined;
  /** What this node knows of the cluster's data safety. */
  safety: DataSafetyMonitor;
  /** Private keys zeroed at stop. */
  keys: Uint8Array[];
  verifyPool: VerifyPool;
  requestCrypto: RequestCryptoPool;
}

/** A value bound once, after the parts that use it were created: {@link createNode}'s one late binding. */
function lateBinding<T>(what: string): { get(): T; bind(value: T): void } {
  let value: T | undefined;
  return {
    get() {
      if (value === undefined) throw new Error(`${what} is not created yet`);
      return value;
    },
    bind(v) {
      if (value !== undefined) throw new Error(`${what} is bound already`);
      value = v;
    },
  };
}

/** A resource that is opened and closed (a server, a pool, the store) as a part {@link stopAll} stops. */
function closing(resource: { close(): Promise<void> } | undefined): Startable | undefined {
  return resource && { stop: () => resource.close() };
}

/**
 * Stop what `parts` holds, in the node's stop order (CONTRIBUTING.md rule 2 and "Lifecycle"): the
 * ports, the services, the cluster, the engine, the resources and the store last; every part even
 * when one before it failed. Then zero the keys.
 */
async function stopParts(parts: Partial<Running>): Promise<void> {
  try {
    await stopAll([
      closing(parts.http),
      closing(parts.operator),
      parts.ownLog,
      parts.files,
      parts.web3,
      parts.safety,
      parts.recovery,
      parts.inventory,
      parts.secrets,
      // After the HTTP server and the jobs, before the cluster: the last counts reach the members.
      parts.usage,
      parts.chains,
      parts.permits,
      parts.cluster,
      parts.engine,
      closing(parts.verifyPool),
      closing(parts.requestCrypto),
      closing(parts.mailer),
      closing(parts.store),
    ]);
  } finally {
    zeroize(...(parts.keys ?? []));
  }
}

/**
 * Create a node from a validated config. Reads the cluster file (unless given) and checks that this
 * node is in it; nothing is opened until {@link QuorumNode.start}.
 */
export async function createNode(config: NodeConfig, deps: NodeDeps = {}): Promise<QuorumNode> {
  const descriptor: ClusterDescriptor = deps.descriptor ?? (await loadClusterFile(config.clusterFile));
  const self: ClusterNodeEntry | undefined = descriptor.nodes.find((n) => n.id === config.nodeId);
  if (!self) throw new Error(`config: nodeId: "${config.nodeId}" is not in the cluster file`);
  const logger: Logger = deps.logger ?? createLogger({ level: config.log.level, format: resolveLogFormat(config.log.format, process.stdout.isTTY === true), base: { node: config.nodeId } });
  const metrics: NodeMetrics = deps.metrics ?? createMetrics({ processMetrics: true });
  const clock = deps.clock ?? Date.now;
  const blockedPeers = deps.blockedPeers ?? new Set<string>();
  const keysDir = config.keysDir || join(config.dataDir, 'keys');
  const log = logger.child({ module: 'node' });

  let running: Running | undefined;
  let starting: Promise<void> | undefined;
  let stopping: Promise<void> | undefined;
  /** The node's lifetime (CONTRIBUTING.md, "Lifecycle"): aborted first at stop, it ends every periodic loop. */
  let lifetime: AbortController | undefined;

  const need = (): Running => {
    if (!running) throw new Error('node not started');
    return running;
  };

  const build = deps.build ?? readBuildInfo();
  const health: HealthSource = {
    nodeAddress: self.nodeAddress,
    build,
    clusterHealth: () => clusterHealthOf(need().cluster.membership, need().safety.view(), need().engine.equivocators()),
    readiness: () => {
      const r = running;
      const quorumReachable = !!r && r.cluster.membership.reachableCount() >= descriptor.threshold;
      const caughtUp = !!r && r.cluster.caughtUp();
      const started = !!r && !stopping;
      // docs/architecture.md, "Failure model": no write before the node knows its own log.
      const ownLogKnown = !!r && !r.engine.ownWritesHeld();
      // A member is ready only while it holds every share the records say it holds (docs/operations.md, "Data safety").
      const inventory = r?.inventory?.last();
      const sharesHeld = !!r && (r.inventory === undefined || (inventory !== undefined && inventory.complete && inventory.missingTotal === 0 && inventory.pending === 0));
      const ready = started && quorumReachable && caughtUp && ownLogKnown && sharesHeld;
      metrics.nodeReady.set(ready ? 1 : 0);
      return { ready, checks: { started, quorumReachable, caughtUp, ownLogKnown, sharesHeld } };
    },
  };

  async function doStart(): Promise<void> {
    // Constant for the node's life (docs/deployment.md, "Alerts and dashboard" compares them across nodes).
    metrics.buildInfo.set({ version: build.version, commit: build.commit }, 1);
    metrics.clusterSize.set(descriptor.size);
    metrics.clusterThreshold.set(descriptor.threshold);
    const { keys } = await loadOrCreateNodeKeys(keysDir);
    const facts = describeNodeKeys(keys);
    if (facts.peerId !== self!.peerId || facts.nodeAddress !== self!.nodeAddress) {
      throw new Error(`keys in ${keysDir} do not match the cluster file entry of ${self!.id} (peer id ${facts.peerId})`);
    }
    const store = await openStore({ location: join(config.dataDir, 'db') }).catch((err: unknown) => {
      throw storeOpenFailure(err, { dataDir: config.dataDir, nodeId: self!.id });
    });
    // Record signatures are verified on a worker thread: a catch-up page's, and an apply's while the event loop is busy.
    const verifyPool = createVerifyPool({ onRun: (where, n) => metrics.recordSignatureChecks.inc({ where }, n) });
    // Signer recoveries and payload seals of concurrent requests run on a worker thread.
    // … and so do the boxes of share releases, sealed by members and opened by coordinators.
    const requestCrypto = createRequestCryptoPool({
      openingKey: { privateKey: keys.signing, publicKey: publicKeyOf(keys.signing, true) },
      onRun: (op, where, n) => metrics.requestCryptoOps.inc({ op, where }, n),
    });
    const life = (lifetime = new AbortController());
    const { signal } = life;
    // What exists so far: a failed start stops it, in the stop order.
    const keyring = nodeKeyring(keys.signing, keys.storage, requestCrypto);
    const parts: Partial<Running> = { store, verifyPool, requestCrypto, keys: [keys.signing, keys.storage] };
    try {
      // The membership this node accepted before decides whether it may run on this cluster file
      // (src/core/membership/epoch.ts): the same identities, or one approved step further.
      const accepted = (await store.getMeta(MEMBERSHIP_META)) as ClusterDescriptor | undefined;
      const membershipProblem = membershipChangeProblem(accepted, descriptor);
      if (membershipProblem) throw new Error(`cluster file ${config.clusterFile}: ${membershipProblem}`);
      if (!accepted || (accepted.epoch ?? 0) !== (descriptor.epoch ?? 0)) {
        await store.putMeta(MEMBERSHIP_META, descriptor);
        if (accepted) log.warn({ epoch: descriptor.epoch, retired: descriptor.retired?.at(-1)?.nodeAddress }, 'membership epoch accepted: a replaced identity is retired');
      }
      // The enabled EVM chains (docs/web3.md): heads for Web3 signed strings, the controller's state
      // for Web3 secrets — also what every node checks a Web3 secret record against.
      const chains = (parts.chains = await createChainClients(config.chains, { logger, metrics, signingKey: keys.signing }));
      // The node's one late binding. The engine sends through the cluster and reads from it who is
      // reachable; slot 0's creator, the members' RPC and the catch-up gate call it too. The cluster,
      // in turn, serves the engine, the creator and the members' handlers (the services), so it is
      // created after all of them: a true cycle. What is built before the cluster reaches it through
      // `network.get()`, bound once, right after the cluster is created and before anything is started.
      const network = lateBinding<Cluster>('the cluster');
      const membership = {
        descriptor,
        self: self!,
        isReachable: (slot: number) => network.get().membership.isReachable(slot),
        reachableCount: () => network.get().membership.reachableCount(),
        reachableSince: (slot: number) => network.get().membership.reachableSince?.(slot),
      };
      // Signers this node recovered: a string its verifier checked is not recovered again as evidence,
      // and the strings a batch of records carries are recovered together, off the event loop under load.
      const signers = createSignerMemo();
      const kinds = recordKinds(descriptor, chains, config.permits.acceptLegacy === true, signers);
      const engine = createReplicationEngine(
        { applyTimeoutMs: config.replication.applyTimeoutMs, maxClockSkewMs: config.replication.maxClockSkewMs, stateCacheBytes: config.replication.stateCacheMb * 1024 * 1024 },
        {
          store: store.records,
          kinds,
          membership,
          transport: network.get,
          signingKey: keys.signing,
          clock,
          logger,
          metrics,
          verifier: verifyPool,
          prefetchSigners: signerPrefetch(signers, requestCrypto.recoverSigner),
        },
      );
      parts.engine = engine;
      await engine.open();
      // Slot 0's counters and claims: decided in memory one operation at a time, written in group
      // commits (used only on slot 0).
      const registry = createSlot0Registry({
        store: { getClaim: (name) => store.claims.get(name), getCounter: (name) => store.counters.current(name), write: (change) => store.claims.commit(change) },
        onWriteFailed: (err) => log.error({ err }, 'slot 0 registry write failed'),
      });
      const allocations = registry.serialised();
      const creator = createCreator(
        { timeoutMs: config.replication.createTimeoutMs },
        { isCreator: self!.slot === 0, counters: { next: (name) => allocations((tx) => tx.next(name)) }, requestCreate: (req, o) => network.get().requestCreate(req, o), ownWritesReleased: (waitMs) => engine.ownWritesReleased(waitMs), logger },
      );
      parts.creator = creator;
      // Writes of the sequenced kinds (secret, principal, permit): proposed to slot 0, which writes
      // each version only after the one it holds (src/core/replication/sequencer.ts).
      const versions = createSequencer({
        creator,
        kinds,
        sequenced: new Set(kinds.names().filter((n) => kinds.get(n)!.sequenced)),
        membership,
        state: engine,
        replicator: engine,
        ingest: (records) => engine.ingest(records, 'apply'),
        signDigest: (digest) => '0x' + toHex(signDigest(digest, keys.signing)),
        logger,
      });
      const mailer = createMailer(
        { transport: config.mail.transport, from: config.mail.from, outboxDir: join(config.dataDir, 'outbox'), smtp: config.mail.smtp },
        { logger, clock },
      );
      parts.mailer = mailer;
      const publicUrl = config.http.publicUrl || `http://${config.http.host}:${config.http.port}`;
      const accounts = createAccountsService(
        { otpTtlMs: config.accounts.otpTtlMs, mailCooldownMs: config.accounts.mailCooldownMs, publicUrl },
        {
          replicator: engine,
          versions,
          state: engine,
          creator,
          membership,
          claims: store.claims,
          crypto: accountCrypto(config.accounts, metrics),
          mail: { send: (m) => mailer.send(m), otpMail },
          clock,
          logger,
          ownWritesHeld: () => engine.ownWritesHeld(),
        },
      );
      engine.onApplied(({ records }) => accounts.onRecordsApplied(records));
      // Over `grant`/`shard`; this member's own slot in-process (the cluster does both).
      const members: MemberRpc = {
        call: async (slot, service, body, options) => network.get().callMember(slot, service, body, options),
      };
      const verifier = createSignedDataVerifier({ state: engine, recoverSigner: requestCrypto.recoverSigner, clock, chains, signers });
      /**
       * The catch-up gate of `grant` and `shard` (docs/security.md): a member behind the requester
       * pulls from it first, and refuses (NOT_READY: the requester asks another member) when it
       * cannot catch up within `replication.catchUpWaitMs`.
       */
      const behind = (theirs: Record<string, number>) => Object.keys(engine.lagBehind(theirs)).length > 0;
      const catchUp = async (theirs: Record<string, number>, from: { id: string }) => {
        if (!behind(theirs)) return;
        const deadline = AbortSignal.timeout(config.replication.catchUpWaitMs);
        const timedOut = new Promise<undefined>((r) => deadline.addEventListener('abort', () => r(undefined), { once: true }));
        while (behind(theirs)) {
          const round = await Promise.race([network.get().syncWith(from.id).catch(() => undefined), timedOut]);
          // A round that brought nothing will not bring more: stop instead of asking again until the deadline.
          if (!round || round.applied === 0) break;
        }
        if (behind(theirs)) {
          metrics.catchUpRefusals.inc();
          throw refusal('NOT_READY', 'not_ready', 'This member is catching up with the cluster; ask another member');
        }
      };
      const versionVector = () => engine.versionVector();
      // Client lookups that miss catch up with the members first (fresh-read.ts): a 404 is true.
      const memberIds = new Set(membersOf(descriptor).map((m) => m.id));
      const fresh = createFreshReader(
        { membersToAsk: descriptor.size - descriptor.threshold + 1 },
        {
          state: engine,
          catchUp: async () => (await network.get().syncAll()).filter((r) => memberIds.has(r.peer)).length + (self!.slot !== null ? 1 : 0),
          now: () => performance.now(),
        },
      );
      const sessions = createSessionsService(
        { grantTimeoutMs: config.sessions.grantTimeoutMs },
        {
          replicator: engine,
          state: engine,
          membership,
          members,
          verifier,
          signDigest: (digest) => '0x' + toHex(signDigest(digest, keys.signing)),
          verifyEd25519,
          versionVector,
          catchUp,
          clock,
          logger,
        },
      );
      // Web3 secrets (docs/web3.md): the chains' confirmed view of owners and delegates, and on a
      // chain's syncer the following of new secrets. None without chains: Web3 strings stay 400.
      const web3: Web3Service | undefined =
        chains.list().length === 0
          ? undefined
          : createWeb3Service({
              chains,
              state: engine,
              fresh,
              cursors: {
                get: async (chainId) => {
                  const v = await store.getMeta(`web3-cursor:${chainId}`);
                  return typeof v === 'number' ? v : undefined;
                },
                put: (chainId, block) => store.putMeta(`web3-cursor:${chainId}`, block),
              },
              dealer: () => secrets,
              isCoordinator: isCoordinatorEntry(self!),
              selfAddress: self!.nodeAddress,
              logger,
              metrics: { secretsDealt: metrics.web3SecretsDealt, syncFailures: metrics.web3SyncFailures },
              signal,
            });
      parts.web3 = web3;
      const secrets = createSecretsService(
        { shardTimeoutMs: config.secrets.shardTimeoutMs, retryIntervalMs: config.secrets.retryIntervalMs, usedStringPruneIntervalMs: config.secrets.usedStringPruneIntervalMs },
        {
          replicator: engine,
          state: engine,
          membership,
          members,
          creator,
          versions,
          ingest: (records) => engine.ingest(records, 'apply'),
          fresh,
          registry,
          verifier,
          usedStrings: store.usedStrings,
          releases: metrics.shareReleases,
          versionVector,
          catchUp,
          shares: store.shares,
          pending: store.pendingShares,
          keyring,
          random: systemRandom,
          dealCrypto: requestCrypto.deal,
          clock,
          logger,
          chains,
          web3: () => web3,
          signal,
        },
      );
      parts.secrets = secrets;
      // Usage counting and plan limits (docs/architecture.md, "Usage and plan limits").
      const usage = createUsageService(config.usage, {
        replicator: engine,
        state: engine,
        descriptor,
        selfAddress: self!.nodeAddress,
        membership,
        verifier,
        clock,
        logger,
        metrics: { refusals: metrics.usageRefusals, flushDuration: metrics.usageFlushDuration, flushWaits: metrics.usageFlushWaits },
        signal,
      });
      parts.usage = usage;
      engine.onApplied(({ records }) => usage.onRecordsApplied(records));
      // The admission port of every encrypt and decrypt; none with `usage.enabled` false (limits
      // off: nothing admitted, nothing counted). The report and plan assignment keep the service.
      const admission = config.usage.enabled ? usage : undefined;
      const payloads = createPayloadsService({ verifier, secrets, usage: admission, seal: requestCrypto.seal, recoverAndSeal: requestCrypto.recoverAndSeal, openPayload: requestCrypto.openPayload, logger });
      const fileMetrics = {
        jobs: metrics.fileJobs,
        bytes: metrics.fileBytes,
        duration: metrics.fileJobDuration,
        uploads: metrics.fileUploads,
        unverifiedBytes: metrics.fileUnverifiedBytes,
        unverifiedRefusals: metrics.fileUnverifiedRefusals,
      };
      const files = createFilesService(
        {
          dir: config.files.dir || join(config.dataDir, 'files'),
          maxFileBytes: config.files.maxFileBytes,
          chunkBytes: config.files.chunkBytes,
          maxConcurrentJobs: config.files.maxConcurrentJobs,
          maxJobsPerPrincipal: config.files.maxJobsPerPrincipal,
          maxDiskBytes: config.files.maxDiskBytes,
          maxUnverifiedBytesPerAddress: config.files.maxUnverifiedBytesPerAddress,
          maxUnverifiedBytes: config.files.maxUnverifiedBytes,
          sweepIntervalMs: config.files.sweepIntervalMs,
        },
        { verifier, secrets, keyring, jobs: store.jobs, usage: admission, clock, logger, metrics: fileMetrics, signal },
      );
      parts.files = files;
      const permits = createPermitsService(
        { ttlMs: config.permits.ttlMs, createTimeoutMs: config.replication.createTimeoutMs, publicUrl, redeliverIntervalMs: config.permits.redeliverIntervalMs, acceptLegacy: config.permits.acceptLegacy },
        {
          replicator: engine,
          versions,
          state: engine,
          fresh,
          log: engine,
          membership,
          creator,
          claims: store.claims,
          verifier,
          accounts,
          isEd25519PublicKeyHex,
          random: systemRandom,
          signDigest: (digest) => '0x' + toHex(signDigest(digest, keys.signing)),
          mail: { send: (m) => mailer.send(m), permitMail },
          clock,
          logger,
          applied: metrics.permitsApplied,
          signal,
        },
      );
      parts.permits = permits;
      engine.onApplied(({ changes }) => permits.onStateChanges(changes));
      // A member's inventory of its own shares (docs/operations.md, "Data safety").
      const inventory =
        self!.slot === null
          ? undefined
          : createShareInventory({
              state: engine,
              held: { shares: store.shares, keyring, clusterId: descriptor.clusterId, slot: self!.slot },
              caughtUp: () => network.get().caughtUp(),
              // After the own-log catch-up: a sync round with size − threshold + 1 other members, so
              // the replica holds every secret a quorum acknowledged (not merely the first pages).
              complete: () => !engine.ownWritesHeld(),
              settle: async () => (await network.get().syncAll()).filter((r) => memberIds.has(r.peer)).length >= membersToLearnOwnLog(descriptor, self!),
              signDigest: (digest) => '0x' + toHex(signDigest(digest, keys.signing)),
              clock,
              logger,
              signal,
            });
      parts.inventory = inventory;
      // Share recovery (docs/operations.md, "Lose a disk"): members help and recover; coordinators mark.
      const recovery =
        inventory === undefined
          ? undefined
          : createShareRecovery({
              inventory,
              ready: () => health.readiness().ready,
              state: engine,
              replicator: engine,
              membership,
              members,
              shares: store.shares,
              keyring,
              versionVector,
              catchUp,
              syncAll: () => network.get().syncAll(),
              clock,
              logger,
              timeoutMs: config.secrets.shardTimeoutMs,
              signal,
            });
      parts.recovery = recovery;
      // Every node watches the members' shares and the secrets at risk (docs/operations.md, "Data safety").
      const safety = createDataSafety({ membership, members, state: engine, replicator: engine, clock, logger, signal, onRound: (view) => {
        publishSafety(metrics, view);
        health.readiness();
      } });
      parts.safety = safety;
      const memberAdmin = createMemberAdmin({ state: engine, replicator: engine, membership, clock, logger, safety });
      const memberHandlers: Partial<Record<MemberService, MemberHandler>> | undefined =
        self!.slot === null
          ? undefined
          : {
              grant: (body, from) => sessions.handleGrant(body, from),
              // Each call is decoded once, here at the edge (src/core/secrets/shard-messages.ts).
              shard: (body, from) => {
                const request = parseShardRequest(body);
                switch (request.op) {
                  case 'recover':
                    return recovery!.handleRecover(request, from);
                  case 'inventory':
                    return recovery!.handleInventory();
                  case 'attestMissing':
                    return recovery!.handleAttestMissing(request, from);
                  default:
                    return secrets.handleShard(request, from);
                }
              },
            };
      // The config's `listen`, else the address the cluster file announces.
      const listenFromClusterFile = config.listen.length === 0;
      const listen = listenFromClusterFile ? self!.multiaddrs : config.listen;
      const cluster = await createCluster(
        {
          listen,
          reconnectIntervalMs: config.replication.reconnectIntervalMs,
          livenessIntervalMs: config.replication.livenessIntervalMs,
          livenessTimeoutMs: config.replication.livenessTimeoutMs,
          syncIntervalMs: config.replication.syncIntervalMs,
          syncBatchSize: config.replication.syncBatchSize,
        },
        {
          descriptor,
          self: self!,
          privateKey: keys.identity,
          blockedPeers,
          ...(deps.silencedPeers ? { silencedPeers: deps.silencedPeers } : {}),
          engine,
          createHandler: self!.slot === 0 ? creator.handle : undefined,
          memberHandlers,
          signal,
          logger,
          metrics,
        },
      );
      // The binding point (see `network` above).
      network.bind(cluster);
      parts.cluster = cluster;
      // No write before this node knows its own log (src/core/replication/own-log.ts): own writes are
      // held from here, before the cluster starts, until a sync round with enough members completed —
      // in the background, so `start()` does not wait for the other nodes. Then slot 0 raises its id
      // counter past the ids in its replica, and a restored node (src/backup) marks its restore caught up.
      const backup = await createNodeBackup({ store, engine, descriptor, self: self!, storageKey: keys.storage, membersNeeded: membersToLearnOwnLog(descriptor, self!), clock, logger });
      const raiseIds = async () => {
        const { before, highest } = await raiseSecretIdCounter({ state: engine, raiseTo: (counter, atLeast) => allocations((tx) => tx.raiseTo(counter, atLeast)) });
        if (before < highest) log.warn({ before, raisedTo: highest }, 'slot 0: the secret id counter was behind the ids in its replica (an empty or older data dir); raised');
      };
      const ownLog = createOwnLogCatchUp(
        {},
        { engine, descriptor, self: self!, cluster: network.get, beforeRelease: [...(self!.slot === 0 ? [raiseIds] : []), backup.restore.markCaughtUp], clock, logger, signal },
      );
      parts.ownLog = ownLog;
      await cluster.start().catch(async (err: unknown) => {
        throw await clusterStartFailure(err, { listen, fromClusterFile: listenFromClusterFile, nodeId: self!.id });
      });
      ownLog.start();
      // Key acks skipped while own writes were held, and any in flight at the last stop.
      ownLog.released.then(
        () => accounts.reconcileNodeRegistrations().catch((err: unknown) => log.warn({ err: (err as Error).message }, 'node registration reconcile failed')),
        () => undefined,
      );
      secrets.start();
      inventory?.start();
      recovery?.start();
      safety.start();
      // In the background: a chain that cannot be read must not hold the node's start.
      web3?.start().catch((err: unknown) => log.error({ err: (err as Error).message }, 'web3: could not start following the chains'));
      await files.start();
      usage.start();
      running = parts as Running;
      if (config.operator.enabled) {
        const app = createOperatorApp({ chains: config.chains, adminToken: config.admin.token }, { logger, clock, health, metrics, backup: backup.source, membership: createEpochApprover({}, { descriptor, self: self!, parseProposal: (value) => parseClusterProposal(value, 'the proposal'), versionVector: () => engine.versionVector(), signDigest: (digest) => '0x' + toHex(signDigest(digest, keys.signing)), clock }), ...(recovery ? { recovery: () => recovery.progress() } : {}) });
        const { host, port } = config.operator;
        parts.operator = await listenHttp(app, { host, port, requestTimeoutMs: OPERATOR_REQUEST_TIMEOUT_MS }, { logger }).catch((err: unknown) => {
          throw httpBindFailure(err, { key: 'operator.port', name: 'operator' }, { host, port, nodeId: self!.id });
        });
      }
      if (config.http.enabled) {
        // File jobs held by another coordinator are forwarded to it (docs/http.md, Files and jobs).
        const jobPeers = descriptor.nodes.filter((n) => isCoordinatorEntry(n) && n.id !== self!.id).map((n) => ({ name: n.id, httpUrl: n.httpUrl! }));
        const app = createHttpApp(
          {
            corsOrigins: config.http.corsOrigins,
            bodyLimitBytes: config.http.bodyLimitBytes,
            trustProxy: config.http.trustProxy,
            chains: config.chains,
            adminToken: config.admin.token,
            permitConfirmMode: config.permits.confirmMode,
            metricsPublic: config.http.metricsPublic,
            rateLimits: config.http.rateLimits,
          },
          { logger, metrics, clock, health, probe: createProbeService({ replicator: engine, state: engine, clock }), accounts, sessions, secrets, payloads, permits, files, usage, jobPeers: () => jobPeers, chainStatus: () => chains.status(), members: memberAdmin, ...(recovery ? { recovery: () => recovery.progress() } : {}) },
        );
        const { host, port } = config.http;
        parts.http = await listenHttp(app, { host, port, requestTimeoutMs: config.http.requestTimeoutMs }, { logger }).catch((err: unknown) => {
          throw httpBindFailure(err, { key: 'http.port', name: 'API' }, { host, port, nodeId: self!.id });
        });
      }
      log.info(
        { nodeId: self!.id, slot: self!.slot, peerId: self!.peerId, nodeAddress: self!.nodeAddress, http: parts.http?.url, operator: parts.operator?.url, listen: cluster.listenAddresses() },
        'node started',
      );
    } catch (err) {
      // Everything created so far, the loops already running and a bound operator port included.
      life.abort();
      running = undefined;
      await stopParts(parts).catch((stopErr: unknown) => log.warn({ err: stopErr }, 'stop after a failed start failed'));
      throw err;
    }
  }

  async function doStop(): Promise<void> {
    if (starting) await starting.catch(() => undefined);
    const r = running;
    if (!r) return;
    // First: no periodic run starts from here on; then every part, in order, waits for its own.
    lifetime?.abort();
    await stopParts(r);
    log.info('node stopped');
  }

  const node: QuorumNode = {
    config,
    nodeId: self.id,
    slot: self.slot,
    peerId: self.peerId,
    nodeAddress: self.nodeAddress,
    get httpUrl() {
      return running?.http?.url;
    },
    get operatorUrl() {
      return running?.operator?.url;
    },
    get replicator() {
      return need().engine;
    },
    get state() {
      return need().engine;
    },
    get membership() {
      return need().cluster.membership;
    },
    get creator() {
      return need().creator;
    },
    health,
    metrics,
    logger,
    versionVector: () => need().engine.versionVector(),
    countRecords: () => need().store.records.countLog(),
    async stateDigest() {
      const { engine } = need();
      const hash = createHash('sha256');
      for (const kind of [...recordKinds(descriptor, need().chains, false).names()].sort()) {
        for await (const r of engine.list(kind)) hash.update(`${r.kind}\n${r.key}\n${recordContentId(descriptor.clusterId, r)}\n`);
      }
      return hash.digest('hex');
    },
    pingPeer: (nodeId) => need().cluster.ping(nodeId),
    syncNow: async () => {
      await need().cluster.syncAll();
    },
    start() {
      if (stopping) return Promise.reject(new Error('node is stopped; create a new one to restart'));
      starting ??= doStart();
      return starting;
    },
    stop() {
      stopping ??= doStop();
      return stopping;
    },
  };
  return node;
}
