/**
 * A member's `shard` rules (src/core/secrets/shard-handler.ts; docs/security.md, Share release,
 * Share recovery and "Single use"): a release needs a decrypt's shape — a "remove delegate" string
 * never has one — and has one key per decrypt string whatever its spelling; a stored share must be
 * the one the secret's record names for this slot once the record exists; a coordinator's stores in
 * one `storeMany` are answered each as its own `store` would be. Refusals are told apart by code and
 * reason.
 */
import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createShardHandler, releaseUseKey } from '../../../../src/core/secrets/shard-handler.ts';
import { parseShardRequest, shareStoreRequest, STORE_MANY_MAX_ITEMS, type DecryptEnvelope, type ShareStoreRequest } from '../../../../src/core/secrets/shard-messages.ts';
import { secretKey, shareAtRestAad, shareDigest, shareStoreAad } from '../../../../src/core/secrets/records.ts';
import { web3SecretKey, web3SecretLabel } from '../../../../src/core/web3/records.ts';
import type { ClusterNodeEntry, StateReader } from '../../../../src/core/replication/ports.ts';
import type { ReplicatedRecord } from '../../../../src/core/replication/record.ts';
import { signedStringKey } from '../../../../src/core/sessions/evidence.ts';
import { CIFER_BYTES, decryptAtRest, encryptAtRest, fromHex, openSealed, sealTo, toBase64, toHex } from '../../../../src/crypto/index.ts';
import { createLogger } from '../../../../src/log/index.ts';
import { unitCluster } from '../../../utils/evidence.ts';
import { refusalOf } from '../../../utils/refusal.ts';

const address = '0xAbCdEf0123456789aBcDeF0123456789AbCdEf01';
const message = new Uint8Array([0xde, 0xad, 0xbe, 0xef]);
const cifer = new Uint8Array(CIFER_BYTES).fill(7);
const TS = '1700000000000';
const data = (last: string) => `-1_7_${address}_${TS}_${last}`;
const hexEnvelope: DecryptEnvelope = { cifer: toHex(cifer), inputFormat: 'hex' };
const base64Envelope: DecryptEnvelope = { cifer: toBase64(cifer), inputFormat: 'base64' };

describe('release single use', () => {
  it('a payload decrypt is one string whatever the spelling of its message or address', () => {
    const key = releaseUseKey(data('deadbeef'), hexEnvelope);
    expect(key).toBe(signedStringKey('decrypt', ['-1', '7', address.toLowerCase(), TS, 'deadbeef']));
    expect(releaseUseKey(data('0xDEADBEEF'), hexEnvelope)).toBe(key);
    expect(releaseUseKey(data(toBase64(message)), base64Envelope)).toBe(key);
    // Another message is another string.
    expect(releaseUseKey(data('deadbeee'), hexEnvelope)).not.toBe(key);
  });

  it('a file decrypt is its 4-part string, apart from any payload decrypt', () => {
    const parts = ['-1', '7', address, TS];
    const key = releaseUseKey(parts.join('_'), { file: true });
    expect(key).toBe(signedStringKey('decrypt-file', parts));
    expect(releaseUseKey(['-1', '7', address.toLowerCase(), TS].join('_'), { file: true })).toBe(key);
    expect(key).not.toBe(releaseUseKey(data('deadbeef'), hexEnvelope));
  });
});

describe("a release needs a decrypt's shape", () => {
  const notADecrypt = { code: 'BAD_REQUEST', reason: 'not_a_decrypt' };
  const shapeOf = (signed: string, envelope: DecryptEnvelope) => refusalOf(() => releaseUseKey(signed, envelope));

  it('the owner\'s "remove delegate" setDelegate string (empty last part) releases nothing, in either format', async () => {
    expect(await shapeOf(data(''), hexEnvelope)).toEqual(notADecrypt);
    expect(await shapeOf(data(''), base64Envelope)).toEqual(notADecrypt);
    // `0x` alone is empty hex.
    expect(await shapeOf(data('0x'), hexEnvelope)).toEqual(notADecrypt);
  });

  it('a setDelegate string naming a delegate (a principal id) is neither hex nor base64', async () => {
    const delegate = '0b5d6c1e-2f3a-4b4c-8d5e-6f7a8b9c0d1e';
    expect(await shapeOf(data(delegate), hexEnvelope)).toEqual(notADecrypt);
    expect(await shapeOf(data(delegate), base64Envelope)).toEqual(notADecrypt);
  });

  it('a message that does not decode, a malformed or short cifer, the wrong part count: not a decrypt', async () => {
    expect(await shapeOf(data('zz'), hexEnvelope)).toEqual(notADecrypt);
    expect(await shapeOf(data('deadbeef'), { cifer: toHex(cifer.subarray(1)), inputFormat: 'hex' })).toEqual(notADecrypt);
    expect(await shapeOf(data('deadbeef'), { cifer: '!!', inputFormat: 'base64' })).toEqual(notADecrypt);
    expect(await shapeOf(`-1_7_${address}_${TS}`, hexEnvelope)).toEqual(notADecrypt);
    expect(await shapeOf(data('dead_beef'), hexEnvelope)).toEqual(notADecrypt);
    expect(await shapeOf(data('deadbeef'), { file: true })).toEqual(notADecrypt);
  });

  it('one byte of message is enough (the encrypt route\'s own minimum)', async () => {
    expect(await shapeOf(data('00'), hexEnvelope)).toBe('accepted');
    expect(await shapeOf(data('AA=='), base64Envelope)).toBe('accepted');
  });
});

// --- Stores: a member of slot 2 (not a coordinator) of a 5-member cluster whose coordinators are 0 and 1.

const { keys, descriptor } = unitCluster();
const clusterId = descriptor.clusterId;
const SLOT = 2;
const SECRET_ID = 7;
const CHAIN_ID = 31337;
const storageKey = randomBytes(32);
const coordinator = descriptor.nodes[0]!;

/** A share of this slot: 64 random bytes at x = slot + 1. */
function shareAt(slot: number): Uint8Array {
  const share = new Uint8Array(randomBytes(65));
  share[64] = slot + 1;
  return share;
}

/** The `store` call dealing `share` to slot 2 (sealed to `sealedTo`'s key), as the edge decodes it. */
function storeOf(share: Uint8Array, chainId = -1, secretId = SECRET_ID, sealedTo = SLOT): ShareStoreRequest {
  const label = chainId === -1 ? secretId : web3SecretLabel(chainId, secretId);
  const box = sealTo(fromHex(descriptor.nodes[sealedTo]!.signingPublicKey), share, shareStoreAad(clusterId, label, SLOT));
  const request = parseShardRequest(shareStoreRequest(chainId, secretId, box));
  if (request.op !== 'store') throw new Error('not a store');
  return request;
}

/** A secret record whose digests name `share` for slot 2 (other slots: anything). */
function recordNaming(share: Uint8Array | undefined, label: number | string = SECRET_ID) {
  return share ? { shareDigests: [0, 1, 2, 3, 4].map((slot) => (slot === SLOT ? shareDigest(clusterId, label, SLOT, share) : 'ab'.repeat(32))) } : {};
}

/** Member 2's shard handler over an in-memory share store and the records given (`kind!key` → body). */
function member(records: Map<string, object> = new Map(), self: ClusterNodeEntry = descriptor.nodes[SLOT]!) {
  const stored = new Map<number | string, Uint8Array>();
  const state: StateReader = {
    get: async (kind, key) => {
      const body = records.get(`${kind}!${key}`);
      return body === undefined ? undefined : ({ kind, key, body } as unknown as ReplicatedRecord);
    },
    list: async function* () {},
  };
  const handler = createShardHandler({ usedStringPruneIntervalMs: 600_000 }, {
    membership: { descriptor, self, isReachable: () => true, reachableCount: () => 5 },
    state,
    reads: { requireSecret: () => Promise.reject(new Error('unused')), requireWeb3: () => Promise.reject(new Error('unused')) as never, web3Enabled: () => false },
    verifier: { verify: () => Promise.reject(new Error('unused')) },
    catchUp: async () => undefined,
    shares: { get: async (label) => stored.get(label), has: async (label) => stored.has(label), put: async (label, box) => void stored.set(label, box), flush: async () => undefined },
    usedStrings: { use: async () => true, chains: async () => [], prune: async () => 0 },
    keyring: {
      openSealed: (box, aad) => openSealed(keys[SLOT]!, box, aad),
      openBox: (box, aad) => Promise.resolve(openSealed(keys[SLOT]!, box, aad)),
      sealRelease: () => Promise.reject(new Error('unused')),
      encryptAtRest: (plaintext, aad) => encryptAtRest(storageKey, plaintext, aad),
      decryptAtRest: (box, aad) => decryptAtRest(storageKey, box, aad),
      ecdhX: () => {
        throw new Error('unused');
      },
    },
    clock: () => Date.now(),
    logger: createLogger({ level: 'silent' }),
    signal: new AbortController().signal,
  });
  /** The share held for `label`, hex, or undefined. */
  const held = (label: number | string = SECRET_ID) => {
    const box = stored.get(label);
    const share = box && decryptAtRest(storageKey, box, shareAtRestAad(clusterId, label, SLOT));
    return share ? toHex(share) : undefined;
  };
  const store = (request: ShareStoreRequest, from: ClusterNodeEntry = coordinator) => refusalOf(() => handler.handleShard(request, from));
  return { handler, held, store, records };
}

describe('a member storing its share', () => {
  it('with no record yet (a create in flight): stores it, keeps it on a repeat, and takes a retried create\'s new share', async () => {
    const m = member();
    const first = shareAt(SLOT);
    expect(await m.store(storeOf(first))).toBe('accepted');
    expect(m.held()).toBe(toHex(first));
    expect(await m.store(storeOf(first))).toBe('accepted');
    const retried = shareAt(SLOT);
    expect(await m.store(storeOf(retried))).toBe('accepted');
    expect(m.held()).toBe(toHex(retried));
  });

  it('once the record names its share: anything else is refused (share_mismatch), nothing is stored, and the genuine share is', async () => {
    const genuine = shareAt(SLOT);
    const m = member(new Map([[`secret!${secretKey(SECRET_ID)}`, recordNaming(genuine)]]));
    // A member that lost its disk, sent junk that opens for it and sits at its coordinate.
    expect(await m.store(storeOf(shareAt(SLOT)))).toEqual({ code: 'FORBIDDEN', reason: 'share_mismatch' });
    expect(m.held()).toBeUndefined();
    expect(await m.store(storeOf(genuine))).toBe('accepted');
    expect(m.held()).toBe(toHex(genuine));
    expect(await m.store(storeOf(genuine))).toBe('accepted');
    expect(await m.store(storeOf(shareAt(SLOT)))).toEqual({ code: 'FORBIDDEN', reason: 'share_mismatch' });
    expect(m.held()).toBe(toHex(genuine));
  });

  it('the share the record names replaces another held (stored before the record existed)', async () => {
    const junk = shareAt(SLOT);
    const genuine = shareAt(SLOT);
    const m = member();
    expect(await m.store(storeOf(junk))).toBe('accepted');
    m.records.set(`secret!${secretKey(SECRET_ID)}`, recordNaming(genuine));
    expect(await m.store(storeOf(junk))).toEqual({ code: 'FORBIDDEN', reason: 'share_mismatch' });
    expect(await m.store(storeOf(genuine))).toBe('accepted');
    expect(m.held()).toBe(toHex(genuine));
  });

  it('a Web3 secret\'s record (`web3Secret`) is checked the same way', async () => {
    const label = web3SecretLabel(CHAIN_ID, SECRET_ID);
    const genuine = shareAt(SLOT);
    const m = member(new Map([[`web3Secret!${web3SecretKey(CHAIN_ID, SECRET_ID)}`, recordNaming(genuine, label)]]));
    expect(await m.store(storeOf(shareAt(SLOT), CHAIN_ID))).toEqual({ code: 'FORBIDDEN', reason: 'share_mismatch' });
    expect(m.held(label)).toBeUndefined();
    expect(await m.store(storeOf(genuine, CHAIN_ID))).toBe('accepted');
    expect(m.held(label)).toBe(toHex(genuine));
  });

  it('a record without digests (a secret dealt before share recovery): the first share is taken, a different one refused (CONFLICT)', async () => {
    const m = member(new Map([[`secret!${secretKey(SECRET_ID)}`, recordNaming(undefined)]]));
    const first = shareAt(SLOT);
    expect(await m.store(storeOf(first))).toBe('accepted');
    expect(await m.store(storeOf(shareAt(SLOT)))).toEqual({ code: 'CONFLICT', reason: 'share_mismatch' });
    expect(m.held()).toBe(toHex(first));
  });

  it('refuses a share from a node that is not a coordinator, one that does not open for it or sits at another coordinate; a gateway holds none', async () => {
    const m = member();
    expect(await m.store(storeOf(shareAt(SLOT)), descriptor.nodes[3]!)).toEqual({ code: 'FORBIDDEN', reason: 'not_coordinator' });
    expect(await m.store(storeOf(shareAt(SLOT + 1)))).toEqual({ code: 'FORBIDDEN', reason: 'share_mismatch' });
    const sealedToAnother = { ...storeOf(shareAt(SLOT)), box: toBase64(sealTo(fromHex(descriptor.nodes[3]!.signingPublicKey), shareAt(SLOT), shareStoreAad(clusterId, SECRET_ID, SLOT))) };
    expect(await m.store(sealedToAnother)).toEqual({ code: 'FORBIDDEN', reason: 'share_mismatch' });
    expect(m.held()).toBeUndefined();
    const gateway = member(new Map(), { ...descriptor.nodes[SLOT]!, slot: null });
    expect(await gateway.store(storeOf(shareAt(SLOT)))).toEqual({ code: 'FORBIDDEN', reason: 'not_member' });
  });
});

describe('a member storing several shares in one call (storeMany)', () => {
  /** What a `storeMany` answered for each item: `'accepted'`, or the refusal's code and reason. */
  const outcomes = (answer: unknown) =>
    (answer as { results: Array<{ ok: boolean; code?: string; reason?: string }> }).results.map((r) => (r.ok ? 'accepted' : { code: r.code, reason: r.reason }));
  const storeMany = (items: ShareStoreRequest[]) => {
    const request = parseShardRequest({ op: 'storeMany', items: items.map((i) => shareStoreRequest(i.chainId, i.secretId, Buffer.from(i.box, 'base64'))) });
    if (request.op !== 'storeMany') throw new Error('not a storeMany');
    return request;
  };

  it('answers each share on its own: a refused one stores nothing and fails no other', async () => {
    const genuine = shareAt(SLOT);
    const m = member(new Map([[`secret!${secretKey(9)}`, recordNaming(genuine, 9)]]));
    const first = shareAt(SLOT);
    const answer = await m.handler.handleShard(
      storeMany([storeOf(first, -1, 7), storeOf(shareAt(SLOT + 1), -1, 8), storeOf(shareAt(SLOT), -1, 9), storeOf(genuine, -1, 9), storeOf(shareAt(SLOT), -1, 10, 3)]),
      coordinator,
    );
    expect(outcomes(answer)).toEqual([
      'accepted',
      { code: 'FORBIDDEN', reason: 'share_mismatch' },
      { code: 'FORBIDDEN', reason: 'share_mismatch' },
      'accepted',
      { code: 'FORBIDDEN', reason: 'share_mismatch' },
    ]);
    expect([m.held(7), m.held(8), m.held(9), m.held(10)]).toEqual([toHex(first), undefined, toHex(genuine), undefined]);
  });

  it('from a node that is not a coordinator: every share refused (not_coordinator), none stored; over the cap or empty: malformed', async () => {
    const m = member();
    const answer = await m.handler.handleShard(storeMany([storeOf(shareAt(SLOT), -1, 7), storeOf(shareAt(SLOT), -1, 8)]), descriptor.nodes[3]!);
    expect(outcomes(answer)).toEqual([
      { code: 'FORBIDDEN', reason: 'not_coordinator' },
      { code: 'FORBIDDEN', reason: 'not_coordinator' },
    ]);
    expect([m.held(7), m.held(8)]).toEqual([undefined, undefined]);
    const item = shareStoreRequest(-1, 7, sealTo(fromHex(descriptor.nodes[SLOT]!.signingPublicKey), shareAt(SLOT), shareStoreAad(clusterId, 7, SLOT)));
    expect(await refusalOf(() => parseShardRequest({ op: 'storeMany', items: Array.from({ length: STORE_MANY_MAX_ITEMS + 1 }, () => item) }))).toEqual({ code: 'BAD_REQUEST', reason: 'malformed' });
    expect(await refusalOf(() => parseShardRequest({ op: 'storeMany', items: [] }))).toEqual({ code: 'BAD_REQUEST', reason: 'malformed' });
  });

  it('property: a storeMany of any shares a coordinator could send ends as the same stores one after another', async () => {
    // Each item: one of three secrets (so repeats of one secret meet in a call), and a share that is
    // genuine (the one a record names), a fresh one at this slot, one at another slot, or one sealed
    // to another member; each secret with a record naming its genuine share, one without digests, or none.
    const secrets = [7, 8, 9];
    const genuine = new Map(secrets.map((id) => [id, shareAt(SLOT)]));
    const item = fc.record({ secretId: fc.constantFrom(...secrets), kind: fc.constantFrom('genuine', 'fresh', 'otherSlot', 'sealedToAnother') });
    await fc.assert(
      fc.asyncProperty(
        fc.array(item, { minLength: 1, maxLength: 10 }),
        fc.tuple(...secrets.map(() => fc.constantFrom('naming', 'noDigests', 'none'))),
        fc.boolean(),
        async (drawn, recordKinds, fromCoordinator) => {
          const records = new Map<string, object>();
          secrets.forEach((id, i) => {
            if (recordKinds[i] !== 'none') records.set(`secret!${secretKey(id)}`, recordNaming(recordKinds[i] === 'naming' ? genuine.get(id) : undefined, id));
          });
          const items = drawn.map(({ secretId, kind }) =>
            kind === 'genuine'
              ? storeOf(genuine.get(secretId)!, -1, secretId)
              : kind === 'fresh'
                ? storeOf(shareAt(SLOT), -1, secretId)
                : kind === 'otherSlot'
                  ? storeOf(shareAt(SLOT + 1), -1, secretId)
                  : storeOf(shareAt(SLOT), -1, secretId, 3),
          );
          const from = fromCoordinator ? coordinator : descriptor.nodes[3]!;
          const batched = member(new Map(records));
          const oneByOne = member(new Map(records));
          const answers = outcomes(await batched.handler.handleShard(storeMany(items), from));
          const each: unknown[] = [];
          for (const request of items) each.push(await oneByOne.store(request, from));
          expect(answers).toEqual(each);
          expect(secrets.map((id) => batched.held(id))).toEqual(secrets.map((id) => oneByOne.held(id)));
        },
      ),
      { numRuns: 150 },
    );
  });
});
