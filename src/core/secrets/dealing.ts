/**
 * Dealing a secret's key (docs/architecture.md, Keys and crypto; docs/web3.md, Web3 secrets): a fresh
 * ML-KEM-768 seed split threshold-of-size with Shamir's scheme, share i sealed to member i's key and
 * delivered, then the record with the public key — never the seed, which is zeroed at once. Below
 * threshold stored shares the secret is abandoned; the members that missed theirs are retried from the
 * durable list (delivery.ts). Web2 and Web3 secrets are dealt alike; only their record differs.
 */
import { AppError, QuorumError, type MemberFailure } from '../../errors/index.ts';
import type { Logger } from '../../log/index.ts';
import { dealShares, fromHex, toBase64, toHex, utf8, zeroize, type DealRecipient, type DealtShares, type RandomSource } from '../../crypto/index.ts';
import { membersOf, type ClusterDescriptor, type MembershipView } from '../replication/ports.ts';
import { reachableMemberSlots } from '../replication/gather.ts';
import { web3SecretKey, type Web3SecretBody } from '../web3/records.ts';
import type { VersionWriter } from '../replication/sequencer.ts';
import { kindName } from '../replication/views.ts';

const web3SecretKindName = kindName<Web3SecretBody>('web3Secret');
import { SECRET_TYPE_MLKEM768, SHARE_DIGEST_TAG, shareDigestPrefix, shareStoreAad } from './records.ts';
import { memberAddresses, shareLabel } from './rules.ts';
import type { ShareDelivery } from './delivery.ts';
import type { SecretStatus } from './types.ts';

/** Bytes of an ML-KEM-768 seed (d ‖ z). */
const SEED_BYTES = 64;

/** A dealt key before delivery: its public key, each slot's share digest and sealed share. */
export interface SealedShares {
  publicKey: Uint8Array;
  /** {@link shareDigest} by slot. */
  shareDigests: string[];
  /** Slot → its share sealed to the member for storage ({@link shareStoreAad}). */
  boxes: Map<number, Uint8Array>;
}

/** The crypto of a deal ({@link dealShares}): inline, or on the request crypto thread (the node's). */
export type DealCrypto = (seed: Uint8Array, threshold: number, recipients: DealRecipient[], digestTag: string) => Promise<DealtShares>;

/** {@link DealCrypto} on the caller's thread. */
export const dealInline: DealCrypto = (seed, threshold, recipients, digestTag) => Promise.resolve(dealShares(seed, threshold, recipients, digestTag));

/**
 * Split `seed` threshold-of-size and seal share i to member i, through `crypto`; the shares are
 * zeroed there, the seed is the caller's to zero. At x = slot + 1: a member that loses its share can
 * get it back (recovery.ts).
 */
export async function sealShares(seed: Uint8Array, descriptor: ClusterDescriptor, label: number | string, crypto: DealCrypto = dealInline): Promise<SealedShares> {
  const memberList = membersOf(descriptor);
  const recipients = memberList.map((m) => ({
    slot: m.slot,
    publicKey: fromHex(m.signingPublicKey),
    aad: shareStoreAad(descriptor.clusterId, label, m.slot),
    digestPrefix: utf8(shareDigestPrefix(descriptor.clusterId, label, m.slot)),
  }));
  const dealt = await crypto(seed, descriptor.threshold, recipients, SHARE_DIGEST_TAG);
  const shareDigests: string[] = [];
  const boxes = new Map<number, Uint8Array>();
  memberList.forEach((m, i) => {
    boxes.set(m.slot, dealt.boxes[i]!);
    shareDigests[m.slot] = toHex(dealt.digests[i]!);
  });
  return { publicKey: dealt.publicKey, shareDigests, boxes };
}

/** What a secret's record is built from. */
export interface DealtKey {
  /** The public key, base64. */
  publicKeyCid: string;
  shareDigests: string[];
  /** When the key was dealt, Unix ms. */
  now: number;
}

/** Dependencies of {@link createKeyDealer}. */
export interface KeyDealerDeps {
  membership: MembershipView;
  /** Writes of sequenced kinds (a Web3 secret's key), through slot 0. */
  versions: Pick<VersionWriter, 'update'>;
  delivery: Pick<ShareDelivery, 'deliver' | 'keepUndelivered'>;
  random: RandomSource;
  /** Where the key's crypto runs (the node's request crypto thread). @default {@link dealInline} */
  crypto?: DealCrypto;
  clock: () => number;
  /** The secrets module's logger. */
  logger: Logger;
}

/** The dealing of keys. */
export interface KeyDealer {
  /**
   * Deal a new key for the secret, then `record` writes the record of it. Throws QuorumError when
   * fewer than threshold members stored their share (nothing is recorded then).
   */
  deal(chainId: number, secretId: number, record: (key: DealtKey) => Promise<unknown>): Promise<{ status: SecretStatus; stored: number }>;
  /** Deal a key for a Web3 secret created on chain; concurrent calls for one secret share one attempt. */
  dealWeb3Secret(chainId: number, secretId: number, createdBlock: number): Promise<void>;
}

/** Create the dealer. */
export function createKeyDealer(deps: KeyDealerDeps): KeyDealer {
  const { membership, clock, logger: log } = deps;
  const { descriptor } = membership;
  const addressOf = memberAddresses(descriptor);

  async function deal(chainId: number, secretId: number, record: (key: DealtKey) => Promise<unknown>): Promise<{ status: SecretStatus; stored: number }> {
    const seed = deps.random(SEED_BYTES);
    let sealed: SealedShares;
    try {
      sealed = await sealShares(seed, descriptor, shareLabel(chainId, secretId), deps.crypto);
    } finally {
      zeroize(seed);
    }
    const { stored, errors } = await deps.delivery.deliver(chainId, secretId, sealed.boxes);
    if (stored.length < descriptor.threshold) {
      const failed: MemberFailure[] = [...errors].map(([slot, error]) => ({ slot, nodeAddress: addressOf(slot), error }));
      log.warn({ chainId, secretId, stored: stored.length, failed }, 'secret shares below threshold; secret abandoned');
      throw new QuorumError(`Only ${stored.length} members stored their share; ${descriptor.threshold} are needed`, stored.map(addressOf), failed);
    }
    const now = clock();
    await deps.delivery.keepUndelivered(chainId, secretId, sealed.boxes, errors, now);
    await record({ publicKeyCid: toBase64(sealed.publicKey), shareDigests: sealed.shareDigests, now });
    return { status: errors.size === 0 ? 'complete' : 'propagating', stored: stored.length };
  }

  /** Web3 deals for one secret on this node share one attempt. */
  const dealingWeb3 = new Map<string, Promise<void>>();

  return {
    deal,
    dealWeb3Secret(chainId, secretId, createdBlock) {
      const key = web3SecretKey(chainId, secretId);
      let run = dealingWeb3.get(key);
      if (!run) {
        run = (async () => {
          reachableMemberSlots(membership);
          const { status, stored } = await deal(chainId, secretId, ({ publicKeyCid, shareDigests, now }) => {
            const body: Omit<Web3SecretBody, 'v'> = { chainId, secretId, clusterId: descriptor.clusterId, secretType: SECRET_TYPE_MLKEM768, publicKeyCid, createdBlock, createdAt: now, shareDigests };
            // Slot 0 writes the key's one version: the first deal wins on every member alike.
            return deps.versions.update(web3SecretKindName, key, (current) => {
              if (current) throw new AppError('CONFLICT', `Web3 secret ${chainId}:${secretId} already has a key`);
              return { change: 'deal', body };
            });
          });
          log.info({ chainId, secretId, status, stored }, 'web3 secret keyed');
        })().finally(() => dealingWeb3.delete(key));
        dealingWeb3.set(key, run);
      }
      return run;
    },
  };
}
