/**
 * Permits V2 (docs/permits.md), composed: the request half ("POST /web2/permit — request",
 * "Authorization", "Idempotency and expiry", "Where a permit lives") and the confirmation ("GET
 * /web2/confirm — consumption"). The coordinator checks the request completely (payload.ts,
 * authorize.ts), then asks slot 0 to create the permit (claims.ts): slot 0 serialises creates, keeps
 * requestId → immutable context in its durable `claims` sublevel, and replicates the `permit` record
 * before it answers, so a 503 creates nothing and an exact replay returns the original permit without
 * a second email. The confirmation link's one-time token is drawn by the coordinator, mailed before
 * the answer (docs/permits.md, "The confirmation mail": a 201 or 200 only once it went out and slot 0
 * recorded it), and stored only as a hash. A confirmation takes slot 0's consume lease (lease.ts), writes the
 * consumption with its change (effects.ts) and keeps delivering both to every member (delivery.ts).
 */
import { constantTimeEqual, sha256Hex } from '../../crypto/index.ts';
import { AppError } from '../../errors/index.ts';
import type { Logger } from '../../log/index.ts';
import type { Startable } from '../lifecycle.ts';
import { principalKindName } from '../accounts/records.ts';
import type { AccountsService } from '../accounts/types.ts';
import type { OutgoingMail } from '../mail-port.ts';
import type { CreatorService } from '../replication/creator.ts';
import type { StateChange } from '../replication/engine.ts';
import type { FreshReader } from '../replication/fresh-read.ts';
import { reachableMemberSlots } from '../replication/gather.ts';
import type { MembershipView, Replicator, StateReader } from '../replication/ports.ts';
import type { Proposed, Versioned, VersionWriter } from '../replication/sequencer.ts';
import { withoutVersion } from '../replication/versions.ts';
import { kindName, stateView } from '../replication/views.ts';
import type { SecretBody } from '../secrets/records.ts';
import type { SignedDataVerifier } from '../sessions/types.ts';
import { activePrincipal, authorizePermit, type PermitReads } from './authorize.ts';
import { registerPermitClaims, type PermitClaimsDeps } from './claims.ts';
import { createPermitDelivery, type PermitDeliveryDeps } from './delivery.ts';
import { effectOf } from './effects.ts';
import { createConsumeLeases } from './lease.ts';
import { bad, currentForm, parsePayload, summaryOf } from './payload.ts';
import { PERMIT_ACTIONS, UUID_V4_RE, permitKindName, permitRequestDigest, type PermitActionName, type PermitBody } from './records.ts';
import type { PermitConfirmation, PermitConfirmInput, PermitPreview, PermitResult, PermitsService, RequestedPermit } from './types.ts';

/** Bytes of the emailed one-time token (≥ 128 bits). */
const TOKEN_BYTES = 32;

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
  /** Writes of sequenced kinds (permits, and the changes they make), through slot 0. */
  versions: Pick<VersionWriter, 'update' | 'proposeUntilWritten' | 'versionAfter' | 'guard'>;
  state: StateReader;
  /** Reads that catch up before answering "not found". */
  fresh?: FreshReader;
  /** The local log, to find the change stored with a consumption (it follows it in its origin's log). */
  log: PermitDeliveryDeps['log'];
  membership: MembershipView;
  creator: Pick<CreatorService, 'register' | 'call'>;
  /** Slot 0's durable requestId registry. */
  claims: PermitClaimsDeps['claims'];
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
  /** The node's lifetime: ends the redelivery of consumptions when aborted. @default only {@link PermitsCapability.stop} ends it */
  signal?: AbortSignal;
}

/** The permits capability as the node composes it: the HTTP port plus its lifecycle. */
export interface PermitsCapability extends PermitsService, Startable {
  /**
   * Engine hook: wake the confirmations waiting for a permit that changed, and count and log each
   * permit this replica applies (pending or absent → consumed).
   */
  onStateChanges(changes: readonly StateChange[]): void;
  /** Stop background delivery (waits for a round in flight); idempotent. */
  stop(): Promise<void>;
}

/** Create the permits service; registers slot 0's operations (`createPermit`, `permitMailed`, `reissuePermitToken`, `claimConsume`). */
export function createPermitsService(options: PermitsOptions, deps: PermitsDeps): PermitsCapability {
  const { state, membership, clock } = deps;
  const { descriptor } = membership;
  const log = deps.logger.child({ module: 'permits' });
  const permits = stateView(state, permitKindName);
  const reads: PermitReads = { principals: stateView(state, principalKindName), secrets: stateView(state, kindName<SecretBody>('secret')) };
  const threshold = descriptor.threshold;

  registerPermitClaims({ ttlMs: options.ttlMs }, { creator: deps.creator, selfId: membership.self.id, claims: deps.claims, versions: deps.versions, clusterId: descriptor.clusterId, state, permits, clock });
  const leases = createConsumeLeases({ leaseMs: options.consumeLeaseMs ?? 10_000, coordinator: membership.self.id }, { creator: deps.creator, permits, clock, logger: log });
  const delivery = createPermitDelivery({ redeliverIntervalMs: options.redeliverIntervalMs }, { replicator: deps.replicator, membership, permits, log: deps.log, logger: log, signal: deps.signal ?? new AbortController().signal });

  /** Confirmations in progress here, so concurrent clicks share one. */
  const inflight = new Map<string, Promise<PermitConfirmation>>();

  async function checkedPermit(input: PermitConfirmInput): Promise<PermitBody> {
    if (!UUID_V4_RE.test(input.permitId)) throw bad('permitId must be a lowercase UUIDv4');
    // The link may be opened on a coordinator that has not seen the permit yet: look beyond this replica.
    // (A FreshReader is no StateReader, so these two reads are not typed views.)
    let permit = (await (deps.fresh ?? state).get('permit', input.permitId))?.body as PermitBody | undefined;
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

  async function consume(permit: PermitBody, token: string): Promise<PermitConfirmation> {
    const claim = await leases.claim(permit.permitId);
    if (claim.consumed) {
      // Slot 0's replica holds the consumption; this one may not yet (another coordinator wrote it a
      // moment ago). The answer is about the record this replica holds and can send again, so wait
      // for it (the lease's time at most) rather than call a consumed permit pending.
      return delivery.consumedAnswer((await leases.awaitConsumed(permit.permitId)) ?? claim.consumed);
    }
    if (!claim.granted) {
      const done = await leases.awaitConsumed(permit.permitId);
      if (done) return delivery.consumedAnswer(done);
      return { status: 'pending', permitId: permit.permitId, action: permit.action, successCount: 0, threshold };
    }
    let result: PermitResult | undefined;
    // Racing changes to the secret meanwhile: slot 0's newer versions are in this replica then, and
    // the consumption is built again on them.
    const outcome = await deps.versions.proposeUntilWritten<PermitConfirmation>(
      async () => {
        // Another coordinator may have finished while we asked.
        const current = (await permits.record(permit.permitId))!;
        if (current.body.status === 'consumed') return { done: await delivery.consumedAnswer(current.body) };
        const now = clock();
        if (now >= current.body.expiresAt) throw new AppError('CONFLICT', 'This permit has expired');
        const effect = await effectOf(current.body, now, reads);
        result = effect.result;
        // The token travels with the consumption: every member checks it against the hash it holds.
        const consumed = deps.versions.versionAfter<PermitBody>('permit', current.key, current, { change: 'consume', body: { ...withoutVersion(current.body as PermitBody), status: 'consumed', consumedAt: now, result: effect.result, token }, vouch: false });
        const change = deps.versions.versionAfter(effect.kind, effect.key, effect.current as Versioned<never>, effect.proposed as Proposed<never>);
        // The consumption and its change, one batch written by slot 0: each member commits both or
        // neither, and the change is the record right after the consumption — one permit, one change.
        return {
          proposals: [
            { kind: 'permit', key: current.key, body: consumed },
            { kind: effect.kind, key: effect.key, body: change },
          ],
        };
      },
      { requireQuorum: false },
    );
    if ('done' in outcome) return outcome.done;
    const report = outcome.written;
    delivery.track(permit.permitId, report);
    log.info({ permitId: permit.permitId, action: permit.action, acked: report.acked.length, failed: report.failed.length }, 'permit consumed');
    return report.acked.length >= threshold
      ? { status: 'consumed', permitId: permit.permitId, action: permit.action, result: result! }
      : { status: 'pending', permitId: permit.permitId, action: permit.action, successCount: report.acked.length, threshold };
  }

  /** A 503 for a link not (known to be) mailed: the permit is kept, and the exact retry mails it (docs/permits.md, "The confirmation mail"). */
  function notMailed(permitId: string, reason: 'mailing' | 'send_failed' | 'not_recorded' | 'superseded', message: string, cause?: unknown): AppError {
    log.warn({ permitId, reason }, 'permit link not mailed');
    return new AppError('MAIL_UNAVAILABLE', message, undefined, cause === undefined ? undefined : { cause });
  }

  /**
   * Mail a permit's link and have slot 0 record it (docs/permits.md, "The confirmation mail"): resolves
   * only once the mail transport took the message and slot 0 counts this very link as mailed, so a
   * 201 or 200 is never given for a link that did not go out. Otherwise 503 MAIL_UNAVAILABLE, and the
   * exact retry mails a link (a new token: this one is never stored).
   */
  async function mailLink(m: { requestId: string; permitId: string; principalId: string; action: PermitActionName; link: string; tokenHash: string; expiresAt: Date; summary: string }): Promise<void> {
    const mark = async (sent: boolean) => ((await deps.creator.call('permitMailed', { requestId: m.requestId, tokenHash: m.tokenHash, sent })) as { current?: unknown }).current === true;
    // Gives the mailing lease up, so the retry does not wait for it; slot 0 unreachable: the lease ends by itself.
    const release = () => mark(false).catch(() => false);
    const principal = await activePrincipal(reads.principals, m.principalId);
    if (!principal) {
      await release();
      throw new AppError('CONFLICT', 'This permit can no longer be applied: the account is not active');
    }
    const message = deps.mail.permitMail({ action: m.action, link: m.link, expiresAt: m.expiresAt, summary: m.summary });
    try {
      await deps.mail.send({ to: principal.email, ...message, category: `permit-${m.action}` });
    } catch (err) {
      await release();
      throw notMailed(m.permitId, 'send_failed', 'The confirmation mail could not be sent; retry with the same requestId', err);
    }
    let current: boolean;
    try {
      current = await mark(true);
    } catch (err) {
      // The mail went out, but slot 0 cannot count it: a replay after the lease may replace this link.
      throw notMailed(m.permitId, 'not_recorded', 'The confirmation mail could not be recorded; retry with the same requestId', err);
    }
    if (!current) throw notMailed(m.permitId, 'superseded', 'A newer confirmation link was issued meanwhile; retry with the same requestId');
  }

  return {
    onStateChanges(changes) {
      for (const { before, after } of changes) {
        if (after.kind !== 'permit') continue;
        leases.permitChanged(after.key);
        const b = after.body as PermitBody;
        if (b.status !== 'consumed' || (before && (before.body as PermitBody).status === 'consumed')) continue;
        deps.applied?.inc({ action: b.action });
        log.info({ permitId: b.permitId, action: b.action, secretId: b.secretId }, 'permit applied');
      }
    },

    stop() {
      return delivery.stop();
    },

    async confirmPermit(input): Promise<PermitConfirmation> {
      const permit = await checkedPermit(input);
      if (permit.status === 'consumed') return delivery.consumedAnswer(permit);
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
      const input = currentForm(raw, options.acceptLegacy === true);
      if (!UUID_V4_RE.test(input.requestId)) throw bad('requestId must be a lowercase UUIDv4');
      if (!PERMIT_ACTIONS.includes(input.action as PermitActionName)) throw bad('action must be rotate, transfer or delegate');
      const action = input.action as PermitActionName;
      const value = parsePayload(action, input.payload, deps.isEd25519PublicKeyHex);
      const payloadDigest = sha256Hex(input.payload);
      const { principalId, secretId, auth } = await authorizePermit(input, action, payloadDigest, action === 'rotate' ? null : value, { ...reads, verifier: deps.verifier, accounts: deps.accounts });

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
      const createTimeoutMs = options.createTimeoutMs ?? 2000;
      const deadline = clock() + createTimeoutMs;
      const res = (await deps.creator.call('createPermit', { requestId: input.requestId, action, principalId, secretId, payload: input.payload, payloadDigest, tokenHash, requestedBy, auth, deadline })) as {
        permitId: string;
        expiresAt: number;
        created: boolean;
        mailed: boolean;
      };
      let mailNow = res.created;
      if (!res.created && !res.mailed) {
        // A replay of a request whose link never went out (the first answer was lost, or the mail
        // failed): mail it now, with a new token — the old one was never seen by anyone. If another
        // coordinator is still mailing it, slot 0 waits a while for its mark.
        ({ token, tokenHash, requestedBy } = newToken());
        const re = (await deps.creator.call('reissuePermitToken', { requestId: input.requestId, tokenHash, requestedBy, deadline: clock() + createTimeoutMs, waitMs: Math.floor(createTimeoutMs / 2) })) as {
          reissued: boolean;
          mailing?: boolean;
        };
        if (re.mailing) throw notMailed(res.permitId, 'mailing', 'The confirmation link is still being mailed; retry with the same requestId');
        mailNow = re.reissued;
      }
      const expiresAt = new Date(res.expiresAt);
      if (mailNow) {
        await mailLink({ requestId: input.requestId, permitId: res.permitId, principalId, action, link: `${options.publicUrl}/web2/confirm?permitId=${res.permitId}&token=${token}`, tokenHash, expiresAt, summary: summaryOf(action, secretId, value) });
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
