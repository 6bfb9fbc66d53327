/**
 * Share recovery (docs/security.md, "Share recovery"; docs/operations.md, "Lose a disk"): member 3
 * loses its data dir but keeps its keys; an operator marks slot 3 recovering; it rebuilds every share
 * from threshold helpers, byte for byte the ones it lost, without any process combining a seed; then
 * every secret decrypts with members 3, 0 and 1 only. Helpers answer only the slot's own identity,
 * only while it is recovering. A rogue coordinator cannot plant junk for a recovering member to keep:
 * a store that is not the share its record names is refused, and a junk share already held is
 * recovered over. 5 members, threshold 3, 2 coordinators, in one process.
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalCluster, waitFor, type LocalCluster } from 'quorumkeep/testing';
import { getJson, postJson } from '../utils/http.ts';
import { refusalOf } from '../utils/refusal.ts';
import { principalWithSession, type Principal } from '../utils/session.ts';
import { startImpostor } from '../utils/impostor.ts';
import { runCli } from '../utils/process-cluster.ts';
import { loadOrCreateNodeKeys, type Cluster } from '../../src/cluster/index.ts';
import { openStore } from '../../src/store/index.ts';
import { decryptAtRest, encryptAtRest, fromHex, sealTo, shamirCounters, systemRandom, toBase64, toHex } from '../../src/crypto/index.ts';
import { recoverContributionAad } from '../../src/core/secrets/recovery.ts';
import { secretKey, shareAtRestAad, shareStoreAad } from '../../src/core/secrets/records.ts';
import { shareStoreRequest } from '../../src/core/secrets/shard-messages.ts';

const LOST = 3;
const SECRETS = 6;

let cluster: LocalCluster;
let A: string;
let alice: Principal;
const secretIds: number[] = [];
/** Member 3's shares before the wipe, hex, by secret id. */
const before = new Map<number, string>();

const admin = () => ({ authorization: `Bearer ${cluster.adminToken}` });

/** Member `slot`'s shares in clear, read from its stopped store with its own storage key. */
async function sharesOf(slot: number): Promise<Map<number, string>> {
  const config = cluster.members[slot]!.config;
  const { keys } = await loadOrCreateNodeKeys(config.keysDir);
  const store = await openStore({ location: join(config.dataDir, 'db') });
  const out = new Map<number, string>();
  try {
    for (const id of secretIds) {
      const box = await store.shares.get(id);
      const share = box && decryptAtRest(keys.storage, box, shareAtRestAad(cluster.descriptor.clusterId, id, slot));
      if (share) out.set(id, toHex(share));
    }
  } finally {
    await store.close();
  }
  return out;
}

/** Slot `slot`'s share in shape but not in value: 64 random bytes at its own x-coordinate. */
function junkShare(slot: number): Uint8Array {
  const share = new Uint8Array(65);
  share.set(systemRandom(64));
  share[64] = slot + 1;
  return share;
}

/** Write `share` as member `slot`'s share of `id` into its stopped store, under its own storage key. */
async function plantShare(slot: number, id: number, share: Uint8Array): Promise<void> {
  const config = cluster.members[slot]!.config;
  const { keys } = await loadOrCreateNodeKeys(config.keysDir);
  const store = await openStore({ location: join(config.dataDir, 'db') });
  try {
    await store.shares.put(id, encryptAtRest(keys.storage, share, shareAtRestAad(cluster.descriptor.clusterId, id, slot)));
  } finally {
    await store.close();
  }
}

/** Mark `slot` recovering (answers the member as marked) and wait until it marks itself active again. */
async function recover(slot: number, description: string, timeoutMs = 60_000): Promise<{ slot: number; status: string }> {
  const marked = await postJson<{ member: { slot: number; status: string } }>(`${A}/admin/members/${slot}/recover`, {}, admin());
  expect(marked.status, JSON.stringify(marked.body)).toBe(200);
  await waitFor(
    async () => {
      const res = await getJson<{ members: Array<{ slot: number; status: string }> }>(`${A}/admin/members`, admin());
      return res.body.members.find((m) => m.slot === slot)?.status === 'active';
    },
    { timeoutMs, intervalMs: 100, description },
  );
  return marked.body.member;
}

/** Every secret decrypts through coordinator 0 with members 0, 1 and 3 only: member 3's shares are needed. */
async function decryptWithMember3() {
  const sealed = await Promise.all(secretIds.map((id) => encryptTo(id, `secret ${id}`)));
  await cluster.stopMember(2);
  await cluster.stopMember(4);
  try {
    for (const [i, id] of secretIds.entries()) {
      const dec = await postJson<{ decryptedMessage: string }>(`${A}/decrypt-payload`, { cifer: sealed[i]!.cifer, ...alice.signed(id, sealed[i]!.encryptedMessage) });
      expect(dec.status, JSON.stringify(dec.body)).toBe(200);
      expect(dec.body.decryptedMessage).toBe(`secret ${id}`);
    }
  } finally {
    await cluster.restartMember(2);
    await cluster.restartMember(4);
  }
}

async function encryptTo(id: number, text: string) {
  const enc = await postJson<{ cifer: string; encryptedMessage: string }>(`${A}/encrypt-payload`, alice.signed(id, text));
  expect(enc.status).toBe(200);
  return enc.body;
}

beforeAll(async () => {
  cluster = await startLocalCluster({ size: 5, threshold: 3, coordinators: 2 });
  A = cluster.coordinators[0]!;
  alice = await principalWithSession(cluster, A, 'alice');
  for (let i = 0; i < SECRETS; i++) {
    const res = await postJson<{ secretId: number; status: string }>(`${A}/web2/secret`, alice.signed(0, undefined, Date.now() + i));
    expect(res.body.status).toBe('complete');
    secretIds.push(res.body.secretId);
  }
  await cluster.waitForConvergence({ timeoutMs: 10_000 });
  await cluster.stopMember(LOST);
  for (const [id, hex] of await sharesOf(LOST)) before.set(id, hex);
  expect(before.size).toBe(SECRETS);
}, 60_000);
afterAll(() => cluster?.stop());

describe('a member that lost its disk', () => {
  it('gets every share back, byte for byte, and nobody combines a seed; then secrets decrypt with it among three', async () => {
    // The disk is gone; the keys are not.
    await rm(join(cluster.members[LOST]!.config.dataDir, 'db'), { recursive: true, force: true });
    await cluster.restartMember(LOST);
    const combinesBefore = shamirCounters.combines;

    // The member marks itself active once it holds every share again.
    const marked = await recover(LOST, 'slot 3 to finish recovering', 30_000);
    expect(marked).toMatchObject({ slot: LOST, status: 'recovering' });
    expect(shamirCounters.combines).toBe(combinesBefore);

    await cluster.stopMember(LOST);
    const after = await sharesOf(LOST);
    expect(after).toEqual(before);
    await cluster.restartMember(LOST);

    // Only members 0, 1 and 3: the recovered shares are needed, and they combine with the others.
    await decryptWithMember3();
  }, 90_000);

  it('the CLI: member status lists every slot (exit 0, none recovering; 1 while one is; 2 on failure); member recover marks one', async () => {
    const token = ['--url', A, '--token', cluster.adminToken];
    const status = await runCli(['member', 'status', ...token]);
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout.trim().split('\n')).toHaveLength(5);
    expect(status.stdout).toMatch(/slot {2}3 {2}node-3 {2}0x[0-9a-f]{40} {2}ACTIVE {2}reachable/);
    // Slot 4 still holds every share: marked, it finds nothing to do and marks itself active again.
    const recover = await runCli(['member', 'recover', '--slot', '4', ...token]);
    expect(recover.code, recover.stderr).toBe(0);
    expect(recover.stdout).toMatch(/slot {2}4 {2}node-4 .* RECOVERING/);
    await waitFor(async () => (await runCli(['member', 'status', ...token])).code === 0, { timeoutMs: 30_000, intervalMs: 200, description: 'slot 4 to be active again' });
    const refused = await runCli(['member', 'status', '--url', A, '--token', 'wrong']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/answered HTTP 401/);
  }, 60_000);

  it('an unknown slot is 400; the operator endpoints need the admin token', async () => {
    expect((await postJson(`${A}/admin/members/7/recover`, {}, admin())).status).toBe(400);
    expect((await postJson(`${A}/admin/members/x/recover`, {}, admin())).status).toBe(400);
    expect((await postJson(`${A}/admin/members/3/recover`, {})).status).toBe(401);
    expect((await getJson(`${A}/admin/members`)).status).toBe(401);
  });
});

describe('a helper that lies', () => {
  it('is caught by the share digest: no wrong share is stored, and the member recovers through honest helpers', async () => {
    // Member 2's genuine identity answers every recovery with a well-formed, sealed, wrong contribution.
    const { peer: liar } = await startImpostor(cluster, 2, {
      memberHandlers: {
        shard: async (body, from) => {
          const b = body as { items: Array<{ secretId: number }>; round: string };
          const junk = new Uint8Array(64).fill(0x5a);
          return { results: b.items.map((item) => ({ box: toBase64(sealTo(fromHex(from.signingPublicKey), junk, recoverContributionAad(cluster.descriptor.clusterId, item.secretId, from.slot!, b.round, 2))) })) };
        },
      },
    });
    try {
      await waitFor(() => [0, 1, 3, 4].every((slot) => liar.membership.isReachable(slot)), { timeoutMs: 10_000, description: 'the liar to reach the members' });
      await cluster.stopMember(LOST);
      await rm(join(cluster.members[LOST]!.config.dataDir, 'db'), { recursive: true, force: true });
      await cluster.restartMember(LOST);
      await recover(LOST, 'slot 3 to recover past the liar');
      await cluster.stopMember(LOST);
      expect(await sharesOf(LOST)).toEqual(before);
      await cluster.restartMember(LOST);
    } finally {
      await liar.stop();
      await cluster.restartMember(2);
    }
  }, 90_000);
});

describe('helpers answer only the recovering slot itself', () => {
  let rogue: Cluster;
  beforeAll(async () => {
    // Coordinator 1's genuine identity, driven by the test.
    ({ peer: rogue } = await startImpostor(cluster, 1));
    await waitFor(() => [0, 2, 3, 4].every((slot) => rogue.membership.isReachable(slot)), { timeoutMs: 10_000, description: 'the rogue to reach the members' });
  }, 30_000);
  afterAll(() => rogue?.stop());

  const askWith = (slot: number, body: unknown) => refusalOf(() => rogue.callMember(slot, 'shard', body, { signal: AbortSignal.timeout(5000) }));
  const recoverBody = (helpers: number[], items: unknown[] = [{ secretId: secretIds[0] }]) => ({ op: 'recover', items, helpers, round: 'round-0001', vv: {} });
  const malformed = { code: 'BAD_REQUEST', reason: 'malformed' };

  it('a slot that is not recovering gets nothing', async () => {
    expect(await askWith(0, recoverBody([0, 2, 3]))).toEqual({ code: 'FORBIDDEN', reason: 'not_recovering' });
  });

  it('a malformed batch is refused: no items, or more than 64', async () => {
    expect(await askWith(0, recoverBody([0, 2, 3], []))).toEqual(malformed);
    expect(await askWith(0, recoverBody([0, 2, 3], Array.from({ length: 65 }, () => ({ secretId: 1 }))))).toEqual(malformed);
  });

  it('a helper set that is not threshold distinct members with the helper in it is refused', async () => {
    for (const helpers of [[0, 2], [2, 3, 4], [0, 1, 2], [0, 0, 2]]) expect(await askWith(0, recoverBody(helpers)), `helpers ${helpers.join(',')}`).toEqual(malformed);
  });
});

describe('a rogue coordinator and a member that lost its disk', () => {
  it('cannot plant junk for it to keep: a junk store is refused once the member holds the record, a junk share already held is recovered over, and decrypts need the genuine shares', async () => {
    const clusterId = cluster.descriptor.clusterId;
    await cluster.stopMember(LOST);
    await rm(join(cluster.members[LOST]!.config.dataDir, 'db'), { recursive: true, force: true });
    // A fresh store, then one junk share in it: what a store before the record reached the member
    // (or before members checked stores) would have left.
    await cluster.restartMember(LOST);
    await cluster.stopMember(LOST);
    const planted = secretIds[1]!;
    await plantShare(LOST, planted, junkShare(LOST));
    await cluster.restartMember(LOST);

    // Coordinator 1's genuine identity deals junk to member 3 over the real `shard` protocol.
    const { peer: rogue } = await startImpostor(cluster, 1);
    try {
      await waitFor(() => rogue.membership.isReachable(LOST), { timeoutMs: 10_000, description: 'the rogue to reach member 3' });
      await waitFor(async () => (await Promise.all(secretIds.map((id) => cluster.members[LOST]!.state.get('secret', secretKey(id))))).every(Boolean), {
        timeoutMs: 15_000,
        description: 'member 3 to catch up the secrets’ records',
      });
      for (const id of secretIds) {
        const box = sealTo(fromHex(cluster.descriptor.nodes[LOST]!.signingPublicKey), junkShare(LOST), shareStoreAad(clusterId, id, LOST));
        const refused = await refusalOf(() => rogue.callMember(LOST, 'shard', shareStoreRequest(-1, id, box), { signal: AbortSignal.timeout(5000) }));
        expect(refused, `secret ${id}`).toEqual({ code: 'FORBIDDEN', reason: 'share_mismatch' });
      }
    } finally {
      await rogue.stop();
      await cluster.restartMember(1);
    }

    await recover(LOST, 'slot 3 to recover past the junk');
    await cluster.stopMember(LOST);
    // Every share is the genuine one, the planted one included: junk was neither stored nor counted as held.
    expect(await sharesOf(LOST)).toEqual(before);
    await cluster.restartMember(LOST);
    await decryptWithMember3();
  }, 120_000);
});
