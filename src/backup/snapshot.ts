/**
 * A node's store as a backup archive (./archive.ts): the running node streams it from its operator
 * port (`GET /admin/backup`), and the CLI reads a stopped node's store the same way. The entries come
 * from one LevelDB iterator, so the archive is one consistent point in time while writes go on.
 *
 * What goes in: every sublevel but `jobs` (src/store/snapshot.ts), byte for byte — shares stay
 * encrypted under the storage key, pending shares sealed to their members. What never goes in: the
 * storage key (only a one-way check value of it), any other key unless the CLI is asked to add the
 * keys directory, and any plaintext.
 */
import { taggedHash } from '../crypto/hash.ts';
import { toHex } from '../crypto/bytes.ts';
import { BACKUP_EXCLUDED_SUBLEVELS, STORE_SCHEMA_VERSION, SUBLEVELS, sublevelOf, type NodeStore, type StoreEntry } from '../store/index.ts';
import { ARCHIVE_FORMAT_VERSION, encodeArchive, type BackupHeader } from './archive.ts';

/** Domain label of {@link storageKeyCheckOf}. */
const STORAGE_KEY_CHECK_LABEL = 'quorumkeep/backup/storage-key-check/v1';

/** Who the archive belongs to (the node's cluster-file entry and a check value of its storage key). */
export interface BackupIdentity {
  clusterId: string;
  nodeId: string;
  nodeAddress: string;
  slot: number | null;
  /** {@link storageKeyCheckOf} the node's storage key. */
  storageKeyCheck: string;
}

/** Facts an archive's summary carries about its snapshot (`summary.facts`). */
export interface SnapshotFacts {
  /** The version vector stored in the snapshot: origin → highest contiguous seq. */
  versionVector: Record<string, number>;
  /** This node's own contiguous seq in the snapshot (its entry of the version vector). */
  ownSeq: number;
}

/**
 * A check value of a storage key: the first 128 bits of a tagged SHA-256. One-way (the key is 256
 * random bits), so it reveals nothing; equal values mean the same key.
 */
export function storageKeyCheckOf(storageKey: Uint8Array): string {
  return toHex(taggedHash(STORAGE_KEY_CHECK_LABEL, storageKey)).slice(0, 32);
}

/** Options of {@link snapshotArchive}. */
export interface SnapshotArchiveOptions {
  source: BackupHeader['source'];
  /** Unix ms of the snapshot (`createdAt`). */
  now: number;
}

const vvPrefix = `!${SUBLEVELS.vv}!`;

/**
 * Start a snapshot of `store` now and return it as archive chunks. The snapshot is taken by this call
 * (not at the first read), so `createdAt` and the entries agree.
 */
export function snapshotArchive(store: Pick<NodeStore, 'snapshot'>, identity: BackupIdentity, options: SnapshotArchiveOptions): AsyncGenerator<Uint8Array> {
  const snapshot = store.snapshot();
  const versionVector: Record<string, number> = {};
  async function* entries(): AsyncGenerator<StoreEntry> {
    for await (const entry of snapshot) {
      const sublevel = sublevelOf(entry.key);
      if (sublevel !== undefined && BACKUP_EXCLUDED_SUBLEVELS.has(sublevel)) continue;
      if (sublevel === SUBLEVELS.vv) {
        const origin = Buffer.from(entry.key).toString('utf8').slice(vvPrefix.length);
        versionVector[origin] = Number(Buffer.from(entry.value).toString('utf8'));
      }
      yield entry;
    }
  }
  const header: BackupHeader = {
    format: ARCHIVE_FORMAT_VERSION,
    clusterId: identity.clusterId,
    nodeId: identity.nodeId,
    nodeAddress: identity.nodeAddress,
    slot: identity.slot,
    createdAt: options.now,
    source: options.source,
    storeSchemaVersion: STORE_SCHEMA_VERSION,
    storageKeyCheck: identity.storageKeyCheck,
    includesKeys: false,
  };
  return encodeArchive({
    header,
    entries: entries(),
    groupOf: (key) => sublevelOf(key) ?? '(root)',
    facts: (): Record<string, unknown> => ({ versionVector, ownSeq: versionVector[identity.nodeAddress] ?? 0 }) satisfies SnapshotFacts,
  });
}
