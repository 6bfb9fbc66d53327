/**
 * The secrets' operations of the `shard` member protocol (docs/security.md, Share release): what a
 * coordinator sends — `store` a sealed share, `release` a share for one decrypt — and what a member
 * accepts of it. Members check the shapes here; every rule about meaning is in shard-handler.ts.
 */
import { AppError } from '../../errors/index.ts';
import { toBase64 } from '../../crypto/index.ts';
import type { VersionVector } from '../replication/ports.ts';
import { WEB2_CHAIN_ID } from '../sessions/signed-data.ts';
import type { SignedRequest } from '../sessions/types.ts';
import type { BinaryFormat } from '../payloads/types.ts';

/**
 * What a share release is for, as members check it (docs/security.md, Share release): a payload
 * decrypt names its envelope (5-part string ending in the encrypted message); a file decrypt is a
 * 4-part string (`/decrypt-file`, `/decrypt-existing-file`), released once per string per member.
 */
export type DecryptEnvelope = { cifer: string; inputFormat: BinaryFormat } | { file: true };

/** The `store` call carrying one member's sealed share (Web2 secrets carry no chainId). */
export function shareStoreRequest(chainId: number, secretId: number, box: Uint8Array): Record<string, unknown> {
  return chainId === WEB2_CHAIN_ID ? { op: 'store', secretId, box: toBase64(box) } : { op: 'store', chainId, secretId, box: toBase64(box) };
}

/** A `store` call as a member accepts it. */
export interface ShareStoreRequest {
  chainId: number;
  secretId: number;
  /** The sealed share, base64. */
  box: string;
}

/** Parse a `store` call; 400 `malformed share store` otherwise. */
export function parseShareStore(b: Record<string, unknown>): ShareStoreRequest {
  const secretId = Number(b.secretId);
  const chainId = b.chainId === undefined ? WEB2_CHAIN_ID : Number(b.chainId);
  if (!Number.isSafeInteger(secretId) || secretId <= 0 || typeof b.box !== 'string' || !(chainId === WEB2_CHAIN_ID || (Number.isSafeInteger(chainId) && chainId > 0))) {
    throw new AppError('BAD_REQUEST', 'malformed share store');
  }
  return { chainId, secretId, box: b.box };
}

/** The `release` call for one decrypt, with the requester's version vector for the catch-up gate. */
export function shareReleaseRequest(secretId: number, request: SignedRequest, envelope: DecryptEnvelope, vv: VersionVector): Record<string, unknown> {
  return 'file' in envelope
    ? { op: 'release', purpose: 'file', secretId, data: request.data, signature: request.signature, vv }
    : { op: 'release', secretId, data: request.data, signature: request.signature, cifer: envelope.cifer, inputFormat: envelope.inputFormat, vv };
}

/** A `release` call as a member accepts it. */
export interface ShareReleaseRequest {
  secretId: number;
  /** The client's signed string and its signature. */
  request: SignedRequest;
  envelope: DecryptEnvelope;
  /** The requester's version vector, unparsed. */
  vv: unknown;
}

/** Parse a `release` call; 400 `malformed share release` otherwise. */
export function parseShareRelease(b: Record<string, unknown>): ShareReleaseRequest {
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
  const envelope: DecryptEnvelope = forFile ? { file: true } : { cifer: b.cifer as string, inputFormat: b.inputFormat as BinaryFormat };
  return { secretId, request: { data: b.data, signature: b.signature }, envelope, vv: b.vv };
}
