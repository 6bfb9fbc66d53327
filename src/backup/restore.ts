/**
 * `quorumkeep restore` (docs/operations.md, "Back up and restore a node"): a backup archive into the
 * data directory of the node a config describes, for a node whose store was lost.
 *
 * A node that is running is refused first, whatever the flags: its store is locked
 * (`<dataDir>/db`, LevelDB's lock), or its operator port answers `GET /healthz` as this node. The
 * lock is then held until the restore is done, so the node cannot start on the store meanwhile.
 * Nothing is written before the archive's header matches the config and the cluster file (cluster
 * id, node id, node address) and the node's keys are known to be right (in the keys directory, or in
 * the archive). The store is written into a temporary folder next to `db` while the archive is read,
 * and renamed into place only once its SHA-256 verified; a damaged archive leaves nothing behind.
 * The restored store carries a marker: at its first start the node catches its own records up from
 * its peers before it writes (./catch-up.ts).
 */
import { constants, createReadStream } from 'node:fs';
import { access, chmod, mkdir, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { join, relative, sep } from 'node:path';
import type { NodeConfig } from '../config/schema.ts';
import type { ClusterDescriptor, ClusterNodeEntry } from '../core/replication/ports.ts';
import { zeroize } from '../crypto/bytes.ts';
import { importStore, isStoreLocked, lockStore, OLDEST_STORE_SCHEMA_VERSION, openStore, STORE_SCHEMA_VERSION, type StoreEntry, type StoreLock } from '../store/index.ts';
import { decodeArchive, type BackupHeader, type BackupSummary } from './archive.ts';
import { BackupError, keysDirOf, operatorUrlOf, selfEntry } from './backup.ts';
import { RESTORE_META_KEY, type RestoreMarker } from './catch-up.ts';
import { nodeKeysProblem, readKeysDir, type KeyFile } from './keys.ts';
import type { SnapshotFacts } from './snapshot.ts';

/** Options of {@link runRestore}. */
export interface RestoreOptions {
  config: NodeConfig;
  descriptor: ClusterDescriptor;
  /** The archive. */
  input: string;
  /** Replace the store of a data directory that holds one (or other files). @default false */
  force?: boolean;
  /**
   * Restore slot 0. Its counters and claims (ids handed out, emails claimed) exist nowhere else, so a
   * restored slot 0 can hand out again what it handed out after the backup. @default false
   */
  allowSlot0?: boolean;
  /** Check everything, write nothing. @default false */
  dryRun?: boolean;
}

/** Dependencies of {@link runRestore}. */
export interface RestoreDeps {
  /** Unix ms, for the restore marker. @default Date.now */
  clock?: () => number;
  /** For the operator port's `GET /healthz`. @default globalThis.fetch */
  fetch?: typeof fetch;
}

/** Deadline for the operator port's `/healthz` answer, ms: a running node answers at once. */
const HEALTH_CHECK_TIMEOUT_MS = 2000;

/** What a restore did (or, dry, would do). */
export interface RestoreReport {
  dataDir: string;
  header: BackupHeader;
  summary: BackupSummary;
  /** Store entries written (dry run: that would be). */
  entries: number;
  /** Keys written from the archive into the keys directory. */
  keysWritten: boolean;
  /** A store that was there before and is now replaced (`--force`). */
  replacedStore: boolean;
  /**
   * What the data directory held besides the keys directory. A dry run reports it rather than
   * refusing: without `force`, a restore into it is refused.
   */
  present: string[];
}

/** True when `body`, a `GET /healthz` answer (docs/http.md), is the answer of node `self`. */
function answersAs(body: unknown, self: ClusterNodeEntry): boolean {
  if (typeof body !== 'object' || body === null) return false;
  const { enclaveWalletAddress, clusterMap } = body as { enclaveWalletAddress?: unknown; clusterMap?: unknown };
  if (typeof enclaveWalletAddress === 'string' && enclaveWalletAddress.toLowerCase() === self.nodeAddress.toLowerCase()) return true;
  if (typeof clusterMap !== 'object' || clusterMap === null) return false;
  return Object.values(clusterMap).some((m: { self?: unknown; nodeId?: unknown } | null) => m?.self === true && m.nodeId === self.id);
}

/** True when something answers `GET /healthz` at `url` as node `self`; anything else (nothing listening, no answer in time, another node) is false. */
async function operatorPortAnswers(url: string, self: ClusterNodeEntry, fetchFn: typeof fetch): Promise<boolean> {
  try {
    const response = await fetchFn(`${url}/healthz`, { signal: AbortSignal.timeout(HEALTH_CHECK_TIMEOUT_MS), headers: { accept: 'application/json' } });
    if (!response.ok) {
      await response.body?.cancel().catch(() => undefined);
      return false;
    }
    return answersAs(await response.json(), self);
  } catch {
    return false;
  }
}

/**
 * Refuse when the node is running (docs/operations.md, "Restore"): its store's lock is held, or its
 * operator port (when the config enables one) answers as this node. Returns the store's lock, held
 * for the restore, or undefined when there is no store to lock.
 */
async function refuseRunningNode(config: NodeConfig, self: ClusterNodeEntry, location: string, fetchFn: typeof fetch): Promise<StoreLock | undefined> {
  const refuse = (why: string) => new BackupError(`${self.id} is running (${why}); stop it first, then restore`, { code: 'NODE_RUNNING' });
  let lock: StoreLock | undefined;
  try {
    lock = await lockStore(location);
  } catch (err) {
    if (isStoreLocked(err)) throw refuse(`data directory ${config.dataDir} locked`);
    throw err;
  }
  if (config.operator.enabled) {
    const url = operatorUrlOf(config);
    if (await operatorPortAnswers(url, self, fetchFn)) {
      await lock?.release();
      throw refuse(`operator port ${new URL(url).host} answers`);
    }
  }
  return lock;
}

/** What the data directory holds besides the keys directory (when the keys live inside it). */
async function dataDirContents(dataDir: string, keysDir: string): Promise<string[]> {
  const names = await readdir(dataDir).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return [];
    throw err;
  });
  const inside = relative(dataDir, keysDir);
  const keysName = inside !== '' && !inside.startsWith('..') ? inside.split(sep)[0] : undefined;
  return names.filter((n) => n !== keysName);
}

async function writeKeyFiles(dir: string, files: KeyFile[]): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  for (const f of files) {
    if (f.name.includes('/') || f.name.includes('\\') || f.name.startsWith('.')) throw new BackupError(`the archive names a key file "${f.name}"`);
    const path = join(dir, f.name);
    await writeFile(path, f.content, { mode: 0o600, flag: 'wx' });
    await chmod(path, 0o600);
  }
}

/** Restore an archive; see the module comment. */
export async function runRestore(options: RestoreOptions, deps: RestoreDeps = {}): Promise<RestoreReport> {
  const self = selfEntry(options.config, options.descriptor);
  const lock = await refuseRunningNode(options.config, self, join(options.config.dataDir, 'db'), deps.fetch ?? fetch);
  let released = false;
  const releaseLock = async () => {
    if (released) return;
    released = true;
    await lock?.release();
  };
  try {
    return await restoreStopped(options, self, deps.clock ?? Date.now, releaseLock);
  } finally {
    await releaseLock();
  }
}

/** {@link runRestore} once the node is known stopped; `releaseLock` frees the old store's lock once the restored one is in place. */
async function restoreStopped(options: RestoreOptions, self: ClusterNodeEntry, clock: () => number, releaseLock: () => Promise<void>): Promise<RestoreReport> {
  const { config, descriptor } = options;
  const dataDir = config.dataDir;
  const keysDir = keysDirOf(config);
  const location = join(dataDir, 'db');

  const present = await dataDirContents(dataDir, keysDir);
  if (present.length > 0 && !options.force && !options.dryRun) {
    throw new BackupError(`the data directory ${dataDir} is not empty (${present.slice(0, 5).join(', ')}${present.length > 5 ? ', …' : ''}); restore into a new one, or pass --force to replace its store`);
  }

  await access(options.input, constants.R_OK).catch((err: NodeJS.ErrnoException) => {
    throw new BackupError(`cannot read ${options.input} (${err.code ?? err.message})`);
  });
  const decoded = decodeArchive(createReadStream(options.input));
  const first = await decoded.next();
  if (first.done || first.value.type !== 'header') throw new BackupError(`${options.input}: no archive header`);
  const header = first.value.header;
  if (header.clusterId !== descriptor.clusterId) throw new BackupError(`the archive is of cluster ${header.clusterId}; this config's cluster file is ${descriptor.clusterId}`);
  if (header.nodeId !== self.id || header.nodeAddress !== self.nodeAddress) {
    throw new BackupError(`the archive is of ${header.nodeId} (${header.nodeAddress}); this config is ${self.id} (${self.nodeAddress})`);
  }
  // An older schema's entries restore as they are: opening the store upgrades them (src/store).
  if (header.storeSchemaVersion < OLDEST_STORE_SCHEMA_VERSION || header.storeSchemaVersion > STORE_SCHEMA_VERSION) {
    throw new BackupError(`the archive's store schema is version ${header.storeSchemaVersion}; this build reads ${OLDEST_STORE_SCHEMA_VERSION} to ${STORE_SCHEMA_VERSION}`);
  }
  if (self.slot === 0 && !options.allowSlot0) {
    throw new BackupError(
      `${self.id} is slot 0: its counters and claims (secret ids, email claims) exist only on it, so a restored slot 0 could hand out again what it handed out after the backup. Pass --allow-slot0 only when no create ran after the backup (docs/operations.md)`,
    );
  }
  // The keys: those in the keys directory must be this node's and match the archive's storage key;
  // with none there, the archive must carry them.
  const keysHere = (await readKeysDir(keysDir)) !== undefined;
  if (keysHere) {
    const problem = await nodeKeysProblem(keysDir, self, header.storageKeyCheck);
    if (problem) throw new BackupError(problem);
  } else if (!header.includesKeys) {
    throw new BackupError(`no keys in ${keysDir}: copy the node's keys directory there first (the archive holds no keys), or set keysDir to where they are`);
  }

  let summary: BackupSummary | undefined;
  let keyFiles: KeyFile[] = [];
  let entries = 0;
  async function* storeEntries(): AsyncGenerator<StoreEntry> {
    for await (const item of decoded) {
      if (item.type === 'entry') {
        entries++;
        yield item;
      } else if (item.type === 'file') keyFiles.push(item);
      else if (item.type === 'summary') summary = item.summary;
    }
  }

  const temp = join(dataDir, `.db.restoring-${randomBytes(6).toString('hex')}`);
  let replacedStore = false;
  let keysWritten = false;
  try {
    if (options.dryRun) {
      for await (const _entry of storeEntries()) {
        // Read to the end: the digest is checked there.
      }
    } else {
      await mkdir(dataDir, { recursive: true, mode: 0o700 });
      await importStore(temp, storeEntries());
    }
    // The archive is whole (its digest checked) once the entries ran out.
    if (!summary) throw new BackupError(`${options.input}: incomplete archive`);
    if (!keysHere) {
      if (keyFiles.length === 0) throw new BackupError('the archive says it holds keys, but has none');
      if (!options.dryRun) {
        await writeKeyFiles(keysDir, keyFiles);
        keysWritten = true;
        const problem = await nodeKeysProblem(keysDir, self, header.storageKeyCheck);
        if (problem) {
          await rm(keysDir, { recursive: true, force: true });
          keysWritten = false;
          throw new BackupError(`the archive's keys: ${problem}`);
        }
      }
    }
    if (!options.dryRun) {
      const facts = summary.facts as Partial<SnapshotFacts>;
      const store = await openStore({ location: temp });
      try {
        const marker: RestoreMarker = { state: 'catching-up', restoredAt: clock(), backupCreatedAt: header.createdAt, ownSeqAtBackup: typeof facts.ownSeq === 'number' ? facts.ownSeq : 0 };
        await store.putMeta(RESTORE_META_KEY, marker);
      } finally {
        await store.close();
      }
      const previous = join(dataDir, `.db.replaced-${randomBytes(6).toString('hex')}`);
      try {
        await rename(location, previous);
        replacedStore = true;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      }
      await rename(temp, location);
      // The old store's lock moved with it; the restored one is in place, and is the one a node opens.
      await releaseLock();
      if (replacedStore) await rm(previous, { recursive: true, force: true });
    }
  } catch (err) {
    await rm(temp, { recursive: true, force: true }).catch(() => undefined);
    throw err;
  } finally {
    for (const f of keyFiles) zeroize(f.content);
    keyFiles = [];
    await decoded.return(undefined).catch(() => undefined);
  }
  return { dataDir, header, summary, entries, keysWritten, replacedStore, present };
}
