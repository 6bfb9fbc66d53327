/**
 * A member's `shard` handler (docs/security.md, Share release): storing the share a coordinator dealt
 * to it, and releasing it for one decrypt. A member checks everything itself before it releases — the
 * client's signed string, its freshness, the session, the owner/delegate right from its own replica
 * (or the chain, for Web3) and that the string was not used before — then seals its share to the
 * requesting coordinator.
 */
import { AppError } from '../../errors/index.ts';
import type { Logger } from '../../log/index.ts';
import { CIFER_BYTES, constantTimeEqual, fromBase64, fromHex, sealTo, shareXOfSlot, toBase64, toHex, zeroize } from '../../crypto/index.ts';
import { runPeriodic, type Periodic, type Startable } from '../lifecycle.ts';
import { decodeBinary } from '../payloads/binary.ts';
import { isCoordinatorEntry, parseVersionVector, type ClusterNodeEntry, type MembershipView, type StateReader, type VersionVector } from '../replication/ports.ts';
import { signedStringKey } from '../sessions/evidence.ts';
import { WEB2_CHAIN_ID } from '../sessions/signed-data.ts';
import type { SignedDataVerifier, VerifiedCaller } from '../sessions/types.ts';
import type { ChainHeads } from '../web3/ports.ts';
import type { NodeKeyring, ShareStore, UsedStringStore } from './ports.ts';
import { secretRecordOf, type SecretReads } from './reads.ts';
import { shareAtRestAad, shareReleaseAad, shareStoreAad } from './records.ts';
import { assertDecryptRight, resolvedOf, shareLabel } from './rules.ts';
import { parseShareRelease, parseShareStore, type DecryptEnvelope } from './shard-messages.ts';
import { pruneUsedStrings, usedStringExpiry } from './used-strings.ts';

/**
 * The single-use key of a release's signed string. A file decrypt: the client's 4-part string, which
 * the deployed client also signs for /encrypt-file (docs/security.md, Known limits). A payload decrypt:
 * the string's last part is the encrypted message in the request's format, and the request names a
 * well-formed envelope for it (400 otherwise); its key holds whatever the spelling of its hex or address.
 */
export function releaseUseKey(caller: Pick<VerifiedCaller, 'parts' | 'extra'>, envelope: DecryptEnvelope): string {
  if ('file' in envelope) return signedStringKey('decrypt-file', caller.parts.slice(0, 4));
  const message = decodeBinary(caller.extra[0] ?? '', envelope.inputFormat, 'encryptedMessage');
  if (decodeBinary(envelope.cifer, envelope.inputFormat, 'cifer').length !== CIFER_BYTES) throw new AppError('BAD_REQUEST', 'not a decrypt request: cifer is malformed');
  return signedStringKey('decrypt', [...caller.parts.slice(0, 4), toHex(message)]);
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
  /** Decrypt strings this member has released its share for. */
  usedStrings: UsedStringStore;
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
  /** The `shard` handler (`store` and `release`). */
  handleShard(body: unknown, from: ClusterNodeEntry): Promise<unknown>;
  /** Start forgetting used decrypt strings once they are too old. */
  start(): void;
  /** Stop forgetting (waits for a prune in flight); idempotent. */
  stop(): Promise<void>;
}

/** Create the handler. */
export function createShardHandler(options: ShardHandlerOptions, deps: ShardHandlerDeps): ShardHandler {
  const { keyring, clock, logger: log } = deps;
  const { self } = deps.membership;
  const clusterId = deps.membership.descriptor.clusterId;

  /** What a member checks before storing a share. */
  async function handleStore(b: Record<string, unknown>): Promise<unknown> {
    const { chainId, secretId, box } = parseShareStore(b);
    const label = shareLabel(chainId, secretId);
    const share = keyring.openSealed(fromBase64(box), shareStoreAad(clusterId, label, self.slot!));
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
        if (!same && (await secretRecordOf(deps.state, chainId, secretId))) throw new AppError('CONFLICT', 'a different share is already stored for this secret');
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
    const { secretId, request, envelope, vv } = parseShareRelease(b);
    // Released once per string per member, a file's like a payload's.
    const caller = await deps.verifier.verify(request, { parts: 'file' in envelope ? 4 : 5, web3: deps.reads.web3Enabled() });
    const useKey = releaseUseKey(caller, envelope);
    if (caller.subject !== String(secretId)) throw new AppError('FORBIDDEN', 'signed data names another secret');
    await deps.catchUp(parseVersionVector(vv), from);
    // Web3: the owner and delegate this member reads from the chain itself, never the coordinator's word.
    const secret = caller.chainId === WEB2_CHAIN_ID ? resolvedOf(await deps.reads.requireSecret(secretId)) : await deps.reads.requireWeb3().resolveOwn(caller.chainId, secretId);
    assertDecryptRight(secret, caller.principalId);
    if (!(await deps.usedStrings.use(useKey, usedStringExpiry(caller)))) throw new AppError('FORBIDDEN', 'this signed string was already used for a decrypt');
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

  let pruning: Periodic | undefined;
  return {
    async handleShard(body, from) {
      if (self.slot === null) throw new AppError('FORBIDDEN', 'not a member');
      const b = (body ?? {}) as Record<string, unknown>;
      if (b.op === 'store') return handleStore(b);
      if (b.op === 'release') return handleRelease(b, from);
      throw new AppError('BAD_REQUEST', 'unknown shard operation');
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
