/**
 * Permits V2, the request half (docs/permits.md, "POST /web2/permit — request", "Authorization", "Idempotency and
 * expiry", "Where a permit lives"). The coordinator checks the request completely, then asks slot 0
 * to create the permit: slot 0 serialises creates, keeps requestId → immutable context in its durable
 * `claims` sublevel, and replicates the `permit` record before it answers, so a 503 creates nothing
 * and an exact replay returns the original permit without a second email. The confirmation link's
 * one-time token is drawn by the coordinator, mailed once, and stored only as a hash.
 */
import { randomUUID } from 'node:crypto';
import { constantTimeEqual, sha256Hex } from '../../crypto/index.ts';
import { AppError, isAppError } from '../../errors/index.ts';
import type { Logger } from '../../log/index.ts';
import type { OutgoingMail } from '../mail-port.ts';
import type { BatchWriteReport, MembershipView, Replicator, StateReader, WriteIntent } from '../replication/ports.ts';
import { membersOf } from '../replication/ports.ts';
import type { StateChange } from '../replication/engine.ts';
import type { ReplicatedRecord } from '../replication/record.ts';
import type { CreatorService } from '../replication/creator.ts';
import type { FreshReader } from '../replication/fresh-read.ts';
import { serialQueue } from '../serial-queue.ts';
import { reachableMemberSlots } from '../replication/gather.ts';
import { PRINCIPAL_ID_RE, type PrincipalBody } from '../accounts/records.ts';
import type { AccountsService } from '../accounts/types.ts';
import type { SignedDataVerifier } from '../sessions/types.ts';
import type { SignedEvidence } from '../sessions/evidence.ts';
import { evidenceFor, parseSecretId } from '../secrets/service.ts';
import { secretKey, type SecretBody } from '../secrets/records.ts';
import { PERMIT_ACTIONS, UUID_V4_RE, permitBodySchema, permitRequestDigest, type PermitActionName, type PermitBody } from './records.ts';
import { signedEvidenceSchema } from '../sessions/evidence.ts';
import type { PermitConfirmation, PermitConfirmInput, PermitPreview, PermitRequestInput, PermitResult, PermitsService, RequestedPermit } from './types.ts';

/** Longest `newPublicKey` accepted (docs/permits.md). */
const NEW_PUBLIC_KEY_MAX_CHARS = 4096;
/** Longest payload text accepted: the longest valid one plus its key and quotes. */
const PAYLOAD_MAX_CHARS = NEW_PUBLIC_KEY_MAX_CHARS + 32;
/** Bytes of the emailed one-time token (≥ 128 bits). */
const TOKEN_BYTES = 32;
/** Consumed permits a coordinator remembers as durable on a quorum (so re-clicks cost no round trip). */
const DURABLE_PERMITS_REMEMBERED = 10_000;

/** The one payload key of each action. */
const PAYLOAD_KEY: Record<PermitActionName, string> = { rotate: 'newPublicKey', transfer: 'newOwnerPrincipalId', delegate: 'delegatePrincipalId' };

/** Options of {@link createPermitsService}. */
export interface PermitsOptions {
  /** Permit lifetime, ms (docs/permits.md: 15 minutes by default). */
  ttlMs: number;
  /** How long this coordinator waits for slot 0 (replication.createTimeoutMs): the create's deadline. @default 2000 */
  createTimeoutMs?: number;
  /** Public base URL of the coordinators, for the confirmation link. */
  publicUrl: string;
  /** While a consumed permit has not reached every member, how often to deliver it again, ms. */
  redeliverIntervalMs: number;
  /**
   * Accept the legacy transfer/delegate form for migration (docs/permits.md): 4-part data, payload as an
   * object, no requestId. @default false
   */
  acceptLegacy?: boolean;
  /**
   * How long slot 0 reserves a permit's consumption for the coordinator that claimed it, ms: a second
   * coordinator confirming the same permit meanwhile waits for the first one's result instead of
   * writing the change again. @default 10000
   */
  consumeLeaseMs?: number;
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
  /** Reads that catch up before answering "not found". */
  fresh?: FreshReader;
  /** The local log, to find the change stored with a consumption (it follows it in its origin's log). */
  log: { logRecord(origin: string, seq: number): Promise<ReplicatedRecord | undefined> };
  membership: MembershipView;
  creator: Pick<CreatorService, 'register' | 'call'>;
  /** Slot 0's durable requestId registry. */
  claims: { get(name: string): Promise<string | undefined>; put(name: string, value: string): Promise<void> };
  verifier: SignedDataVerifier;
  accounts: Pick<AccountsService, 'verifyCredentials'>;
  isEd25519PublicKeyHex(hex: string): boolean;
  /** Random bytes for tokens. */
  random(length: number): Uint8Array;
  /** This node's secp256k1 signature over a 32-byte digest, 0x-hex: vouches for a checked request. */
  signDigest(digest: Uint8Array): string;
  mail: PermitMail;
  clock: () => number;
  logger: Logger;
  /** Counts permits applied in this node's replica (once per permit). */
  applied?: { inc(labels: { action: string }): void };
}

/** The permits capability as the node composes it: the HTTP port plus its lifecycle. */
export interface PermitsCapability extends PermitsService {
  /** Engine hook: count and log each permit this replica applies (pending or absent → consumed). */
  onStateChanges(changes: StateChange[]): void;
  /** Stop background delivery. */
  stop(): void;
}

/** A request in the current form: requestId and payload text present, `legacy` when it was upgraded. */
interface CurrentRequest extends PermitRequestInput {
  requestId: string;
  payload: string;
  legacy: boolean;
}

/**
 * The requestId of a legacy request, which has none: a UUIDv4 drawn from the signed data and its
 * signature, so an exact retry of one signed request is a replay and a new signature a new request.
 */
export function legacyRequestId(data: string, signature: string): string {
  const h = sha256Hex(`quorumkeep/legacy-permit/v1\n${data}\n${signature}`).split('');
  h[12] = '4';
  h[16] = '89ab'[parseInt(h[16]!, 16) & 3]!;
  const x = h.join('');
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20, 32)}`;
}

/** The immutable context of a request (docs/permits.md, "Idempotency and expiry"): action, principal, secretId, payload digest. */
interface PermitContext {
  action: PermitActionName;
  principalId: string;
  secretId: number;
  payloadDigest: string;
}

const contextKey = (c: PermitContext) => `${c.action}|${c.principalId}|${c.secretId}|${c.payloadDigest}`;

/** Slot 0's record of a requestId. `mailed` is absent on claims written before it existed (mailed). */
interface PermitClaim {
  permitId: string;
  context: string;
  expiresAt: number;
  mailed?: boolean;
  /**
   * Until when the coordinator that created it may still be mailing the link (Unix ms): a replay
   * before then mails nothing; after it, a link never marked mailed is reissued and mailed.
   */
  mailingUntil?: number;
}

/**
 * How long after its own deadline a coordinator has to hand the link to the mail transport and say
 * so, ms. Past it, a replay of the request reissues the link.
 */
const MAIL_GRACE_MS = 30_000;

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
export function createPermitsService(options: PermitsOptions, deps: PermitsDeps): PermitsCapability {
  const { state, membership, clock } = deps;
  const { descriptor } = membership;
  const log = deps.logger.child({ module: 'permits' });

  async function activePrincipal(principalId: string): Promise<PrincipalBody | undefined> {
    const p = (await state.get('principal', principalId))?.body as PrincipalBody | undefined;
    return p && p.status === 'active' ? p : undefined;
  }

  /** A principal that may receive a secret or be its delegate: active and with a verified email. */
  async function verifiedPrincipal(principalId: string): Promise<PrincipalBody | undefined> {
    const p = await activePrincipal(principalId);
    return p?.emailVerified ? p : undefined;
  }

  // Slot 0: one permit registry, one order — creates, mail marks and token reissues run one at a
  // time, so replays never race.
  const serialised = serialQueue();

  // Slot 0: requestId → context, permitId and expiry.
  deps.creator.register('createPermit', (params) =>
    serialised(async () => {
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
        typeof p.tokenHash !== 'string' ||
        typeof p.requestedBy !== 'object' ||
        p.requestedBy === null
      ) {
        throw bad('malformed permit create');
      }
      const auth = p.auth === undefined || p.auth === null ? null : signedEvidenceSchema.safeParse(p.auth);
      if (auth && !auth.success) throw bad('malformed permit create');
      const now = clock();
      const claimName = `permit:${p.requestId}`;
      const existing = await deps.claims.get(claimName);
      if (existing) {
        const claim = JSON.parse(existing) as PermitClaim;
        if (claim.context !== contextKey(ctx)) throw new AppError('CONFLICT', 'requestId was already used for another request');
        if (now >= claim.expiresAt) throw new AppError('CONFLICT', 'The permit of this requestId has expired; use a new requestId');
        return { permitId: claim.permitId, expiresAt: claim.expiresAt, created: false, mailed: claim.mailed !== false };
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
        result: null,
        requestedBy: p.requestedBy as PermitBody['requestedBy'],
        auth: auth ? auth.data : null,
      };
      // Replicated before the claim: a failed quorum (503) leaves no claim, so a retry creates it.
      await deps.replicator.replicate({ kind: 'permit', key: permitId, body });
      // The creating coordinator mails the link unless it already gave up waiting for this answer
      // (its deadline passed: the request sat in a stalled connection), in which case nobody will.
      const deadline = typeof p.deadline === 'number' && Number.isSafeInteger(p.deadline) ? p.deadline : now;
      const mailingUntil = now > deadline ? 0 : deadline + MAIL_GRACE_MS;
      await deps.claims.put(claimName, JSON.stringify({ permitId, context: contextKey(ctx), expiresAt, mailed: false, mailingUntil } satisfies PermitClaim));
      return { permitId, expiresAt, created: true, mailed: false };
    }),
  );

  // Slot 0: the link of this request was handed to the mail transport.
  deps.creator.register('permitMailed', (params) =>
    serialised(async () => {
      const requestId = params.requestId;
      if (typeof requestId !== 'string' || !UUID_V4_RE.test(requestId)) throw bad('malformed permit mail mark');
      const raw = await deps.claims.get(`permit:${requestId}`);
      if (!raw) throw new AppError('NOT_FOUND', 'Unknown permit request');
      await deps.claims.put(`permit:${requestId}`, JSON.stringify({ ...(JSON.parse(raw) as PermitClaim), mailed: true }));
      return { mailed: true };
    }),
  );

  // Slot 0: a replayed request whose link was never mailed (its first answer was lost, or the mail
  // failed) gets a new token: the pending permit is written again with its hash, so only the link
  // mailed now works. Only the token (and the vouch over it) changes.
  deps.creator.register('reissuePermitToken', (params) =>
    serialised(async () => {
      const { requestId, tokenHash, requestedBy } = params as { requestId?: unknown; tokenHash?: unknown; requestedBy?: unknown };
      if (typeof requestId !== 'string' || !UUID_V4_RE.test(requestId) || typeof tokenHash !== 'string' || !/^[0-9a-f]{64}$/.test(tokenHash) || !requestedBy || typeof requestedBy !== 'object') {
        throw bad('malformed token reissue');
      }
      const raw = await deps.claims.get(`permit:${requestId}`);
      if (!raw) throw new AppError('NOT_FOUND', 'Unknown permit request');
      const claim = JSON.parse(raw) as PermitClaim;
      // Mailed, or still being mailed by the coordinator that created it.
      if (claim.mailed !== false || (claim.mailingUntil ?? 0) > clock()) return { reissued: false };
      const current = (await state.get('permit', claim.permitId))?.body as PermitBody | undefined;
      if (!current || current.status !== 'pending' || clock() >= current.expiresAt) return { reissued: false };
      const reissued: PermitBody = { ...current, tokenHash, requestedBy: requestedBy as PermitBody['requestedBy'] };
      await deps.replicator.replicate({ kind: 'permit', key: claim.permitId, body: reissued });
      return { reissued: true, permitId: claim.permitId, expiresAt: current.expiresAt };
    }),
  );

  /** Who acts and on what: rotate by credentials, transfer/delegate by an owner's session. */
  async function authorize(input: CurrentRequest, action: PermitActionName, payloadDigest: string, target: string | null) {
    if (action === 'rotate') {
      if (typeof input.email !== 'string' || typeof input.password !== 'string') throw bad('email and password are required for rotate');
      try {
        const { principalId } = await deps.accounts.verifyCredentials(input.email, input.password);
        return { principalId, secretId: 0, auth: null as SignedEvidence | null };
      } catch (err) {
        if (isAppError(err) && ['UNAUTHORIZED', 'NOT_FOUND', 'FORBIDDEN'].includes(err.code)) throw new AppError('FORBIDDEN', 'Invalid credentials');
        throw err;
      }
    }
    if (typeof input.data !== 'string' || typeof input.signature !== 'string') throw bad(`data and signature are required for ${action}`);
    const caller = await deps.verifier.verify({ data: input.data, signature: input.signature }, { parts: input.legacy ? 4 : 8 });
    if (!input.legacy) {
      const [literal, requestId, dataAction, digest] = caller.extra as [string, string, string, string];
      if (literal !== 'permit') throw bad('Invalid data format: the 5th part must be "permit"');
      if (requestId !== input.requestId) throw bad('The requestId in data does not match the body');
      if (dataAction !== action) throw bad('The action in data does not match the body');
      if (digest !== payloadDigest) throw bad('The payload digest in data does not match the payload');
    }
    const secretId = parseSecretId(caller.subject);
    const secret = (await state.get('secret', secretKey(secretId)))?.body as SecretBody | undefined;
    if (!secret) throw new AppError('NOT_FOUND', `Secret ${secretId} not found`);
    if (secret.ownerPrincipalId !== caller.principalId) throw new AppError('FORBIDDEN', 'Only the owner may request this change');
    if (target !== null) {
      if (target === secret.ownerPrincipalId) throw new AppError('FORBIDDEN', `The owner cannot be named ${action === 'transfer' ? 'new owner' : 'delegate'}`);
      if (!(await verifiedPrincipal(target))) throw new AppError('NOT_FOUND', 'Target principal not found');
    }
    return { principalId: caller.principalId, secretId, auth: evidenceFor(caller, { data: input.data, signature: input.signature }) };
  }

  /**
   * The request in the current form. With `acceptLegacy`, a transfer/delegate without requestId whose
   * data has 4 parts is the legacy form: its object payload becomes compact text and its requestId is
   * derived ({@link legacyRequestId}). Anything else without a requestId, or with an object payload,
   * is malformed (400).
   */
  function currentForm(input: PermitRequestInput): CurrentRequest {
    const legacy =
      options.acceptLegacy === true &&
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

  function summaryOf(action: PermitActionName, secretId: number, value: string | null): string {
    if (action === 'rotate') return `New Ed25519 key ${value!.slice(0, 16)}…`;
    if (action === 'transfer') return `Secret ${secretId}: new owner principal ${value}`;
    return value === null ? `Secret ${secretId}: remove the delegate` : `Secret ${secretId}: delegate principal ${value}`;
  }

  // ---------------------------------------------------------------------------------------------
  // Confirmation (docs/permits.md, "GET /web2/confirm — consumption")

  const members = membersOf(descriptor);
  const selfId = membership.self.id;
  const leaseMs = options.consumeLeaseMs ?? 10_000;
  const threshold = descriptor.threshold;

  // Slot 0: who is consuming which permit. A lease, not a durable record: it only keeps two
  // coordinators from writing the same change twice while the first one is at it.
  const consuming = new Map<string, { coordinator: string; until: number }>();
  deps.creator.register('claimConsume', async (params) => {
    const { permitId, coordinator } = params as { permitId?: unknown; coordinator?: unknown };
    if (typeof permitId !== 'string' || !UUID_V4_RE.test(permitId) || typeof coordinator !== 'string') throw bad('malformed consume claim');
    // A coordinator that missed the consumption (it was partitioned) must not write it again on
    // stale state: slot 0's replica knows, and answers the stored result.
    const stored = (await state.get('permit', permitId))?.body as PermitBody | undefined;
    if (stored?.status === 'consumed') return { granted: false, consumed: stored };
    const now = clock();
    for (const [id, lease] of consuming) if (lease.until <= now) consuming.delete(id);
    const lease = consuming.get(permitId);
    if (lease && lease.coordinator !== coordinator) return { granted: false };
    consuming.set(permitId, { coordinator, until: now + leaseMs });
    return { granted: true };
  });

  /** Consumptions this coordinator wrote that some member has not acked yet. */
  const deliveries = new Map<string, { records: ReplicatedRecord[]; acked: Set<string> }>();
  /** Confirmations in progress here, so concurrent clicks share one. */
  const inflight = new Map<string, Promise<PermitConfirmation>>();
  let redeliverTimer: NodeJS.Timeout | undefined;

  async function checkedPermit(input: PermitConfirmInput): Promise<PermitBody> {
    if (!UUID_V4_RE.test(input.permitId)) throw bad('permitId must be a lowercase UUIDv4');
    // The link may be opened on a coordinator that has not seen the permit yet: look beyond this replica.
    let permit = ((await (deps.fresh ?? state).get('permit', input.permitId))?.body) as PermitBody | undefined;
    if (!permit) throw new AppError('NOT_FOUND', 'Permit not found');
    // Hashes of equal length, compared in constant time: the time taken says nothing about the token.
    const tokenHash = sha256Hex(input.token);
    if (!constantTimeEqual(tokenHash, permit.tokenHash) && permit.status === 'pending' && deps.fresh) {
      // A link mailed on a replay carries a new token (reissuePermitToken); this replica may not hold
      // that version yet.
      permit = ((await deps.fresh.reread('permit', input.permitId))?.body as PermitBody | undefined) ?? permit;
    }
    if (!constantTimeEqual(tokenHash, permit.tokenHash)) throw new AppError('FORBIDDEN', 'Invalid confirmation token');
    return permit;
  }

  /** Permits whose consumption this coordinator saw acknowledged by ≥ threshold members. */
  const durable = new Set<string>();
  const markDurable = (permitId: string) => {
    durable.add(permitId);
    if (durable.size > DURABLE_PERMITS_REMEMBERED) durable.delete(durable.values().next().value!);
  };

  /**
   * The answer for a consumed permit, true when given (docs/permits.md: 200 only at ≥ threshold acks).
   * This coordinator's own consumptions are tracked; any other (consumed through another coordinator,
   * or before a restart, and seen in this replica) is delivered again — the consumption and the
   * change stored with it — and the acks counted: duplicates ack, so this both measures and repairs.
   */
  async function consumedAnswer(permit: PermitBody): Promise<PermitConfirmation> {
    const pending = (successCount: number): PermitConfirmation => ({ status: 'pending', permitId: permit.permitId, action: permit.action, successCount, threshold });
    const consumed: PermitConfirmation = { status: 'consumed', permitId: permit.permitId, action: permit.action, result: permit.result as PermitResult };
    const d = deliveries.get(permit.permitId);
    if (d) return d.acked.size >= threshold ? consumed : pending(d.acked.size);
    if (durable.has(permit.permitId)) return consumed;
    const record = await state.get('permit', permit.permitId);
    if (!record || (record.body as PermitBody).status !== 'consumed') return pending(0);
    const next = await deps.log.logRecord(record.origin, record.seq + 1);
    const change = next && (next.kind === 'secret' || next.kind === 'principal') ? [next] : [];
    const selfHolds = membership.self.slot !== null;
    const others = members.filter((m) => m.id !== selfId).map((m) => m.slot);
    const report = await deps.replicator.resendAll([record, ...change], others);
    const acked = report.acked.length + (selfHolds ? 1 : 0);
    if (acked < threshold) return pending(acked);
    markDurable(permit.permitId);
    return consumed;
  }

  function stale(message: string): AppError {
    return new AppError('CONFLICT', `This permit can no longer be applied: ${message}`);
  }

  /** The change a permit makes, computed from this replica's current state. */
  async function effectOf(permit: PermitBody, now: number): Promise<{ intent: WriteIntent; result: PermitResult }> {
    const value = JSON.parse(permit.payload) as Record<string, string | null>;
    if (permit.action === 'rotate') {
      const principal = await activePrincipal(permit.principalId);
      if (!principal) throw stale('the account was deleted');
      const newPublicKey = value.newPublicKey!;
      const body: PrincipalBody = { ...principal, ed25519PublicKey: newPublicKey, keyProof: null, keyPermitId: permit.permitId, updatedAt: Math.max(now, principal.updatedAt) };
      return { intent: { kind: 'principal', key: permit.principalId, body }, result: { principalId: permit.principalId, newPublicKey } };
    }
    const secret = (await state.get('secret', secretKey(permit.secretId)))?.body as SecretBody | undefined;
    if (!secret) throw new AppError('NOT_READY', `Secret ${permit.secretId} is not known to this coordinator yet; try again`);
    if (secret.ownerPrincipalId !== permit.principalId) throw stale(`secret ${permit.secretId} changed owner since it was requested`);
    const target = permit.action === 'transfer' ? value.newOwnerPrincipalId! : value.delegatePrincipalId!;
    if (target !== null && !(await verifiedPrincipal(target))) throw stale('the target account was deleted');
    const updatedAt = Math.max(now, secret.updatedAt);
    if (permit.action === 'transfer') {
      const delegatePrincipalId = secret.delegatePrincipalId === target ? null : secret.delegatePrincipalId;
      const body: SecretBody = { ...secret, ownerPrincipalId: target!, delegatePrincipalId, updatedAt, auth: { by: 'permit', permitId: permit.permitId } };
      return { intent: { kind: 'secret', key: secretKey(permit.secretId), body }, result: { secretId: permit.secretId, newOwnerPrincipalId: target!, delegatePrincipalId } };
    }
    const body: SecretBody = { ...secret, delegatePrincipalId: target, updatedAt, auth: { by: 'permit', permitId: permit.permitId } };
    return { intent: { kind: 'secret', key: secretKey(permit.secretId), body }, result: { secretId: permit.secretId, delegatePrincipalId: target } };
  }

  /**
   * Ask slot 0 for the right to consume. Granted when slot 0 cannot be asked (members still apply a
   * permit once); refused with the stored permit when slot 0's replica already has it consumed.
   */
  async function claimConsume(permitId: string): Promise<{ granted: boolean; consumed?: PermitBody }> {
    try {
      const res = (await deps.creator.call('claimConsume', { permitId, coordinator: selfId })) as { granted: boolean; consumed?: unknown };
      const consumed = permitBodySchema.safeParse(res.consumed);
      return consumed.success && consumed.data.permitId === permitId && consumed.data.status === 'consumed' ? { granted: false, consumed: consumed.data } : { granted: res.granted === true };
    } catch (err) {
      if (!isAppError(err) || err.code !== 'SLOT0_UNAVAILABLE') throw err;
      log.warn({ permitId }, 'slot 0 unreachable: consuming without a claim');
      return { granted: true };
    }
  }

  /** Wait for another coordinator's consumption to reach this replica. */
  async function awaitConsumed(permitId: string): Promise<PermitBody | undefined> {
    const until = Date.now() + leaseMs;
    for (;;) {
      const p = (await state.get('permit', permitId))?.body as PermitBody | undefined;
      if (p?.status === 'consumed' || Date.now() >= until) return p?.status === 'consumed' ? p : undefined;
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  async function consume(permit: PermitBody, token: string): Promise<PermitConfirmation> {
    const claim = await claimConsume(permit.permitId);
    if (claim.consumed) return consumedAnswer(claim.consumed);
    if (!claim.granted) {
      const done = await awaitConsumed(permit.permitId);
      if (done) return consumedAnswer(done);
      return { status: 'pending', permitId: permit.permitId, action: permit.action, successCount: 0, threshold };
    }
    // Another coordinator may have finished while we asked.
    const current = (await state.get('permit', permit.permitId))?.body as PermitBody;
    if (current.status === 'consumed') return consumedAnswer(current);
    const now = clock();
    if (now >= current.expiresAt) throw new AppError('CONFLICT', 'This permit has expired');
    const { intent, result } = await effectOf(current, now);
    // The token travels with the consumption: every member checks it against the hash it holds.
    const consumed: PermitBody = { ...current, status: 'consumed', consumedAt: now, result, token };
    // The consumption and its change travel as one batch: each member commits both or neither.
    const report = await deps.replicator.replicateAll([{ kind: 'permit', key: current.permitId, body: consumed }, intent], { requireQuorum: false });
    track(current.permitId, report);
    log.info({ permitId: current.permitId, action: current.action, acked: report.acked.length, failed: report.failed.length }, 'permit consumed');
    if (report.acked.length >= threshold) markDurable(current.permitId);
    return report.acked.length >= threshold
      ? { status: 'consumed', permitId: current.permitId, action: current.action, result }
      : { status: 'pending', permitId: current.permitId, action: current.action, successCount: report.acked.length, threshold };
  }

  /** Keep delivering a consumption until every member has acked it. */
  function track(permitId: string, report: BatchWriteReport): void {
    const acked = new Set(report.acked);
    if (acked.size >= members.length) return;
    deliveries.set(permitId, { records: report.records, acked });
    redeliverTimer ??= setInterval(() => void redeliver(), options.redeliverIntervalMs);
  }

  let redelivering = false;
  async function redeliver(): Promise<void> {
    if (redelivering) return;
    redelivering = true;
    try {
      for (const [permitId, d] of deliveries) {
        const missing = members.filter((m) => !d.acked.has(m.nodeAddress) && membership.isReachable(m.slot));
        if (missing.length === 0) continue;
        const report = await deps.replicator.resendAll(d.records, missing.map((m) => m.slot));
        for (const a of report.acked) d.acked.add(a);
        if (d.acked.size >= members.length) {
          deliveries.delete(permitId);
          log.info({ permitId }, 'permit delivered to every member');
        }
      }
    } catch (err) {
      log.warn({ err: (err as Error).message }, 'permit redelivery failed');
    } finally {
      redelivering = false;
      if (deliveries.size === 0 && redeliverTimer) {
        clearInterval(redeliverTimer);
        redeliverTimer = undefined;
      }
    }
  }

  return {
    onStateChanges(changes) {
      for (const { before, after } of changes) {
        if (after.kind !== 'permit') continue;
        const b = after.body as PermitBody;
        if (b.status !== 'consumed' || (before && (before.body as PermitBody).status === 'consumed')) continue;
        deps.applied?.inc({ action: b.action });
        log.info({ permitId: b.permitId, action: b.action, secretId: b.secretId }, 'permit applied');
      }
    },

    stop() {
      if (redeliverTimer) clearInterval(redeliverTimer);
      redeliverTimer = undefined;
    },

    async confirmPermit(input): Promise<PermitConfirmation> {
      const permit = await checkedPermit(input);
      if (permit.status === 'consumed') return consumedAnswer(permit);
      if (clock() >= permit.expiresAt) throw new AppError('CONFLICT', 'This permit has expired');
      let run = inflight.get(permit.permitId);
      if (!run) {
        run = consume(permit, input.token).finally(() => inflight.delete(permit.permitId));
        inflight.set(permit.permitId, run);
      }
      return run;
    },

    async previewPermit(input): Promise<PermitPreview> {
      const permit = await checkedPermit(input);
      const value = parsePayload(permit.action, permit.payload, () => true);
      const status = permit.status === 'consumed' ? 'consumed' : clock() >= permit.expiresAt ? 'expired' : 'pending';
      const preview: PermitPreview = { permitId: permit.permitId, action: permit.action, status, expiresAt: new Date(permit.expiresAt).toISOString(), summary: summaryOf(permit.action, permit.secretId, value) };
      if (permit.result) preview.result = permit.result as PermitResult;
      return preview;
    },

    async requestPermit(raw): Promise<RequestedPermit> {
      const input = currentForm(raw);
      if (!UUID_V4_RE.test(input.requestId)) throw bad('requestId must be a lowercase UUIDv4');
      if (!PERMIT_ACTIONS.includes(input.action as PermitActionName)) throw bad('action must be rotate, transfer or delegate');
      const action = input.action as PermitActionName;
      const value = parsePayload(action, input.payload, deps.isEd25519PublicKeyHex);
      const payloadDigest = sha256Hex(input.payload);
      const { principalId, secretId, auth } = await authorize(input, action, payloadDigest, action === 'rotate' ? null : value);

      reachableMemberSlots(membership);
      // A one-time token, and this coordinator's vouch that it checked the request: slot 0 stores the
      // vouch and the owner's signed string in the permit, and every member checks both (docs/security.md).
      const newToken = () => {
        const tokenBytes = deps.random(TOKEN_BYTES);
        const token = Buffer.from(tokenBytes).toString('base64url');
        tokenBytes.fill(0);
        const tokenHash = sha256Hex(token);
        const requestedBy = { nodeAddress: membership.self.nodeAddress, signature: deps.signDigest(permitRequestDigest(descriptor.clusterId, { requestId: input.requestId, action, principalId, secretId, payloadDigest, tokenHash })) };
        return { token, tokenHash, requestedBy };
      };
      let { token, tokenHash, requestedBy } = newToken();
      const deadline = clock() + (options.createTimeoutMs ?? 2000);
      const res = (await deps.creator.call('createPermit', { requestId: input.requestId, action, principalId, secretId, payload: input.payload, payloadDigest, tokenHash, requestedBy, auth, deadline })) as {
        permitId: string;
        expiresAt: number;
        created: boolean;
        mailed: boolean;
      };
      let mailNow = res.created;
      if (!res.created && !res.mailed) {
        // A replay of a request whose link never went out (the first answer was lost, or the mail
        // failed): mail it now, with a new token — the old one was never seen by anyone.
        ({ token, tokenHash, requestedBy } = newToken());
        const re = (await deps.creator.call('reissuePermitToken', { requestId: input.requestId, tokenHash, requestedBy })) as { reissued: boolean };
        mailNow = re.reissued;
      }
      const expiresAt = new Date(res.expiresAt);
      if (mailNow) {
        const principal = await activePrincipal(principalId);
        if (principal) {
          const link = `${options.publicUrl}/web2/confirm?permitId=${res.permitId}&token=${token}`;
          const mail = deps.mail.permitMail({ action, link, expiresAt, summary: summaryOf(action, secretId, value) });
          deps.mail
            .send({ to: principal.email, ...mail, category: `permit-${action}` })
            .then(() => deps.creator.call('permitMailed', { requestId: input.requestId }))
            .catch((err: unknown) => log.error({ err: (err as Error).message, permitId: res.permitId }, 'permit mail failed'));
        }
        log.info({ permitId: res.permitId, action, secretId, legacy: input.legacy, resent: !res.created }, res.created ? 'permit created' : 'permit link mailed on replay');
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
