/**
 * The rules a permit request's own text follows, before anything is read (docs/permits.md, "POST
 * /web2/permit — request"): the current or legacy form, the payload of each action, the legacy
 * requestId, and the one-line summary shown in the mail and on the confirmation page. Pure functions.
 */
import { sha256Hex } from '../../crypto/index.ts';
import { AppError } from '../../errors/index.ts';
import { PRINCIPAL_ID_RE } from '../accounts/records.ts';
import type { PermitRequestInput } from './types.ts';

/** The three admin changes a permit can carry. */
export const PERMIT_ACTIONS = ['rotate', 'transfer', 'delegate'] as const;
export type PermitActionName = (typeof PERMIT_ACTIONS)[number];

/** Longest `newPublicKey` accepted (docs/permits.md). */
const NEW_PUBLIC_KEY_MAX_CHARS = 4096;
/** Longest payload text accepted: the longest valid one plus its key and quotes. */
const PAYLOAD_MAX_CHARS = NEW_PUBLIC_KEY_MAX_CHARS + 32;

/** The one payload key of each action. */
const PAYLOAD_KEY: Record<PermitActionName, string> = { rotate: 'newPublicKey', transfer: 'newOwnerPrincipalId', delegate: 'delegatePrincipalId' };

/** A 400 with `message`. */
export function bad(message: string): AppError {
  return new AppError('BAD_REQUEST', message);
}

/** A request in the current form: requestId and payload text present, `legacy` when it was upgraded. */
export interface CurrentRequest extends PermitRequestInput {
  requestId: string;
  payload: string;
  legacy: boolean;
}

/**
 * The requestId of a legacy request, which has none: a UUIDv4 drawn from the signed data and its
 * signature, so an exact retry of one signed request is a replay and a new signature a new request.
 */
export function legacyRequestId(data: string, signature: string): string {
  return uuidV4Of(`quorumkeep/legacy-permit/v1\n${data}\n${signature}`);
}

/** A lowercase UUIDv4 drawn from `text` (its SHA-256, with the version and variant bits set). */
export function uuidV4Of(text: string): string {
  const h = sha256Hex(text).split('');
  h[12] = '4';
  h[16] = '89ab'[parseInt(h[16]!, 16) & 3]!;
  const x = h.join('');
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20, 32)}`;
}

/**
 * The request in the current form. With `acceptLegacy`, a transfer/delegate without requestId whose
 * data has 4 parts is the legacy form: its object payload becomes compact text and its requestId is
 * derived ({@link legacyRequestId}). Anything else without a requestId, or with an object payload,
 * is malformed (400).
 */
export function currentForm(input: PermitRequestInput, acceptLegacy: boolean): CurrentRequest {
  const legacy =
    acceptLegacy &&
    input.requestId === undefined &&
    (input.action === 'transfer' || input.action === 'delegate') &&
    typeof input.data === 'string' &&
    typeof input.signature === 'string' &&
    input.data.split('_').length === 4;
  if (legacy) {
    const payload = typeof input.payload === 'string' ? input.payload : JSON.stringify(input.payload);
    return { ...input, requestId: legacyRequestId(input.data!, input.signature!), payload, legacy };
  }
  if (input.requestId === undefined) throw bad('requestId is required');
  if (typeof input.payload !== 'string') throw bad('payload must be the compact JSON text (a string), not an object');
  return { ...input, requestId: input.requestId, payload: input.payload, legacy: false };
}

/** Parse and check a payload for its action; returns the one value. */
export function parsePayload(action: PermitActionName, payload: string, isKey: (hex: string) => boolean): string | null {
  if (payload.length > PAYLOAD_MAX_CHARS) throw bad('payload is too long');
  let parsed: unknown;
  try {
    parsed = JSON.parse(payload);
  } catch {
    throw bad('payload must be JSON text');
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw bad('payload must be a JSON object');
  if (JSON.stringify(parsed) !== payload) throw bad('payload must be compact JSON (JSON.stringify(JSON.parse(payload)) === payload)');
  const keys = Object.keys(parsed);
  const want = PAYLOAD_KEY[action];
  if (keys.length !== 1 || keys[0] !== want) throw bad(`payload must have exactly one key, "${want}", for action ${action}`);
  const value = (parsed as Record<string, unknown>)[want];
  if (action === 'rotate') {
    if (typeof value !== 'string' || value === '' || value.length > NEW_PUBLIC_KEY_MAX_CHARS || !isKey(value)) {
      throw bad('newPublicKey must be an Ed25519 public key: 64 lowercase hex characters');
    }
    return value;
  }
  if (action === 'delegate' && value === null) return null;
  if (typeof value !== 'string' || !PRINCIPAL_ID_RE.test(value)) throw bad(`${want} must be a principal id${action === 'delegate' ? ' or null' : ''}`);
  return value;
}

/** One human line describing the change a permit asks for (no secret material): the mail's and the preview's. */
export function summaryOf(action: PermitActionName, secretId: number, value: string | null): string {
  if (action === 'rotate') return `New Ed25519 key ${value!.slice(0, 16)}…`;
  if (action === 'transfer') return `Secret ${secretId}: new owner principal ${value}`;
  return value === null ? `Secret ${secretId}: remove the delegate` : `Secret ${secretId}: delegate principal ${value}`;
}
