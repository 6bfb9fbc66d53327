/**
 * Limits off (`usage.enabled: false`; docs/configuration.md): a real cluster whose only plan is tiny.
 * Encrypts and decrypts far beyond it pass on both coordinators, nothing is counted or replicated,
 * and `POST /jobs/dataConsumption` still answers: the plan, and zero counts (also after a restart,
 * whose stop flushes whatever a coordinator counted).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalCluster, type LocalCluster } from 'quorumkeep/testing';
import type { Plan } from '../../src/core/usage/types.ts';
import { postJson } from '../utils/http.ts';
import { newPrincipal, openSession } from '../utils/session.ts';
import { cleanupStack } from '../utils/temp.ts';

/** 10 bytes, 2 requests, one request per 100 s: a handful of requests would exceed every limit. */
const TINY = { bytesPerCycle: 10, requestsPerCycle: 2, requestsPerSecond: 0.01 };
const PLANS: Plan[] = [{ id: 'tiny', cycle: 'monthly', encryption: TINY, decryption: TINY }];

const stack = cleanupStack();
let cluster: LocalCluster;

beforeAll(async () => {
  cluster = await startLocalCluster({ size: 3, threshold: 2, coordinators: 2, nodeConfig: { usage: { enabled: false, plans: PLANS } } });
  stack.push(() => cluster.stop());
}, 60_000);
afterAll(() => stack.run());

describe('usage.enabled false', () => {
  it('no admission and no counting on encrypt and decrypt; the report answers with the plan and zero counts', async () => {
    const [A, B] = cluster.coordinators as [string, string];
    const p = await newPrincipal(cluster, A, 'limits-off');
    await openSession(A, p);
    const secret = await postJson<{ secretId: number }>(`${A}/web2/secret`, p.signed(0));
    expect(secret.status, JSON.stringify(secret.body)).toBe(201);
    const { secretId } = secret.body;

    for (let i = 0; i < 6; i++) {
      const url = i % 2 ? A : B;
      const sealed = await postJson<{ cifer: string; encryptedMessage: string }>(`${url}/encrypt-payload`, p.signed(secretId, `message number ${i}`));
      expect(sealed.status, JSON.stringify(sealed.body)).toBe(200);
      const opened = await postJson<{ decryptedMessage: string }>(`${url}/decrypt-payload`, { cifer: sealed.body.cifer, ...p.signed(secretId, sealed.body.encryptedMessage) });
      expect(opened.status, JSON.stringify(opened.body)).toBe(200);
      expect(opened.body.decryptedMessage).toBe(`message number ${i}`);
    }

    // A coordinator's stop flushes every counter it holds, written locally whatever the quorum; a
    // restarted one resumes from its own record. So after a restart of both, anything counted would
    // be in their replicas.
    for (const slot of [0, 1]) {
      await cluster.stopMember(slot);
      await cluster.restartMember(slot);
    }
    for (const url of [A, B]) {
      const res = await postJson<{ planId: string; encryption: Record<string, number>; decryption: Record<string, number> }>(`${url}/jobs/dataConsumption`, p.signed(0));
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body.planId).toBe('tiny');
      expect(res.body.encryption).toMatchObject({ limit: 10, used: 0, count: 0, remaining: 10, requestLimit: 2 });
      expect(res.body.decryption).toMatchObject({ limit: 10, used: 0, count: 0 });
    }
    for (const node of cluster.members) {
      const records = [];
      for await (const r of node.state.list('usage')) records.push(r);
      expect(records).toEqual([]);
    }
    const metrics = await cluster.members[0]!.metrics.render();
    expect(metrics).not.toMatch(/quorumkeep_usage_limit_refusals_total\{[^}]*\} [1-9]/);
  });
});
