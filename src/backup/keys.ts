/**
 * The node's keys directory as backups see it: read as files (for `--include-keys`), and checked
 * against the cluster file entry and an archive's storage-key check value — never created here (a
 * node creates keys only at its own first start).
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describeNodeKeys, loadOrCreateNodeKeys } from '../cluster/index.ts';
import { zeroize } from '../crypto/bytes.ts';
import type { ClusterNodeEntry } from '../core/replication/ports.ts';
import { storageKeyCheckOf } from './snapshot.ts';

/** A file of the keys directory. */
export interface KeyFile {
  name: string;
  content: Uint8Array;
}

/** The regular files of `dir`, or undefined when it is missing or empty. */
export async function readKeysDir(dir: string): Promise<KeyFile[] | undefined> {
  const entries = await readdir(dir, { withFileTypes: true }).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return [];
    throw err;
  });
  const files = entries.filter((e) => e.isFile()).map((e) => e.name).sort();
  if (files.length === 0) return undefined;
  return Promise.all(files.map(async (name) => ({ name, content: new Uint8Array(await readFile(join(dir, name))) })));
}

/** Why the keys in `dir` are not this node's (or cannot open the archive's shares), or undefined. */
export async function nodeKeysProblem(dir: string, self: ClusterNodeEntry, storageKeyCheck: string | undefined): Promise<string | undefined> {
  if ((await readKeysDir(dir)) === undefined) return `no keys in ${dir}`;
  let keys;
  try {
    // Files exist, so this loads and never creates (a partial set is an error).
    ({ keys } = await loadOrCreateNodeKeys(dir));
  } catch (err) {
    return `cannot read the keys in ${dir}: ${(err as Error).message}`;
  }
  try {
    const facts = describeNodeKeys(keys);
    if (facts.peerId !== self.peerId || facts.nodeAddress !== self.nodeAddress) {
      return `the keys in ${dir} are not ${self.id}'s (peer id ${facts.peerId}, address ${facts.nodeAddress})`;
    }
    if (storageKeyCheck !== undefined && storageKeyCheckOf(keys.storage) !== storageKeyCheck) {
      return `the storage key in ${dir} is not the one the archive's shares are encrypted under`;
    }
    return undefined;
  } finally {
    zeroize(keys.signing, keys.storage);
  }
}

/** The storage-key check value of the keys in `dir`, or undefined when there are none. */
export async function storageKeyCheckIn(dir: string): Promise<string | undefined> {
  if ((await readKeysDir(dir)) === undefined) return undefined;
  const { keys } = await loadOrCreateNodeKeys(dir);
  try {
    return storageKeyCheckOf(keys.storage);
  } finally {
    zeroize(keys.signing, keys.storage);
  }
}
