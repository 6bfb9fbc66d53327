/**
 * What the engine knows about its own log without reading it: the version vector, the highest seq
 * stored per origin, each origin's fingerprint (see `SyncRequest` in ports.ts), the content ids of
 * records it verified or signed, and the signatures of records stored lately. Loaded once at open,
 * then kept current by the commits (the engine is the only writer of the log). The fingerprints are
 * committed with the records they cover, so open reads one small sublevel, not the whole log (a
 * member holding 100,000 secrets took seconds to open when it did).
 */
import { toHex } from '../../crypto/index.ts';
import type { RecordStore, VersionVector } from './ports.ts';
import { recordDigest, type ReplicatedRecord } from './record.ts';
import { createRecentOriginSeqMap } from './origin-seq-map.ts';

/** Recently stored records whose signature is remembered (cheap duplicate checks). */
const RECENT_SIGS = 20_000;
/** Log records read per page when an origin's fingerprint has to be computed at open. */
const LOAD_PAGE = 1000;

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
  /**
   * The fingerprints (hex) the origins of `records` will have once they are stored, changing
   * nothing: they go into the same commit as the records, then {@link addFingerprint} applies them.
   */
  fingerprintsWith(records: readonly ReplicatedRecord[]): Record<string, string>;
  /** XOR `id` into `origin`'s fingerprint (the old and new content id when one record replaces another). */
  xorFingerprint(origin: string, id: bigint): void;
  /** `origin`'s fingerprint as a sync request carries it (hex, `0` for none), XORed with `xor` when given. */
  fingerprintHex(origin: string, xor?: bigint): string;
  /** Remember the signature of a record just stored (the newest {@link RECENT_SIGS} are kept). */
  rememberSig(r: ReplicatedRecord): void;
  /** The signature of the record stored lately under (`origin`, `seq`), if remembered. */
  recentSig(origin: string, seq: number): string | undefined;
  /**
   * Load the version vector, highest seqs and fingerprints from the store (at open). An origin whose
   * fingerprint the store lacks (written before they were kept) is computed from its records and
   * committed, once.
   */
  load(store: Pick<RecordStore, 'loadVersionVector' | 'origins' | 'highestSeq' | 'loadFingerprints' | 'scanLog' | 'commit'>): Promise<void>;
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
   * Signatures of recently stored records by (origin, seq): the duplicate that gossip and resends
   * bring right after the direct apply is matched here, without reading the log.
   */
  const recentSigs = createRecentOriginSeqMap<string>(RECENT_SIGS);
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
    fingerprintsWith(records) {
      const next = new Map<string, bigint>();
      for (const r of records) next.set(r.origin, (next.get(r.origin) ?? fingerprints.get(r.origin) ?? 0n) ^ contentId(r));
      return Object.fromEntries([...next].map(([origin, fp]) => [origin, fp.toString(16)]));
    },
    xorFingerprint,
    fingerprintHex: (origin, xor = 0n) => ((fingerprints.get(origin) ?? 0n) ^ xor).toString(16),
    rememberSig: (r) => recentSigs.set(r.origin, r.seq, r.sig),
    recentSig: (origin, seq) => recentSigs.get(origin, seq),
    async load(store) {
      index.vv = await store.loadVersionVector();
      const stored = await store.loadFingerprints();
      const computed: Record<string, string> = {};
      for (const origin of await store.origins()) {
        index.maxStored.set(origin, await store.highestSeq(origin));
        const hex = stored[origin];
        if (hex !== undefined) {
          fingerprints.set(origin, BigInt('0x' + hex));
          continue;
        }
        for (let from = 1; ; ) {
          const page = await store.scanLog(origin, from, LOAD_PAGE);
          for (const r of page) addFingerprint(r);
          if (page.length < LOAD_PAGE) break;
          from = page[page.length - 1]!.seq + 1;
        }
        computed[origin] = index.fingerprintHex(origin);
      }
      if (Object.keys(computed).length > 0) await store.commit({ log: [], states: [], vv: {}, fp: computed });
    },
  };
  return index;
}
