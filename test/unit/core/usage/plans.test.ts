/**
 * Plans (src/core/usage/plans.ts), with a stub replica: the default plan of a config, the operator's
 * view of an assignment, the principal id check, and which plan applies. Assigning over the whole
 * service: service.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { assignmentView, checkPrincipalId, createUsagePlans, defaultPlanOf } from '../../../../src/core/usage/plans.ts';
import type { Plan } from '../../../../src/core/usage/types.ts';
import type { ReplicatedRecord } from '../../../../src/core/replication/record.ts';
import { AppError } from '../../../../src/errors/index.ts';
import { captureLogger } from '../../../utils/log.ts';
import { ALICE, MAY } from './fixtures.ts';

const WALLET = '0x' + 'd'.repeat(40);
const limits = { bytesPerCycle: 1, requestsPerCycle: 1, requestsPerSecond: 1 };
const plan = (id: string): Plan => ({ id, cycle: 'monthly', encryption: limits, decryption: limits });
const [FREE, GOLD] = [plan('free'), plan('gold')];

describe('the default plan', () => {
  it('is the first plan when none is named, else the named one', () => {
    expect(defaultPlanOf({ plans: [FREE, GOLD], defaultPlan: '' })).toBe(FREE);
    expect(defaultPlanOf({ plans: [FREE, GOLD], defaultPlan: 'gold' })).toBe(GOLD);
  });

  it('refuses a config without plans, or naming a plan it does not have', () => {
    expect(() => defaultPlanOf({ plans: [], defaultPlan: '' })).toThrow('usage: at least one plan is needed');
    expect(() => defaultPlanOf({ plans: [FREE], defaultPlan: 'gold' })).toThrow('usage: defaultPlan "gold" is not a configured plan');
  });
});

describe('views and checks', () => {
  it('an assignment is seen with its time in ISO-8601 UTC; none is the default, unassigned', () => {
    expect(assignmentView(ALICE, GOLD, { planId: 'gold', assignedAt: MAY })).toEqual({ principalId: ALICE, planId: 'gold', assigned: true, assignedAt: '2026-05-01T00:00:00.000Z' });
    expect(assignmentView(ALICE, FREE, undefined)).toEqual({ principalId: ALICE, planId: 'free', assigned: false, assignedAt: null });
  });

  it('a principal id is a UUIDv4 or a lowercase wallet address; anything else is a 400', () => {
    expect(() => checkPrincipalId(ALICE)).not.toThrow();
    expect(() => checkPrincipalId(WALLET)).not.toThrow();
    for (const bad of ['nobody', ALICE.toUpperCase(), '0x' + 'D'.repeat(40), '']) {
      expect(() => checkPrincipalId(bad)).toThrow(AppError);
    }
  });
});

describe('the plan that applies', () => {
  function plans(assigned: Record<string, string>) {
    const log = captureLogger();
    const state = {
      get: async (kind: string, key: string): Promise<ReplicatedRecord | undefined> => {
        const planId = kind === 'plan' ? assigned[key] : undefined;
        return planId === undefined ? undefined : { kind, key, origin: WALLET, seq: 1, hlc: [MAY, 0], body: { planId, assignedAt: MAY }, sig: '' };
      },
      list: async function* () {},
    };
    const replicator = { replicate: () => Promise.reject(new Error('not in these tests')) };
    return { log, svc: createUsagePlans({ plans: [FREE, GOLD], defaultPlan: '' }, { state, replicator, clock: () => MAY, logger: log.logger }) };
  }

  it('is the assigned plan, or the default without an assignment', async () => {
    const { svc } = plans({ [ALICE]: 'gold' });
    expect(await svc.planFor(ALICE)).toEqual({ plan: GOLD, assignment: { planId: 'gold', assignedAt: MAY } });
    expect(await svc.planFor(WALLET)).toEqual({ plan: FREE, assignment: undefined });
    expect(await svc.planOf(ALICE)).toMatchObject({ planId: 'gold', assigned: true });
  });

  it('is the default when this node does not know the assigned plan, which is logged once', async () => {
    const { svc, log } = plans({ [ALICE]: 'platinum' });
    expect(await svc.planFor(ALICE)).toEqual({ plan: FREE, assignment: { planId: 'platinum', assignedAt: MAY } });
    await svc.planFor(ALICE);
    expect(await svc.planOf(ALICE)).toEqual({ principalId: ALICE, planId: 'free', assigned: true, assignedAt: new Date(MAY).toISOString() });
    expect(log.lines().map((l) => [l.msg, l.planId])).toEqual([['assigned plan is not configured on this node; the default plan applies', 'platinum']]);
  });
});
