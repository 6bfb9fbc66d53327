/**
 * Web2 secrets (docs/http.md, Secrets and Public keys; docs/architecture.md, Keys and crypto). A secret is an
 * ML-KEM-768 key pair from a 64-byte seed. The creating coordinator splits the seed with Shamir's
 * scheme threshold-of-size, seals share i to member i's secp256k1 key and delivers it over `shard`;
 * the member stores it encrypted at rest, bound to (secretId, slot). Only the public key is
 * replicated. Members that missed their share are retried in the background from a durable list of
 * sealed shares (the `secret-failures` operator view) — the coordinator never keeps a share in clear.
 *
 * Shares come back only through {@link SecretsCapability.recoverSeed}: each member checks the client's
 * signed string, its freshness, the session and the owner/delegate right itself, then seals its share
 * to the requesting coordinator.
 *
 * This file composes the parts: reads.ts (lookups), dealing.ts (keys), create.ts (POST /web2/secret and
 * slot 0's create claims), delegate.ts (setDelegate), delivery.ts (missed shares), shard-handler.ts (a
 * member's store and release), decrypt-seed.ts (a coordinator's release for a decrypt); the plain
 * rules are in rules.ts and shard-messages.ts.
 */
import { AppError } from '../../errors/index.ts';
import type { Logger } from '../../log/index.ts';
import type { RandomSource } from '../../crypto/index.ts';
import { stopAll, type Startable } from '../lifecycle.ts';
import type { CreatorService } from '../replication/creator.ts';
import type { FreshReader } from '../replication/fresh-read.ts';
import type { ClusterNodeEntry, MemberRpc, MembershipView, Replicator, StateReader, VersionVector } from '../replication/ports.ts';
import type { VersionWriter } from '../replication/sequencer.ts';
import { parseChainId, WEB2_CHAIN_ID } from '../sessions/signed-data.ts';
import type { ResolvedSecret, SecretsService, SecretView } from './types.ts';
import type { SignedDataVerifier, SignedRequest } from '../sessions/types.ts';
import type { ChainHeads } from '../web3/ports.ts';
import type { NodeKeyring, PendingShareStore, ShareStore, UsedStringStore } from './ports.ts';
import type { SecretBody } from './records.ts';
import { createSecretCreation, type SecretCreationDeps } from './create.ts';
import { createKeyDealer, type DealCrypto } from './dealing.ts';
import { createDelegateSetter } from './delegate.ts';
import { createShareDelivery } from './delivery.ts';
import { createSeedRecovery } from './decrypt-seed.ts';
import { createSecretReads, type Web3Secrets } from './reads.ts';
import { assertUsable, listedFor, parseSecretId, secretView } from './rules.ts';
import { createShardHandler, type ShardHandlerDeps } from './shard-handler.ts';
import type { DecryptEnvelope, ShareReleaseRequest, ShareStoreManyRequest, ShareStoreRequest } from './shard-messages.ts';

// The rules other capabilities use (payloads, files, permits) and the types of this module's API.
export { assertDecryptRight, assertUsable, evidenceFor, parseSecretId, resolvedOf, shareLabel } from './rules.ts';
export { secretRecordOf } from './reads.ts';
export type { DecryptEnvelope } from './shard-messages.ts';

/** Options of {@link createSecretsService}. */
export interface SecretsOptions {
  /** Deadline of one member's share store or release, ms. */
  shardTimeoutMs: number;
  /** Interval of the background delivery of missing shares, ms. */
  retryIntervalMs: number;
  /** How often a member forgets the decrypt strings that can no longer be used (./used-strings.ts), ms. */
  usedStringPruneIntervalMs: number;
}

/** Dependencies of {@link createSecretsService}. */
export interface SecretsDeps {
  replicator: Replicator;
  state: StateReader;
  membership: MembershipView;
  members: MemberRpc;
  creator: Pick<CreatorService, 'allocate' | 'call' | 'register'>;
  /** Reads that catch up before answering "not found" (a client may ask right after another coordinator wrote). */
  fresh?: FreshReader;
  /** Slot 0's counters and claims (create strings → secretId), group-committed. */
  registry: SecretCreationDeps['registry'];
  /** Writes of sequenced kinds (the secret's versions), through slot 0. */
  versions: Pick<VersionWriter, 'update' | 'ensureDurable' | 'guard'>;
  /** Take records slot 0 sent into this replica. */
  ingest(records: unknown[]): Promise<unknown>;
  verifier: SignedDataVerifier;
  /** Decrypt strings this member has released its share for, each with the coordinator it went to. */
  usedStrings: UsedStringStore;
  /** Counts the share releases this member answered, by outcome (`quorumkeep_share_releases_total`). */
  releases?: ShardHandlerDeps['releases'];
  /** This node's version vector (sent with share requests for the catch-up gate). */
  versionVector(): VersionVector;
  /**
   * The catch-up gate (docs/security.md): resolves once this member holds everything the requester
   * did when it asked; rejects with NOT_READY when it cannot catch up in time.
   */
  catchUp(requester: VersionVector, from: ClusterNodeEntry): Promise<void>;
  /** This member's shares (members only). */
  shares: ShareStore;
  /** Shares this coordinator still has to deliver. */
  pending: PendingShareStore;
  keyring: NodeKeyring;
  random: RandomSource;
  /** Where a new key's crypto runs (the node's request crypto thread). @default inline */
  dealCrypto?: DealCrypto;
  clock: () => number;
  logger: Logger;
  /**
   * Web3 secrets (src/core/web3/service.ts), once built: their key and the chain's confirmed owner
   * and delegate. Undefined on a node without chains: Web3 strings then answer 400 as before.
   */
  web3?: () => Web3Secrets | undefined;
  /**
   * The enabled chains: which chain ids a Web3 public-key request may name, and the heads by which a
   * member forgets the Web3 decrypt strings it used (./used-strings.ts).
   */
  chains?: ChainHeads;
  /** The node's lifetime: ends the background loops (share delivery, used-string pruning) when aborted. @default only {@link SecretsCapability.stop} ends them */
  signal?: AbortSignal;
}

/** The secrets capability: the HTTP port, the member's `shard` handler, and seed recovery. */
export interface SecretsCapability extends SecretsService, Startable {
  /** A member's `shard` handler (`store`, `storeMany` and `release`), for a call decoded at the edge (`parseShardRequest`). */
  handleShard(request: ShareStoreRequest | ShareStoreManyRequest | ShareReleaseRequest, from: ClusterNodeEntry): Promise<unknown>;
  /** Current record of a secret, or undefined. */
  getSecret(secretId: number): Promise<SecretBody | undefined>;
  /** A secret a client names: 404 only when it does not exist, 503 when that cannot be told yet. */
  findSecret(secretId: number): Promise<SecretBody>;
  /**
   * A Web2 or Web3 secret a client names (chain `-1` is Web2), with who may decrypt it: for Web3 from
   * the chain's confirmed view. 404 unknown, 403 while a Web3 secret is syncing.
   */
  resolveSecret(chainId: number, secretId: number): Promise<ResolvedSecret>;
  /** Deal a key for a Web3 secret created on chain: shares to the members, then its `web3Secret` record. */
  dealWeb3Secret(chainId: number, secretId: number, createdBlock: number): Promise<void>;
  /**
   * Gather ≥ threshold shares for a verified caller's decrypt and rebuild the seed; the caller zeroes
   * it and checks it against the public key. 503 when fewer than threshold members release their share.
   */
  recoverSeed(secret: ResolvedSecret, request: SignedRequest, envelope: DecryptEnvelope): Promise<Uint8Array>;
  /** Start the background loops: delivery of missing shares, and (members) pruning of used decrypt strings. */
  start(): void;
  /** Stop them and wait for a running round; idempotent. */
  stop(): Promise<void>;
}

/** Create the secrets service. */
export function createSecretsService(options: SecretsOptions, deps: SecretsDeps): SecretsCapability {
  const { state, membership, clock } = deps;
  const log = deps.logger.child({ module: 'secrets' });
  const common = { membership, clock, logger: log };
  const signal = deps.signal ?? new AbortController().signal;

  const reads = createSecretReads({ state, fresh: deps.fresh, web3: deps.web3 });
  const delivery = createShareDelivery(options, { ...common, members: deps.members, pending: deps.pending, signal });
  const dealer = createKeyDealer({ ...common, versions: deps.versions, delivery, random: deps.random, ...(deps.dealCrypto ? { crypto: deps.dealCrypto } : {}) });
  // Slot 0's operations are registered in this order: claimSecretCreate, releaseSecretCreate.
  const creation = createSecretCreation({
    ...common,
    creator: deps.creator,
    versions: deps.versions,
    state,
    ingest: deps.ingest,
    registry: deps.registry,
    verifier: deps.verifier,
    dealer,
    pending: deps.pending,
  });
  const delegation = createDelegateSetter({ verifier: deps.verifier, findSecret: reads.findSecret, state, versions: deps.versions, clock, logger: log });
  const shard = createShardHandler(
    { usedStringPruneIntervalMs: options.usedStringPruneIntervalMs },
    { ...common, state, reads, verifier: deps.verifier, catchUp: deps.catchUp, shares: deps.shares, usedStrings: deps.usedStrings, ...(deps.releases ? { releases: deps.releases } : {}), chains: deps.chains, keyring: deps.keyring, signal },
  );
  const recoverSeed = createSeedRecovery(options, { membership, members: deps.members, keyring: deps.keyring, versionVector: deps.versionVector, logger: log });

  const service: SecretsCapability = {
    getSecret: reads.getSecret,
    findSecret: reads.findSecret,
    resolveSecret: reads.resolveSecret,
    dealWeb3Secret: dealer.dealWeb3Secret,
    createSecret: creation.createSecret,
    setDelegate: delegation.setDelegate,
    listFailures: delivery.listFailures,
    retryFailure: delivery.retryFailure,
    handleShard: shard.handleShard,
    recoverSeed,

    async listSecrets(request) {
      const caller = await deps.verifier.verify(request, { parts: 4 });
      if (caller.subject !== caller.principalId) throw new AppError('FORBIDDEN', 'The principal in data does not match the session');
      const out: SecretView[] = [];
      for await (const r of reads.secrets.list()) if (listedFor(r.body, caller.principalId)) out.push(secretView(r.body));
      return out;
    },

    async publicKey(chainIdRaw, secretIdRaw) {
      const chainId = parseChainId(chainIdRaw, reads.web3Enabled() ? deps.chains : undefined);
      const secretId = parseSecretId(secretIdRaw);
      if (chainId === WEB2_CHAIN_ID) return { chainId, secretId, publicKey: (await reads.findSecret(secretId)).publicKeyCid };
      // Web3: a synced secret of type 1 (docs/web3.md, "Serving a secret"): the confirmed view, or the latest block before a refusal.
      const secret = await reads.requireWeb3().resolve(chainId, secretId);
      assertUsable(secret);
      return { chainId, secretId, publicKey: secret.publicKeyCid };
    },

    async publicKeySigned(request, chainIdRaw, secretIdRaw) {
      const keyView = await service.publicKey(chainIdRaw, secretIdRaw);
      const caller = await deps.verifier.verify(request, { parts: 4, web3: reads.web3Enabled() });
      if (caller.subject !== String(keyView.secretId) || caller.chainId !== keyView.chainId) throw new AppError('BAD_REQUEST', 'chainId and secretId must match the signed data');
      return keyView;
    },

    start() {
      shard.start();
      delivery.start();
    },
    stop() {
      return stopAll([shard, delivery]);
    },
  };
  return service;
}
