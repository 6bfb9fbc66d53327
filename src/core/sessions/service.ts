/**
 * Web2 sessions (docs/http.md, Sessions): a principal proves its registered Ed25519 key over
 * `cifer_session:<principalId>:<timestamp>:<sessionAddress>[:<ttl>]`; each member checks that proof
 * against the key in its own replica and signs a grant with its secp256k1 key (`grant` protocol);
 * ≥ threshold grants form the quorumProof and the session record is replicated. A session is active
 * while unexpired, its principal not deleted and the principal's key unchanged — so account deletion
 * and key rotation end sessions without writing anything per session.
 */
import { z } from 'zod';
import { AppError, QuorumError, refusal } from '../../errors/index.ts';
import type { Logger } from '../../log/index.ts';
import type { ClusterNodeEntry, MemberRpc, MembershipView, Replicator, StateReader, VersionVector } from '../replication/ports.ts';
import { isCoordinatorEntry, membersOf, parseVersionVector } from '../replication/ports.ts';
import { createMemberLoad, gatherFromMembers, memberFailures } from '../replication/gather.ts';
import { PRINCIPAL_ID_RE, type PrincipalBody } from '../accounts/records.ts';
import { isSessionActive, sessionGrantDigest, sessionTokenOf, type SessionBody, type SessionGrant } from './records.ts';
import { WEB2_FRESHNESS_MS } from './signed-data.ts';
import type { CreatedSession, CreateSessionInput, SessionsService, SessionStatus, SignedDataVerifier } from './types.ts';

/** ttl bounds and default, ms (docs/http.md, Sessions). */
export const SESSION_TTL_MIN_MS = 60_000;
export const SESSION_TTL_MAX_MS = 2_592_000_000;
export const SESSION_TTL_DEFAULT_MS = 900_000;
/** How far a grant's issue time may be from a member's own clock (clock skew between nodes), ms. */
const GRANT_ISSUE_SKEW_MS = 60_000;

const TIMESTAMP_RE = /^\d{1,16}$/;
const ADDRESS_RE = /^0x[0-9a-fA-F]{40}$/;
const ED25519_SIG_RE = /^[0-9a-fA-F]{128}$/;

/** The message a principal signs to open a session. */
export function sessionMessage(principalId: string, timestamp: string, sessionAddress: string, ttl?: number): string {
  return `cifer_session:${principalId}:${timestamp}:${sessionAddress}` + (ttl === undefined ? '' : `:${ttl}`);
}

/**
 * What a coordinator sends each member over `grant`, decoded at the member's edge (400 `malformed`
 * otherwise). `timestamp` and `sessionAddress` travel as the client sent them: the Ed25519 message is
 * over these exact strings. `vv` is the requester's version vector: the member grants only once it
 * holds as much (catch-up gate; malformed entries are dropped).
 */
const grantRequestSchema = z.object({
  principalId: z.string().regex(PRINCIPAL_ID_RE),
  timestamp: z.string().regex(TIMESTAMP_RE),
  sessionAddress: z.string().regex(ADDRESS_RE),
  ttl: z.int().min(SESSION_TTL_MIN_MS).max(SESSION_TTL_MAX_MS).nullable(),
  signature: z.string().regex(ED25519_SIG_RE),
  issuedAt: z.int(),
  vv: z.unknown().optional().transform(parseVersionVector),
});
type GrantRequest = z.output<typeof grantRequestSchema>;

/** Options of {@link createSessionsService}. */
export interface SessionsOptions {
  /** Deadline of one member's grant, ms. */
  grantTimeoutMs: number;
}

/** Dependencies of {@link createSessionsService}. */
export interface SessionsDeps {
  replicator: Pick<Replicator, 'replicate'>;
  state: StateReader;
  membership: MembershipView;
  members: MemberRpc;
  verifier: SignedDataVerifier;
  /** This node's secp256k1 signature over a 32-byte digest, 0x-hex (65 bytes). */
  signDigest(digest: Uint8Array): string;
  verifyEd25519(publicKeyHex: string, message: string, signatureHex: string): boolean;
  /** This node's version vector, sent with grant requests. */
  versionVector(): VersionVector;
  /** The catch-up gate: resolves once this member holds what the requester held; NOT_READY otherwise. */
  catchUp(requester: VersionVector, from: ClusterNodeEntry): Promise<void>;
  clock: () => number;
  logger: Logger;
}

/** The sessions capability: the HTTP port plus the member's `grant` handler. */
export interface SessionsCapability extends SessionsService {
  /** A member's `grant` handler. */
  handleGrant(body: unknown, from: ClusterNodeEntry): Promise<{ nodeAddress: string; signature: string }>;
}

function parseTtl(ttl: number | undefined): number {
  if (ttl === undefined) return SESSION_TTL_DEFAULT_MS;
  if (!Number.isSafeInteger(ttl) || ttl < SESSION_TTL_MIN_MS || ttl > SESSION_TTL_MAX_MS) {
    throw new AppError('BAD_REQUEST', `ttl must be an integer number of ms between ${SESSION_TTL_MIN_MS} and ${SESSION_TTL_MAX_MS}`);
  }
  return ttl;
}

/** Create the sessions service. */
export function createSessionsService(options: SessionsOptions, deps: SessionsDeps): SessionsCapability {
  const { state, membership, clock } = deps;
  const { descriptor, self } = membership;
  const log = deps.logger.child({ module: 'sessions' });
  // Grants spread over the members: this node's own first, the others by calls in flight.
  const grantLoad = createMemberLoad();

  async function principalOf(principalId: string): Promise<PrincipalBody | undefined> {
    const p = (await state.get('principal', principalId))?.body as PrincipalBody | undefined;
    return p && p.status === 'active' ? p : undefined;
  }

  /** Checks every node runs on a session request; returns the principal's key. */
  async function checkProof(req: Omit<GrantRequest, 'issuedAt'>, now: number): Promise<string> {
    const principal = await principalOf(req.principalId);
    if (!principal) throw refusal('NOT_FOUND', 'unknown_principal', 'Principal not found');
    const key = principal.ed25519PublicKey;
    if (!key) throw refusal('FORBIDDEN', 'unknown_principal', 'No Ed25519 key registered for this principal');
    const message = sessionMessage(req.principalId, req.timestamp, req.sessionAddress, req.ttl ?? undefined);
    if (!deps.verifyEd25519(key, message, req.signature.toLowerCase())) throw refusal('UNAUTHORIZED', 'unverified', 'Invalid signature');
    if (Math.abs(now - Number(req.timestamp)) > WEB2_FRESHNESS_MS) throw refusal('BAD_REQUEST', 'unverified', 'timestamp is outside the allowed window of ±10 minutes');
    // A session address already bound to another principal's live session is not taken over.
    const current = (await state.get('session', req.sessionAddress.toLowerCase()))?.body as SessionBody | undefined;
    if (current && current.principalId !== req.principalId && isSessionActive(current, await principalOf(current.principalId), now)) {
      throw refusal('FORBIDDEN', 'address_in_use', 'Session address is in use by another principal');
    }
    return key;
  }

  function grantOf(req: GrantRequest, publicKey: string): SessionGrant {
    const ttl = req.ttl ?? SESSION_TTL_DEFAULT_MS;
    return { principalId: req.principalId, sessionAddress: req.sessionAddress.toLowerCase(), publicKey, issuedAt: req.issuedAt, expiresAt: req.issuedAt + ttl };
  }

  function parseGrantRequest(body: unknown): GrantRequest {
    const parsed = grantRequestSchema.safeParse(body);
    if (parsed.success) return parsed.data;
    const field = parsed.error.issues[0]?.path.join('.') || 'body';
    throw refusal('BAD_REQUEST', 'malformed', `malformed grant request: ${field}`);
  }

  const service: SessionsCapability = {
    async createSession(input: CreateSessionInput): Promise<CreatedSession> {
      if (!TIMESTAMP_RE.test(input.timestamp)) throw new AppError('BAD_REQUEST', 'timestamp must be Unix milliseconds as a string of digits');
      if (!ADDRESS_RE.test(input.sessionAddress)) throw new AppError('BAD_REQUEST', 'sessionAddress must be 0x followed by 40 hex characters');
      const ttl = parseTtl(input.ttl);
      if (!ED25519_SIG_RE.test(input.signature)) throw new AppError('UNAUTHORIZED', 'Invalid signature: expected 64 bytes of hex');
      if (!PRINCIPAL_ID_RE.test(input.principalId)) throw new AppError('NOT_FOUND', 'Principal not found');
      const now = clock();
      const req: GrantRequest = {
        principalId: input.principalId,
        timestamp: input.timestamp,
        sessionAddress: input.sessionAddress,
        ttl: input.ttl === undefined ? null : ttl,
        signature: input.signature,
        issuedAt: now,
        vv: deps.versionVector(),
      };
      const publicKey = await checkProof(req, now);

      const slots = grantLoad.order(membership);
      const { results, failures } = await gatherFromMembers({
        slots,
        needed: descriptor.threshold,
        timeoutMs: options.grantTimeoutMs,
        load: grantLoad,
        call: async (slot, signal) => (await deps.members.call(slot, 'grant', req, { signal })) as { nodeAddress: string; signature: string },
      });
      const grant = grantOf(req, publicKey);
      if (results.length < descriptor.threshold) {
        const failed = memberFailures(membership, failures);
        const refused = failures.filter((f) => f.error instanceof AppError).length;
        log.warn({ principalId: req.principalId, granted: results.length, failed }, 'session grant quorum not reached');
        // Members that answered and refused disagree with us (e.g. a stale replica): 403. Members we could not reach: 503.
        if (refused > 0 && results.length + refused >= descriptor.threshold) {
          throw new AppError('FORBIDDEN', `Session quorum not reached: ${refused} members refused the grant (is the key registered on ≥ ${descriptor.threshold} members? retry node registration)`);
        }
        throw new QuorumError(`Session quorum not reached: ${results.length} of ${descriptor.threshold} grants`, results.map((r) => membersOf(descriptor)[r.slot]!.nodeAddress), failed);
      }
      const quorumProof = results.map((r) => ({ nodeAddress: r.value.nodeAddress, signature: r.value.signature }));
      const body: SessionBody = { ...grant, grants: quorumProof };
      await deps.replicator.replicate({ kind: 'session', key: grant.sessionAddress, body });
      log.info({ principalId: req.principalId, expiresAt: grant.expiresAt }, 'session created');
      return {
        sessionToken: sessionTokenOf(descriptor.clusterId, grant),
        sessionAddress: input.sessionAddress,
        quorumProof,
        expiresAt: new Date(grant.expiresAt).toISOString(),
      };
    },

    async sessionStatus(request): Promise<SessionStatus> {
      const caller = await deps.verifier.verify(request, { parts: 4, inactiveSession: 'session-inactive' });
      if (caller.subject !== '0') throw new AppError('BAD_REQUEST', 'Invalid data format: the second part must be 0');
      // Web2 only (the shape does not accept Web3): a session is always there.
      const session = caller.session!;
      return { active: true, principalId: caller.principalId, sessionAddress: session.sessionAddress, expiresAt: new Date(session.expiresAt).toISOString() };
    },

    async handleGrant(body, from) {
      // Sessions are written by coordinators; nobody else has a client to grant for.
      if (!isCoordinatorEntry(from)) throw refusal('FORBIDDEN', 'not_coordinator', 'grants are given to coordinators only');
      const req = parseGrantRequest(body);
      await deps.catchUp(req.vv, from);
      const now = clock();
      if (Math.abs(req.issuedAt - now) > GRANT_ISSUE_SKEW_MS) throw refusal('FORBIDDEN', 'clock_skew', "grant issue time is too far from this member's clock");
      const publicKey = await checkProof(req, now);
      return { nodeAddress: self.nodeAddress, signature: deps.signDigest(sessionGrantDigest(descriptor.clusterId, grantOf(req, publicKey))) };
    },
  };
  return service;
}
