/**
 * Honest coordinators racing on one secret never stall the cluster (issue 27: valid setDelegate
 * requests for one secret through both coordinators made every member refuse versions, and writes
 * answered 503 while /healthz said ok). Each change is a version slot 0 writes after the one it holds;
 * a coordinator whose replica is a moment behind builds on slot 0's version instead. Every answer is
 * true: 200 means the change is on a quorum, every member ends with the same state, and no member
 * refused a single record.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalCluster, type LocalCluster } from 'quorumkeep/testing';
import { secretKey, type SecretBody } from '../../src/core/secrets/records.ts';
import { signedStringKey } from '../../src/core/sessions/evidence.ts';
import { postJson } from '../utils/http.ts';
import { ownerBody, requestPermit } from '../utils/permits.ts';
import { principalWithSession, signData, type Principal } from '../utils/session.ts';
import { cleanupStack } from '../utils/temp.ts';

const stack = cleanupStack();
let cluster: LocalCluster;
let A: string;
let B: string;
let alice: Principal;
let friends: Principal[];
let secretId: number;

beforeAll(async () => {
  cluster = await startLocalCluster({ size: 5, threshold: 3, coordinators: 2 });
  stack.push(() => cluster.stop());
  [A, B] = cluster.coordinators as [string, string];
  [alice, ...friends] = await Promise.all([principalWithSession(cluster, A, 'alice'), ...[1, 2, 3].map((i) => principalWithSession(cluster, i % 2 ? A : B, `friend${i}`))]);
  const created = await postJson<{ secretId: number }>(`${A}/web2/secret`, alice.signed(0));
  expect(created.status).toBe(201);
  secretId = created.body.secretId;
  await cluster.waitForConvergence({ timeoutMs: 10_000 });
}, 90_000);
afterAll(() => stack.run());

/** Records refused by each member so far (every reason). */
async function refusals(): Promise<number[]> {
  return Promise.all(cluster.members.map(async (m) => (await m.metrics.recordsRejected.get()).values.reduce((sum, v) => sum + v.value, 0)));
}

describe('two honest coordinators racing on one secret', () => {
  it('forty setDelegate strings at once through both: every answer 200, every change applied once, no member refuses anything', async () => {
    const before = await refusals();
    const now = Date.now();
    // Distinct strings (distinct timestamps), delegates cycling through three friends and none.
    const strings = Array.from({ length: 40 }, (_, i) => {
      const delegate = i % 4 === 3 ? '' : friends[i % 4]!.principalId;
      return signData(alice.wallet, `-1_${secretId}_${alice.wallet.address}_${now + i}_${delegate}`);
    });
    const answers = await Promise.all(strings.map((s, i) => postJson(`${i % 2 ? B : A}/web2/setDelegate`, s)));
    expect(answers.map((a) => a.status)).toEqual(strings.map(() => 200));
    await cluster.waitForConvergence({ timeoutMs: 15_000 });
    const states = await Promise.all(cluster.members.map((m) => m.state.get('secret', secretKey(secretId))));
    // One state everywhere: the same version, with all forty uses in it, and the versions one after another.
    expect(new Set(states.map((r) => `${r!.origin}!${r!.seq}`)).size).toBe(1);
    const final = states[0]!.body as SecretBody;
    expect(final.v.n).toBe(41);
    const uses = new Set(final.recentUses!.map((u) => u.key));
    for (const s of strings) expect(uses.has(signedStringKey('setDelegate', s.data.split('_')))).toBe(true);
    expect(await refusals()).toEqual(before);
    // Each string again, through the other coordinator: 200, and nothing is written.
    const replays = await Promise.all(strings.slice(0, 10).map((s, i) => postJson(`${i % 2 ? A : B}/web2/setDelegate`, s)));
    expect(replays.map((a) => a.status)).toEqual(replays.map(() => 200));
    expect(((await cluster.members[0]!.state.get('secret', secretKey(secretId)))!.body as SecretBody).v.n).toBe(41);
  }, 60_000);

  it('a permit confirmed through one coordinator while the owner sets the delegate through the other: both true, one order', async () => {
    const before = await refusals();
    const link = await requestPermit(cluster, A, ownerBody(alice, secretId, 'delegate', friends[0]!.principalId));
    const [confirm, set] = await Promise.all([fetch(`${B}${link.pathAndQuery}`, { headers: { accept: 'application/json' } }), postJson(`${A}/web2/setDelegate`, alice.signed(secretId, friends[1]!.principalId))]);
    expect(confirm.status).toBe(200);
    expect(set.status).toBe(200);
    await cluster.waitForConvergence({ timeoutMs: 15_000 });
    const states = await Promise.all(cluster.members.map((m) => m.state.get('secret', secretKey(secretId))));
    expect(new Set(states.map((r) => `${r!.origin}!${r!.seq}`)).size).toBe(1);
    // Whichever came second is the delegate now, and both changes are in the history.
    expect([friends[0]!.principalId, friends[1]!.principalId]).toContain((states[0]!.body as SecretBody).delegatePrincipalId);
    expect(await refusals()).toEqual(before);
  }, 60_000);
});
