/**
 * The `web3Secret` record kind (docs/web3.md, "Web3 secrets"; docs/security.md, "Who may write
 * what"): the ML-KEM public key the cluster dealt for a secret created on chain. Owner, delegate and
 * whether it is synced are NOT in the record: the chain holds them, and every member reads them there.
 *
 * Who writes it: slot 0, as a sequenced kind with one version (src/core/replication/versions.ts):
 * the key a coordinator that the controller itself whitelists (`isBlackBoxWhitelisted`) — the
 * chain's designated syncer — dealt and vouched for. Evidence: the chain. Every node checks, before
 * storing, that the secret exists on chain with type 1, is still syncing or synced to this cluster
 * with the sentinel `cifer`, and that the coordinator that vouched is whitelisted. Slot 0 writes one
 * first version per key, so the first key wins, for good, on every member alike — and a record no
 * member can decide yet (a chain that does not answer) is held back, never refused.
 */
import { z } from 'zod';
import type { RecordKindDefinition } from '../replication/kinds.ts';
import type { ClusterDescriptor } from '../replication/ports.ts';
import { heldBack, refusal, type RecordRefusal } from '../replication/refusals.ts';
import { checkVersion, versionSchema, type Transition } from '../replication/versions.ts';
import { PUBLIC_KEY_B64_CHARS, SECRET_TYPE_MLKEM768, shareDigestsSchema } from '../secrets/records.ts';
import type { Web3Chains } from './ports.ts';

/** The on-chain `publicKeyCid` the syncer writes for the cluster's secrets (the real key is in the record). */
export const SYNCED_SENTINEL = 'cifer';
/** Largest secret id the cluster keys (ids are uint256 on chain; the cluster's fit in 15 digits). */
export const MAX_WEB3_SECRET_ID = 999_999_999_999_999;

/** Record key of a Web3 secret: the chain id, then the id as 15 digits (keys sort by chain, then id). */
export function web3SecretKey(chainId: number, secretId: number): string {
  return `${chainId}:${String(secretId).padStart(15, '0')}`;
}

/** The chain id and secret id a {@link web3SecretKey} names, or undefined when `key` is not one. */
export function parseWeb3SecretKey(key: string): { chainId: number; secretId: number } | undefined {
  const m = /^(\d{1,16}):(\d{15})$/.exec(key);
  if (!m) return undefined;
  const chainId = Number(m[1]);
  const secretId = Number(m[2]);
  return Number.isSafeInteger(chainId) && chainId > 0 && secretId > 0 && web3SecretKey(chainId, secretId) === key ? { chainId, secretId } : undefined;
}

/** The label of a Web3 secret in share stores and associated data: never a Web2 label (digits only). */
export function web3SecretLabel(chainId: number, secretId: number): string {
  return `${chainId}:${secretId}`;
}

export const web3SecretBodySchema = z.strictObject({
  chainId: z.number().int().positive(),
  secretId: z.number().int().positive().max(MAX_WEB3_SECRET_ID),
  clusterId: z.string().min(1).max(128),
  secretType: z.literal(SECRET_TYPE_MLKEM768),
  /** ML-KEM-768 public key, base64. */
  publicKeyCid: z.string().length(PUBLIC_KEY_B64_CHARS).regex(/^[A-Za-z0-9+/]+={0,2}$/),
  /** Block of the `SecretCreated` event the key answers. */
  createdBlock: z.number().int().nonnegative(),
  /** When the key was dealt, Unix ms. */
  createdAt: z.number().int().nonnegative(),
  /** Each slot's share digest (`shareDigest`), for share recovery. */
  shareDigests: shareDigestsSchema.optional(),
  /** The version: the one deal of the key (src/core/replication/versions.ts). */
  v: versionSchema(['deal']),
});
export type Web3SecretBody = z.infer<typeof web3SecretBodySchema>;

/**
 * `web3Secret`, keyed by {@link web3SecretKey}: one version, the key a whitelisted coordinator dealt
 * (its vouch), written by slot 0. The checks read the chain (a chain that does not answer holds the
 * record back; catch-up and the waiting room bring it again).
 */
export function web3SecretKind(descriptor: ClusterDescriptor, chains: Web3Chains | undefined): RecordKindDefinition<Web3SecretBody> {
  const transitions: Record<'deal', Transition<Web3SecretBody>> = {
    deal: {
      creates: true,
      async check({ after, vouchedBy }) {
        if (!vouchedBy) return refusal('bad_vouch', 'a key is dealt by a whitelisted coordinator');
        const chain = chains?.get(after.chainId);
        if (!chain) return refusal('chain_not_enabled');
        // A chain that does not answer decides nothing: the record is held back and offered again.
        return chainProblem(chain, vouchedBy, after.secretId).catch((err: unknown) => heldBack('chain_unavailable', undefined, (err as Error).message.slice(0, 120)));
      },
    },
  };
  return {
    name: 'web3Secret',
    body: web3SecretBodySchema,
    writers: ['slot0'],
    sequenced: true,
    key: (k) => /^[1-9]\d{0,15}:\d{15}$/.test(k),
    rank: (b) => b.v.n,
    validate: (b, context) => {
      if (context.key !== web3SecretKey(b.chainId, b.secretId)) return refusal('key_mismatch');
      if (b.clusterId !== descriptor.clusterId) return refusal('another_cluster');
      return checkVersion(descriptor, transitions, b, context);
    },
  };
}

/** What the chain says against a key dealt by `writer` for `secretId`. */
async function chainProblem(chain: NonNullable<ReturnType<Web3Chains['get']>>, writer: string, secretId: number): Promise<RecordRefusal | undefined> {
  if (!(await chain.isWhitelisted(writer))) return refusal('not_whitelisted');
  const state = await chain.getSecretState(secretId);
  if (!state) return refusal('not_on_chain');
  if (state.secretType !== SECRET_TYPE_MLKEM768) return refusal('type_not_served');
  if (!state.isSyncing && (state.clusterId !== chain.controllerClusterId || state.publicKeyCid !== SYNCED_SENTINEL)) return refusal('synced_elsewhere');
  return undefined;
}
