/**
 * Each record stored once (src/store/level-store.ts, schema 2): a `state` entry names its winner's
 * place in the log instead of holding a copy; a store of schema 1 (copies) is upgraded when opened,
 * and reads the same before and after; a state whose log place now holds another record (the other
 * record of an equivocation) is no winner; a store of a newer schema is refused.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Level } from 'level';
import { openStore, STORE_SCHEMA_VERSION, type NodeStore } from '../../../src/store/index.ts';
import type { ReplicatedRecord } from '../../../src/core/replication/record.ts';
import { cleanupStack, tempDir } from '../../utils/temp.ts';

const stack = cleanupStack();
afterEach(() => stack.run());

const ORIGIN = `0x${'a'.repeat(40)}`;
const BIG = 'x'.repeat(3000);

function record(kind: string, key: string, seq: number, extra = BIG): ReplicatedRecord {
  return { kind, key, origin: ORIGIN, seq, hlc: [seq, 0], body: { key, extra }, sig: `0x${seq.toString(16)}` };
}

/** Raw bytes (values) of a sublevel, read with a plain LevelDB on the closed store. */
async function sublevelBytes(location: string, name: string): Promise<{ entries: number; bytes: number; values: string[] }> {
  const db = new Level<string, string>(location, { valueEncoding: 'utf8' });
  await db.open();
  const out = { entries: 0, bytes: 0, values: [] as string[] };
  try {
    for await (const [, v] of db.iterator({ gt: `!${name}!`, lt: `!${name}!\uffff` })) {
      out.entries++;
      out.bytes += Buffer.byteLength(v);
      out.values.push(v);
    }
  } finally {
    await db.close();
  }
  return out;
}

async function keysOf(store: NodeStore, kind: string, o: { limit?: number; reverse?: boolean } = {}): Promise<string[]> {
  const out: string[] = [];
  for await (const r of store.records.listState(kind, o)) out.push(r.key);
  return out;
}

describe('the keys of a kind', () => {
  it('come a page at a time, every key once, in order, forwards and backwards, with a limit', async () => {
    const store = await openStore({ location: await tempDir(stack) });
    stack.push(() => store.close());
    const records = Array.from({ length: 2_100 }, (_, i) => record('secret', String(i).padStart(12, '0'), i + 1, ''));
    await store.records.commit({ log: records, states: records, vv: { [ORIGIN]: records.length } });
    const pages: Array<readonly string[]> = [];
    for await (const page of store.records.listStateKeys('secret')) pages.push(page);
    expect(pages.length).toBeGreaterThan(1);
    expect(pages.flat()).toEqual(records.map((r) => r.key));
    const last: string[] = [];
    for await (const page of store.records.listStateKeys('secret', { reverse: true, limit: 1_500 })) last.push(...page);
    expect(last).toEqual(records.slice(-1_500).map((r) => r.key).reverse());
  });
});

describe('each record stored once', () => {
  it('a state entry is its winner’s log key, and reads give the whole record', async () => {
    const location = await tempDir(stack);
    const store = await openStore({ location });
    const records = Array.from({ length: 600 }, (_, i) => record('secret', String(i).padStart(12, '0'), i + 1));
    await store.records.commit({ log: records, states: records, vv: { [ORIGIN]: records.length } });
    // A later version of one key wins it; the log keeps both.
    const v2 = record('secret', records[7]!.key, 601, 'second');
    await store.records.commit({ log: [v2], states: [v2], vv: { [ORIGIN]: 601 } });

    expect(await store.records.getState('secret', records[7]!.key)).toEqual(v2);
    expect(await store.records.getStates([{ kind: 'secret', key: records[3]!.key }, { kind: 'secret', key: 'none' }, { kind: 'secret', key: records[7]!.key }])).toEqual([records[3], undefined, v2]);
    // Listing crosses several pages, forwards and backwards, with a limit.
    const all = await keysOf(store, 'secret');
    expect(all).toEqual(records.map((r) => r.key));
    expect(await keysOf(store, 'secret', { reverse: true, limit: 300 })).toEqual(all.slice(-300).reverse());
    const listed: ReplicatedRecord[] = [];
    for await (const r of store.records.listState('secret')) listed.push(r);
    expect(listed[7]).toEqual(v2);
    // The keys alone, without their records: the same keys, one each, and none of another kind.
    await store.records.commit({ log: [record('web3Secret', '1:000000000000001', 602)], states: [record('web3Secret', '1:000000000000001', 602)], vv: { [ORIGIN]: 602 } });
    const keys: string[] = [];
    for await (const page of store.records.listStateKeys('secret')) keys.push(...page);
    expect(keys).toEqual(all);
    const web3: string[] = [];
    for await (const page of store.records.listStateKeys('web3Secret')) web3.push(...page);
    expect(web3).toEqual(['1:000000000000001']);
    await store.close();

    const state = await sublevelBytes(location, 'state');
    const log = await sublevelBytes(location, 'log');
    expect(state.entries).toBe(601);
    expect(log.entries).toBe(602);
    // The body lives in the log alone: a state entry is a log key, tens of bytes.
    expect(state.values.every((v) => /^"0x[0-9a-f]{40}![0-9a-f]{12}"$/.test(v))).toBe(true);
    expect(state.bytes).toBeLessThan(log.bytes / 40);
  });

  it('a schema-1 store (states held copies; some already rewritten by an upgrade that crashed) is upgraded when opened and reads the same', async () => {
    const location = await tempDir(stack);
    const records = Array.from({ length: 1500 }, (_, i) => record(i % 2 ? 'secret' : 'principal', String(i).padStart(12, '0'), i + 1));
    // Build it as a schema-1 build left it: whole records under `state`.
    const db = new Level<string, unknown>(location, { valueEncoding: 'json' });
    await db.open();
    const batch = db.batch();
    batch.put('schemaVersion', 1, { sublevel: db.sublevel('meta', { valueEncoding: 'json' }) });
    for (const [i, r] of records.entries()) {
      const logKey = `${ORIGIN}!${r.seq.toString(16).padStart(12, '0')}`;
      batch.put(logKey, r, { sublevel: db.sublevel('log', { valueEncoding: 'json' }) });
      // The first 400 as an upgrade that crashed midway left them: already log keys.
      batch.put(`${r.kind}!${r.key}`, i < 400 ? logKey : r, { sublevel: db.sublevel('state', { valueEncoding: 'json' }) });
    }
    await batch.write();
    await db.close();
    const before = await sublevelBytes(location, 'state');

    let store = await openStore({ location });
    expect(await store.records.getState('secret', records[1]!.key)).toEqual(records[1]);
    expect(await keysOf(store, 'principal')).toEqual(records.filter((r) => r.kind === 'principal').map((r) => r.key));
    expect(await store.getMeta('schemaVersion')).toBe(STORE_SCHEMA_VERSION);
    await store.close();
    const after = await sublevelBytes(location, 'state');
    expect(after.entries).toBe(1500);
    expect(after.values.every((v) => v.startsWith('"0x'))).toBe(true);
    expect(after.bytes).toBeLessThan(before.bytes / 10);

    // Opening again changes nothing.
    store = await openStore({ location });
    stack.push(() => store.close());
    expect(await store.records.getStates(records.slice(0, 3).map((r) => ({ kind: r.kind, key: r.key })))).toEqual(records.slice(0, 3));
  });

  it('a state whose log place now holds another record is no winner', async () => {
    const store = await openStore({ location: await tempDir(stack) });
    stack.push(() => store.close());
    const first = record('secret', '000000000001', 1);
    await store.records.commit({ log: [first], states: [first], vv: { [ORIGIN]: 1 } });
    // The other record of an equivocation under (ORIGIN, 1), of another key, takes the log place.
    const other = record('secret', '000000000002', 1, 'other');
    await store.records.commit({ log: [other], states: [other], vv: {} });
    expect(await store.records.getState('secret', '000000000001')).toBeUndefined();
    expect(await store.records.getState('secret', '000000000002')).toEqual(other);
    expect(await keysOf(store, 'secret')).toEqual(['000000000002']);
    // The keys alone still name the displaced one: a reader that needs a winner looks it up.
    const keys: string[] = [];
    for await (const page of store.records.listStateKeys('secret')) keys.push(...page);
    expect(keys).toEqual(['000000000001', '000000000002']);
  });

  it('a store of a newer schema is refused, not misread', async () => {
    const location = await tempDir(stack);
    const store = await openStore({ location });
    await store.putMeta('schemaVersion', STORE_SCHEMA_VERSION + 1);
    await store.close();
    await expect(openStore({ location })).rejects.toThrow(/schema version/);
  });
});
