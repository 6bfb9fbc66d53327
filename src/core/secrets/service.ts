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
 */
import { randomUUID } from 'node:crypto';
import { AppError, QuorumError, type MemberFailure } from '../../errors/index.ts';
import type { Logger } from '../../log/index.ts';
import type { ClusterNodeEntry, MemberRpc, MembershipView, Replicator, StateReader, VersionVector } from '../replication/ports.ts';
import { isCoordinatorEntry, membersOf, parseVersionVector } from '../replication/ports.ts';
import type { CreatorService } from '../replication/creator.ts';
import type { FreshReader } from '../replication/fresh-read.ts';
import { serialQueue } from '../serial-queue.ts';
import { signedStringKey, type SignedEvidence } from '../sessions/evidence.ts';
import { WEB2_FRESHNESS_MS } from '../sessions/signed-data.ts';
import { decodeBinary } from '../payloads/binary.ts';
import type { BinaryFormat } from '../payloads/types.ts';
import { gatherFromMembers, memberFailures, reachableMemberSlots } from '../replication/gather.ts';
import { PRINCIPAL_ID_RE, type PrincipalBody } from '../accounts/records.ts';
import type { SignedDataVerifier, SignedRequest, VerifiedCaller } from '../sessions/types.ts';
import { parseChainId, WEB2_CHAIN_ID } from '../sessions/signed-data.ts';
import {
  CIFER_BYTES,
  combineShares,
  fromBase64,
  fromHex,
  mlkemPublicKeyFromSeed,
  sealTo,
  splitSecretForSlots,
  shareXOfSlot,
  toBase64,
  zeroize,
  constantTimeEqual,
  toHex,
  type RandomSource,
} from '../../crypto/index.ts';
import { RECENT_USE_KEEP_MS, SECRET_TYPE_MLKEM768, secretKey, shareAtRestAad, shareDigest, shareReleaseAad, shareStoreAad, type SecretBody } from './records.ts';
import type { NodeKeyring, PendingShares, PendingShareStore, ShareStore, UsedStringStore } from './ports.ts';
import type { CreatedSecret, PublicKeyView, ResolvedSecret, RetryOutcome, SecretFailure, SecretsService, SecretView } from './types.ts';
import { web3SecretKey, web3SecretLabel, type Web3SecretBody } from '../web3/records.ts';
import type { Web3Service } from '../web3/service.ts';
import type { ChainHeads } from '../web3/ports.ts';

/** Bytes of an ML-KEM-768 seed (d ‖ z). */
const SEED_BYTES = 64;
/** A positive integer id as a path part or query value (a secretId, a chainId). */
const POSITIVE_ID_RE = /^[1-9]\d{0,15}$/;
/**
 * How long slot 0 reserves a create string's secretId for the coordinator creating it, ms: a retry of
 * the same string through another coordinator meanwhile gets 503, never a second key for one id.
 */
const CREATE_LEASE_MS = 15_000;
/** How often a member forgets decrypt strings too old to be used again, ms. */
const USED_STRING_PRUNE_INTERVAL_MS = 10 * 60_000;

/** Options of {@link createSecretsService}. */
export interface SecretsOptions {
  /** Deadline of one member's share store or release, ms. */
  shardTimeoutMs: number;
  /** Interval of the background delivery of missing shares, ms. */
  retryIntervalMs: number;
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
  /** Slot 0's durable claims (create strings → secretId, used setDelegate strings). */
  claims: { get(name: string): Promise<string | undefined>; put(name: string, value: string): Promise<void> };
  /** Slot 0: the next value of a counter and a claim naming it, in one durable write. */
  allocateWithClaim(counter: string, claim: string, value: (allocated: number) => string): Promise<number>;
  verifier: SignedDataVerifier;
  /** Decrypt strings this member has released its share for. */
  usedStrings: UsedStringStore;
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
  clock: () => number;
  logger: Logger;
  /**
   * Web3 secrets (src/core/web3/service.ts), once built: their key and the chain's confirmed owner
   * and delegate. Undefined on a node without chains: Web3 strings then answer 400 as before.
   */
  web3?: () => Pick<Web3Service, 'resolve' | 'resolveOwn'> | undefined;
  /** The enabled chains (which chain ids a Web3 public-key request may name). */
  chains?: ChainHeads;
}

/** The secrets capability: the HTTP port, the member's `shard` handler, and seed recovery. */
/**
 * What a share release is for, as members check it (docs/security.md, Share release): a payload
 * decrypt names its envelope (5-part string ending in the encrypted message); a file decrypt is a
 * 4-part string (`/decrypt-file`, `/decrypt-existing-file`), released once per string per member.
 */
export type DecryptEnvelope = { cifer: string; inputFormat: BinaryFormat } | { file: true };

export interface SecretsCapability extends SecretsService {
  /** A member's `shard` handler (`store` and `release`). */
  handleShard(body: unknown, from: ClusterNodeEntry): Promise<unknown>;
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
  /** Start the background delivery loop. */
  start(): void;
  /** Stop it and wait for a running round. */
  stop(): Promise<void>;
}

/** Parse a positive integer secret id; 400 otherwise. */
export function parseSecretId(raw: string): number {
  if (!POSITIVE_ID_RE.test(raw) || !Number.isSafeInteger(Number(raw))) throw new AppError('BAD_REQUEST', `Invalid secretId "${raw.slice(0, 24)}": expected a positive integer`);
  return Number(raw);
}

/** The evidence a record carries for a verified caller's signed request (docs/security.md). */
export function evidenceFor(caller: VerifiedCaller, request: SignedRequest): SignedEvidence {
  const sig = request.signature.toLowerCase();
  // Web2 routes only (their shapes do not accept Web3): a Web3 caller has no session to carry.
  if (!caller.sessionRecord) throw new AppError('BAD_REQUEST', `Chain ${caller.chainId} is not supported`);
  return { data: request.data, signature: sig.startsWith('0x') ? sig : `0x${sig}`, session: caller.sessionRecord };
}

/** A Web2 secret record as the payload and file routes see it. */
export function resolvedOf(b: SecretBody): ResolvedSecret {
  return { chainId: WEB2_CHAIN_ID, secretId: b.secretId, publicKeyCid: b.publicKeyCid, owner: b.ownerPrincipalId, delegate: b.delegatePrincipalId, isSyncing: b.isSyncing, secretType: b.secretType };
}

/**
 * How a secret is named in share stores and associated data: its id for Web2 (so Web2 labels are
 * unchanged), `<chainId>:<id>` for Web3 — the two namespaces never meet.
 */
export function shareLabel(chainId: number, secretId: number): number | string {
  return chainId === WEB2_CHAIN_ID ? secretId : web3SecretLabel(chainId, secretId);
}

/** The record of a Web2 (`secret`) or Web3 (`web3Secret`) secret in `state`, or undefined. */
export async function secretRecordOf(state: StateReader, chainId: number, secretId: number): Promise<SecretBody | Web3SecretBody | undefined> {
  const r = chainId === WEB2_CHAIN_ID ? await state.get('secret', secretKey(secretId)) : await state.get('web3Secret', web3SecretKey(chainId, secretId));
  return r?.body as SecretBody | Web3SecretBody | undefined;
}

/** 403 unless `principalId` may decrypt with the secret (the owner, or a delegate that is set). */
export function assertDecryptRight(secret: Pick<ResolvedSecret, 'owner' | 'delegate' | 'isSyncing' | 'secretType'>, principalId: string): void {
  if (secret.owner !== principalId && (secret.delegate === null || secret.delegate !== principalId)) throw new AppError('FORBIDDEN', 'Only the owner or the delegate may decrypt with this secret');
  assertUsable(secret);
}

/** 403 while syncing or for a type this service cannot use. */
export function assertUsable(secret: Pick<ResolvedSecret, 'isSyncing' | 'secretType'>): void {
  if (secret.isSyncing) throw new AppError('FORBIDDEN', 'Secret is syncing; try again shortly');
  if (secret.secretType !== SECRET_TYPE_MLKEM768) throw new AppError('FORBIDDEN', `Secret type ${secret.secretType} is not supported`);
}

function view(b: SecretBody): SecretView {
  return {
    secretId: b.secretId,
    ownerPrincipalId: b.ownerPrincipalId,
    delegatePrincipalId: b.delegatePrincipalId,
    isSyncing: b.isSyncing,
    clusterId: b.clusterId,
    secretType: b.secretType,
    publicKeyCid: b.publicKeyCid,
    createdAt: new Date(b.createdAt).toISOString(),
    updatedAt: new Date(b.updatedAt).toISOString(),
  };
}

function failureView(p: PendingShares, addressOf: (slot: number) => string): SecretFailure {
  const slots = Object.keys(p.missing).map(Number);
  const out: SecretFailure = {
    secretId: p.secretId,
    ...(p.chainId === undefined ? {} : { chainId: p.chainId }),
    stage: 'share-delivery',
    failedNodeAddresses: slots.map(addressOf),
    nodeErrors: Object.fromEntries(slots.map((s) => [addressOf(s), p.missing[String(s)]!.error])),
    retryCount: p.retryCount,
    createdAt: new Date(p.createdAt).toISOString(),
  };
  if (p.lastAttemptAt !== undefined) out.lastAttemptAt = new Date(p.lastAttemptAt).toISOString();
  return out;
}

const errorText = (err: unknown) => (err instanceof Error ? err.message : String(err)).slice(0, 200);

/** Create the secrets service. */
export function createSecretsService(options: SecretsOptions, deps: SecretsDeps): SecretsCapability {
  const { state, membership, keyring, clock } = deps;
  const { descriptor, self } = membership;
  const clusterId = descriptor.clusterId;
  const memberList = membersOf(descriptor);
  const addressOf = (slot: number) => memberList[slot]!.nodeAddress;
  const log = deps.logger.child({ module: 'secrets' });

  async function getSecret(secretId: number): Promise<SecretBody | undefined> {
    return (await state.get('secret', secretKey(secretId)))?.body as SecretBody | undefined;
  }

  /** A member's own lookup: its replica (the catch-up gate ran first). */
  async function requireSecret(secretId: number): Promise<SecretBody> {
    const s = await getSecret(secretId);
    if (!s) throw new AppError('NOT_FOUND', `Secret ${secretId} not found`);
    return s;
  }

  /** A client's lookup: beyond this replica before a 404 (fresh-read.ts). */
  async function findSecret(secretId: number): Promise<SecretBody> {
    const s = deps.fresh ? ((await deps.fresh.get('secret', secretKey(secretId)))?.body as SecretBody | undefined) : await getSecret(secretId);
    if (!s) throw new AppError('NOT_FOUND', `Secret ${secretId} not found`);
    return s;
  }

  async function web2Caller(request: SignedRequest, parts: 4 | 5): Promise<VerifiedCaller> {
    return deps.verifier.verify(request, { parts });
  }

  /** Whether Web3 strings are accepted here (a node with chains). */
  const web3Enabled = () => deps.web3?.() !== undefined;
  function requireWeb3(): Pick<Web3Service, 'resolve' | 'resolveOwn'> {
    const web3 = deps.web3?.();
    if (!web3) throw new AppError('BAD_REQUEST', 'Web3 secrets are not served by this node');
    return web3;
  }

  async function resolveSecret(chainId: number, secretId: number): Promise<ResolvedSecret> {
    return chainId === WEB2_CHAIN_ID ? resolvedOf(await findSecret(secretId)) : requireWeb3().resolve(chainId, secretId);
  }

  /** Deliver sealed shares to members; returns the slots that stored theirs and the errors of the rest. */
  async function deliver(chainId: number, secretId: number, boxes: Map<number, Uint8Array>): Promise<{ stored: number[]; errors: Map<number, string> }> {
    const stored: number[] = [];
    const errors = new Map<number, string>();
    await Promise.all(
      [...boxes].map(async ([slot, box]) => {
        if (!membership.isReachable(slot)) {
          errors.set(slot, 'unreachable');
          return;
        }
        try {
          const body = chainId === WEB2_CHAIN_ID ? { op: 'store', secretId, box: toBase64(box) } : { op: 'store', chainId, secretId, box: toBase64(box) };
          await deps.members.call(slot, 'shard', body, { signal: AbortSignal.timeout(options.shardTimeoutMs) });
          stored.push(slot);
        } catch (err) {
          errors.set(slot, errorText(err));
        }
      }),
    );
    return { stored, errors };
  }

  /** One delivery attempt for a pending entry; deletes it once every member has its share. */
  async function retryPending(p: PendingShares): Promise<PendingShares> {
    const boxes = new Map(Object.entries(p.missing).map(([slot, m]) => [Number(slot), fromBase64(m.box)]));
    const chainId = p.chainId ?? WEB2_CHAIN_ID;
    const { stored, errors } = await deliver(chainId, p.secretId, boxes);
    const next: PendingShares = { ...p, retryCount: p.retryCount + 1, lastAttemptAt: clock(), missing: {} };
    for (const [slot, error] of errors) next.missing[String(slot)] = { box: p.missing[String(slot)]!.box, error };
    if (Object.keys(next.missing).length === 0) {
      await deps.pending.delete(p.secretId, p.chainId);
      log.info({ chainId, secretId: p.secretId, delivered: stored.length, retryCount: next.retryCount }, 'secret shares complete');
    } else {
      await deps.pending.put(next);
    }
    return next;
  }

  // Background delivery: one round at a time; a manual retry of one secret waits for nothing.
  let timer: NodeJS.Timeout | undefined;
  let pruneTimer: NodeJS.Timeout | undefined;
  let round: Promise<void> | undefined;
  const inFlight = new Map<number | string, Promise<PendingShares>>();
  const retryOnce = (p: PendingShares): Promise<PendingShares> => {
    const label = shareLabel(p.chainId ?? WEB2_CHAIN_ID, p.secretId);
    let run = inFlight.get(label);
    if (!run) {
      run = retryPending(p).finally(() => inFlight.delete(label));
      inFlight.set(label, run);
    }
    return run;
  };
  async function backgroundRound(): Promise<void> {
    for await (const p of deps.pending.list()) {
      if (Object.keys(p.missing).some((slot) => membership.isReachable(Number(slot)))) {
        await retryOnce(p).catch((err: unknown) => log.warn({ secretId: p.secretId, err: errorText(err) }, 'share delivery retry failed'));
      }
    }
  }

  /** What a member checks before storing a share. */
  async function handleStore(b: Record<string, unknown>): Promise<unknown> {
    const secretId = Number(b.secretId);
    const chainId = b.chainId === undefined ? WEB2_CHAIN_ID : Number(b.chainId);
    if (!Number.isSafeInteger(secretId) || secretId <= 0 || typeof b.box !== 'string' || !(chainId === WEB2_CHAIN_ID || (Number.isSafeInteger(chainId) && chainId > 0))) {
      throw new AppError('BAD_REQUEST', 'malformed share store');
    }
    const label = shareLabel(chainId, secretId);
    const share = keyring.openSealed(fromBase64(b.box), shareStoreAad(clusterId, label, self.slot!));
    if (!share) throw new AppError('FORBIDDEN', 'share does not open for this member');
    try {
      // Every share sits at its slot's coordinate: two members at one x would hold one share between them.
      if (share[share.length - 1] !== shareXOfSlot(self.slot!)) throw new AppError('FORBIDDEN', "share is not at this member's x-coordinate");
      const existing = await deps.shares.get(label);
      if (existing) {
        const have = keyring.decryptAtRest(existing, shareAtRestAad(clusterId, label, self.slot!));
        const same = !!have && constantTimeEqual(have, share);
        zeroize(have);
        // A retried create (same string, same id, new key) replaces shares of a secret that never
        // got its record; once the record exists its shares never change.
        if (!same && (await secretRecordOf(state, chainId, secretId))) throw new AppError('CONFLICT', 'a different share is already stored for this secret');
        if (same) return { stored: true };
      }
      await deps.shares.put(label, keyring.encryptAtRest(share, shareAtRestAad(clusterId, label, self.slot!)));
      return { stored: true };
    } finally {
      zeroize(share);
    }
  }

  /** What a member checks before releasing a share: everything, itself. */
  async function handleRelease(b: Record<string, unknown>, from: ClusterNodeEntry): Promise<unknown> {
    // Shares go to coordinators only: a member that is not one has no client request to serve.
    if (!isCoordinatorEntry(from)) throw new AppError('FORBIDDEN', 'shares are released to coordinators only');
    const secretId = Number(b.secretId);
    const forFile = b.purpose === 'file';
    if (
      !Number.isSafeInteger(secretId) ||
      secretId <= 0 ||
      typeof b.data !== 'string' ||
      typeof b.signature !== 'string' ||
      (!forFile && (typeof b.cifer !== 'string' || (b.inputFormat !== 'hex' && b.inputFormat !== 'base64')))
    ) {
      throw new AppError('BAD_REQUEST', 'malformed share release');
    }
    let useKey: string;
    let caller: VerifiedCaller;
    if (forFile) {
      // A file decrypt: the client's 4-part string, which the deployed client also signs for
      // /encrypt-file (docs/security.md, Known limits). Released once per string, like a payload's.
      caller = await deps.verifier.verify({ data: b.data, signature: b.signature }, { parts: 4, web3: web3Enabled() });
      useKey = signedStringKey('decrypt-file', caller.parts.slice(0, 4));
    } else {
      caller = await deps.verifier.verify({ data: b.data, signature: b.signature }, { parts: 5, web3: web3Enabled() });
      // Only a decrypt: the string's last part is the encrypted message in the request's format, and the
      // request names a well-formed envelope for it.
      const inputFormat = b.inputFormat as BinaryFormat;
      const message = decodeBinary(caller.extra[0] ?? '', inputFormat, 'encryptedMessage');
      if (decodeBinary(b.cifer as string, inputFormat, 'cifer').length !== CIFER_BYTES) throw new AppError('BAD_REQUEST', 'not a decrypt request: cifer is malformed');
      // At most once per signed string per member, whatever the spelling of its hex or address.
      useKey = signedStringKey('decrypt', [...caller.parts.slice(0, 4), toHex(message)]);
    }
    if (caller.subject !== String(secretId)) throw new AppError('FORBIDDEN', 'signed data names another secret');
    await deps.catchUp(parseVersionVector(b.vv), from);
    const web2 = caller.chainId === WEB2_CHAIN_ID;
    // Web3: the owner and delegate this member reads from the chain itself, never the coordinator's word.
    const secret = web2 ? resolvedOf(await requireSecret(secretId)) : await requireWeb3().resolveOwn(caller.chainId, secretId);
    assertDecryptRight(secret, caller.principalId);
    // Forgotten once the string can no longer pass the freshness check: a Web2 timestamp's window
    // twice over; a Web3 block's window is the same 10 minutes of blocks, counted from now.
    const forgetAt = (web2 ? caller.fresh : clock()) + 2 * WEB2_FRESHNESS_MS;
    if (!(await deps.usedStrings.use(useKey, forgetAt))) throw new AppError('FORBIDDEN', 'this signed string was already used for a decrypt');
    const label = shareLabel(caller.chainId, secretId);
    const box = await deps.shares.get(label);
    if (!box) throw new AppError('NOT_FOUND', 'this member holds no share of the secret');
    const share = keyring.decryptAtRest(box, shareAtRestAad(clusterId, label, self.slot!));
    if (!share) throw new AppError('CONFLICT', 'stored share does not open');
    // To ourselves (in-process, never on a wire) the share is handed over as is; the caller zeroes it.
    if (from.nodeAddress === self.nodeAddress) return { slot: self.slot, share };
    try {
      const sealed = sealTo(fromHex(from.signingPublicKey), share, shareReleaseAad(clusterId, label, self.slot!, from.nodeAddress));
      return { slot: self.slot, box: toBase64(sealed) };
    } finally {
      zeroize(share);
    }
  }

  /** The original answer to a create string that already made its secret. */
  async function existingCreate(secretId: number): Promise<CreatedSecret> {
    const secret = await getSecret(secretId);
    // Slot 0 holds the record; this replica will in a moment.
    if (!secret) throw new AppError('NOT_READY', `Secret ${secretId} was created and is not on this coordinator yet; try again`);
    const status = (await deps.pending.get(secretId)) ? 'propagating' : 'complete';
    return { secretId, clusterId, publicKeyCid: secret.publicKeyCid, status };
  }

  // Slot 0: create string → secretId, leased to the attempt creating it; claims and releases of
  // leases run one at a time.
  const serialised = serialQueue();
  deps.creator.register('claimSecretCreate', (params) =>
    serialised(async () => {
      const { useKey, coordinator, attempt } = params;
      if (typeof useKey !== 'string' || !/^[0-9a-f]{64}$/.test(useKey) || typeof coordinator !== 'string' || typeof attempt !== 'string' || attempt.length > 64) {
        throw new AppError('BAD_REQUEST', 'malformed create claim');
      }
      const name = `secret-create:${useKey}`;
      const now = clock();
      const raw = await deps.claims.get(name);
      if (raw) {
        const c = JSON.parse(raw) as { secretId: number; attempt?: string; until: number };
        if (await getSecret(c.secretId)) return { secretId: c.secretId, done: true };
        // One attempt at a time deals this id's key: another while the lease runs would mix shares.
        if (c.attempt !== attempt && c.until > now) throw new AppError('NOT_READY', 'This secret is being created; try again shortly', { retryAfterSeconds: 1 });
        await deps.claims.put(name, JSON.stringify({ secretId: c.secretId, coordinator, attempt, until: now + CREATE_LEASE_MS }));
        return { secretId: c.secretId, done: false };
      }
      const secretId = await deps.allocateWithClaim('secretId', name, (id) => JSON.stringify({ secretId: id, coordinator, attempt, until: now + CREATE_LEASE_MS }));
      return { secretId, done: false };
    }),
  );

  // Slot 0: a failed attempt gives its lease back.
  deps.creator.register('releaseSecretCreate', (params) =>
    serialised(async () => {
      const { useKey, attempt } = params;
      if (typeof useKey !== 'string' || !/^[0-9a-f]{64}$/.test(useKey) || typeof attempt !== 'string') throw new AppError('BAD_REQUEST', 'malformed create release');
      const name = `secret-create:${useKey}`;
      const raw = await deps.claims.get(name);
      if (!raw) return { released: false };
      const c = JSON.parse(raw) as { secretId: number; coordinator: string; attempt?: string; until: number };
      if (c.attempt !== attempt) return { released: false };
      await deps.claims.put(name, JSON.stringify({ ...c, until: 0 }));
      return { released: true };
    }),
  );

  // Slot 0: signed strings that changed something (setDelegate), for exact-replay answers.
  deps.creator.register('signedUse', async (params) => {
    const { useKey, mark } = params;
    if (typeof useKey !== 'string' || !/^[0-9a-f]{64}$/.test(useKey) || typeof mark !== 'boolean') throw new AppError('BAD_REQUEST', 'malformed signed-use claim');
    const name = `signed-use:${useKey}`;
    if (mark) await deps.claims.put(name, '1');
    return { used: !mark && (await deps.claims.get(name)) !== undefined };
  });

  /** Creates in flight on this coordinator, by create string. */
  const creating = new Map<string, Promise<CreatedSecret>>();

  /** One create attempt: slot 0 maps the string to an id (leased to this attempt), then the key is dealt. */
  async function createWithClaim(caller: VerifiedCaller, request: SignedRequest, useKey: string): Promise<CreatedSecret> {
    const attempt = randomUUID();
    const claim = (await deps.creator.call('claimSecretCreate', { useKey, coordinator: self.id, attempt })) as { secretId: number; done: boolean };
    if (claim.done) return existingCreate(claim.secretId);
    try {
      return await dealSecret(caller, request, claim.secretId);
    } catch (err) {
      // Give the id back to the next attempt now rather than at the lease's end (best effort).
      deps.creator.call('releaseSecretCreate', { useKey, attempt }).catch(() => undefined);
      throw err;
    }
  }

  /**
   * Deal a new key: a fresh seed split threshold-of-size, share i sealed to member i and delivered.
   * Throws QuorumError below threshold. The members that missed theirs are left in `errors` (their
   * sealed boxes in `boxes`) for the durable retry list.
   */
  async function dealKey(
    chainId: number,
    secretId: number,
  ): Promise<{ publicKey: Uint8Array; shareDigests: string[]; boxes: Map<number, Uint8Array>; stored: number[]; errors: Map<number, string> }> {
    const label = shareLabel(chainId, secretId);
    const seed = deps.random(SEED_BYTES);
    let publicKey: Uint8Array;
    const shareDigests: string[] = [];
    const boxes = new Map<number, Uint8Array>();
    try {
      publicKey = mlkemPublicKeyFromSeed(seed);
      // At x = slot + 1: a member that loses its share can get it back (recovery.ts).
      const shares = splitSecretForSlots(seed, memberList.map((m) => m.slot), descriptor.threshold);
      try {
        for (const m of memberList) {
          boxes.set(m.slot, sealTo(fromHex(m.signingPublicKey), shares[m.slot]!, shareStoreAad(clusterId, label, m.slot)));
          shareDigests[m.slot] = shareDigest(clusterId, label, m.slot, shares[m.slot]!);
        }
      } finally {
        zeroize(...shares);
      }
    } finally {
      zeroize(seed);
    }
    const { stored, errors } = await deliver(chainId, secretId, boxes);
    if (stored.length < descriptor.threshold) {
      const failed: MemberFailure[] = [...errors].map(([slot, error]) => ({ slot, nodeAddress: addressOf(slot), error }));
      log.warn({ chainId, secretId, stored: stored.length, failed }, 'secret shares below threshold; secret abandoned');
      throw new QuorumError(`Only ${stored.length} members stored their share; ${descriptor.threshold} are needed`, stored.map(addressOf), failed);
    }
    return { publicKey, shareDigests, boxes, stored, errors };
  }

  /** Before the record: a crash in between leaves a retry for a secret nobody knows, never a secret with shares nobody retries. */
  async function keepUndelivered(chainId: number, secretId: number, boxes: Map<number, Uint8Array>, errors: Map<number, string>, now: number): Promise<void> {
    if (errors.size === 0) return;
    const missing: PendingShares['missing'] = {};
    for (const [slot, error] of errors) missing[String(slot)] = { box: toBase64(boxes.get(slot)!), error };
    await deps.pending.put({ secretId, ...(chainId === WEB2_CHAIN_ID ? {} : { chainId }), createdAt: now, retryCount: 0, missing });
  }

  /** Deal a new key for `secretId`: shares to the members, then the record. */
  async function dealSecret(caller: VerifiedCaller, request: SignedRequest, secretId: number): Promise<CreatedSecret> {
    const { publicKey, shareDigests, boxes, stored, errors } = await dealKey(WEB2_CHAIN_ID, secretId);
    const now = clock();
    const body: SecretBody = {
      secretId,
      ownerPrincipalId: caller.principalId,
      delegatePrincipalId: null,
      clusterId,
      secretType: SECRET_TYPE_MLKEM768,
      publicKeyCid: toBase64(publicKey),
      isSyncing: false,
      createdAt: now,
      updatedAt: now,
      shareDigests,
      auth: { by: 'create', evidence: evidenceFor(caller, request) },
    };
    await keepUndelivered(WEB2_CHAIN_ID, secretId, boxes, errors, now);
    await deps.replicator.replicate({ kind: 'secret', key: secretKey(secretId), body });
    const status = errors.size === 0 ? 'complete' : 'propagating';
    log.info({ secretId, status, stored: stored.length }, 'secret created');
    return { secretId, clusterId, publicKeyCid: body.publicKeyCid, status };
  }

  /** Web3 deals for one secret on this node share one attempt. */
  const dealingWeb3 = new Map<string, Promise<void>>();

  const service: SecretsCapability = {
    getSecret,
    findSecret,
    resolveSecret,

    dealWeb3Secret(chainId, secretId, createdBlock) {
      const key = web3SecretKey(chainId, secretId);
      let run = dealingWeb3.get(key);
      if (!run) {
        run = (async () => {
          reachableMemberSlots(membership);
          const { publicKey, shareDigests, boxes, stored, errors } = await dealKey(chainId, secretId);
          const now = clock();
          const body: Web3SecretBody = { chainId, secretId, clusterId, secretType: SECRET_TYPE_MLKEM768, publicKeyCid: toBase64(publicKey), createdBlock, createdAt: now, shareDigests };
          await keepUndelivered(chainId, secretId, boxes, errors, now);
          await deps.replicator.replicate({ kind: 'web3Secret', key, body });
          log.info({ chainId, secretId, status: errors.size === 0 ? 'complete' : 'propagating', stored: stored.length }, 'web3 secret keyed');
        })().finally(() => dealingWeb3.delete(key));
        dealingWeb3.set(key, run);
      }
      return run;
    },

    async createSecret(request): Promise<CreatedSecret> {
      const caller = await web2Caller(request, 4);
      if (caller.subject !== '0') throw new AppError('BAD_REQUEST', 'Invalid data format: the second part must be 0 when creating a secret');
      reachableMemberSlots(membership);
      // The signed string is the request's idempotency key: slot 0 maps it to one secretId, so a
      // retry after a lost answer gets the same secret back, never a second one.
      const useKey = signedStringKey('createSecret', caller.parts);
      // Identical requests on this coordinator share one attempt.
      let run = creating.get(useKey);
      if (!run) {
        run = createWithClaim(caller, request, useKey).finally(() => creating.delete(useKey));
        creating.set(useKey, run);
      }
      return run;
    },

    async listSecrets(request) {
      const caller = await web2Caller(request, 4);
      if (caller.subject !== caller.principalId) throw new AppError('FORBIDDEN', 'The principal in data does not match the session');
      const out: SecretView[] = [];
      for await (const r of state.list('secret')) {
        const b = r.body as SecretBody;
        if (b.ownerPrincipalId === caller.principalId || b.delegatePrincipalId === caller.principalId) out.push(view(b));
      }
      return out;
    },

    async setDelegate(request) {
      const caller = await web2Caller(request, 5);
      const secretId = parseSecretId(caller.subject);
      const delegate = caller.extra[0] ?? '';
      if (delegate !== '' && !PRINCIPAL_ID_RE.test(delegate)) throw new AppError('BAD_REQUEST', 'Invalid delegatePrincipalId: expected a principal id or nothing');
      const secret = await findSecret(secretId);
      if (secret.ownerPrincipalId !== caller.principalId) throw new AppError('FORBIDDEN', 'Only the owner may set the delegate');
      if (delegate === secret.ownerPrincipalId) throw new AppError('FORBIDDEN', 'The owner cannot be the delegate');
      if (delegate !== '') {
        const p = (await state.get('principal', delegate))?.body as PrincipalBody | undefined;
        // Only a verified account can be named: an unverified registration proves no mailbox.
        if (!p || p.status !== 'active' || !p.emailVerified) throw new AppError('NOT_FOUND', 'Delegate principal not found');
      }
      // One string, one change: an exact replay answers the original result and writes nothing. The
      // version it made lists it (members refuse a second use); slot 0's registry also catches a
      // replay on a coordinator whose replica has not seen that version yet.
      const useKey = signedStringKey('setDelegate', caller.parts);
      if (secret.recentUses?.some((u) => u.key === useKey)) return { secretId };
      const seen = (await deps.creator.call('signedUse', { useKey, mark: false }).catch((err: unknown) => {
        if (err instanceof AppError && err.code === 'SLOT0_UNAVAILABLE') return { used: false };
        throw err;
      })) as { used: boolean };
      if (seen.used) return { secretId };
      const now = clock();
      const recentUses = [...(secret.recentUses ?? []).filter((u) => u.at >= now - RECENT_USE_KEEP_MS), { key: useKey, at: caller.fresh }];
      const body: SecretBody = { ...secret, delegatePrincipalId: delegate === '' ? null : delegate, updatedAt: Math.max(now, secret.updatedAt), auth: { by: 'setDelegate', evidence: evidenceFor(caller, request) }, recentUses };
      await deps.replicator.replicate({ kind: 'secret', key: secretKey(secretId), body });
      await deps.creator.call('signedUse', { useKey, mark: true }).catch((err: unknown) => log.warn({ secretId, err: errorText(err) }, 'could not mark the setDelegate string used'));
      log.info({ secretId, delegateSet: delegate !== '' }, 'secret delegate changed');
      return { secretId };
    },

    async publicKey(chainIdRaw, secretIdRaw): Promise<PublicKeyView> {
      const chainId = parseChainId(chainIdRaw, web3Enabled() ? deps.chains : undefined);
      const secretId = parseSecretId(secretIdRaw);
      if (chainId === WEB2_CHAIN_ID) return { chainId, secretId, publicKey: (await findSecret(secretId)).publicKeyCid };
      // Web3: a synced secret of type 1 (docs/web3.md, Web3 secrets), from the chain's confirmed view.
      const secret = await requireWeb3().resolve(chainId, secretId);
      assertUsable(secret);
      return { chainId, secretId, publicKey: secret.publicKeyCid };
    },

    async publicKeySigned(request, chainIdRaw, secretIdRaw) {
      const keyView = await service.publicKey(chainIdRaw, secretIdRaw);
      const caller = await deps.verifier.verify(request, { parts: 4, web3: web3Enabled() });
      if (caller.subject !== String(keyView.secretId) || caller.chainId !== keyView.chainId) throw new AppError('BAD_REQUEST', 'chainId and secretId must match the signed data');
      return keyView;
    },

    async listFailures() {
      const out: SecretFailure[] = [];
      for await (const p of deps.pending.list()) out.push(failureView(p, addressOf));
      return out;
    },

    async retryFailure(secretIdRaw, chainIdRaw): Promise<RetryOutcome> {
      const secretId = parseSecretId(secretIdRaw);
      if (chainIdRaw !== undefined && !POSITIVE_ID_RE.test(chainIdRaw)) throw new AppError('BAD_REQUEST', `Invalid chainId "${chainIdRaw.slice(0, 24)}": expected a positive integer`);
      const p = await deps.pending.get(secretId, chainIdRaw === undefined ? undefined : Number(chainIdRaw));
      if (!p) throw new AppError('NOT_FOUND', `No undelivered shares for secret ${secretId}`);
      const next = await retryOnce(p);
      const failedNodeAddresses = Object.keys(next.missing).map((s) => addressOf(Number(s)));
      return {
        message: failedNodeAddresses.length === 0 ? 'Every member now holds its share' : `${failedNodeAddresses.length} members still miss their share`,
        stage: failedNodeAddresses.length === 0 ? 'complete' : 'share-delivery',
        failedNodeAddresses,
        retryCount: next.retryCount,
      };
    },

    async handleShard(body, from) {
      if (self.slot === null) throw new AppError('FORBIDDEN', 'not a member');
      const b = (body ?? {}) as Record<string, unknown>;
      if (b.op === 'store') return handleStore(b);
      if (b.op === 'release') return handleRelease(b, from);
      throw new AppError('BAD_REQUEST', 'unknown shard operation');
    },

    async recoverSeed(secret, request, envelope) {
      const slots = reachableMemberSlots(membership);
      const secretId = secret.secretId;
      const label = shareLabel(secret.chainId, secretId);
      const { results, failures } = await gatherFromMembers({
        slots,
        needed: descriptor.threshold,
        timeoutMs: options.shardTimeoutMs,
        call: async (slot, signal) => {
          const res = (await deps.members.call(
            slot,
            'shard',
            'file' in envelope
              ? { op: 'release', purpose: 'file', secretId, data: request.data, signature: request.signature, vv: deps.versionVector() }
              : { op: 'release', secretId, data: request.data, signature: request.signature, cifer: envelope.cifer, inputFormat: envelope.inputFormat, vv: deps.versionVector() },
            { signal },
          )) as { box?: unknown; share?: unknown };
          if (slot === self.slot && res?.share instanceof Uint8Array) return res.share;
          if (typeof res?.box !== 'string') throw new Error('malformed release');
          const share = keyring.openSealed(fromBase64(res.box), shareReleaseAad(clusterId, label, slot, self.nodeAddress));
          if (!share) throw new Error('released share does not open');
          return share;
        },
      });
      const shares = results.map((r) => r.value);
      try {
        if (shares.length < descriptor.threshold) {
          // Members that refused outright (a spent string, no right to decrypt) will refuse a retry
          // too: once too many did for a quorum to be possible, say why instead of a 503.
          const refusals = failures.map((f) => f.error).filter((e): e is AppError => e instanceof AppError && (e.code === 'FORBIDDEN' || e.code === 'BAD_REQUEST'));
          if (refusals.length > descriptor.size - descriptor.threshold) {
            log.info({ secretId, refused: refusals.length }, 'members refused the share release');
            throw new AppError(refusals[0]!.code, `Members refused to release their shares: ${refusals[0]!.message}`);
          }
          // Members that could not read the chain: the chain is what is down, and the answer says so.
          const chainDown = failures.map((f) => f.error).find((e): e is AppError => e instanceof AppError && e.code === 'CHAIN_UNAVAILABLE');
          if (chainDown) throw new AppError('CHAIN_UNAVAILABLE', chainDown.message, { chainId: secret.chainId });
          const failed = memberFailures(membership, failures);
          log.warn({ secretId, released: shares.length, failed }, 'fewer than threshold shares released');
          throw new QuorumError(`Only ${shares.length} members released their share; ${descriptor.threshold} are needed`, results.map((r) => addressOf(r.slot)), failed);
        }
        const seed = await combineShares(shares);
        return seed;
      } finally {
        zeroize(...shares);
      }
    },

    start() {
      // Forget used decrypt strings once they are too old to pass the freshness check anywhere.
      pruneTimer = setInterval(() => {
        deps.usedStrings.prune(clock()).catch((err: unknown) => log.warn({ err: errorText(err) }, 'used-string prune failed'));
      }, USED_STRING_PRUNE_INTERVAL_MS);
      pruneTimer.unref();
      timer = setInterval(() => {
        if (round) return;
        round = backgroundRound()
          .catch((err: unknown) => log.warn({ err: errorText(err) }, 'share delivery round failed'))
          .finally(() => {
            round = undefined;
          });
      }, options.retryIntervalMs);
      timer.unref();
    },
    async stop() {
      clearInterval(timer);
      clearInterval(pruneTimer);
      await round;
      await Promise.allSettled([...inFlight.values()]);
    },
  };
  return service;
}
