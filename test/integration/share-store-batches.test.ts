/**
 * A coordinator's share stores in batches, on a real cluster (docs/architecture.md, "Network";
 * docs/security.md, "Share storage"): stores to one member made while one is in flight travel as one
 * `storeMany`, each share checked and answered on its own; a member of an older build, which has not
 * said it takes them (`share-store-many/1` in its ping answer), gets every share as its own `store`;
 * and concurrent creates end complete, every member holding every share it was dealt.
 * 5 members, threshold 3, 2 coordinators, in one process.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalCluster, waitFor, type LocalCluster } from 'quorumkeep/testing';
import { NODE_FEATURES } from '../../src/cluster/protocols.ts';
import type { MemberHandler } from '../../src/core/replication/ports.ts';
import { refusal } from '../../src/errors/index.ts';
import { getJson, postJson } from '../utils/http.ts';
import { startImpostor } from '../utils/impostor.ts';
import { principalWithSession, type Principal } from '../utils/session.ts';
import { cleanupStack } from '../utils/temp.ts';

const stack = cleanupStack();
let cluster: LocalCluster;
let A: string;
let alice: Principal;
let signedAt = Date.now();
afterAll(() => stack.run());
beforeAll(async () => {
  cluster = await startLocalCluster({ size: 5, threshold: 3, coordinators: 2 });
  stack.push(() => cluster.stop());
  A = cluster.coordinators[0]!;
  alice = await principalWithSession(cluster, A, 'alice');
}, 60_000);

/** `n` creates on coordinator 0 at once, each with its own signed string: their answers. */
async function createAtOnce(n: number): Promise<Array<{ status: number; body: { secretId: number; status: string } }>> {
  return Promise.all(Array.from({ length: n }, () => postJson<{ secretId: number; status: string }>(`${A}/web2/secret`, alice.signed(0, undefined, ++signedAt))));
}

interface Health {
  dataSafety: { members: Array<{ slot: number; shares: { expected: number; held: number; missing: number } | null }> };
}

describe('share stores in batches', () => {
  it('concurrent creates end complete, and every member holds every share it was dealt', async () => {
    const answers = await createAtOnce(40);
    expect(answers.map((a) => [a.status, a.body.status])).toEqual(answers.map(() => [201, 'complete']));
    // What each member says it holds (its inventory), as coordinator 0 gathers it.
    await waitFor(
      async () => {
        const { body } = await getJson<Health>(`${A}/healthz`);
        const members = body.dataSafety.members.filter((m) => m.slot !== 0);
        return members.length === 4 && members.every((m) => m.shares !== null && m.shares.missing === 0 && m.shares.held >= 40);
      },
      { timeoutMs: 20_000, intervalMs: 200, description: 'every member to hold every share' },
    );
  });

  it('a member that takes batches gets the stores made meanwhile as one storeMany; a member of an older build gets each as store', async () => {
    // Members 3 and 4 replaced by their own identities, recording the shares they accept: 3 says it
    // takes batches (this build); 4 does not, and reads only what an older build reads (a `storeMany`
    // is malformed to it).
    const accepted = new Map<number, Array<{ op: string; secretIds: number[] }>>([
      [3, []],
      [4, []],
    ]);
    const recording =
      (slot: number): MemberHandler =>
      async (body) => {
        const call = body as { op: string; secretId?: number; items?: Array<{ secretId: number }> };
        if (slot === 4 && call.op === 'storeMany') throw refusal('BAD_REQUEST', 'malformed', 'malformed shard request: op');
        if (call.op === 'store') {
          accepted.get(slot)!.push({ op: 'store', secretIds: [call.secretId!] });
          return { stored: true };
        }
        if (call.op === 'storeMany') {
          accepted.get(slot)!.push({ op: 'storeMany', secretIds: call.items!.map((i) => i.secretId) });
          return { results: call.items!.map(() => ({ ok: true, result: { stored: true } })) };
        }
        throw refusal('FORBIDDEN', 'not_member', 'not served here');
      };
    const batching = await startImpostor(cluster, 3, { memberHandlers: { shard: recording(3) } });
    stack.push(() => batching.peer.stop());
    const older = await startImpostor(cluster, 4, { memberHandlers: { shard: recording(4) }, features: [NODE_FEATURES.recordBatchSig] });
    stack.push(() => older.peer.stop());

    const answers: Array<{ status: number; body: { secretId: number; status: string } }> = [];
    for (let burst = 0; burst < 20 && !accepted.get(3)!.some((c) => c.op === 'storeMany' && c.secretIds.length > 1); burst++) answers.push(...(await createAtOnce(24)));
    expect(accepted.get(3)!.some((c) => c.op === 'storeMany' && c.secretIds.length > 1)).toBe(true);
    // Every create complete, and every share accepted by each member exactly once, in the form it takes.
    expect(answers.map((a) => [a.status, a.body.status])).toEqual(answers.map(() => [201, 'complete']));
    const created = answers.map((a) => a.body.secretId).sort((x, y) => x - y);
    const sharesOf = (slot: number) => accepted.get(slot)!.flatMap((c) => c.secretIds).sort((x, y) => x - y);
    expect(sharesOf(3)).toEqual(created);
    expect(sharesOf(4)).toEqual(created);
    expect(accepted.get(4)!.every((c) => c.op === 'store')).toBe(true);
  });
});
