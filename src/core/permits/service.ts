/**
 * Permits V2, the request half (PERMITS.md, "POST /web2/permit", "Authorization", "Idempotency and
 * expiry", "Where a permit lives"). The coordinator checks the request completely, then asks slot 0
 * to create the permit: slot 0 serialises creates, keeps requestId → immutable context in its durable
 * `claims` sublevel, and replicates the `permit` record before it answers, so a 503 creates nothing
 * and an exact replay returns the original permit without a second email. The confirmation link's
 * one-time token is drawn by the coordinator, mailed once, and stored only as a hash.
 */
import { randomUUID } from 'node:crypto';
import { sha256Hex } from '../../crypto/index.ts';
import { AppError, isAppError } from '../../errors/index.ts';
import type { Logger } from '../../log/index.ts';
import type { OutgoingMail } from '../mail-port.ts';
import type { MembershipView, Replicator, StateReader } from '../replication/ports.ts';
import type { CreatorService } from '../replication/creator.ts';
import { reachableMemberSlots } from '../replication/gather.ts';
import { PRINCIPAL_ID_RE, type PrincipalBody } from '../accounts/records.ts';
import type { AccountsService } from '../accounts/types.ts';
import type { SignedDataVerifier } from '../sessions/types.ts';
import { parseSecretId } from '../secrets/service.ts';
import { secretKey, type SecretBody } from '../secrets/records.ts';
import { PERMIT_ACTIONS, UUID_V4_RE, type PermitActionName, type PermitBody } from './records.ts';
import type { PermitRequestInput, PermitsService, RequestedPermit } from './types.ts';

/** Longest `newPublicKey` accepted (PERMITS.md). */
const NEW_PUBLIC_KEY_MAX_CHARS = 4096;
/** Longest payload text accepted: the longest valid one plus its key and quotes. */
const PAYLOAD_MAX_CHARS = NEW_PUBLIC_KEY_MAX_CHARS + 32;
/** Bytes of the emailed one-time token (≥ 128 bits). */
const TOKEN_BYTES = 32;

/** The one payload key of each action. */
const PAYLOAD_KEY: Record<PermitActionName, string> = { rotate: 'newPublicKey', transfer: 'newOwnerPrincipalId', delegate: 'delegatePrincipalId' };

/** Options of {@link createPermitsService}. */
export interface PermitsOptions {
  /** Permit lifetime, ms (PERMITS.md: 15 minutes by default). */
  ttlMs: number;
  /** Public base URL of the coordinators, for the confirmation link. */
  publicUrl: string;
}

/** Permit mail rendering and sending (src/mail implements it). */
export interface PermitMail {
  send(message: OutgoingMail): Promise<unknown>;
  permitMail(input: { action: PermitActionName; link: string; expiresAt: Date; summary: string }): { subject: string; text: string; html: string };
}

/** Dependencies of {@link createPermitsService}. */
export interface PermitsDeps {
  replicator: Replicator;
  state: StateReader;
  membership: MembershipView;
  creator: Pick<CreatorService, 'register' | 'call'>;
  /** Slot 0's durable requestId registry. */
  claims: { get(name: string): Promise<string | undefined>; put(name: string, value: string): Promise<void> };
  verifier: SignedDataVerifier;
  accounts: Pick<AccountsService, 'verifyCredentials'>;
  isEd25519PublicKeyHex(hex: string): boolean;
  /** Random bytes for tokens. */
  random(length: number): Uint8Array;
  mail: PermitMail;
  clock: () => number;
  logger: Logger;
}

/** The immutable context of a request (PERMITS.md): action, principal, secretId, payload digest. */
interface PermitContext {
  action: PermitActionName;
  principalId: string;
  secretId: number;
  payloadDigest: string;
}

const contextKey = (c: PermitContext) => `${c.action}|${c.principalId}|${c.secretId}|${c.payloadDigest}`;

function bad(message: string): AppError {
  return new AppError('BAD_REQUEST', message);
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

/** Create the permits service; registers slot 0's `createPermit` operation. */
export function createPermitsService(options: PermitsOptions, deps: PermitsDeps): PermitsService {
  const { state, membership, clock } = deps;
  const { descriptor } = membership;
  const log = deps.logger.child({ module: 'permits' });

  async function activePrincipal(principalId: string): Promise<PrincipalBody | undefined> {
    const p = (await state.get('principal', principalId))?.body as PrincipalBody | undefined;
    return p && p.status === 'active' ? p : undefined;
  }

  // Slot 0: requestId → context, permitId and expiry; creates serialised so replays never race.
  let chain: Promise<unknown> = Promise.resolve();
  deps.creator.register('createPermit', (params) => {
    const run = chain.then(async () => {
      const p = params as Record<string, unknown>;
      const ctx = { action: p.action, principalId: p.principalId, secretId: p.secretId, payloadDigest: p.payloadDigest } as PermitContext;
      if (
        typeof p.requestId !== 'string' ||
        !UUID_V4_RE.test(p.requestId) ||
        !PERMIT_ACTIONS.includes(ctx.action) ||
        typeof ctx.principalId !== 'string' ||
        !Number.isSafeInteger(ctx.secretId) ||
        typeof ctx.payloadDigest !== 'string' ||
        typeof p.payload !== 'string' ||
        typeof p.tokenHash !== 'string'
      ) {
        throw bad('malformed permit create');
      }
      const now = clock();
      const claimName = `permit:${p.requestId}`;
      const existing = await deps.claims.get(claimName);
      if (existing) {
        const claim = JSON.parse(existing) as { permitId: string; context: string; expiresAt: number };
        if (claim.context !== contextKey(ctx)) throw new AppError('CONFLICT', 'requestId was already used for another request');
        if (now >= claim.expiresAt) throw new AppError('CONFLICT', 'The permit of this requestId has expired; use a new requestId');
        return { permitId: claim.permitId, expiresAt: claim.expiresAt, created: false };
      }
      const permitId = randomUUID();
      const expiresAt = now + options.ttlMs;
      const body: PermitBody = {
        permitId,
        requestId: p.requestId,
        action: ctx.action,
        principalId: ctx.principalId,
        secretId: ctx.secretId,
        payload: p.payload,
        payloadDigest: ctx.payloadDigest,
        tokenHash: p.tokenHash,
        createdAt: now,
        expiresAt,
        status: 'pending',
        consumedAt: null,
      };
      // Replicated before the claim: a failed quorum (503) leaves no claim, so a retry creates it.
      await deps.replicator.replicate({ kind: 'permit', key: permitId, body });
      await deps.claims.put(claimName, JSON.stringify({ permitId, context: contextKey(ctx), expiresAt }));
      return { permitId, expiresAt, created: true };
    });
    chain = run.catch(() => undefined);
    return run;
  });

  /** Who acts and on what: rotate by credentials, transfer/delegate by an owner's session. */
  async function authorize(input: PermitRequestInput, action: PermitActionName, payloadDigest: string, target: string | null) {
    if (action === 'rotate') {
      if (typeof input.email !== 'string' || typeof input.password !== 'string') throw bad('email and password are required for rotate');
      try {
        const { principalId } = await deps.accounts.verifyCredentials(input.email, input.password);
        return { principalId, secretId: 0 };
      } catch (err) {
        if (isAppError(err) && ['UNAUTHORIZED', 'NOT_FOUND', 'FORBIDDEN'].includes(err.code)) throw new AppError('FORBIDDEN', 'Invalid credentials');
        throw err;
      }
    }
    if (typeof input.data !== 'string' || typeof input.signature !== 'string') throw bad(`data and signature are required for ${action}`);
    const caller = await deps.verifier.verify({ data: input.data, signature: input.signature }, { parts: 8 });
    const [literal, requestId, dataAction, digest] = caller.extra as [string, string, string, string];
    if (literal !== 'permit') throw bad('Invalid data format: the 5th part must be "permit"');
    if (requestId !== input.requestId) throw bad('The requestId in data does not match the body');
    if (dataAction !== action) throw bad('The action in data does not match the body');
    if (digest !== payloadDigest) throw bad('The payload digest in data does not match the payload');
    const secretId = parseSecretId(caller.subject);
    const secret = (await state.get('secret', secretKey(secretId)))?.body as SecretBody | undefined;
    if (!secret) throw new AppError('NOT_FOUND', `Secret ${secretId} not found`);
    if (secret.ownerPrincipalId !== caller.principalId) throw new AppError('FORBIDDEN', 'Only the owner may request this change');
    if (target !== null) {
      if (target === secret.ownerPrincipalId) throw new AppError('FORBIDDEN', `The owner cannot be named ${action === 'transfer' ? 'new owner' : 'delegate'}`);
      if (!(await activePrincipal(target))) throw new AppError('NOT_FOUND', 'Target principal not found');
    }
    return { principalId: caller.principalId, secretId };
  }

  function summaryOf(action: PermitActionName, secretId: number, value: string | null): string {
    if (action === 'rotate') return `New Ed25519 key ${value!.slice(0, 16)}…`;
    if (action === 'transfer') return `Secret ${secretId}: new owner principal ${value}`;
    return value === null ? `Secret ${secretId}: remove the delegate` : `Secret ${secretId}: delegate principal ${value}`;
  }

  return {
    async requestPermit(input): Promise<RequestedPermit> {
      if (!UUID_V4_RE.test(input.requestId)) throw bad('requestId must be a lowercase UUIDv4');
      if (!PERMIT_ACTIONS.includes(input.action as PermitActionName)) throw bad('action must be rotate, transfer or delegate');
      const action = input.action as PermitActionName;
      const value = parsePayload(action, input.payload, deps.isEd25519PublicKeyHex);
      const payloadDigest = sha256Hex(input.payload);
      const { principalId, secretId } = await authorize(input, action, payloadDigest, action === 'rotate' ? null : value);

      reachableMemberSlots(membership);
      const tokenBytes = deps.random(TOKEN_BYTES);
      const token = Buffer.from(tokenBytes).toString('base64url');
      tokenBytes.fill(0);
      const res = (await deps.creator.call('createPermit', { requestId: input.requestId, action, principalId, secretId, payload: input.payload, payloadDigest, tokenHash: sha256Hex(token) })) as {
        permitId: string;
        expiresAt: number;
        created: boolean;
      };
      const expiresAt = new Date(res.expiresAt);
      if (res.created) {
        const principal = await activePrincipal(principalId);
        if (principal) {
          const link = `${options.publicUrl}/web2/confirm?permitId=${res.permitId}&token=${token}`;
          const mail = deps.mail.permitMail({ action, link, expiresAt, summary: summaryOf(action, secretId, value) });
          deps.mail.send({ to: principal.email, ...mail, category: `permit-${action}` }).catch((err: unknown) => log.error({ err: (err as Error).message, permitId: res.permitId }, 'permit mail failed'));
        }
        log.info({ permitId: res.permitId, action, secretId }, 'permit created');
      }
      return {
        created: res.created,
        permitId: res.permitId,
        action,
        clusterId: descriptor.clusterId,
        expiresAt: expiresAt.toISOString(),
        message: res.created ? 'Permit created; confirm it from the link sent by email' : 'Permit already requested; the confirmation link was sent by email',
      };
    },
  };
}
