/**
 * A member's `shard` handler (docs/security.md, Share release): storing the share a coordinator dealt
 * to it, and releasing it for one decrypt. A member checks everything itself before it releases — the
 * client's signed string, its freshness, the session, the owner/delegate right from its own replica
 * (or the chain, for Web3) and that the string was not released to another coordinator before — then
 * seals its share to the requesting coordinator.
 */
import { AppError, refusal, refusedAs, withReason } from '../../errors/index.ts';
import type { Logger } from '../../log/index.ts';
import { CIFER_BYTES, constantTimeEqual, fromBase64, fromHex, shareXOfSlot, toBase64, toHex, zeroize } from '../../crypto/index.ts';
import { runPeriodic, type Periodic, type Startable } from '../lifecycle.ts';
import { decodeBinary, decodeEncryptedMessage } from '../payloads/binary.ts';
import { isCoordinatorEntry, memberFailure, type ClusterNodeEntry, type MembershipView, type StateReader, type VersionVector } from '../replication/ports.ts';
import { signedStringKey } from '../sessions/evidence.ts';
import { splitSignedData, WEB2_CHAIN_ID } from '../sessions/signed-data.ts';
import type { SignedDataVerifier } from '../sessions/types.ts';
import type { ChainHeads } from '../web3/ports.ts';
import { isSlotShare, readHeldShare, requireHeldShare, type HeldShares } from './held-share.ts';
import type { NodeKeyring, ShareStore, UsedStringStore } from './ports.ts';
import { secretRecordOf, type SecretReads } from './reads.ts';
import { shareAtRestAad, shareReleaseAad, shareStoreAad } from './records.ts';
import { assertDecryptRight, resolvedOf, shareLabel } from './rules.ts';
import type { DecryptEnvelope, ShareReleaseRequest, ShareStoreManyRequest, ShareStoreRequest } from './shard-messages.ts';
import { pruneUsedStrings, usedStringExpiry } from './used-strings.ts';

/**
 * The key that binds a release string to one coordinator, for a request with a decrypt's shape
 * (docs/security.md, Share release), and 400 `not_a_decrypt` for any other — checked before the
 * string is verified, so a malformed request costs no signature recovery. A file decrypt: the
 * client's 4-part string, which the deployed client also signs for /encrypt-file (docs/security.md,
 * Known limits). A payload decrypt: a 5-part string whose last part is a non-empty encrypted message
 * in the request's format (a "remove delegate" setDelegate string ends in an empty one), with a
 * well-formed 1104-byte cifer; its key holds whatever the spelling of its hex or address.
 */
export function releaseUseKey(data: string, envelope: DecryptEnvelope): string {
  const parts = splitSignedData(data, { parts: 'file' in envelope ? 4 : 5 });
  if (!parts) throw refusal('BAD_REQUEST', 'not_a_decrypt', `not a decrypt request: expected ${'file' in envelope ? 4 : 5} parts`);
  if ('file' in envelope) return signedStringKey('decrypt-file', parts);
  let message: Uint8Array;
  try {
    message = decodeEncryptedMessage(parts[4]!, envelope.inputFormat);
    if (decodeBinary(envelope.cifer, envelope.inputFormat, 'cifer').length !== CIFER_BYTES) throw refusal('BAD_REQUEST', 'not_a_decrypt', 'not a decrypt request: cifer is malformed');
  } catch (err) {
    throw withReason(err, 'not_a_decrypt');
  }
  return signedStringKey('decrypt', [...parts.slice(0, 4), toHex(message)]);
}

/** Options of {@link createShardHandler}. */
export interface ShardHandlerOptions {
  /** How often the member forgets decrypt strings that can no longer be used (./used-strings.ts), ms. */
  usedStringPruneIntervalMs: number;
}

/** Dependencies of {@link createShardHandler}. */
export interface ShardHandlerDeps {
  membership: MembershipView;
  state: StateReader;
  reads: Pick<SecretReads, 'requireSecret' | 'requireWeb3' | 'web3Enabled'>;
  verifier: SignedDataVerifier;
  /** The catch-up gate (docs/security.md): resolves once this member holds everything the requester did. */
  catchUp(requester: VersionVector, from: ClusterNodeEntry): Promise<void>;
  /** This member's shares. */
  shares: ShareStore;
  /** Decrypt strings this member has released its share for, each with the coordinator it went to. */
  usedStrings: UsedStringStore;
  /** Counts each release request answered: `released`, or the refusal's reason (`failed` for any other error). */
  releases?: { inc(labels: { outcome: string }): void };
  /** The enabled chains: the heads that decide when a Web3 string is forgotten. @default none */
  chains?: ChainHeads;
  keyring: NodeKeyring;
  clock: () => number;
  /** The secrets module's logger. */
  logger: Logger;
  /** The node's lifetime: ends the prune loop when aborted. */
  signal: AbortSignal;
}

/** A member's side of the shares. */
export interface ShardHandler extends Startable {
  /** The `shard` handler of `store`, `storeMany` and `release`, for a call decoded at the edge (shard-messages.ts). */
  handleShard(request: ShareStoreRequest | ShareStoreManyRequest | ShareReleaseRequest, from: ClusterNodeEntry): Promise<unknown>;
  /** Start forgetting used decrypt strings once they are too old. */
  start(): void;
  /** Stop forgetting (waits for a prune in flight); idempotent. */
  stop(): Promise<void>;
}

/** A release's outcome label: the refusal's reason (a closed set), or `failed`. */
function releaseOutcome(err: unknown): string {
  return err instanceof AppError && err.reason !== undefined ? err.reason : 'failed';
}

/** Create the handler. */
export function createShardHandler(options: ShardHandlerOptions, deps: ShardHandlerDeps): ShardHandler {
  const { keyring, clock, logger: log } = deps;
  const { self } = deps.membership;
  const clusterId = deps.membership.descriptor.clusterId;
  const ownShares: HeldShares | undefined = self.slot === null ? undefined : { shares: deps.shares, keyring, clusterId, slot: self.slot };

  /** What a member checks before storing a share (docs/security.md, Share recovery). */
  async function handleStore({ chainId, secretId, box }: ShareStoreRequest, from: ClusterNodeEntry, own: HeldShares): Promise<unknown> {
    // Shares are dealt by coordinators: a Web2 create's, or a chain's syncer.
    if (!isCoordinatorEntry(from)) throw refusal('FORBIDDEN', 'not_coordinator', 'shares are dealt by coordinators only');
    const { slot } = own;
    const label = shareLabel(chainId, secretId);
    const share = await keyring.openBox(fromBase64(box), shareStoreAad(clusterId, label, slot));
    if (!share) throw refusal('FORBIDDEN', 'share_mismatch', 'share does not open for this member');
    try {
      // Every share sits at its slot's coordinate: two members at one x would hold one share between them.
      if (share[share.length - 1] !== shareXOfSlot(slot)) throw refusal('FORBIDDEN', 'share_mismatch', "share is not at this member's x-coordinate");
      // Once the secret's record exists, its digest names this slot's share and nothing else is
      // stored: a member that lost its disk would otherwise take a rogue coordinator's junk for its
      // share, and recovery would skip it as held.
      const record = await secretRecordOf(deps.state, chainId, secretId);
      const digest = record?.shareDigests?.[slot];
      if (digest !== undefined && !isSlotShare(clusterId, label, slot, share, digest)) throw refusal('FORBIDDEN', 'share_mismatch', "share does not match the secret's digest for this slot");
      const existing = await readHeldShare(own, label, undefined);
      if ('share' in existing) {
        const same = constantTimeEqual(existing.share, share);
        zeroize(existing.share);
        if (same) return { stored: true };
      }
      // A retried create (same string, same id, new key) replaces shares of a secret that never got
      // its record. Once the record exists its shares never change — but the share its digest names
      // replaces one it does not (a share stored before the record existed).
      const holdsAnother = !('missing' in existing && existing.missing === 'none');
      if (holdsAnother && record && digest === undefined) throw refusal('CONFLICT', 'share_mismatch', 'a different share is already stored for this secret');
      await deps.shares.put(label, keyring.encryptAtRest(share, shareAtRestAad(clusterId, label, slot)));
      return { stored: true };
    } finally {
      zeroize(share);
    }
  }

  /**
   * Several stores in one call (a coordinator's, coalesced while its previous one was in flight):
   * each checked and stored exactly as its own `store` call would be, and answered on its own — one
   * refused share never fails another. Stores of different secrets run together; those of one secret
   * run in their order, so the call ends as the same calls one after another would.
   */
  async function handleStoreMany({ items }: ShareStoreManyRequest, from: ClusterNodeEntry, own: HeldShares): Promise<unknown> {
    const bySecret = new Map<number | string, Promise<unknown>>();
    const results = await Promise.all(
      items.map((item) => {
        const label = shareLabel(item.chainId, item.secretId);
        const run = (bySecret.get(label) ?? Promise.resolve()).then(() => handleStore(item, from, own));
        bySecret.set(label, run.catch(() => undefined));
        return run.then(
          (result) => ({ ok: true, result }),
          (err: unknown) => memberFailure(err, (e) => log.warn({ err: e, secretId: item.secretId, chainId: item.chainId }, 'share store failed')),
        );
      }),
    );
    return { results };
  }

  /** What a member checks before releasing a share: everything, itself. */
  async function handleRelease({ secretId, request, envelope, vv }: ShareReleaseRequest, from: ClusterNodeEntry, own: HeldShares): Promise<unknown> {
    // Shares go to coordinators only: a member that is not one has no client request to serve.
    if (!isCoordinatorEntry(from)) throw refusal('FORBIDDEN', 'not_coordinator', 'shares are released to coordinators only');
    const useKey = releaseUseKey(request.data, envelope);
    const caller = await deps.verifier.verify(request, { parts: 'file' in envelope ? 4 : 5, web3: deps.reads.web3Enabled() }).catch(refusedAs('unverified'));
    if (caller.subject !== String(secretId)) throw refusal('FORBIDDEN', 'names_another_secret', 'signed data names another secret');
    await deps.catchUp(vv, from);
    // Web3: the owner and delegate this member reads from the chain itself, never the coordinator's word.
    const secret = await (caller.chainId === WEB2_CHAIN_ID ? deps.reads.requireSecret(secretId).then(resolvedOf) : deps.reads.requireWeb3().resolveOwn(caller.chainId, secretId)).catch(refusedAs('secret_unavailable'));
    assertDecryptRight(secret, caller.principalId);
    // A string's share goes to one coordinator, the first this member released it to: its repeats
    // (the client's second file signed in the same block, the same payload twice) give that
    // coordinator the share it already has; another that saw the string gets nothing
    // (docs/security.md, Share release).
    if (!(await deps.usedStrings.use(useKey, from.nodeAddress, usedStringExpiry(caller)))) throw refusal('FORBIDDEN', 'string_used', 'this signed string was already used for a decrypt');
    const label = shareLabel(caller.chainId, secretId);
    // A share that is not the one the record's digest names never leaves: it would spoil the seed.
    const share = await requireHeldShare(own, label, (await secretRecordOf(deps.state, caller.chainId, secretId))?.shareDigests?.[own.slot]);
    // To ourselves (in-process, never on a wire) the share is handed over as is; the caller zeroes it.
    if (from.nodeAddress === self.nodeAddress) return { slot: own.slot, share };
    try {
      const sealed = await keyring.sealRelease(fromHex(from.signingPublicKey), share, shareReleaseAad(clusterId, label, own.slot, from.nodeAddress));
      return { slot: own.slot, box: toBase64(sealed) };
    } finally {
      zeroize(share);
    }
  }

  let pruning: Periodic | undefined;
  return {
    async handleShard(request, from) {
      if (!ownShares) throw refusal('FORBIDDEN', 'not_member', 'not a member');
      if (request.op === 'store') return handleStore(request, from, ownShares);
      if (request.op === 'storeMany') return handleStoreMany(request, from, ownShares);
      try {
        const released = await handleRelease(request, from, ownShares);
        deps.releases?.inc({ outcome: 'released' });
        return released;
      } catch (err) {
        deps.releases?.inc({ outcome: releaseOutcome(err) });
        throw err;
      }
    },
    start() {
      // Forget used decrypt strings once they can no longer pass this member's freshness check.
      const prune = async () => {
        await pruneUsedStrings({ usedStrings: deps.usedStrings, chains: deps.chains, clock, logger: log });
      };
      pruning ??= runPeriodic(prune, { intervalMs: options.usedStringPruneIntervalMs, signal: deps.signal, logger: log, name: 'used-string prune' });
    },
    async stop() {
      await pruning?.stop();
    },
  };
}
