/**
 * No share, seed or ML-KEM secret key in the clear, on disk or in logs (docs/architecture.md, Keys and
 * crypto: "member i stores share i, encrypted at rest"; CONTRIBUTING.md rule 9: never log shares, keys or
 * plaintext). A real cluster logging at debug level into a capturing stream creates secrets,
 * encrypts and decrypts (so shares travel and seeds are rebuilt) — one secret with two members
 * stopped, so its sealed shares wait on the coordinator and are delivered later — and is stopped
 * with its data kept. The ground truth is then recovered from outside: each member's `shares`
 * sublevel, opened with that member's storage key, gives the shares; threshold of them give the
 * seed; @noble/post-quantum expands it to the secret key. None of them, in raw bytes, hex or
 * base64, is in any file under any node's data dir or in any log line.
 */
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ml_kem768 } from '@noble/post-quantum/ml-kem.js';
import { Level } from 'level';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalCluster, waitFor, type LocalCluster } from 'quorumkeep/testing';
import { loadOrCreateNodeKeys } from '../../src/cluster/identity.ts';
import { shareAtRestAad } from '../../src/core/secrets/records.ts';
import { combineShares, decryptAtRest, mlkemPublicKeyFromSeed, toBase64, toHex } from '../../src/crypto/index.ts';
import { openStore } from '../../src/store/index.ts';
import { captureClusterLogs, filesUnder, postExpecting } from '../utils/at-rest.ts';
import { getJson } from '../utils/http.ts';
import { principalWithSession, type Principal } from '../utils/session.ts';
import { cleanupStack, tempDir } from '../utils/temp.ts';

const SIZE = 5;
const THRESHOLD = 3;
/** Bytes of a share: the 64-byte seed's y-bytes and the x-coordinate. */
const SHARE_BYTES = 65;
/** ML-KEM-768 decapsulation key layout (FIPS 203): dk_PKE ‖ ek ‖ H(ek) ‖ z. */
const DK_PKE_BYTES = 1152;
const MLKEM768_SECRET_KEY_BYTES = 2400;
const Z_OFFSET = 2368;
/** Bytes of each window searched for. */
const WINDOW_BYTES = 32;

/** Every log line of every node, as written; `captureLogs` is the cluster's log destination. */
const { lines: logLines, destination: captureLogs } = captureClusterLogs();

const stack = cleanupStack();
let cluster: LocalCluster;
let dir: string;
let alice: Principal;

interface CreatedSecret {
  secretId: number;
  publicKeyCid: string;
  status: string;
}
const created: CreatedSecret[] = [];
const plaintexts: string[] = [];
/** Every file under every node's data dir, read after the stop and before anything reopens a store. */
const files = new Map<string, Buffer>();
/**
 * Every key and value of every node's LevelDB, decoded: table blocks may be Snappy-compressed, which
 * could break up a run of bytes in the raw files.
 */
const dumps = new Map<string, Buffer>();

/** Ground truth recovered from the stores after the stop. */
interface Truth {
  secretId: number;
  /** Slot → its clear share. */
  shares: Uint8Array[];
  /** Slot → its at-rest box as stored. */
  boxes: Uint8Array[];
  seed: Uint8Array;
  secretKey: Uint8Array;
  publicKeyCid: string;
}
const truths: Truth[] = [];

/** Encrypt a fresh plaintext on `encryptAt` and decrypt it on `decryptAt`; the seed is rebuilt there. */
async function roundTrip(encryptAt: string, decryptAt: string, secretId: number): Promise<void> {
  const plaintext = `plaintext-${randomBytes(24).toString('hex')}`;
  plaintexts.push(plaintext);
  const enc = await postExpecting<{ cifer: string; encryptedMessage: string }>(encryptAt, '/encrypt-payload', alice.signed(secretId, plaintext));
  const dec = await postExpecting<{ decryptedMessage: string }>(decryptAt, '/decrypt-payload', { cifer: enc.cifer, ...alice.signed(secretId, enc.encryptedMessage) });
  expect(dec.decryptedMessage).toBe(plaintext);
}

async function failuresOn(url: string) {
  const res = await getJson<{ failures: Array<{ secretId: number; failedNodeAddresses: string[] }> }>(`${url}/web2/secret-failures`, { authorization: `Bearer ${cluster.adminToken}` });
  if (res.status !== 200) throw new Error(`secret-failures: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.failures;
}

/** Every key and value of a LevelDB, concatenated. */
async function dumpDb(location: string): Promise<Buffer> {
  const db = new Level<Buffer, Buffer>(location, { keyEncoding: 'buffer', valueEncoding: 'buffer' });
  await db.open();
  const parts: Buffer[] = [];
  try {
    for await (const [key, value] of db.iterator()) parts.push(key, value);
  } finally {
    await db.close();
  }
  return Buffer.concat(parts);
}

beforeAll(async () => {
  dir = await tempDir(stack, 'qk-shares-');
  // With `dir` given the cluster keeps its data on stop; the stack removes the dir afterwards.
  cluster = await startLocalCluster({
    size: SIZE,
    threshold: THRESHOLD,
    coordinators: 2,
    dir,
    logLevel: 'debug',
    logDestination: captureLogs,
    nodeConfig: { secrets: { retryIntervalMs: 200 } },
  });
  stack.push(() => cluster.stop());
  const [A, B] = cluster.coordinators as [string, string];
  alice = await principalWithSession(cluster, A, 'alice');

  // Two secrets with every member up, each decrypted on the coordinator that did not encrypt.
  for (const [at, other] of [[A, B], [B, A]] as const) {
    const secret = await postExpecting<CreatedSecret>(at, '/web2/secret', alice.signed(0), 201);
    expect(secret.status).toBe('complete');
    created.push(secret);
    await roundTrip(at, other, secret.secretId);
  }

  // A third with members 3 and 4 down: A keeps their shares, sealed, until it can deliver them.
  await cluster.stopMember(3);
  await cluster.stopMember(4);
  const late = await postExpecting<CreatedSecret>(A, '/web2/secret', alice.signed(0), 201);
  expect(late.status).toBe('propagating');
  created.push(late);
  const pending = (await failuresOn(A)).find((f) => f.secretId === late.secretId);
  expect(pending?.failedNodeAddresses.sort()).toEqual([3, 4].map((s) => cluster.descriptor.nodes[s]!.nodeAddress).sort());
  await roundTrip(B, A, late.secretId);
  await cluster.restartMember(3);
  await cluster.restartMember(4);
  await waitFor(async () => (await failuresOn(A)).length === 0, { timeoutMs: 15_000, intervalMs: 100, description: 'the late shares to be delivered' });

  // Only 1, 3 and 4 up: B's decrypt needs the two shares delivered late.
  await cluster.stopMember(0);
  await cluster.stopMember(2);
  await roundTrip(B, B, late.secretId);

  await cluster.stop();

  for (let slot = 0; slot < SIZE; slot++) {
    for (const file of await filesUnder(join(dir, `node-${slot}`))) files.set(file, await readFile(file));
  }

  // Ground truth, from outside: each member's own store and storage key.
  const perSlot: Array<Map<number, { box: Uint8Array; share: Uint8Array }>> = [];
  for (let slot = 0; slot < SIZE; slot++) {
    const { keys } = await loadOrCreateNodeKeys(join(dir, `node-${slot}`, 'keys'));
    const store = await openStore({ location: join(dir, `node-${slot}`, 'db') });
    const mine = new Map<number, { box: Uint8Array; share: Uint8Array }>();
    try {
      for (const { secretId } of created) {
        const box = await store.shares.get(secretId);
        if (!box) throw new Error(`node-${slot} holds no share of secret ${secretId}`);
        const share = decryptAtRest(keys.storage, box, shareAtRestAad(cluster.descriptor.clusterId, secretId, slot));
        if (!share) throw new Error(`node-${slot}'s share of secret ${secretId} does not open with its storage key`);
        mine.set(secretId, { box, share });
      }
    } finally {
      await store.close();
    }
    perSlot.push(mine);
    dumps.set(`node-${slot}`, await dumpDb(join(dir, `node-${slot}`, 'db')));
  }
  for (const { secretId, publicKeyCid } of created) {
    const shares = perSlot.map((m) => m.get(secretId)!.share);
    const seed = await combineShares(shares.slice(0, THRESHOLD));
    const { publicKey, secretKey } = ml_kem768.keygen(seed);
    truths.push({ secretId, shares, boxes: perSlot.map((m) => m.get(secretId)!.box), seed, secretKey, publicKeyCid: toBase64(publicKey) });
    expect(publicKeyCid).toBe(toBase64(publicKey));
  }
}, 90_000);
afterAll(() => stack.run());

/** Offsets of the windows searched for in a value. */
function windowOffsets(value: Uint8Array, ranges: Array<[number, number]> = [[0, value.length]]): number[] {
  const out = new Set<number>();
  for (const [from, to] of ranges) {
    const last = to - WINDOW_BYTES - 2; // room for the two base64 alignment shifts
    for (const at of [from, Math.floor((from + last) / 2), last]) out.add(at);
  }
  return [...out];
}

/** A value to look for and where its secret bytes are. */
interface Needle {
  what: string;
  value: Uint8Array;
  ranges?: Array<[number, number]>;
}

/**
 * The encodings each window of a value could be written under: raw bytes, lowercase and uppercase
 * hex, and base64 (and base64url) at each of the three alignments a value inside a longer encoded
 * buffer can have.
 */
function encodings(needle: Needle): Array<{ label: string; bytes: Buffer }> {
  const out: Array<{ label: string; bytes: Buffer }> = [];
  for (const at of windowOffsets(needle.value, needle.ranges)) {
    const window = needle.value.subarray(at, at + WINDOW_BYTES);
    const hex = toHex(window);
    out.push({ label: `${needle.what} raw @${at}`, bytes: Buffer.from(window) });
    out.push({ label: `${needle.what} hex @${at}`, bytes: Buffer.from(hex, 'latin1') });
    out.push({ label: `${needle.what} HEX @${at}`, bytes: Buffer.from(hex.toUpperCase(), 'latin1') });
    for (let shift = 0; shift < 3; shift++) {
      const b64 = Buffer.from(needle.value.subarray(at + shift, at + shift + 30)).toString('base64');
      out.push({ label: `${needle.what} base64 @${at + shift}`, bytes: Buffer.from(b64, 'latin1') });
      out.push({ label: `${needle.what} base64url @${at + shift}`, bytes: Buffer.from(b64.replaceAll('+', '-').replaceAll('/', '_'), 'latin1') });
    }
  }
  return out;
}

/** Every private value of the ground truth. */
function privateNeedles(): Needle[] {
  const out: Needle[] = [];
  for (const t of truths) {
    t.shares.forEach((share, slot) => out.push({ what: `secret ${t.secretId} share ${slot}`, value: share }));
    out.push({ what: `secret ${t.secretId} seed`, value: t.seed });
    // ek and H(ek) inside the secret key are public (ek is the publicKeyCid, stored in every replica).
    out.push({ what: `secret ${t.secretId} secret key`, value: t.secretKey, ranges: [[0, DK_PKE_BYTES], [Z_OFFSET, MLKEM768_SECRET_KEY_BYTES]] });
  }
  return out;
}

/** The first encoding of `needles` found in `haystack`, or undefined. */
function firstFound(haystack: Buffer, needles: Needle[]): string | undefined {
  for (const needle of needles) for (const e of encodings(needle)) if (haystack.includes(e.bytes)) return e.label;
  return undefined;
}

/** A value as pino would print a Uint8Array or Buffer (`{"0":12,…}`, `[12,…]`), keys stripped: `12,…`. */
function decimalWindows(needle: Needle): string[] {
  return windowOffsets(needle.value, needle.ranges).map((at) => [...needle.value.subarray(at, at + WINDOW_BYTES)].join(','));
}

describe('shares, seeds and ML-KEM secret keys at rest and in logs', () => {
  it('the ground truth is real: every member holds an encrypted share of every secret, and 3 of them rebuild its key', async () => {
    expect(truths).toHaveLength(3);
    for (const t of truths) {
      expect(t.shares.every((s) => s.length === SHARE_BYTES)).toBe(true);
      expect(t.seed).toHaveLength(64);
      expect(t.secretKey).toHaveLength(MLKEM768_SECRET_KEY_BYTES);
      // Any threshold of shares, not just the first: the last three give the same seed and key.
      const again = await combineShares(t.shares.slice(SIZE - THRESHOLD));
      expect(toHex(again)).toBe(toHex(t.seed));
      expect(toBase64(mlkemPublicKeyFromSeed(t.seed))).toBe(t.publicKeyCid);
      expect(toHex(t.secretKey.subarray(Z_OFFSET))).toBe(toHex(t.seed.subarray(32)));
    }
    expect(plaintexts).toHaveLength(4);
    expect(files.size).toBeGreaterThan(SIZE * 5);
  });

  it('the search sees what is there: every at-rest box and every public key is found in the raw files and the decoded stores', () => {
    for (let slot = 0; slot < SIZE; slot++) {
      const raw = Buffer.concat([...files].filter(([file]) => file.startsWith(join(dir, `node-${slot}`, 'db'))).map(([, bytes]) => bytes));
      const decoded = dumps.get(`node-${slot}`)!;
      for (const [where, haystack] of [['raw files', raw], ['decoded store', decoded]] as const) {
        for (const t of truths) {
          expect(firstFound(haystack, [{ what: 'box', value: t.boxes[slot]! }]), `at-rest box of secret ${t.secretId} in the ${where} of node-${slot}`).toBeDefined();
          expect(firstFound(haystack, [{ what: 'public key', value: Buffer.from(t.publicKeyCid, 'base64') }]), `public key of secret ${t.secretId} in the ${where} of node-${slot}`).toBeDefined();
        }
      }
    }
  });

  it('the search finds each encoding when one is planted, at any alignment inside a longer value', () => {
    const { seed, secretKey } = truths[0]!;
    const needles = [{ what: 'seed', value: seed }];
    const prefixed = (n: number) => Buffer.concat([randomBytes(n), seed, randomBytes(5)]);
    const planted = [
      Buffer.concat([randomBytes(7), seed]),
      Buffer.from(JSON.stringify({ seed: toHex(seed) })),
      Buffer.from(`0x${toHex(seed).toUpperCase()}`),
      ...[0, 1, 2].map((n) => Buffer.from(prefixed(n).toString('base64'))),
      Buffer.from(prefixed(1).toString('base64url')),
    ];
    for (const [i, bytes] of planted.entries()) expect(firstFound(bytes, needles), `planted #${i}`).toBeDefined();
    expect(firstFound(Buffer.from(toHex(secretKey.subarray(500, 600))), [{ what: 'sk', value: secretKey, ranges: [[0, DK_PKE_BYTES]] }])).toBeDefined();
    const [window] = decimalWindows({ what: 'seed', value: seed });
    for (const logged of [JSON.stringify({ seed: new Uint8Array(seed) }), JSON.stringify({ seed: Buffer.from(seed) })]) {
      expect(logged.replace(/"\d+":/g, '').replace(/\s+/g, '').includes(window!), logged.slice(0, 80)).toBe(true);
    }
  });

  it('the late secret’s sealed shares went to the coordinator’s disk: the raw files scanned below still hold that entry', () => {
    const late = truths[2]!.secretId;
    const key = Buffer.from(`!pendingShares!${String(late).padStart(12, '0')}`);
    const coordinatorFiles = [...files].filter(([file]) => file.startsWith(join(dir, 'node-0', 'db')));
    expect(coordinatorFiles.some(([, bytes]) => bytes.includes(key))).toBe(true);
    // Delivered since: the live store no longer has it.
    expect(dumps.get('node-0')!.includes(key)).toBe(false);
  });

  it('no file under any node’s data dir contains a clear share, a seed or a secret key (raw, hex or base64)', () => {
    const needles = privateNeedles();
    for (const [file, raw] of files) expect(firstFound(raw, needles), `found in ${file}`).toBeUndefined();
  });

  it('no key or value of any node’s LevelDB, decoded, contains one either', () => {
    const needles = privateNeedles();
    for (const [node, dump] of dumps) expect(firstFound(dump, needles), `found in the store of ${node}`).toBeUndefined();
  });

  it('the nodes logged the secret flows, from every node', () => {
    for (let i = 0; i < SIZE; i++) expect(logLines.some((l) => l.includes(`"node":"node-${i}"`)), `lines of node-${i}`).toBe(true);
    for (const text of ['"secret created"', '"propagating"', '"secret shares complete"', '"/encrypt-payload"', '"/decrypt-payload"']) {
      expect(logLines.some((l) => l.includes(text)), text).toBe(true);
    }
  });

  it('no log line contains a clear share, a seed, a secret key or a decrypted plaintext', () => {
    const needles = privateNeedles();
    const decimals = needles.flatMap((n) => decimalWindows(n).map((d) => ({ what: n.what, d })));
    const plain = plaintexts.map((p) => ({ what: 'plaintext', value: Buffer.from(p, 'utf8') }));
    for (const [i, line] of logLines.entries()) {
      const bytes = Buffer.from(line, 'utf8');
      expect(firstFound(bytes, needles), `log line ${i}: ${line}`).toBeUndefined();
      const stripped = line.replace(/"\d+":/g, '').replace(/\s+/g, '');
      for (const { what, d } of decimals) expect(stripped.includes(d), `${what} as decimals in log line ${i}: ${line}`).toBe(false);
      expect(firstFound(bytes, plain), `log line ${i}: ${line}`).toBeUndefined();
    }
  });

  it('no file or decoded store holds a decrypted plaintext either', () => {
    const plain = plaintexts.map((p) => ({ what: 'plaintext', value: Buffer.from(p, 'utf8') }));
    for (const [where, bytes] of [...files, ...dumps]) expect(firstFound(bytes, plain), `found in ${where}`).toBeUndefined();
  });
});
