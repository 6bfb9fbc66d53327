/**
 * The cluster status, defined once (src/core/health; docs/operations.md, "Data safety"): `unavailable`
 * below quorum, `degraded` for every problem an operator must see, `ok` for none — each problem by
 * its code.
 */
import { describe, expect, it } from 'vitest';
import { statusOf } from '../../../../src/core/health/index.ts';
import type { DataSafety, MemberSafety } from '../../../../src/core/secrets/data-safety.ts';

const member = (slot: number, over: Partial<MemberSafety> = {}): MemberSafety => ({
  slot,
  nodeId: `node-${slot}`,
  reachable: true,
  ready: true,
  status: 'active',
  since: null,
  shares: { at: 0, expected: 4, held: 4, missing: 0, pending: 0, acknowledgedLost: 0, complete: true },
  ...over,
});
const safety = (over: Partial<DataSafety> = {}): DataSafety => ({
  members: [0, 1, 2, 3, 4].map((s) => member(s)),
  secretsAtRisk: 0,
  secretsLost: 0,
  secretsLostAcknowledged: 0,
  atRisk: [],
  lost: [],
  exact: true,
  checkedAt: 0,
  ...over,
});
const facts = (over: Partial<Parameters<typeof statusOf>[0]> = {}) => statusOf({ size: 5, threshold: 3, reachable: 5, slot0Reachable: true, equivocating: [], dataSafety: safety(), ...over });

describe('cluster status', () => {
  it('ok with nothing wrong; acknowledged losses are not problems', () => {
    expect(facts()).toEqual({ status: 'ok', problems: [] });
    const acknowledged = safety({ secretsLostAcknowledged: 3, members: [member(0, { shares: { at: 0, expected: 4, held: 4, missing: 0, pending: 0, acknowledgedLost: 3, complete: true } })] });
    expect(facts({ dataSafety: acknowledged })).toEqual({ status: 'ok', problems: [] });
  });

  it('degraded, with each problem named', () => {
    expect(facts({ slot0Reachable: false, reachable: 4 })).toEqual({ status: 'degraded', problems: ['slot0_unreachable', 'member_unreachable'] });
    expect(facts({ reachable: 4 }).problems).toEqual(['member_unreachable']);
    expect(facts({ dataSafety: safety({ members: [member(3, { status: 'recovering' })] }) }).problems).toEqual(['member_recovering']);
    expect(facts({ dataSafety: safety({ members: [member(3, { shares: { at: 0, expected: 4, held: 1, missing: 3, pending: 0, acknowledgedLost: 0, complete: true } })] }) }).problems).toEqual(['shares_missing']);
    expect(facts({ dataSafety: safety({ members: [member(3, { shares: null, ready: null })] }) }).problems).toEqual(['shares_unknown']);
    expect(facts({ dataSafety: safety({ members: [member(3, { ready: false })] }) }).problems).toEqual(['member_not_ready']);
    // Nothing lacking in a replica the member cannot know complete proves nothing; something lacking does.
    const partial = (missing: number) => ({ at: 0, expected: 4, held: 4 - missing, missing, pending: 0, acknowledgedLost: 0, complete: false });
    expect(facts({ dataSafety: safety({ members: [member(3, { shares: partial(0) })] }) }).problems).toEqual(['shares_unknown']);
    expect(facts({ dataSafety: safety({ members: [member(3, { shares: partial(2) })] }) }).problems).toEqual(['shares_missing']);
    // A member that is down: its unknown shares are the same problem as its being down.
    expect(facts({ reachable: 4, dataSafety: safety({ members: [member(3, { reachable: false, shares: null, ready: null })] }) }).problems).toEqual(['member_unreachable']);
    expect(facts({ dataSafety: safety({ members: [member(3, { shares: { at: 0, expected: 4, held: 3, missing: 0, pending: 1, acknowledgedLost: 0, complete: true } })] }) }).problems).toEqual(['shares_missing']);
    expect(facts({ dataSafety: safety({ secretsAtRisk: 2 }) })).toEqual({ status: 'degraded', problems: ['secrets_at_risk'] });
    expect(facts({ dataSafety: safety({ secretsLost: 1 }) })).toEqual({ status: 'degraded', problems: ['secrets_lost'] });
    expect(facts({ equivocating: [{ nodeAddress: '0x01', nodeId: 'node-1', seq: 3, since: '' }] }).problems).toEqual(['equivocation']);
  });

  it('unavailable below quorum, whatever else holds', () => {
    expect(facts({ reachable: 2, slot0Reachable: false })).toEqual({ status: 'unavailable', problems: ['quorum_unreachable', 'slot0_unreachable', 'member_unreachable'] });
  });
});
