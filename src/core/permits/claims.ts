/**
 * Slot 0's requestId registry (docs/permits.md, "Idempotency and expiry", "Where a permit lives",
 * "The confirmation mail"): the `createPermit`, `permitMailed` and `reissuePermitToken` operations.
 * Slot 0 keeps requestId → immutable context in its durable `claims` sublevel and replicates the
 * `permit` record before it writes the claim, so a 503 creates nothing and an exact replay returns the
 * original permit. The claim also says whether the link was mailed, and which coordinator holds the
 * mailing lease meanwhile.
 */
import { AppError } from '../../errors/index.ts';
import type { CreatorService } from '../replication/creator.ts';
import type { StateReader } from '../replication/ports.ts';
import { currentRead, type VersionWriter } from '../replication/sequencer.ts';
import { withoutVersion } from '../replication/versions.ts';
import type { StateView } from '../replication/views.ts';
import { serialQueue } from '../serial-queue.ts';
import { signedEvidenceSchema } from '../sessions/evidence.ts';
import { createKeyedWakeups } from '../wakeups.ts';
import { bad } from './payload.ts';
import { PERMIT_ACTIONS, UUID_V4_RE, permitIdFor, permitKindName, type PermitActionName, type PermitBody } from './records.ts';

/**
 * How long after its own deadline a coordinator has to hand the link to the mail transport and say
 * so, ms. Past it, a replay of the request reissues the link.
 */
const MAIL_GRACE_MS = 30_000;

/** Longest a replay waits at slot 0 for a mailing in progress, ms (the caller asks for less). */
const MAIL_WAIT_MAX_MS = 10_000;

/** Options of {@link registerPermitClaims}. */
export interface PermitClaimsOptions {
  /** Permit lifetime, ms. */
  ttlMs: number;
}

/** Dependencies of {@link registerPermitClaims}. */
export interface PermitClaimsDeps {
  creator: Pick<CreatorService, 'register'>;
  /** This node's id: the mailer of the creates and reissues slot 0 runs for itself (as a coordinator). */
  selfId: string;
  /** Slot 0's durable requestId registry. */
  claims: { get(name: string): Promise<string | undefined>; put(name: string, value: string): Promise<void> };
  /** Writes of sequenced kinds: slot 0 writes the permit's versions itself. */
  versions: Pick<VersionWriter, 'update' | 'guard'>;
  /** The cluster's id (a request's permit id is drawn from it). */
  clusterId: string;
  /** Slot 0's replica (the owner's principal version a transfer or delegate is checked against). */
  state: StateReader;
  /** Slot 0's replica of permits (the current token hash). */
  permits: Pick<StateView<PermitBody>, 'get'>;
  clock: () => number;
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
   * Until when the coordinator that created (or last reissued) it may still be mailing the link (Unix
   * ms): a replay before then waits for it; after it, a link never marked mailed is reissued and
   * mailed. 0 once that coordinator gave up (its mail failed).
   */
  mailingUntil?: number;
  /** The node id of that coordinator: only it marks the link mailed or gives the lease up. */
  mailer?: string;
}

/** A mailing lease's end: the coordinator's deadline plus the grace, or 0 when it already gave up waiting. */
const mailingUntilFor = (now: number, deadline: unknown) => {
  const d = typeof deadline === 'number' && Number.isSafeInteger(deadline) ? deadline : now;
  return now > d ? 0 : d + MAIL_GRACE_MS;
};

/** What slot 0 answers a reissue: a new link to mail, a link mailed (or a permit past mailing), or one still being mailed. */
type ReissueAnswer = { reissued: true; permitId: string; expiresAt: number } | { reissued: false; mailing?: true };

/** Register slot 0's permit registry operations with the creator (every node registers; slot 0 runs them). */
export function registerPermitClaims(options: PermitClaimsOptions, deps: PermitClaimsDeps): void {
  const { clock, clusterId } = deps;
  // A permit's request and its token's reissue are slot 0's own writes, on its requestId registry:
  // a coordinator proposing either would pick a token it drew for a request it may only have seen.
  deps.versions.guard('permit', 'request', 'selfOnly');
  deps.versions.guard('permit', 'reissue', 'selfOnly');
  // One permit registry, one order — creates, mail marks and token reissues run one at a time, so
  // replays never race.
  const serialised = serialQueue();

  // requestId → context, permitId and expiry.
  deps.creator.register('createPermit', (params, from) =>
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
      // One request, one permit: its id is the request's (members check it).
      const permitId = permitIdFor(clusterId, p.requestId);
      const expiresAt = now + options.ttlMs;
      // The owner's principal version the session string is checked against: slot 0's current one.
      const authPrincipal = auth ? (await currentRead(deps.state, 'principal', ctx.principalId)).at : null;
      if (auth && !authPrincipal) throw new AppError('NOT_FOUND', 'Principal not found');
      const body: Omit<PermitBody, 'v'> = {
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
        authPrincipal,
        token: null,
      };
      // Replicated before the claim: a failed quorum (503) leaves no claim, so a retry creates it.
      // Every member checks the request as slot 0 does: the coordinator's signature, the owner's string.
      await deps.versions.update(permitKindName, permitId, (current) => {
        if (current) throw new AppError('CONFLICT', 'permit id already used');
        return { change: 'request', body, vouch: false };
      });
      // The creating coordinator mails the link unless it already gave up waiting for this answer
      // (its deadline passed: the request sat in a stalled connection), in which case nobody will.
      const mailingUntil = mailingUntilFor(clock(), p.deadline);
      await deps.claims.put(claimName, JSON.stringify({ permitId, context: contextKey(ctx), expiresAt, mailed: false, mailingUntil, mailer: from?.id ?? deps.selfId } satisfies PermitClaim));
      return { permitId, expiresAt, created: true, mailed: false };
    }),
  );

  // Replays waiting for a mailing in progress, by requestId: woken when its coordinator marks it.
  const mailings = createKeyedWakeups();

  // The coordinator holding the mailing lease reports: its link was handed to the mail transport
  // (`sent`), or it could not be (the lease ends, so the next replay reissues at once). Only the lease
  // holder, and only for the permit's current token: a coordinator cannot end another's mailing, and
  // a link a reissue replaced is never counted as mailed. Answers whether that link is the live one.
  deps.creator.register('permitMailed', (params, from) =>
    serialised(async () => {
      const { requestId, tokenHash, sent } = params as { requestId?: unknown; tokenHash?: unknown; sent?: unknown };
      if (typeof requestId !== 'string' || !UUID_V4_RE.test(requestId) || typeof tokenHash !== 'string' || typeof sent !== 'boolean') throw bad('malformed permit mail mark');
      const claimName = `permit:${requestId}`;
      const raw = await deps.claims.get(claimName);
      if (!raw) throw new AppError('NOT_FOUND', 'Unknown permit request');
      const claim = JSON.parse(raw) as PermitClaim;
      const live = (await deps.permits.get(claim.permitId))?.tokenHash === tokenHash;
      if (!live || (claim.mailer !== undefined && claim.mailer !== (from?.id ?? deps.selfId))) return { current: false };
      if (claim.mailed !== false) return { current: sent };
      await deps.claims.put(claimName, JSON.stringify({ ...claim, ...(sent ? { mailed: true } : { mailingUntil: 0 }) } satisfies PermitClaim));
      mailings.wake(requestId);
      return { current: sent };
    }),
  );

  // A replayed request whose link was never mailed (its first answer was lost, or the mail failed)
  // gets a new token: the pending permit is written again with its hash, so only the link mailed now
  // works. Only the token (and the vouch over it) changes. While another coordinator still holds the
  // mailing lease, the replay waits for its mark (up to `waitMs`) instead of cutting its link off.
  const reissueStep = (requestId: string, tokenHash: string, requestedBy: PermitBody['requestedBy'], deadline: unknown, mailer: string, waitUntil: number) =>
    serialised(async (): Promise<ReissueAnswer | { settled: Promise<void> }> => {
      const claimName = `permit:${requestId}`;
      const raw = await deps.claims.get(claimName);
      if (!raw) throw new AppError('NOT_FOUND', 'Unknown permit request');
      const claim = JSON.parse(raw) as PermitClaim;
      if (claim.mailed !== false) return { reissued: false };
      const now = clock();
      const mailingUntil = claim.mailingUntil ?? 0;
      if (mailingUntil > now) {
        // Listening inside the queue, where marks run: a mark cannot slip in between.
        if (waitUntil > now) return { settled: mailings.next(requestId, AbortSignal.timeout(Math.min(mailingUntil, waitUntil) - now)) };
        return { reissued: false, mailing: true };
      }
      const write = await deps.versions.update(permitKindName, claim.permitId, (current) => {
        if (!current || current.body.status !== 'pending' || clock() >= current.body.expiresAt) return undefined;
        return { change: 'reissue', body: { ...withoutVersion(current.body as PermitBody), tokenHash, requestedBy }, vouch: false };
      });
      if (!write.written) return { reissued: false };
      // The reissuing coordinator now holds the mailing lease, as the creating one did.
      await deps.claims.put(claimName, JSON.stringify({ ...claim, mailingUntil: mailingUntilFor(clock(), deadline), mailer } satisfies PermitClaim));
      return { reissued: true, permitId: claim.permitId, expiresAt: write.record.body.expiresAt };
    });

  deps.creator.register('reissuePermitToken', async (params, from) => {
    const { requestId, tokenHash, requestedBy, deadline, waitMs } = params as { requestId?: unknown; tokenHash?: unknown; requestedBy?: unknown; deadline?: unknown; waitMs?: unknown };
    if (typeof requestId !== 'string' || !UUID_V4_RE.test(requestId) || typeof tokenHash !== 'string' || !/^[0-9a-f]{64}$/.test(tokenHash) || !requestedBy || typeof requestedBy !== 'object') {
      throw bad('malformed token reissue');
    }
    const wait = typeof waitMs === 'number' && Number.isSafeInteger(waitMs) ? Math.max(0, Math.min(waitMs, MAIL_WAIT_MAX_MS)) : 0;
    const step = (waitUntil: number) => reissueStep(requestId, tokenHash, requestedBy as PermitBody['requestedBy'], deadline, from?.id ?? deps.selfId, waitUntil);
    const first = await step(clock() + wait);
    if (!('settled' in first)) return first;
    await first.settled;
    return (await step(0)) as ReissueAnswer;
  });
}
