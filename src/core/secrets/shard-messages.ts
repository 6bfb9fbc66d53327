/**
 * The secrets' operations of the `shard` member protocol (docs/security.md, Share release and Share
 * recovery): what a coordinator sends — `store` a sealed share, `release` a share for one decrypt —
 * and what a recovering member sends its helpers (`recover`), as builders for the sender and one
 * schema that decodes a call at the member's edge. Members check the shapes here; every rule about
 * meaning is in shard-handler.ts and recovery.ts.
 */
import { z } from 'zod';
import { refusal } from '../../errors/index.ts';
import { CIFER_BYTES, toBase64 } from '../../crypto/index.ts';
import { parseVersionVector, type VersionVector } from '../replication/ports.ts';
import { MAX_DATA_CHARS, WEB2_CHAIN_ID } from '../sessions/signed-data.ts';
import type { SignedRequest } from '../sessions/types.ts';
import type { BinaryFormat } from '../payloads/types.ts';

/**
 * What a share release is for, as members check it (docs/security.md, Share release): a payload
 * decrypt names its envelope (5-part string ending in the encrypted message); a file decrypt is a
 * 4-part string (`/decrypt-file`, `/decrypt-existing-file`). A member releases for a string to one
 * coordinator only (shard-handler.ts).
 */
export type DecryptEnvelope = { cifer: string; inputFormat: BinaryFormat } | { file: true };

/** Most shares one `storeMany` call carries (a coordinator's stores to one member, coalesced: src/cluster/requests.ts). */
export const STORE_MANY_MAX_ITEMS = 256;
/** Largest batch of secrets one `recover` call names (and a helper answers). */
export const RECOVER_MAX_ITEMS = 64;
/** Longest sealed share accepted, base64 (a 65-byte share sealed to a member is 168 characters). */
const SEALED_SHARE_MAX_CHARS = 1024;
/** Longest `cifer` accepted: 1104 bytes as `0x`-prefixed hex, the longer of the two formats. */
const CIFER_MAX_CHARS = 2 + 2 * CIFER_BYTES;
/** Longest signature accepted (EIP-191: 130–132 hex characters; the verifier checks the value). */
const SIGNATURE_MAX_CHARS = 256;

/** The `store` call carrying one member's sealed share (Web2 secrets carry no chainId). */
export function shareStoreRequest(chainId: number, secretId: number, box: Uint8Array): Record<string, unknown> {
  return chainId === WEB2_CHAIN_ID ? { op: 'store', secretId, box: toBase64(box) } : { op: 'store', chainId, secretId, box: toBase64(box) };
}

/** The `release` call for one decrypt, with the requester's version vector for the catch-up gate. */
export function shareReleaseRequest(secretId: number, request: SignedRequest, envelope: DecryptEnvelope, vv: VersionVector): Record<string, unknown> {
  return 'file' in envelope
    ? { op: 'release', purpose: 'file', secretId, data: request.data, signature: request.signature, vv }
    : { op: 'release', secretId, data: request.data, signature: request.signature, cifer: envelope.cifer, inputFormat: envelope.inputFormat, vv };
}

/** A secret as a `recover` call names it: a Web2 secret by its id alone, a Web3 secret with its chain. */
export interface SecretItem {
  chainId: number;
  secretId: number;
}

/** The `recover` call one helper gets for a batch of secrets (one round, one helper set). */
export function shareRecoverRequest(items: SecretItem[], helpers: number[], round: string, vv: VersionVector): Record<string, unknown> {
  const named = items.map(({ chainId, secretId }) => (chainId === WEB2_CHAIN_ID ? { secretId } : { chainId, secretId }));
  return { op: 'recover', items: named, helpers, round, vv };
}

const secretIdSchema = z.int().positive();
/** `-1` (or absent) for Web2, else a positive chain id. */
const chainIdSchema = z.union([z.literal(WEB2_CHAIN_ID), z.int().positive()]).default(WEB2_CHAIN_ID);
/** A requester's version vector: malformed entries are dropped (a dropped entry only costs resends). */
const versionVectorSchema = z.unknown().optional().transform(parseVersionVector);

const storeSchema = z.object({
  op: z.literal('store'),
  chainId: chainIdSchema,
  secretId: secretIdSchema,
  /** The share sealed to this member, base64. */
  box: z.base64().min(1).max(SEALED_SHARE_MAX_CHARS),
});

/** Several `store` calls in one, each answered on its own (`{ results }`, one `{ ok, result }` or refusal per item, in order). */
const storeManySchema = z.object({
  op: z.literal('storeMany'),
  items: z.array(storeSchema).min(1).max(STORE_MANY_MAX_ITEMS),
});

const releaseSchema = z
  .object({
    op: z.literal('release'),
    /** `"file"` for a file decrypt; absent for a payload decrypt. */
    purpose: z.literal('file').optional(),
    secretId: secretIdSchema,
    data: z.string().min(1).max(MAX_DATA_CHARS),
    signature: z.string().min(1).max(SIGNATURE_MAX_CHARS),
    cifer: z.string().max(CIFER_MAX_CHARS).optional(),
    inputFormat: z.enum(['hex', 'base64']).optional(),
    vv: versionVectorSchema,
  })
  .transform((b, ctx) => {
    const request: SignedRequest = { data: b.data, signature: b.signature };
    if (b.purpose === 'file') return { op: b.op, secretId: b.secretId, request, envelope: { file: true } as DecryptEnvelope, vv: b.vv };
    if (b.cifer === undefined || b.inputFormat === undefined) {
      ctx.addIssue({ code: 'custom', message: 'a payload release names its cifer and inputFormat', path: ['cifer'] });
      return z.NEVER;
    }
    return { op: b.op, secretId: b.secretId, request, envelope: { cifer: b.cifer, inputFormat: b.inputFormat } as DecryptEnvelope, vv: b.vv };
  });

const recoverSchema = z.object({
  op: z.literal('recover'),
  items: z.array(z.object({ chainId: chainIdSchema, secretId: secretIdSchema })).min(1).max(RECOVER_MAX_ITEMS),
  /** The helper set, by slot; recovery.ts checks it against the cluster. */
  helpers: z.array(z.int().nonnegative().max(254)).max(255),
  round: z.string().regex(/^[A-Za-z0-9-]{8,64}$/),
  vv: versionVectorSchema,
});

/** Largest batch of secrets one `attestMissing` call names. */
export const ATTEST_MAX_ITEMS = 1_000;

/** The `inventory` call: what a member holds of what it should (inventory.ts), asked by any node of the cluster. */
export const shareInventoryRequest = (): Record<string, unknown> => ({ op: 'inventory' });

/** The `attestMissing` call: a coordinator asks a member to sign that it holds no share of each named secret it lacks. */
export function attestMissingRequest(items: SecretItem[]): Record<string, unknown> {
  return { op: 'attestMissing', items: items.map(({ chainId, secretId }) => (chainId === WEB2_CHAIN_ID ? { secretId } : { chainId, secretId })) };
}

const inventorySchema = z.object({ op: z.literal('inventory') });
const attestMissingSchema = z.object({
  op: z.literal('attestMissing'),
  items: z.array(z.object({ chainId: chainIdSchema, secretId: secretIdSchema })).min(1).max(ATTEST_MAX_ITEMS),
});

const shardRequestSchema = z.discriminatedUnion('op', [storeSchema, storeManySchema, releaseSchema, recoverSchema, inventorySchema, attestMissingSchema]);

/** A `store` call as a member accepts it. */
export type ShareStoreRequest = z.output<typeof storeSchema>;
/** A `storeMany` call as a member accepts it. */
export type ShareStoreManyRequest = z.output<typeof storeManySchema>;
/** A `release` call as a member accepts it: the client's signed string, what it is for, the requester's version vector. */
export type ShareReleaseRequest = z.output<typeof releaseSchema>;
/** A `recover` call as a helper accepts it. */
export type ShareRecoverRequest = z.output<typeof recoverSchema>;
/** An `attestMissing` call as a member accepts it. */
export type AttestMissingRequest = z.output<typeof attestMissingSchema>;
/** Any `shard` call, decoded. */
export type ShardRequest = z.output<typeof shardRequestSchema>;

/** Decode a `shard` call at the member's edge; 400 `malformed` naming the first bad field otherwise. */
export function parseShardRequest(body: unknown): ShardRequest {
  const parsed = shardRequestSchema.safeParse(body);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const field = issue && issue.path.length > 0 ? issue.path.join('.') : 'op';
  throw refusal('BAD_REQUEST', 'malformed', `malformed shard request: ${field}`);
}
