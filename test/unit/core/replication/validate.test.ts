import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createKindRegistry, type RecordKindDefinition } from '../../../../src/core/replication/kinds.ts';
import type { ClusterDescriptor } from '../../../../src/core/replication/ports.ts';
import { recordDigest, type ReplicatedRecord } from '../../../../src/core/replication/record.ts';
import { refusal } from '../../../../src/core/replication/refusals.ts';
import { bodyProblem, checkRecord, createEvidenceContexts, keyProblem, mayWrite, MAX_KEY_LENGTH, reasonLabel, signersOf, UNNUMBERED, type RecordRules } from '../../../../src/core/replication/validate.ts';
import { fromHex, toHex } from '../../../../src/crypto/index.ts';
import { flagKind, makeCluster, noteKind, rec } from './fixtures.ts';

const NOW_MS = 1_700_000_000_000;
const SKEW_MS = 60_000;

/** Nodes 0–2 are members, node 3 is a gateway coordinator, node 4's identity was retired at seq 5. */
function setup() {
  const { keys, descriptor: base } = makeCluster(5);
  const [n0, n1, n2, n3, n4] = base.nodes;
  const descriptor: ClusterDescriptor = {
    ...base,
    size: 3,
    threshold: 2,
    nodes: [n0!, n1!, n2!, { ...n3!, slot: null, httpUrl: 'http://127.0.0.1:1' }],
    epoch: 1,
    retired: [{ ...n4!, epoch: 1, lastSeq: 5, retiredAt: NOW_MS - 1000 }],
  };
  const guarded: RecordKindDefinition<{ v: number }> = { name: 'guarded', writers: ['coordinator'], body: z.strictObject({ v: z.number().int() }) };
  const counter: RecordKindDefinition<{ v: number }> = { name: 'counter', writers: ['slot0'], body: z.strictObject({ v: z.number().int() }), key: (k) => /^c-\d+$/.test(k) };
  const kinds = createKindRegistry([noteKind, flagKind, guarded, counter] as RecordKindDefinition[]);
  const rules: RecordRules = { clusterId: descriptor.clusterId, signers: signersOf(descriptor), kinds, maxClockSkewMs: SKEW_MS };
  // Records of the retired node 4 and the gateway 3 are signed with their keys, under their addresses.
  const sign = (i: number, seq: number, body: unknown, opts: Parameters<typeof rec>[5] = {}) => rec({ ...descriptor, nodes: base.nodes }, keys[i]!, i, seq, body, { hlc: [NOW_MS, 0], ...opts });
  return { descriptor, rules, sign, kinds };
}

/** The refusal's code, or undefined for a record that passed. */
const codeOf = (v: ReturnType<typeof checkRecord>) => ('code' in v ? v.code : undefined);

describe('checkRecord: the rules checked before the replica', () => {
  it('accepts a well-formed record of a listed member, with the digest its signature must cover', () => {
    const { rules, sign } = setup();
    const r = sign(1, 1, { v: 1 });
    const v = checkRecord(r, rules, NOW_MS);
    expect(codeOf(v)).toBeUndefined();
    if (!('record' in v)) throw new Error('refused');
    expect(v.record).toEqual(r);
    expect(v.node.entry.slot).toBe(1);
    expect(toHex(v.digest)).toBe(toHex(recordDigest(rules.clusterId, r)));
    expect(toHex(v.sig)).toBe(toHex(fromHex(r.sig)));
  });

  it('refuses a record of a retired identity beyond its last seq, and takes one up to it', () => {
    const { rules, sign } = setup();
    expect(codeOf(checkRecord(sign(4, 5, { v: 5 }), rules, NOW_MS))).toBeUndefined();
    expect(codeOf(checkRecord(sign(4, 6, { v: 6 }), rules, NOW_MS))).toBe('retired_origin');
  });

  it('refuses a record stamped beyond the allowed skew ahead of this clock, and takes one at the limit', () => {
    const { rules, sign } = setup();
    expect(codeOf(checkRecord(sign(1, 1, { v: 1 }, { hlc: [NOW_MS + SKEW_MS, 7] }), rules, NOW_MS))).toBeUndefined();
    // Transient: not a verdict on the record, which is held back and tried again.
    expect(checkRecord(sign(1, 1, { v: 1 }, { hlc: [NOW_MS + SKEW_MS + 1, 0] }), rules, NOW_MS)).toMatchObject({ code: 'hlc_ahead', transient: true });
    // The same record is taken once this clock has caught up.
    expect(codeOf(checkRecord(sign(1, 1, { v: 1 }, { hlc: [NOW_MS + SKEW_MS + 1, 0] }), rules, NOW_MS + 1))).toBeUndefined();
  });

  it('refuses malformed records with the reason, naming origin and seq as far as they can be read', () => {
    const { rules, sign } = setup();
    const good = sign(1, 3, { v: 1 });
    const cases: Array<[unknown, string]> = [
      [null, 'not_an_object'],
      ['x', 'not_an_object'],
      [{ ...good, kind: 7 }, 'malformed'],
      [{ ...good, sig: undefined }, 'malformed'],
      [{ ...good, seq: 0 }, 'bad_seq'],
      [{ ...good, seq: 1.5 }, 'bad_seq'],
      [{ ...good, hlc: [1] }, 'bad_hlc'],
      [{ ...good, hlc: [-1, 0] }, 'bad_hlc'],
      [{ ...good, origin: '0x' + '1'.repeat(40) }, 'unknown_origin'],
      [{ ...good, kind: 'nope' }, 'unknown_kind'],
      [{ ...good, key: '' }, 'bad_key'],
      [{ ...good, sig: 'not hex' }, 'bad_signature'],
    ];
    for (const [raw, code] of cases) expect(codeOf(checkRecord(raw, rules, NOW_MS)), code).toBe(code);
    // The reason a refusal travels as is its code when there is no detail.
    expect(checkRecord({ ...good, seq: 0 }, rules, NOW_MS)).toEqual({ reason: 'bad_seq', code: 'bad_seq', origin: good.origin, seq: 0 });
    expect(checkRecord({ seq: 'x' }, rules, NOW_MS)).toEqual({ reason: 'malformed', code: 'malformed', origin: '?', seq: -1 });
  });

  it('refuses a kind its origin may not write', () => {
    const { rules, sign } = setup();
    expect(codeOf(checkRecord(sign(1, 1, { v: 1 }, { kind: 'guarded' }), rules, NOW_MS))).toBe('writer_not_allowed');
    expect(codeOf(checkRecord(sign(3, 1, { v: 1 }, { kind: 'guarded' }), rules, NOW_MS))).toBeUndefined();
    expect(codeOf(checkRecord(sign(3, 1, { v: 1 }), rules, NOW_MS))).toBe('writer_not_allowed');
    expect(codeOf(checkRecord(sign(1, 1, { v: 1 }, { kind: 'counter', k: 'c-1' }), rules, NOW_MS))).toBe('writer_not_allowed');
    expect(codeOf(checkRecord(sign(0, 1, { v: 1 }, { kind: 'counter', k: 'c-1' }), rules, NOW_MS))).toBeUndefined();
    expect(codeOf(checkRecord(sign(0, 1, { v: 1 }, { kind: 'counter', k: 'other' }), rules, NOW_MS))).toBe('bad_key');
  });
});

describe('the kind rules', () => {
  it('keyProblem: non-empty, at most MAX_KEY_LENGTH, and the kind\'s own format', () => {
    const { kinds } = setup();
    expect(keyProblem(noteKind as RecordKindDefinition, 'x'.repeat(MAX_KEY_LENGTH))).toBeUndefined();
    expect(keyProblem(noteKind as RecordKindDefinition, 'x'.repeat(MAX_KEY_LENGTH + 1))).toEqual({ code: 'bad_key' });
    expect(keyProblem(noteKind as RecordKindDefinition, '')).toEqual({ code: 'bad_key' });
    expect(keyProblem(kinds.get('counter')!, 'c-12')).toBeUndefined();
    expect(keyProblem(kinds.get('counter')!, 'c-x')).toEqual({ code: 'bad_key' });
  });

  it('mayWrite: coordinators, slot 0 or members, as the kind names them', () => {
    const { descriptor, kinds } = setup();
    const signers = signersOf(descriptor);
    const node = (i: number) => signers.get(descriptor.nodes[i]!.nodeAddress)!;
    expect(mayWrite(kinds.get('note')!, node(2))).toBe(true);
    expect(mayWrite(kinds.get('note')!, node(3))).toBe(false);
    expect(mayWrite(kinds.get('guarded')!, node(3))).toBe(true);
    expect(mayWrite(kinds.get('counter')!, node(0))).toBe(true);
    expect(mayWrite(kinds.get('counter')!, node(1))).toBe(false);
  });

  it('signersOf: current nodes without a last seq, retired ones with theirs', () => {
    const { descriptor } = setup();
    const signers = signersOf(descriptor);
    expect(signers.size).toBe(5);
    expect(signers.get(descriptor.nodes[3]!.nodeAddress)).toMatchObject({ coordinator: true });
    expect(signers.get(descriptor.nodes[3]!.nodeAddress)!.lastSeq).toBeUndefined();
    expect(signers.get(descriptor.retired![0]!.nodeAddress)).toMatchObject({ coordinator: false, lastSeq: 5 });
    expect(signers.get(descriptor.nodes[0]!.nodeAddress)!.publicKey).toHaveLength(65);
  });

  it('bodyProblem: the schema first, then the kind\'s evidence check with its context', async () => {
    const seen: unknown[] = [];
    const checked: RecordKindDefinition = {
      ...(noteKind as RecordKindDefinition),
      validate: (body, context) => (seen.push({ body, key: context.key }), (body as { v: number }).v > 9 ? refusal('check_failed', 'too big') : undefined),
    };
    const { descriptor, sign } = setup();
    const contextOf = createEvidenceContexts(async () => undefined, async () => undefined);
    const node = signersOf(descriptor).get(descriptor.nodes[1]!.nodeAddress)!;
    const r = sign(1, 1, { v: 1 });
    expect(await bodyProblem(checked, { v: 'x' }, contextOf(checked, r, node, []))).toEqual({ code: 'bad_body' });
    expect(seen).toEqual([]);
    expect(await bodyProblem(checked, { v: 10 }, contextOf(checked, r, node, []))).toMatchObject({ code: 'check_failed' });
    expect(await bodyProblem(checked, { v: 1 }, contextOf(checked, r, node, []))).toBeUndefined();
    expect(seen).toEqual([{ body: { v: 10 }, key: 'k' }, { body: { v: 1 }, key: 'k' }]);
  });

  it('the evidence context reads the replica: current winner, and whether the record would replace it', async () => {
    const { descriptor, sign } = setup();
    const replica = new Map<string, ReplicatedRecord>([['flag!k', sign(2, 1, { state: 'closed' }, { kind: 'flag' })]]);
    const contextOf = createEvidenceContexts(async (kind, key) => replica.get(`${kind}!${key}`), async () => undefined);
    const node = signersOf(descriptor).get(descriptor.nodes[1]!.nodeAddress)!;
    const later = sign(1, 1, { state: 'open' }, { kind: 'flag', hlc: [NOW_MS + 1, 0] });
    const context = contextOf(flagKind as RecordKindDefinition, later, node, []);
    expect(context).toMatchObject({ key: 'k', origin: node.entry.nodeAddress, originSlot: 1, originIsCoordinator: false, atMs: NOW_MS + 1 });
    expect(context).toMatchObject({ kind: 'flag', seq: 1, own: false });
    expect(await context.current('flag', 'k')).toEqual({ body: { state: 'closed' }, origin: descriptor.nodes[2]!.nodeAddress, seq: 1 });
    expect(await context.current('flag', 'other')).toBeUndefined();
  });

  it('the evidence context finds a record by its place in its origin\'s log: among the siblings first, then in this node\'s log', async () => {
    const { descriptor, sign } = setup();
    const log = new Map<string, ReplicatedRecord>();
    for (const r of [sign(2, 1, { v: 1 }), sign(2, 2, { v: 2 }), sign(1, 1, { v: 10 }), sign(1, 2, { v: 11 })]) log.set(`${r.origin}!${r.seq}`, r);
    const contextOf = createEvidenceContexts(async () => undefined, async (origin, seq) => log.get(`${origin}!${seq}`));
    const node = signersOf(descriptor).get(descriptor.nodes[1]!.nodeAddress)!;
    const n2 = descriptor.nodes[2]!.nodeAddress;
    // A sibling travelling with the record stands for the logged one at the same place.
    const travelling = { kind: 'note', key: 'k', body: { v: 20 }, origin: n2, seq: 2, hlc: [NOW_MS, 0] as const };
    const context = contextOf(noteKind as RecordKindDefinition, sign(1, 3, { v: 12 }), node, [travelling]);
    expect((await context.recordAt(n2, 1))?.body).toEqual({ v: 1 });
    expect((await context.recordAt(n2, 2))?.body).toEqual({ v: 20 });
    expect(await context.recordAt(n2, 3)).toBeUndefined();
    // The record right before this one in its origin's log; none before the first.
    expect((await context.preceding())?.body).toEqual({ v: 11 });
    expect(await contextOf(noteKind as RecordKindDefinition, sign(1, 1, { v: 10 }), node, []).preceding()).toBeUndefined();
    // An own write not numbered yet follows the write before it in its batch.
    const own = contextOf(noteKind as RecordKindDefinition, { ...sign(1, 1, { v: 13 }), seq: UNNUMBERED }, node, [{ kind: 'note', key: 'j', body: { v: 30 }, hlc: [NOW_MS, 0] }]);
    expect(own).toMatchObject({ own: true, seq: UNNUMBERED });
    expect((await own.preceding())?.body).toEqual({ v: 30 });
  });

  it('reasonLabel: the fixed part of a reason, as a metrics label', () => {
    expect(reasonLabel('evidence check failed: no such permit')).toBe('evidence_check_failed');
    expect(reasonLabel('bad signature')).toBe('bad_signature');
    expect(reasonLabel('prev_mismatch: the version named is not the previous one')).toBe('prev_mismatch');
    expect(reasonLabel('no ack within the quorum grace period')).toBe('no_ack_within_the_quorum_grace_period');
  });
});
