/**
 * What the engine knows about its own log without reading it: the version vector, the highest seq
 * stored per origin, each origin's fingerprint (see `SyncRequest` in ports.ts), the content ids of
 * records it verified or signed, and the signatures of records stored lately. Loaded once at open,
 * then kept current by the commits (the engine is the only writer of the log).
 */
import { toHex } from '../../crypto/index.ts';
import type { RecordStore, VersionVector } from './ports.ts';
import { recordDigest, type ReplicatedRecord } from './record.ts';

/** Recently stored records whose signature is remembered (cheap duplicate checks). */
const RECENT_SIGS = 20_000;

/** The in-memory summary of the log (see the module comment). */
export interface LogIndex {
  /** Per origin, the highest contiguous seq stored. Replaced, never changed in place: a reader's copy stays valid. */
  vv: VersionVector;
  /** Highest seq stored per origin, contiguous or not. */
  readonly maxStored: Map<string, number>;
  /** A record's content id: the digest its signature covers, as a number. */
  contentId(r: ReplicatedRecord): bigint;
  /** Remember `r`'s content id from the digest just verified or signed, so it is never computed again. */
  noteDigest(r: ReplicatedRecord, digest: Uint8Array): void;
  /** Add a newly stored record to its origin's fingerprint. */
  addFingerprint(r: ReplicatedRecord): void;
  /** XOR `id` into `origin`'s fingerprint (the old and new content id when one record replaces another). */
  xorFingerprint(origin: string, id: bigint): void;
  /** `origin`'s fingerprint as a sync request carries it: hex, `0` for none. */
  fingerprintHex(origin: string): string;
  /** Remember the signature of a record just stored (the newest {@link RECENT_SIGS} are kept). */
  rememberSig(r: ReplicatedRecord): void;
  /** The signature of the record stored lately under `<origin>!<seq>`, if remembered. */
  recentSig(id: string): string | undefined;
  /** Load the version vector, highest seqs and fingerprints from the store (at open). */
  load(store: Pick<RecordStore, 'loadVersionVector' | 'origins' | 'highestSeq' | 'allLog'>): Promise<void>;
}

/** A content id from the 32-byte digest a record's signature covers. */
export function contentIdOf(digest: Uint8Array): bigint {
  return BigInt('0x' + toHex(digest));
}

/** Create an empty log index for records of cluster `clusterId`. */
export function createLogIndex(options: { clusterId: string }): LogIndex {
  const { clusterId } = options;
  /** Per origin, XOR of the content ids of every record stored (see `SyncRequest` in ports.ts). */
  const fingerprints = new Map<string, bigint>();
  // A record's content id is the digest its signature covers: computed once, when it is verified or
  // signed, and remembered for the fingerprints and equivocation checks.
  const contentIds = new WeakMap<ReplicatedRecord, bigint>();
  /**
   * Signatures of recently stored records by `<origin>!<seq>`: the duplicate that gossip and resends
   * bring right after the direct apply is matched here, without reading the log.
   */
  const recentSigs = new Map<string, string>();
  const contentId = (r: ReplicatedRecord) => {
    let id = contentIds.get(r);
    if (id === undefined) contentIds.set(r, (id = contentIdOf(recordDigest(clusterId, r))));
    return id;
  };
  const xorFingerprint = (origin: string, id: bigint) => {
    fingerprints.set(origin, (fingerprints.get(origin) ?? 0n) ^ id);
  };
  const addFingerprint = (r: ReplicatedRecord) => xorFingerprint(r.origin, contentId(r));

  const index: LogIndex = {
    vv: {},
    maxStored: new Map(),
    contentId,
    noteDigest: (r, digest) => void contentIds.set(r, contentIdOf(digest)),
    addFingerprint,
    xorFingerprint,
    fingerprintHex: (origin) => (fingerprints.get(origin) ?? 0n).toString(16),
    rememberSig(r) {
      recentSigs.set(`${r.origin}!${r.seq}`, r.sig);
      if (recentSigs.size > RECENT_SIGS) recentSigs.delete(recentSigs.keys().next().value!);
    },
    recentSig: (id) => recentSigs.get(id),
    async load(store) {
      index.vv = await store.loadVersionVector();
      for (const origin of await store.origins()) index.maxStored.set(origin, await store.highestSeq(origin));
      for await (const r of store.allLog()) addFingerprint(r);
    },
  };
  return index;
}
