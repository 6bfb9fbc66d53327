/**
 * Client evidence inside records (docs/security.md, "Evidence in the record"). A change a client
 * authorised with its session wallet — a secret's creation, a delegate change, a transfer or
 * delegate permit — carries the client's signed data string, its EIP-191 signature and the session
 * record (with its quorum of member grants). Every member checks it itself, statelessly:
 *
 * 1. the session's quorum proof: ≥ threshold distinct members granted it (so no coordinator alone
 *    could mint the session that signs);
 * 2. the string's shape (the endpoint's exact part count, chain -1, canonical numbers), its signer
 *    (EIP-191 recovery) equal to the session address in the string and in the session;
 * 3. time: the record written while the session was live, and the string's timestamp within the
 *    freshness window of the record's own clock — a record cannot be backed by a string signed long
 *    before it was written.
 *
 * What the evidence authorises (which principal, which secret, which value) is then compared with the
 * record's body by the record kind.
 */
import { z } from 'zod';
import type { ClusterDescriptor } from '../replication/ports.ts';
import { createLruCache, recoverPersonalSigner, sha256Hex } from '../../crypto/index.ts';
import type { RecordContext } from '../replication/kinds.ts';
import { refusal, type RecordRefusal } from '../replication/refusals.ts';
import { awaiting, type LogRef } from '../replication/versions.ts';
import { checkQuorumProof, sessionBodySchema, type SessionBody } from './records.ts';
import { signedInSdkForm, splitSignedData, WEB2_CHAIN_ID, WEB2_FRESHNESS_MS } from './signed-data.ts';
import { createSignerMemo, type SignerMemo } from './signer-memo.ts';

/** Longest signed string carried as evidence (the 8-part permit string is the longest kind). */
const MAX_EVIDENCE_DATA_CHARS = 1024;
/**
 * Slack on the session's life at the record's time, ms: the coordinator checked the session against
 * its clock a moment before it stamped the record (and members' clocks differ by up to this much).
 */
const SESSION_LIFE_SKEW_MS = 60_000;

export const signedEvidenceSchema = z.strictObject({
  /** The client's signed data string, exactly as signed. */
  data: z.string().min(1).max(MAX_EVIDENCE_DATA_CHARS),
  /** Its EIP-191 signature, 0x + 130 hex. */
  signature: z.string().regex(/^0x[0-9a-fA-F]{130}$/),
  /** The session whose wallet signed it, with its member grants. */
  session: sessionBodySchema,
});
export type SignedEvidence = z.infer<typeof signedEvidenceSchema>;

/** What a checked piece of evidence says. */
export interface CheckedEvidence {
  /** The string's parts. */
  parts: string[];
  /** The principal of the signing session. */
  principalId: string;
  /** The string's timestamp, Unix ms. */
  timestamp: number;
}

/** Checks evidence; one per node, so the quorum proof of a session is verified once, not per record. */
export type EvidenceChecker = (evidence: SignedEvidence, expect: { parts: number; atMs: number }) => CheckedEvidence | string;

/** Sessions whose quorum proof a checker remembers. */
const PROOF_CACHE_ENTRIES = 4096;

/**
 * A checker for `descriptor` with a cache of verified quorum proofs (each costs threshold signature
 * recoveries, and one session backs many records). The cache holds only verdicts on public data.
 */
export function createEvidenceChecker(descriptor: ClusterDescriptor, signers: SignerMemo = createSignerMemo()): EvidenceChecker {
  const proofs = createLruCache<{ problem: string | undefined }>(PROOF_CACHE_ENTRIES);
  const proofOf = (s: SessionBody) =>
    proofs.getOrCreate(`${s.sessionAddress}|${s.principalId}|${s.publicKey}|${s.issuedAt}|${s.expiresAt}|${s.grants.map((g) => g.nodeAddress + g.signature).join(',')}`, () => ({
      problem: checkQuorumProof(descriptor, s, s.grants),
    })).problem;
  const recover = (data: string, signature: string): string | undefined => {
    const known = signers.get(data, signature);
    if (known !== null) return known;
    const signer = recoverPersonalSigner(data, signature);
    signers.set(data, signature, signer);
    return signer;
  };
  return (evidence, expect) => checkSignedEvidence(descriptor, evidence, expect, proofOf, recover);
}

/**
 * Check signed evidence against a record written at `atMs`; returns what it says, or a refusal
 * reason. Deterministic: it reads nothing but its arguments, so every member decides alike.
 */
export function checkSignedEvidence(
  descriptor: ClusterDescriptor,
  evidence: SignedEvidence,
  expect: { parts: number; atMs: number },
  proofOf: (s: SessionBody) => string | undefined = (s) => checkQuorumProof(descriptor, s, s.grants),
  recover: (data: string, signature: string) => string | undefined = recoverPersonalSigner,
): CheckedEvidence | string {
  const parts = splitSignedData(evidence.data, { parts: expect.parts as 4 | 5 | 8 });
  if (!parts) return 'evidence: wrong part count';
  const [chain, , address, ts] = parts as [string, string, string, string];
  if (chain !== String(WEB2_CHAIN_ID)) return 'evidence: not a Web2 string';
  if (!/^(0|[1-9]\d{0,15})$/.test(ts)) return 'evidence: bad timestamp';
  const timestamp = Number(ts);
  if (Math.abs(expect.atMs - timestamp) > WEB2_FRESHNESS_MS) return 'evidence: string not fresh at the record time';
  const session: SessionBody = evidence.session;
  if (address.toLowerCase() !== session.sessionAddress) return 'evidence: session is not the signer in the string';
  // The session was live when the record was written, as the coordinator checked it was when it answered.
  if (expect.atMs < session.issuedAt - SESSION_LIFE_SKEW_MS || expect.atMs > session.expiresAt + SESSION_LIFE_SKEW_MS) return 'evidence: record outside the session life';
  const proof = proofOf(session);
  if (proof) return `evidence: ${proof}`;
  if (recover(evidence.data, evidence.signature) !== session.sessionAddress && !signedInSdkForm(evidence.data, evidence.signature, session.sessionAddress)) {
    return 'evidence: signature is not the session wallet';
  }
  return { parts, principalId: session.principalId, timestamp };
}

/**
 * The identity of a signed string for single use (docs/security.md, "Single use"): the operation,
 * then the parts with the address lowercased. The signature is left out (its high-s twin is equally
 * valid) and non-canonical numbers never reach here (the verifier refuses them), so every way of
 * writing one authorisation maps to one key.
 */
export function signedStringKey(operation: string, parts: readonly string[]): string {
  const canonical = parts.map((p, i) => (i === 2 ? p.toLowerCase() : p));
  return sha256Hex(`quorumkeep/signed-use/v1\n${operation}\n${canonical.join('\n')}`);
}

/**
 * Whether the session that signed a piece of evidence was still live when the record was written
 * (docs/security.md, "Ended sessions"): `ref` names the principal's version slot 0 held when it wrote
 * the record; the session must belong to it, and that version must be active with the session's key.
 * A session ends — as evidence too — with the version that rotates the key or deletes the account:
 * slot 0 names no older version once it holds that one. Held back while this node lacks the version.
 */
export async function sessionLiveAt(context: Pick<RecordContext, 'recordAt' | 'refusedAt' | 'atMs'>, ref: LogRef, session: Pick<SessionBody, 'principalId' | 'publicKey'>): Promise<RecordRefusal | undefined> {
  const principal = await context.recordAt(ref.origin, ref.seq, { kind: 'principal', key: session.principalId });
  if (!principal) return awaiting(context, 'evidence_missing', ref, 'the principal version');
  if (principal.kind !== 'principal' || principal.key !== session.principalId) return refusal('evidence_invalid', 'principal version of another principal');
  if (principal.hlc[0] > context.atMs) return refusal('evidence_invalid', 'principal version after the record');
  const body = principal.body as { status?: unknown; ed25519PublicKey?: unknown };
  return body.status === 'active' && body.ed25519PublicKey === session.publicKey ? undefined : refusal('session_ended');
}

/** A checker's verdict as a refusal: `evidence_invalid` with the reason as detail. */
export function evidenceRefusal(problem: string): RecordRefusal {
  return refusal('evidence_invalid', problem.replace(/^evidence: /, ''));
}

/**
 * For slot 0's own write: the principal version named is the one it holds now, so a session ends as
 * evidence the moment the version that rotates its key or deletes its account is written.
 */
export async function principalIsCurrent(context: Pick<RecordContext, 'own' | 'current'>, principalId: string, ref: LogRef): Promise<RecordRefusal | undefined> {
  if (!context.own) return undefined;
  const now = await context.current('principal', principalId);
  return now?.origin === ref.origin && now.seq === ref.seq ? undefined : refusal('session_ended', 'not the current version of the principal');
}
