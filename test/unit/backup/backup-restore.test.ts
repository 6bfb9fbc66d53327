/**
 * `runBackup` of a stopped node's store and `runRestore` (src/backup), on real LevelDB in temp dirs:
 * the restored store holds every entry (jobs excepted) byte for byte plus the restore marker; the
 * archive is 0600 and holds no key unless asked; wrong cluster, wrong node, a busy data dir, missing
 * or wrong keys, slot 0 and a damaged archive are refused with nothing left behind; so is a restore
 * over a running node (its store locked, or its operator port answering as it), whatever the flags.
 */
import { createServer } from 'node:http';
import { readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createReadStream } from 'node:fs';
import { BackupError, decodeArchive, encodeArchive, RESTORE_META_KEY, runBackup, runRestore, verifyArchiveFile, type BackupHeader, type BackupSummary, type RestoreMarker } from '../../../src/backup/index.ts';
import { loadNodeSetup } from '../../../src/config/index.ts';
import { initCluster } from '../../../src/node/cluster-init.ts';
import { openStore, STORE_SCHEMA_VERSION, type NodeStore } from '../../../src/store/index.ts';
import { getFreePortRange } from '../../../src/testing/index.ts';
import { cleanupStack, tempDir } from '../../utils/temp.ts';

const stack = cleanupStack();
afterEach(() => stack.run());

/** A generated 3-node cluster; `setup(i, flags)` loads node i's config with overrides. */
async function cluster() {
  const dir = await tempDir(stack, 'qk-backup-');
  // Free ports nobody listens on: `backup` finds no running node and reads the store.
  const base = await getFreePortRange(9);
  await initCluster({ out: dir, size: 3, threshold: 2, basePort: base, httpBasePort: base + 3, operatorBasePort: base + 6, clusterId: 'qk-backup-test' });
  const setup = (i: number, flags: Record<string, string> = {}) => loadNodeSetup({ file: join(dir, `node-${i}.json`), env: {}, flags });
  return { dir, setup };
}

/** Every raw entry of a store, hex → hex. */
async function rawEntries(store: NodeStore): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for await (const { key, value } of store.snapshot()) out.set(Buffer.from(key).toString('utf8'), Buffer.from(value).toString('hex'));
  return out;
}

async function fillStore(location: string): Promise<void> {
  const store = await openStore({ location });
  try {
    await store.records.commit({
      log: [{ kind: 'probe', key: 'p1', origin: '0xaa', seq: 1, hlc: [1, 0], body: { note: 'x' }, sig: '0x01' }],
      states: [{ kind: 'probe', key: 'p1', origin: '0xaa', seq: 1, hlc: [1, 0], body: { note: 'x' }, sig: '0x01' }],
      vv: { '0xaa': 1 },
    });
    await store.shares.put(7, new Uint8Array([1, 2, 3, 4]));
    await store.claims.put('email:abcd', 'principal-1');
    await store.claims.commit({ counters: new Map([['secretId', 1]]), claims: new Map() });
    await store.putMeta('web3-cursor:8453', 1234);
    await store.jobs.put({ id: 'job-1' } as never);
  } finally {
    await store.close();
  }
}

async function refusedWith(run: Promise<unknown>, pattern: RegExp): Promise<void> {
  const err = await run.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err, 'not refused').toBeInstanceOf(Error);
  expect((err as Error).message).toMatch(pattern);
}

describe('backup and restore of a stopped node', () => {
  it('round trip into a new data dir: every entry but the jobs, byte for byte, plus the restore marker; archive 0600 without keys', async () => {
    const { dir, setup } = await cluster();
    const original = setup(1);
    await fillStore(join(original.config.dataDir, 'db'));
    const out = join(dir, 'node-1.qkbackup');
    const report = await runBackup({ config: original.config, descriptor: original.descriptor, out }, { clock: () => 42 });
    expect(report).toMatchObject({ source: 'offline', header: { clusterId: 'qk-backup-test', nodeId: 'node-1', slot: 1, createdAt: 42, includesKeys: false } });
    expect(report.summary.counts).toMatchObject({ log: 1, state: 1, vv: 1, shares: 1, claims: 1, counters: 1 });
    expect(report.summary.counts['jobs']).toBeUndefined();
    expect((await stat(out)).mode & 0o777).toBe(0o600);
    // No temporary file is left next to it.
    expect((await readdir(dir)).filter((n) => n.endsWith('.tmp'))).toEqual([]);
    // Neither key is in the archive, in any spelling.
    const archive = await readFile(out);
    for (const name of ['storage.key', 'signing.key']) {
      const hex = (await readFile(join(original.config.dataDir, 'keys', name), 'utf8')).trim();
      expect(archive.includes(Buffer.from(hex, 'hex'))).toBe(false);
      expect(archive.includes(Buffer.from(hex))).toBe(false);
    }
    expect((await verifyArchiveFile(out)).summary.entries).toBe(report.summary.entries);

    // A new data dir; the keys stay where they were.
    const target = setup(1, { dataDir: join(dir, 'restored-1'), keysDir: join(original.config.dataDir, 'keys') });
    const restored = await runRestore({ config: target.config, descriptor: target.descriptor, input: out }, { clock: () => 99 });
    expect(restored).toMatchObject({ entries: report.summary.entries, keysWritten: false, replacedStore: false });
    const before = await openStore({ location: join(original.config.dataDir, 'db') });
    const expected = await rawEntries(before);
    await before.close();
    const after = await openStore({ location: join(target.config.dataDir, 'db') });
    stack.push(() => after.close());
    const got = await rawEntries(after);
    const marker = (await after.getMeta(RESTORE_META_KEY)) as RestoreMarker;
    expect(marker).toEqual({ state: 'catching-up', restoredAt: 99, backupCreatedAt: 42, ownSeqAtBackup: 0 });
    expected.delete('!jobs!job-1');
    got.delete(`!meta!${RESTORE_META_KEY}`);
    expect(got).toEqual(expected);
    expect((await readdir(target.config.dataDir)).sort()).toEqual(['db']);
  });

  it('an archive of store schema 1 (states held copies of their records) restores, and the store is upgraded when opened', async () => {
    const { dir, setup } = await cluster();
    const original = setup(1);
    await fillStore(join(original.config.dataDir, 'db'));
    const current = join(dir, 'node-1.qkbackup');
    await runBackup({ config: original.config, descriptor: original.descriptor, out: current }, { clock: () => 42 });
    // Rewrite it as a schema-1 build wrote it: the header's version, the meta entry, whole records as states.
    const text = (b: Uint8Array) => Buffer.from(b).toString('utf8');
    const bytes = (t: string) => new Uint8Array(Buffer.from(t, 'utf8'));
    let header: BackupHeader | undefined;
    let summary: BackupSummary | undefined;
    const entries: Array<{ key: Uint8Array; value: Uint8Array }> = [];
    const logs = new Map<string, string>();
    for await (const item of decodeArchive(createReadStream(current))) {
      if (item.type === 'header') header = item.header;
      else if (item.type === 'summary') summary = item.summary;
      else if (item.type === 'entry') {
        entries.push({ key: Uint8Array.from(item.key), value: Uint8Array.from(item.value) });
        if (text(item.key).startsWith('!log!')) logs.set(text(item.key).slice('!log!'.length), text(item.value));
      }
    }
    expect(header!.storeSchemaVersion).toBe(STORE_SCHEMA_VERSION);
    const old = entries.map(({ key, value }) => {
      const k = text(key);
      if (k === '!meta!schemaVersion') return { key, value: bytes('1') };
      if (k.startsWith('!state!')) return { key, value: bytes(logs.get(JSON.parse(text(value)) as string)!) };
      return { key, value };
    });
    expect(old.some(({ key, value }) => text(key).startsWith('!state!') && text(value).includes('"body"'))).toBe(true);
    const v1 = join(dir, 'node-1-v1.qkbackup');
    await writeFile(v1, encodeArchive({ header: { ...header!, storeSchemaVersion: 1 }, entries: (async function* () { yield* old; })(), facts: () => summary!.facts }), { mode: 0o600 });

    const target = setup(1, { dataDir: join(dir, 'restored-v1'), keysDir: join(original.config.dataDir, 'keys') });
    await runRestore({ config: target.config, descriptor: target.descriptor, input: v1 }, { clock: () => 99 });
    const after = await openStore({ location: join(target.config.dataDir, 'db') });
    stack.push(() => after.close());
    expect(await after.getMeta('schemaVersion')).toBe(STORE_SCHEMA_VERSION);
    expect(await after.records.getState('probe', 'p1')).toMatchObject({ kind: 'probe', key: 'p1', origin: '0xaa', seq: 1, body: { note: 'x' } });
    const states = [...(await rawEntries(after))].filter(([k]) => k.startsWith('!state!'));
    expect(states).toEqual([['!state!probe!p1', Buffer.from(JSON.stringify('0xaa!000000000001')).toString('hex')]]);
    // A schema this build does not know is refused before anything is written.
    const v9 = join(dir, 'node-1-v9.qkbackup');
    await writeFile(v9, encodeArchive({ header: { ...header!, storeSchemaVersion: STORE_SCHEMA_VERSION + 1 }, entries: (async function* () { yield* entries; })(), facts: () => summary!.facts }), { mode: 0o600 });
    const refused = setup(1, { dataDir: join(dir, 'restored-v9'), keysDir: join(original.config.dataDir, 'keys') });
    await refusedWith(runRestore({ config: refused.config, descriptor: refused.descriptor, input: v9 }, { clock: () => 99 }), /schema/);
    expect(await readdir(refused.config.dataDir).catch(() => [])).not.toContain('db');
  });

  it('--include-keys: a data dir without keys gets them (0600), checked against the cluster file', async () => {
    const { dir, setup } = await cluster();
    const original = setup(2);
    await fillStore(join(original.config.dataDir, 'db'));
    const out = join(dir, 'with-keys.qkbackup');
    const report = await runBackup({ config: original.config, descriptor: original.descriptor, out, includeKeys: true });
    expect(report.header.includesKeys).toBe(true);
    expect(report.summary.files).toBe(3);
    // Without keys, a restore into an empty dir is refused by an archive that has none.
    const plain = join(dir, 'plain.qkbackup');
    await runBackup({ config: original.config, descriptor: original.descriptor, out: plain });
    const fresh = setup(2, { dataDir: join(dir, 'fresh-2') });
    await refusedWith(runRestore({ config: fresh.config, descriptor: fresh.descriptor, input: plain }), /no keys in .*copy the node's keys/);
    expect(await readdir(dir)).not.toContain('fresh-2');

    const restored = await runRestore({ config: fresh.config, descriptor: fresh.descriptor, input: out });
    expect(restored.keysWritten).toBe(true);
    const keysDir = join(fresh.config.dataDir, 'keys');
    for (const name of await readdir(keysDir)) {
      expect((await stat(join(keysDir, name))).mode & 0o777).toBe(0o600);
      expect(await readFile(join(keysDir, name))).toEqual(await readFile(join(original.config.dataDir, 'keys', name)));
    }
  });

  it('refuses another cluster, another node, a busy data dir, wrong keys and slot 0 — writing nothing', async () => {
    const { dir, setup } = await cluster();
    const original = setup(1);
    await fillStore(join(original.config.dataDir, 'db'));
    const out = join(dir, 'node-1.qkbackup');
    await runBackup({ config: original.config, descriptor: original.descriptor, out });
    const target = (i: number, name: string, keysOf = i) => setup(i, { dataDir: join(dir, name), keysDir: join(dir, `node-${keysOf}`, 'keys') });

    const other = target(1, 'other-cluster');
    await refusedWith(runRestore({ config: other.config, descriptor: { ...other.descriptor, clusterId: 'qk-elsewhere' }, input: out }), /archive is of cluster qk-backup-test; .* qk-elsewhere/);
    const node2 = target(2, 'as-node-2');
    await refusedWith(runRestore({ config: node2.config, descriptor: node2.descriptor, input: out }), /archive is of node-1 .* this config is node-2/);
    const wrongKeys = target(1, 'wrong-keys', 2);
    await refusedWith(runRestore({ config: wrongKeys.config, descriptor: wrongKeys.descriptor, input: out }), /are not node-1's/);
    // The original data dir holds a store: refused without --force.
    await refusedWith(runRestore({ config: original.config, descriptor: original.descriptor, input: out }), /is not empty \(db/);
    for (const name of ['other-cluster', 'as-node-2', 'wrong-keys']) expect(await readdir(dir)).not.toContain(name);

    // --force replaces the store (and leaves no temporary folder).
    const forced = await runRestore({ config: original.config, descriptor: original.descriptor, input: out, force: true });
    expect(forced.replacedStore).toBe(true);
    expect((await readdir(original.config.dataDir)).filter((n) => n.startsWith('.'))).toEqual([]);

    // Slot 0 only with --allow-slot0.
    const zero = setup(0);
    await fillStore(join(zero.config.dataDir, 'db'));
    const zeroOut = join(dir, 'node-0.qkbackup');
    await runBackup({ config: zero.config, descriptor: zero.descriptor, out: zeroOut });
    const zeroTarget = target(0, 'slot-0');
    await refusedWith(runRestore({ config: zeroTarget.config, descriptor: zeroTarget.descriptor, input: zeroOut }), /slot 0: its counters and claims/);
    await runRestore({ config: zeroTarget.config, descriptor: zeroTarget.descriptor, input: zeroOut, allowSlot0: true });
  });

  it('a damaged or truncated archive is refused and leaves nothing in the data dir', async () => {
    const { dir, setup } = await cluster();
    const original = setup(1);
    await fillStore(join(original.config.dataDir, 'db'));
    const out = join(dir, 'node-1.qkbackup');
    await runBackup({ config: original.config, descriptor: original.descriptor, out });
    const archive = await readFile(out);
    const damaged = join(dir, 'damaged.qkbackup');
    const flipped = Buffer.from(archive);
    flipped[archive.length - 100] = flipped[archive.length - 100]! ^ 0xff;
    const truncated = join(dir, 'truncated.qkbackup');
    await writeFile(damaged, flipped);
    await writeFile(truncated, archive.subarray(0, archive.length - 10));
    for (const [file, pattern] of [
      [damaged, /SHA-256 mismatch|malformed|out of range|not valid JSON/],
      [truncated, /truncated/],
    ] as const) {
      await refusedWith(verifyArchiveFile(file), pattern);
      const target = setup(1, { dataDir: join(dir, 'restore-target'), keysDir: join(original.config.dataDir, 'keys') });
      await refusedWith(runRestore({ config: target.config, descriptor: target.descriptor, input: file }), pattern);
      expect(await readdir(target.config.dataDir)).toEqual([]);
    }
    // The dry run checks the same and writes nothing.
    const dry = setup(1, { dataDir: join(dir, 'dry'), keysDir: join(original.config.dataDir, 'keys') });
    expect((await runRestore({ config: dry.config, descriptor: dry.descriptor, input: out, dryRun: true })).entries).toBeGreaterThan(0);
    expect(await readdir(dir)).not.toContain('dry');
  });

  it('a running node is refused, --force and --dry-run included: its store locked, or its operator port answering as it', async () => {
    const { dir, setup } = await cluster();
    const original = setup(1);
    await fillStore(join(original.config.dataDir, 'db'));
    const out = join(dir, 'node-1.qkbackup');
    await runBackup({ config: original.config, descriptor: original.descriptor, out });
    const running = (run: Promise<unknown>) => expect(run).rejects.toMatchObject({ name: 'BackupError', code: 'NODE_RUNNING' });
    const { config, descriptor } = original;

    // The store held open, as a running node holds it (LevelDB refuses a second open in one process too).
    const held = await openStore({ location: join(config.dataDir, 'db') });
    const before = await rawEntries(held);
    for (const flags of [{}, { force: true }, { force: true, dryRun: true }, { dryRun: true }]) await running(runRestore({ config, descriptor, input: out, ...flags }));
    expect(await rawEntries(held)).toEqual(before);
    expect((await readdir(config.dataDir)).filter((n) => n.startsWith('.'))).toEqual([]);
    await held.close();

    // Its operator port answers /healthz as this node: refused, even into a new data dir.
    const nodeAddress = descriptor.nodes.find((n) => n.id === 'node-1')!.nodeAddress;
    let answerAs = nodeAddress;
    const server = createServer((req, res) => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify(req.url === '/healthz' ? { status: 'ok', enclaveWalletAddress: answerAs, clusterMap: {} } : {}));
    });
    await new Promise<void>((r) => server.listen(config.operator.port, '127.0.0.1', r));
    stack.push(() => new Promise((r) => server.close(r)));
    const elsewhere = setup(1, { dataDir: join(dir, 'elsewhere'), keysDir: join(config.dataDir, 'keys') });
    for (const flags of [{ force: true }, { force: true, dryRun: true }]) await running(runRestore({ config: elsewhere.config, descriptor, input: out, ...flags }));
    expect(await readdir(dir)).not.toContain('elsewhere');
    // Another node answering there is not this one.
    answerAs = descriptor.nodes.find((n) => n.id === 'node-2')!.nodeAddress;
    expect((await runRestore({ config: elsewhere.config, descriptor, input: out })).entries).toBeGreaterThan(0);
  });

  it('a dry run into a data dir that holds a store reports it (a restore needs --force) instead of refusing, and writes nothing', async () => {
    const { dir, setup } = await cluster();
    const original = setup(1);
    await fillStore(join(original.config.dataDir, 'db'));
    const out = join(dir, 'node-1.qkbackup');
    await runBackup({ config: original.config, descriptor: original.descriptor, out });
    const { config, descriptor } = original;
    const store = await openStore({ location: join(config.dataDir, 'db') });
    const before = await rawEntries(store);
    await store.close();
    const dry = await runRestore({ config, descriptor, input: out, dryRun: true });
    expect(dry).toMatchObject({ present: ['db'], replacedStore: false });
    expect(dry.entries).toBeGreaterThan(0);
    expect((await runRestore({ config, descriptor, input: out, dryRun: true, force: true })).present).toEqual(['db']);
    const after = await openStore({ location: join(config.dataDir, 'db') });
    stack.push(() => after.close());
    expect(await rawEntries(after)).toEqual(before);
    expect((await readdir(config.dataDir)).sort()).toEqual(['db', 'keys']);
  });

  it('errors are BackupErrors for the CLI to print as one line', async () => {
    const { dir, setup } = await cluster();
    const node = setup(1);
    // No store at all.
    await expect(runBackup({ config: node.config, descriptor: node.descriptor, out: join(dir, 'x.qkbackup') })).rejects.toBeInstanceOf(BackupError);
    expect((await readdir(dir)).filter((n) => n.includes('x.qkbackup'))).toEqual([]);
  });
});
