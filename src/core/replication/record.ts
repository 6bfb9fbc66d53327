/**
 * Replicated records (docs/architecture.md, "Records").
 *
 * Every change is a record `{ kind, key, origin, seq, hlc, body, sig }`. `origin` is the node address
 * of the node that created it, `seq` its per-origin sequence number (1, 2, 3…), `hlc` a hybrid logical
 * clock `[wallMs, logical]` that orders concurrent writes to one key, and `sig` the origin's
 * secp256k1 signature over the canonical encoding of everything else, bound to the cluster id —
 * alone, or with the other records of its batch (./record-sig.ts).
 */
import { signDigest, taggedHash, toHex } from '../../crypto/index.ts';
import { verifyRecordSig } from './record-sig.ts';
import { canonicalJson, type Json } from './canonical-json.ts';

/** Hybrid logical clock timestamp: wall-clock ms and a logical counter for ties. */
export type Hlc = readonly [wallMs: number, logical: number];

/** A signed record as stored and sent between nodes. */
export interface ReplicatedRecord {
  /** Record kind, e.g. `principal`; decides the body schema and merge rule. */
  kind: string;
  /** Entity key within the kind. */
  key: string;
  /** Node address (0x…, lowercase) of the originating node. */
  origin: string;
  /** Per-origin sequence number, starting at 1. */
  seq: number;
  /** Hybrid logical clock of the write. */
  hlc: Hlc;
  /** Kind-specific body (validated by the kind's schema). */
  body: Json;
  /** 0x-prefixed hex: `origin`'s 65-byte secp256k1 signature, or a batch signature with the record's path (./record-sig.ts). */
  sig: string;
}

/** The record without its signature. */
export type UnsignedRecord = Omit<ReplicatedRecord, 'sig'>;

/** The 32-byte digest a record's signature is over: its content, bound to the cluster. */
export function recordDigest(clusterId: string, r: UnsignedRecord): Uint8Array {
  // Keys in canonical order, so a body in order takes canonicalJson's native path.
  const payload = canonicalJson({ body: r.body, hlc: [r.hlc[0], r.hlc[1]], key: r.key, kind: r.kind, origin: r.origin, seq: r.seq });
  return taggedHash(`quorumkeep/record/v1/${clusterId}`, payload);
}

/**
 * The identity of a record's content (everything but the signature), hex: two records with one
 * (origin, seq) and different content ids are an equivocation; an ECDSA signature's twin is not.
 */
export function recordContentId(clusterId: string, r: UnsignedRecord): string {
  return toHex(recordDigest(clusterId, r));
}

/** Sign a record with the origin's private key. */
export function signRecord(clusterId: string, r: UnsignedRecord, privateKey: Uint8Array): ReplicatedRecord {
  const sig = signDigest(recordDigest(clusterId, r), privateKey);
  return { ...r, sig: '0x' + toHex(sig) };
}

/**
 * Verify a record's signature, single or batch (./record-sig.ts), against the origin's public key;
 * `digest` saves recomputing it when the caller has it. Never throws.
 */
export function verifyRecordSignature(clusterId: string, r: ReplicatedRecord, publicKey: Uint8Array, digest?: Uint8Array): boolean {
  if (typeof r.sig !== 'string') return false;
  try {
    return verifyRecordSig(clusterId, r.sig, digest ?? recordDigest(clusterId, r), publicKey);
  } catch {
    return false;
  }
}

/** Compare two HLCs: negative when a < b. */
export function compareHlc(a: Hlc, b: Hlc): number {
  return a[0] !== b[0] ? a[0] - b[0] : a[1] - b[1];
}

/**
 * A hybrid logical clock (Kulkarni et al.): monotonic per node, close to wall time, and advanced past
 * any remote timestamp it observes so causally later writes sort later.
 */
export interface HlcClock {
  /** A timestamp for a new local event. */
  now(): Hlc;
  /** Merge a timestamp seen on a remote record. */
  observe(remote: Hlc): void;
  /** The last timestamp handed out or observed, without advancing. */
  peek(): Hlc;
}

/** Create an HLC over a wall clock (injectable for tests). */
export function createHlcClock(wallNow: () => number = Date.now, initial: Hlc = [0, 0], maxAheadMs = 60_000): HlcClock {
  let last: [number, number] = [initial[0], initial[1]];
  return {
    now() {
      const wall = wallNow();
      if (wall > last[0]) last = [wall, 0];
      else last = [last[0], last[1] + 1];
      return [last[0], last[1]];
    },
    observe(remote) {
      // Never jump further ahead of the local wall clock than the skew records are accepted with.
      if (remote[0] > wallNow() + maxAheadMs) return;
      if (compareHlc(remote, last) > 0) last = [remote[0], remote[1]];
    },
    peek: () => [last[0], last[1]],
  };
}
