/**
 * The sessions capability's ports (docs/http.md, Sessions; docs/architecture.md, Signed data strings): Web2 sessions backed by
 * an ephemeral secp256k1 wallet, granted by a quorum of members, and the one signed-data verifier every
 * signed route uses. Inputs arrive shape-checked by the routes; every rule about their meaning lives
 * in the service, which throws AppErrors.
 */

/** A signed data string and its EIP-191 signature, as sent by a client. */
export interface SignedRequest {
  /** Parts joined by `_` (docs/architecture.md, Signed data strings). */
  data: string;
  /** 65-byte EIP-191 personal_sign signature, hex (0x optional). */
  signature: string;
}

/**
 * How an endpoint's `data` splits: exactly `parts` parts, or with `rest: true` everything after the
 * (parts-1)th `_` is one last part that may itself contain `_` (the plaintext of /encrypt-payload).
 */
export interface SignedDataShape {
  parts: 4 | 5 | 6 | 8;
  rest?: boolean;
  /**
   * Judge freshness at this instant (Unix ms) instead of now: a multipart upload's fields arrive
   * after the file, so POST /encrypt-file judges them against the request's start (docs/http.md, Files and jobs).
   * @default the verifier's clock
   */
  at?: number;
  /**
   * What an unknown or inactive session answers: 403 `No active session` (the default, docs/http.md) or 401
   * `SESSION_INACTIVE` (POST /web2/session/status).
   */
  inactiveSession?: 'forbidden' | 'session-inactive';
  /**
   * Accept Web3 principals too: an enabled chain id > 0, a block number as the freshness part, the
   * wallet itself as the principal (docs/web3.md). Routes opt in one by one, so a route built for
   * Web2 keeps answering `Chain <id> is not supported`. @default false
   */
  web3?: boolean;
}

import type { SessionBody } from './records.ts';

/** An active Web2 session, as stored. */
export interface SessionView {
  principalId: string;
  /** Lowercase 0x address of the session wallet. */
  sessionAddress: string;
  /** Unix ms. */
  expiresAt: number;
}

/** A verified caller: the signed string's parts, the recovered signer and its principal. */
export interface VerifiedCaller {
  /** -1 for Web2, the chain's id for Web3. */
  chainId: number;
  /** `web2` (a session wallet) or `web3` (the wallet itself). */
  userType: 'web2' | 'web3';
  /** The second part, raw (a secretId, `0`, or a principalId depending on the endpoint). */
  subject: string;
  /** Signer address recovered from the signature, lowercase 0x. */
  signer: string;
  /** Freshness part: Unix ms for Web2, a block number for Web3. */
  fresh: number;
  /** Parts after the 4th, in order (the last may contain `_` when the shape has `rest`). */
  extra: string[];
  /** The principal acting: for Web2 the session's principal, for Web3 the wallet address (lowercase 0x). */
  principalId: string;
  /** The session (Web2 only). */
  session?: SessionView;
  /** Every part of `data`, in order. */
  parts: string[];
  /** The session record with its member grants: the evidence a record carries (docs/security.md). Web2 only. */
  sessionRecord?: SessionBody;
}

/** Verifies signed data strings; one instance serves every signed route and the members' checks. */
export interface SignedDataVerifier {
  /**
   * Parse `data` into the shape, check chain, freshness and signature, and resolve the caller.
   * 400 for format, chain and freshness; 403 for a signature that does not recover to the address in
   * `data`; 403 `No active session` (or 401 SESSION_INACTIVE, per shape). `recovery`, when given,
   * recovers the signer in place of the verifier's own (see {@link SignerRecovery}).
   */
  verify(request: SignedRequest, shape: SignedDataShape, recovery?: SignerRecovery): Promise<VerifiedCaller>;
}

/**
 * A caller's own recovery of the signer, run in place of the verifier's once `data`'s format, chain
 * and freshness have passed: how POST /encrypt-payload recovers the signer and seals in one round
 * trip to the request crypto thread. What it answers is checked exactly as the verifier's own
 * recovery is (against the address in `data`, then the session); `undefined` instead of an answer
 * means "recover it yourself". It runs before the signature is known to be good, so it must do
 * nothing an unauthenticated string may not cause.
 */
export type SignerRecovery = (parsed: { chainId: number; subject: string; extra: readonly string[] }) => Promise<{ signer: string | undefined } | undefined>;

/** Body of POST /web2/session, shape-checked. */
export interface CreateSessionInput {
  principalId: string;
  /** Unix ms as a decimal string. */
  timestamp: string;
  /** Ed25519 signature, hex. */
  signature: string;
  sessionAddress: string;
  /** ms; absent means the default. */
  ttl?: number;
}

/** One member's signature over a session grant. */
export interface QuorumSignature {
  nodeAddress: string;
  signature: string;
}

/** 201 body of POST /web2/session. */
export interface CreatedSession {
  /** Hex digest of the grant the quorumProof signatures sign (0x…). */
  sessionToken: string;
  sessionAddress: string;
  quorumProof: QuorumSignature[];
  /** ISO-8601 UTC. */
  expiresAt: string;
}

/** 200 body of POST /web2/session/status. */
export interface SessionStatus {
  active: true;
  principalId: string;
  sessionAddress: string;
  /** ISO-8601 UTC. */
  expiresAt: string;
}

/** The sessions service (HTTP port). */
export interface SessionsService {
  createSession(input: CreateSessionInput): Promise<CreatedSession>;
  sessionStatus(request: SignedRequest): Promise<SessionStatus>;
}
