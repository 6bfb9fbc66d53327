/**
 * The store keeps at most 64 LevelDB table files open (src/store/level-store.ts,
 * STORE_MAX_OPEN_FILES), and so mapped into the node's memory, however many tables it reads; with
 * LevelDB's default every table read stays mapped. Tables are made 1 MiB (the least LevelDB allows)
 * so that ~120 MiB of records make about a hundred of them.
 */
import { readdir, readFile } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from 'quorumkeep/testing';
import { openStore } from '../../../src/store/index.ts';
import { cleanupStack, tempDir } from '../../utils/temp.ts';

const stack = cleanupStack();
afterEach(() => stack.run());

const RECORDS = 30_000;
const KEY = (i: number) => `k-${String(i).padStart(5, '0')}`;

/** Mappings of `.ldb` files under `dir` in this process. */
async function mappedTables(dir: string): Promise<number> {
  const maps = await readFile('/proc/self/maps', 'utf8');
  return new Set(maps.split('\n').filter((line) => line.includes(dir) && line.endsWith('.ldb')).map((line) => line.slice(line.indexOf('/')))).size;
}

/** Fill a store whose tables are 1 MiB (LevelDB's least) with ~120 MiB of values, wait for them to be compacted into > 80 tables, then read every key. */
async function readEverything(maxOpenFiles?: number): Promise<{ tables: number; mapped: number }> {
  const dir = await tempDir(stack);
  const store = await openStore({ location: dir, sync: false, maxFileSize: 1024 * 1024, ...(maxOpenFiles !== undefined ? { maxOpenFiles } : {}) });
  stack.push(() => store.close());
  for (let i = 0; i < RECORDS; i += 100) {
    await Promise.all(Array.from({ length: 100 }, (_, j) => store.claims.put(KEY(i + j), randomBytes(3 * 1024).toString('base64'))));
  }
  const tables = async () => (await readdir(dir)).filter((name) => name.endsWith('.ldb')).length;
  await waitFor(async () => (await tables()) > 80, { timeoutMs: 60_000, description: 'the records compacted into many tables' });
  for (let i = 0; i < RECORDS; i++) expect(await store.claims.get(KEY(i))).toBeDefined();
  return { tables: await tables(), mapped: await mappedTables(dir) };
}

describe('store table files', () => {
  it('stay mapped 64 at most, however many are read', async () => {
    const bounded = await readEverything();
    expect(bounded.tables).toBeGreaterThan(80);
    expect(bounded.mapped).toBeGreaterThan(0);
    expect(bounded.mapped).toBeLessThanOrEqual(64);
    // LevelDB's own default keeps every table it read mapped: the same reads, most tables.
    const unbounded = await readEverything(1000);
    expect(unbounded.mapped).toBeGreaterThan(80);
  }, 120_000);
});
