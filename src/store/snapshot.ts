/**
 * Raw access to the store for backups (src/backup): naming the sublevel of a raw key, and filling a
 * fresh LevelDB with raw entries on restore. The entries themselves come from
 * {@link NodeStore.snapshot} (./level-store.ts). Still the only place that imports `level`.
 */
import { access, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { Level } from 'level';
import { SUBLEVELS, type StoreEntry } from './level-store.ts';

/**
 * Sublevels left out of backups: `jobs` are this coordinator's file jobs, whose results live as files
 * under `files.dir` that no archive carries — a restored job would point at nothing.
 */
export const BACKUP_EXCLUDED_SUBLEVELS: ReadonlySet<string> = new Set([SUBLEVELS.jobs]);

/** Entries per restore batch: bounded memory whatever the archive's size. */
const IMPORT_BATCH_ENTRIES = 1000;

/** The sublevel a raw key belongs to (`!log!…` → `log`), or undefined for a key outside every sublevel. */
export function sublevelOf(key: Uint8Array): string | undefined {
  // `!` is 0x21; a sublevel name is short ASCII.
  if (key[0] !== 0x21) return undefined;
  const end = key.indexOf(0x21, 1);
  return end > 1 ? Buffer.from(key.subarray(1, end)).toString('latin1') : undefined;
}

/** The raw key of `key` in sublevel `sublevel`, as {@link NodeStore.snapshot} yields it. */
export function rawKeyOf(sublevel: string, key: string): Uint8Array {
  return Buffer.from(`!${sublevel}!${key}`, 'utf8');
}

/** True when a LevelDB exists at `location` (its CURRENT file). */
export async function storeExists(location: string): Promise<boolean> {
  try {
    await access(join(location, 'CURRENT'));
    return true;
  } catch {
    return false;
  }
}

/** True when `err` (or one of its causes) says another process holds the LevelDB's lock. */
export function isStoreLocked(err: unknown): boolean {
  for (let e = err; e instanceof Error; e = e.cause) {
    if ((e as NodeJS.ErrnoException).code === 'LEVEL_LOCKED') return true;
  }
  return false;
}

/** A LevelDB held open, unused, for its lock: {@link lockStore}. */
export interface StoreLock {
  /** Close the store: the lock is free again. */
  release(): Promise<void>;
}

/**
 * Take the lock of the LevelDB at `location` by opening it. LevelDB holds a lock on its `LOCK` file
 * while a store is open (an fcntl lock, one per process; a second open in the same process is refused
 * too), so this fails, with an error {@link isStoreLocked} recognizes, while a running node holds the
 * store — and keeps that node from starting on it until released. Undefined when there is no store at
 * `location`, or one that does not open for another reason (a damaged store is nobody's). Opening
 * rolls LevelDB's log over (a new log file; the entries are unchanged).
 */
export async function lockStore(location: string): Promise<StoreLock | undefined> {
  if (!(await storeExists(location))) return undefined;
  const db = new Level<Uint8Array, Uint8Array>(location, { keyEncoding: 'view', valueEncoding: 'view', createIfMissing: false });
  try {
    await db.open();
  } catch (err) {
    if (isStoreLocked(err)) throw err;
    return undefined;
  }
  return { release: () => db.close() };
}

/**
 * Write raw entries into a new LevelDB at `location` (which must not hold one), in bounded batches,
 * the last one fsync'd. Returns how many were written. The caller decides whether to keep the
 * directory: on restore it is a temporary one, renamed into place only once the archive verified.
 */
export async function importStore(location: string, entries: AsyncIterable<StoreEntry>): Promise<number> {
  const existing = await readdir(location).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return [];
    throw err;
  });
  if (existing.length > 0) throw new Error(`importStore: ${location} is not empty`);
  const db = new Level<Uint8Array, Uint8Array>(location, { keyEncoding: 'view', valueEncoding: 'view', createIfMissing: true, errorIfExists: true });
  await db.open();
  let written = 0;
  try {
    let batch = db.batch();
    for await (const { key, value } of entries) {
      // Copies: a decoder may hand out views of a buffer it reuses.
      batch.put(Uint8Array.from(key), Uint8Array.from(value));
      written++;
      if (batch.length >= IMPORT_BATCH_ENTRIES) {
        await batch.write();
        batch = db.batch();
      }
    }
    await batch.write({ sync: true });
  } finally {
    await db.close();
  }
  return written;
}
