/**
 * Issue 28 — no write before a node knows its own log (docs/architecture.md, "Failure model";
 * docs/operations.md, "Lose a disk, keep the keys"). A node whose data dir is wiped (its keys kept)
 * and restarted holds its own writes until it has completed a sync round with `size − threshold + 1`
 * other members: meanwhile `/readyz` says `ownLogKnown: false` (503) and a write through it answers
 * 503 NOT_READY; once it knows its log it is ready and writes with fresh seqs. No node ever records an
 * equivocation — not for a coordinator, a member without an API, or slot 0 (whose id counter and
 * email claims, lost with its disk, come back from its replica), and not when the wipe-restart races
 * with traffic. 5 members, threshold 3, 2 coordinators (slots 0 and 1), operator ports, one process.
 */
import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalCluster, waitFor, type LocalCluster } from 'quorumkeep/testing';
import { getJson, postJson } from '../utils/http.ts';
import { newPrincipal, principalWithSession, type Principal } from '../utils/session.ts';
import { expectApiError, unverifiedAccount } from '../utils/web2.ts';

/** Slot 1: a coordinator that is not slot 0. */
const COORDINATOR = 1;
/** Slot 3: a member without an API. */
const MEMBER = 3;

let cluster: LocalCluster;
let A: string;
let B: string;
let alice: Principal;

const admin = (c = cluster) => ({ authorization: `Bearer ${c.adminToken}` });
const addressOf = (slot: number) => cluster.descriptor.nodes[slot]!.nodeAddress;

/** Node `slot`'s own seq as the other running members hold it (the highest of them). */
function ownSeqElsewhere(slot: number): number {
  return Math.max(...cluster.members.filter((m, i) => i !== slot && cluster.isRunning(i)).map((m) => m.versionVector()[addressOf(slot)] ?? 0));
}

/** Stop member `slot` of `c` and remove everything in its data dir but its keys: the lost disk. */
async function wipe(slot: number, c = cluster): Promise<void> {
  await c.stopMember(slot);
  const dataDir = c.members[slot]!.config.dataDir;
  for (const entry of await readdir(dataDir)) if (entry !== 'keys') await rm(join(dataDir, entry), { recursive: true, force: true });
  expect(await readdir(dataDir)).toEqual(['keys']);
}

async function readyz(slot: number, c = cluster) {
  return getJson<{ ready: boolean; checks: Record<string, boolean> }>(`${c.operatorUrls[slot]}/readyz`);
}

/** `quorumkeep_…` series of node `slot`'s operator `/metrics`, summed over their labels. */
async function metric(slot: number, name: string, c = cluster): Promise<number> {
  const text = await (await fetch(`${c.operatorUrls[slot]}/metrics`)).text();
  return [...text.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'gm'))].reduce((sum, m) => sum + Number(m[1]), 0);
}

/** No running node saw an equivocation: engine, `/healthz` and `quorumkeep_equivocations_total`. */
async function expectNoEquivocation(c = cluster): Promise<void> {
  for (const [slot, node] of c.members.entries()) {
    if (!c.isRunning(slot)) continue;
    expect(node.health.clusterHealth().equivocating, `node-${slot}`).toEqual([]);
    const health = await getJson<{ cluster: { equivocating: unknown[] } }>(`${c.operatorUrls[slot]}/healthz`);
    expect(health.body.cluster.equivocating, `node-${slot} /healthz`).toEqual([]);
    expect(await metric(slot, 'quorumkeep_equivocations_total', c), `node-${slot} metric`).toBe(0);
  }
}

const probe = (url: string, key: string, c = cluster) => postJson<{ origin: string; seq: number }>(`${url}/admin/probe`, { key }, admin(c));

/**
 * Restart `slot` on its wiped data dir cut off from `cutFrom`, so it reaches a quorum but fewer
 * other members than it needs to learn its own log; check it is held, then heal and wait until ready.
 */
async function restartHeld(slot: number, cutFrom: number[], whileHeld: () => Promise<void>): Promise<void> {
  await cluster.partition([slot], cutFrom);
  await cluster.restartMember(slot);
  const held = await readyz(slot);
  expect(held.status).toBe(503);
  expect(held.body.checks).toMatchObject({ started: true, quorumReachable: true, ownLogKnown: false });
  expect(await metric(slot, 'quorumkeep_own_writes_held')).toBe(1);
  await whileHeld();
  // Still held: nothing it saw meanwhile lets it write.
  expect((await readyz(slot)).body.checks.ownLogKnown).toBe(false);
  await cluster.heal();
  await waitFor(async () => (await readyz(slot)).status === 200, { timeoutMs: 20_000, description: `node-${slot} to learn its own log` });
  expect((await readyz(slot)).body).toEqual({ ready: true, checks: expect.objectContaining({ started: true, quorumReachable: true, caughtUp: true, ownLogKnown: true }) });
  expect(await metric(slot, 'quorumkeep_own_writes_held')).toBe(0);
}

beforeAll(async () => {
  cluster = await startLocalCluster({ size: 5, threshold: 3, coordinators: 2, operator: true, nodeConfig: { accounts: { mailCooldownMs: 0 } } });
  [A, B] = cluster.coordinators as [string, string];
  alice = await principalWithSession(cluster, A, 'alice');
}, 60_000);
afterAll(() => cluster?.stop());

describe('a node restarted on a wiped data dir, its keys kept', () => {
  it('a coordinator is not ready and writes nothing until it knows its own log; then it writes again with fresh seqs', async () => {
    // Records of the coordinator's own: an account registered through it (email index, code), its
    // acknowledgement of every registered key (it is a member too), probes.
    const bob = await principalWithSession(cluster, B, 'bob');
    for (let i = 0; i < 3; i++) expect((await probe(B, `before-${i}`)).status).toBe(201);
    await cluster.waitForConvergence();
    const before = ownSeqElsewhere(COORDINATOR);
    expect(before).toBeGreaterThan(3);
    await expectNoEquivocation();

    await wipe(COORDINATOR);
    // It reaches slots 0 and 2 (a quorum with itself), not the 3 others it needs.
    await restartHeld(COORDINATOR, [MEMBER, 4], async () => {
      // Meanwhile a key is registered: the held coordinator acknowledges nothing yet.
      await newPrincipal(cluster, A, 'during');
      const refused = await probe(B, 'while-held');
      expectApiError(refused, 503, 'NOT_READY');
    });

    // It writes again, after every seq of its own the others hold.
    const after = await probe(B, 'after');
    expect(after.status, JSON.stringify(after.body)).toBe(201);
    expect(after.body).toMatchObject({ origin: addressOf(COORDINATOR) });
    expect(after.body.seq).toBeGreaterThan(before);
    const carol = await principalWithSession(cluster, B, 'carol');
    const secret = await postJson<{ secretId: number; status: string }>(`${B}/web2/secret`, bob.signed(0));
    expect(secret.status, JSON.stringify(secret.body)).toBe(201);
    expect(carol.principalId).toBeTruthy();
    await cluster.waitForConvergence({ timeoutMs: 20_000 });
    await expectNoEquivocation();
  }, 90_000);

  it('a member without an API likewise; once released it acknowledges the keys registered while it was held', async () => {
    const before = ownSeqElsewhere(MEMBER);
    expect(before).toBeGreaterThan(0);
    await wipe(MEMBER);
    let during: Principal | undefined;
    await restartHeld(MEMBER, [COORDINATOR, 4], async () => {
      during = await newPrincipal(cluster, A, 'member-held');
    });
    // Its acknowledgement of the key registered while it was held, written once it was released.
    await waitFor(
      async () => {
        const status = await getJson<{ successNodes: string[] }>(`${A}/web2/auth/node-registration-status?principalId=${during!.principalId}`);
        return status.body.successNodes?.includes(addressOf(MEMBER)) === true;
      },
      { timeoutMs: 20_000, description: 'the member to acknowledge the key' },
    );
    expect(ownSeqElsewhere(MEMBER)).toBeGreaterThan(before);
    await cluster.waitForConvergence({ timeoutMs: 20_000 });
    await expectNoEquivocation();
  }, 90_000);

  it('slot 0 hands out no secret id again and keeps each email with its principal, though its counters and claims were on the lost disk', async () => {
    const ids: number[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await postJson<{ secretId: number }>(`${A}/web2/secret`, alice.signed(0, undefined, Date.now() + i));
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      ids.push(res.body.secretId);
    }
    const dave = await unverifiedAccount(A, 'dave');
    await cluster.waitForConvergence();

    await wipe(0);
    await cluster.restartMember(0);
    await waitFor(async () => (await readyz(0)).status === 200, { timeoutMs: 20_000, description: 'slot 0 to learn its own log' });

    for (const url of [A, B]) {
      const res = await postJson<{ secretId: number }>(`${url}/web2/secret`, alice.signed(0, undefined, Date.now() + 10));
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      expect(res.body.secretId).toBeGreaterThan(Math.max(...ids));
      ids.push(res.body.secretId);
    }
    expect(new Set(ids).size).toBe(ids.length);
    // Registering the unverified email again renews the same principal (200), not a second one.
    const again = await postJson<{ principalId: string }>(`${A}/web2/auth/register`, { email: dave.email, password: dave.password });
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    expect(again.body.principalId).toBe(dave.principalId);
    await cluster.waitForConvergence({ timeoutMs: 20_000 });
    await expectNoEquivocation();
  }, 90_000);
});

describe('a coordinator wiped and restarted again and again under traffic', () => {
  /**
   * A sync round streams a peer's records origin by origin, in address order. The old race: a node
   * restarted on an empty data dir applied slot 0's principal records before its own records came
   * back, and acknowledged their keys under seqs it had used before. So the node wiped here is one
   * whose address sorts after slot 0's (a fresh cluster is drawn until one has such a member; every
   * member serves the API, so writes go through it too).
   */
  let race: LocalCluster;
  let racer: number;
  beforeAll(async () => {
    for (;;) {
      race = await startLocalCluster({ size: 5, threshold: 3, coordinators: 5, operator: true, nodeConfig: { accounts: { mailCooldownMs: 0 } } });
      const nodes = race.descriptor.nodes;
      const after = [1, 2, 3, 4].filter((slot) => nodes[slot]!.nodeAddress > nodes[0]!.nodeAddress);
      if (after.length > 0) {
        racer = after.at(-1)!;
        return;
      }
      await race.stop();
    }
  }, 120_000);
  afterAll(() => race?.stop());

  it('no seq given twice, no equivocation', async () => {
    const [A0] = race.coordinators as [string];
    const R = race.coordinators[racer]!;
    let stopped = false;
    const acked: Array<{ key: string; origin: string; seq: number }> = [];
    let n = 0;
    let registered = 0;
    // Keys registered through slot 0: each one the wiped member acknowledges, once it knows its log.
    const registering = (async () => {
      while (!stopped) if (await newPrincipal(race, A0, `race-${n}`).catch(() => undefined)) registered++;
    })();
    // Probes through the wiped node itself, answered or refused as it comes and goes.
    const probing = (async () => {
      while (!stopped) {
        const key = `race-${n++}`;
        const res = await probe(R, key, race).catch(() => undefined);
        if (res?.status === 201) acked.push({ key, origin: res.body.origin, seq: res.body.seq });
        else if (!res) await new Promise((r) => setTimeout(r, 20));
      }
    })();
    try {
      for (let round = 0; round < 4; round++) {
        await waitFor(() => acked.length >= 5 * (round + 1) && registered >= 4 * (round + 1), { timeoutMs: 30_000, description: `writes before round ${round}` });
        await wipe(racer, race);
        await race.restartMember(racer);
        await waitFor(async () => (await readyz(racer, race)).status === 200, { timeoutMs: 20_000, description: `round ${round}: ready` });
      }
      await waitFor(() => acked.length >= 25, { timeoutMs: 20_000, description: 'writes after the last round' });
    } finally {
      stopped = true;
      await Promise.all([registering, probing]);
    }
    expect(new Set(acked.map((a) => `${a.origin}!${a.seq}`)).size).toBe(acked.length);
    await race.waitForConvergence({ timeoutMs: 30_000 });
    for (const slot of [0, racer]) {
      for (const a of acked) {
        const res = await getJson<{ origin: string; seq: number }>(`${race.coordinators[slot]}/admin/probe/${a.key}`, admin(race));
        expect(res.body, `node-${slot}: ${a.key}`).toMatchObject({ origin: a.origin, seq: a.seq });
      }
    }
    await expectNoEquivocation(race);
  }, 180_000);
});
