/**
 * The record rules every node applies (CONTRIBUTING.md rule 6; docs/architecture.md, "Records"):
 * structure, origin listed (a retired one only up to its last seq), who may write the kind, clock
 * within the allowed skew, key, body schema, and the context a kind's evidence check sees. Pure
 * functions over plain values, but for the evidence checks, which read the replica through the
 * function they are given.
 */
import { fromHex, uncompressedPublicKey } from '../../crypto/index.ts';
import type { Json } from './canonical-json.ts';
import { type KindRegistry, type RecordContext, type RecordKindDefinition, type Sibling } from './kinds.ts';
import { isCoordinatorEntry, type ClusterDescriptor, type ClusterNodeEntry } from './ports.ts';
import { recordDigest, type ReplicatedRecord } from './record.ts';
import { signedDigestOf } from './record-sig.ts';
import { reasonText, refusal, type RecordRefusal, type RefusalCode } from './refusals.ts';

/** Longest key of any kind. */
export const MAX_KEY_LENGTH = 512;

/** A node whose records this node accepts: its cluster-file entry and key, and whether it is a coordinator. */
export interface RecordSigner {
  entry: ClusterNodeEntry;
  /** Uncompressed secp256k1 public key: verifies its record signatures. */
  publicKey: Uint8Array;
  coordinator: boolean;
  /** For a retired identity, the highest seq of its that is still accepted. */
  lastSeq?: number;
}

/** Why a record is refused, and which one it was (as far as it could be read). */
export interface Refusal {
  /** The code, then the detail after `: ` ({@link reasonText}). */
  reason: string;
  code: RefusalCode;
  origin: string;
  seq: number;
  /** The refusal may not hold later (see {@link RecordRefusal.transient}). */
  transient?: boolean;
  waitFor?: { origin: string; seq: number };
}

/** A {@link Refusal} of the record at (origin, seq). */
export function refusalOf(r: RecordRefusal, origin: string, seq: number): Refusal {
  return { reason: reasonText(r), code: r.code, origin, seq, ...(r.transient ? { transient: true } : {}), ...(r.waitFor ? { waitFor: r.waitFor } : {}) };
}

/** A record that passed the checks that need no replica, with its kind and signer. */
export interface CheckedRecord {
  record: ReplicatedRecord;
  kind: RecordKindDefinition;
  node: { entry: ClusterNodeEntry; publicKey: Uint8Array; coordinator: boolean };
}

/** A record that passed every structural check; its signature is verified next, in one batch. */
export interface UnverifiedRecord extends CheckedRecord {
  /** The record's digest (its content, bound to the cluster). */
  digest: Uint8Array;
  /** The signature's 65 bytes. */
  sig: Uint8Array;
  /** The digest the signature must cover: the record's own, or its batch's root (./record-sig.ts). */
  signed: Uint8Array;
}

/** What {@link checkRecord} checks against. */
export interface RecordRules {
  clusterId: string;
  /** Who may sign records, by node address ({@link signersOf}). */
  signers: ReadonlyMap<string, RecordSigner>;
  kinds: KindRegistry;
  /** How far ahead of `nowMs` a record's HLC may be, ms. */
  maxClockSkewMs: number;
}

/**
 * The nodes whose records are accepted, by node address: current nodes, and retired identities
 * (src/core/membership/epoch.ts) up to the last seq of their log: a node catching up still gets what
 * they wrote, and a lost or stolen key writes nothing new.
 */
export function signersOf(descriptor: ClusterDescriptor): Map<string, RecordSigner> {
  const signers = new Map<string, RecordSigner>();
  for (const n of descriptor.retired ?? []) signers.set(n.nodeAddress, { entry: n, publicKey: uncompressedPublicKey(fromHex(n.signingPublicKey)), coordinator: isCoordinatorEntry(n), lastSeq: n.lastSeq });
  for (const n of descriptor.nodes) signers.set(n.nodeAddress, { entry: n, publicKey: uncompressedPublicKey(fromHex(n.signingPublicKey)), coordinator: isCoordinatorEntry(n) });
  return signers;
}

/** The key rules every node applies to a kind; a refusal or undefined. */
export function keyProblem(kind: RecordKindDefinition, key: string): RecordRefusal | undefined {
  return key.length === 0 || key.length > MAX_KEY_LENGTH || (kind.key && !kind.key(key)) ? refusal('bad_key') : undefined;
}

/** Who may write a kind (docs/security.md, "Who may write what"). */
export function mayWrite(kind: RecordKindDefinition, node: { entry: ClusterNodeEntry; coordinator: boolean }): boolean {
  return kind.writers.some((w) => (w === 'coordinator' ? node.coordinator : w === 'slot0' ? node.entry.slot === 0 : node.entry.slot !== null));
}

/** The body rules every node applies to a kind (schema, then the kind's own evidence check). */
export async function bodyProblem(kind: RecordKindDefinition, body: Json, context: RecordContext): Promise<RecordRefusal | undefined> {
  if (!kind.body.safeParse(body).success) return refusal('bad_body');
  return kind.validate?.(body, context);
}

/**
 * Structural checks, and the digest the signature must cover; returns a reason when the record must
 * be refused. `nowMs` is this node's clock: a record stamped more than the allowed skew ahead of it
 * is refused (sync offers it again once the clock has caught up).
 */
export function checkRecord(raw: unknown, rules: RecordRules, nowMs: number): UnverifiedRecord | Refusal {
  const r = raw as Partial<ReplicatedRecord> | null;
  const origin = typeof r?.origin === 'string' ? r.origin : '?';
  const seq = typeof r?.seq === 'number' ? r.seq : -1;
  const refuse = (code: RefusalCode, transient = false): Refusal => refusalOf(transient ? { code, transient } : { code }, origin, seq);
  if (!r || typeof r !== 'object') return refuse('not_an_object');
  if (typeof r.kind !== 'string' || typeof r.key !== 'string' || typeof r.sig !== 'string') return refuse('malformed');
  if (!Number.isSafeInteger(seq) || seq < 1) return refuse('bad_seq');
  const h = r.hlc;
  if (!Array.isArray(h) || h.length !== 2 || !Number.isSafeInteger(h[0]) || !Number.isSafeInteger(h[1]) || h[0] < 0 || h[1] < 0) return refuse('bad_hlc');
  const node = rules.signers.get(origin);
  if (!node) return refuse('unknown_origin');
  if (node.lastSeq !== undefined && seq > node.lastSeq) return refuse('retired_origin');
  const kind = rules.kinds.get(r.kind);
  if (!kind) return refuse('unknown_kind');
  if (!mayWrite(kind, node)) return refuse('writer_not_allowed');
  // Not yet: the same record passes once this node's clock has caught up (sync offers it again).
  if (h[0] > nowMs + rules.maxClockSkewMs) return refuse('hlc_ahead', true);
  const badKey = keyProblem(kind, r.key);
  if (badKey) return refusalOf(badKey, origin, seq);
  const record: ReplicatedRecord = { kind: r.kind, key: r.key, origin, seq, hlc: [h[0], h[1]], body: r.body ?? null, sig: r.sig };
  const digest = recordDigest(rules.clusterId, record);
  const signed = signedDigestOf(rules.clusterId, record.sig, digest);
  if (!signed) return refuse('bad_signature');
  return { record, kind, node, digest, sig: signed.sig, signed: signed.signed };
}

/**
 * The context a kind's evidence check sees (see {@link RecordContext}), for a record `incoming` from
 * `node`. `incoming` is the record being checked (own writes not signed yet carry the newest HLC,
 * which wins every tie but a higher rank).
 */
export type EvidenceContextOf = (kind: RecordKindDefinition, incoming: ReplicatedRecord, node: { entry: ClusterNodeEntry; coordinator: boolean }, siblings: RecordContext['siblings']) => RecordContext;

/**
 * The evidence contexts over the replica as `read` returns its current states and `readLog` its log
 * records. `incoming.seq` is {@link UNNUMBERED} for this node's own writes not signed yet.
 */
export function createEvidenceContexts(
  read: (kind: string, key: string) => Promise<ReplicatedRecord | undefined>,
  readLog: (origin: string, seq: number) => Promise<ReplicatedRecord | undefined>,
  refusedAt: (origin: string, seq: number) => boolean = () => false,
): EvidenceContextOf {
  /** The replica as the kinds' evidence checks see it. */
  const current = async (kind: string, key: string) => {
    const r = await read(kind, key);
    return r ? { body: r.body, origin: r.origin, seq: r.seq } : undefined;
  };
  return (kind, incoming, node, siblings) => {
    const recordAt = async (origin: string, seq: number, hint?: { kind: string; key: string }): Promise<Sibling | undefined> => {
      for (let i = siblings.length - 1; i >= 0; i--) {
        const s = siblings[i]!;
        if (s.origin === origin && s.seq === seq) return s;
      }
      if (hint) {
        const now = await read(hint.kind, hint.key);
        if (now && now.origin === origin && now.seq === seq) return now;
      }
      return readLog(origin, seq);
    };
    return {
      kind: incoming.kind,
      key: incoming.key,
      origin: node.entry.nodeAddress,
      seq: incoming.seq,
      own: incoming.seq === UNNUMBERED,
      originSlot: node.entry.slot,
      originIsCoordinator: node.coordinator,
      atMs: incoming.hlc[0],
      current,
      siblings,
      recordAt,
      refusedAt,
      async preceding() {
        // Own writes not numbered yet: the write before this one in the batch.
        if (incoming.seq === UNNUMBERED) return siblings.at(-1);
        return incoming.seq > 1 ? recordAt(incoming.origin, incoming.seq - 1) : undefined;
      },
    };
  };
}

/** The seq an own write is checked under before its batch numbers it. */
export const UNNUMBERED = Number.MAX_SAFE_INTEGER;

/** A metrics label from a reason: its code (before any `:` detail), so label values stay a small set. */
export function reasonLabel(reason: string): string {
  return reason.split(':')[0]!.trim().replace(/\s+/g, '_');
}
