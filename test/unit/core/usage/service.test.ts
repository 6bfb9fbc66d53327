/**
 * The usage service with stubs (src/core/usage/service.ts): admission, refunds, the six refusals,
 * flushing and its cap (fixed, and scaled with the limit), the overshoot bound between coordinators
 * under any interleaving, restart, cycle rollover and the report. The same behaviour over a real cluster: test/integration/usage.test.ts.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { createUsageService, type UsageCapability, type UsageOptions } from '../../../../src/core/usage/service.ts';
import { usageKind } from '../../../../src/core/usage/records.ts';
import { supersedes } from '../../../../src/core/replication/kinds.ts';
import type { ReplicatedRecord } from '../../../../src/core/replication/record.ts';
import type { ClusterDescriptor, WriteIntent } from '../../../../src/core/replication/ports.ts';
import type { Plan } from '../../../../src/core/usage/types.ts';
import { AppError } from '../../../../src/errors/index.ts';
import { captureLogger } from '../../../utils/log.ts';
import { waitFor } from 'quorumkeep/testing';

const ALICE = '0b5b3c1e-5d4a-4e6f-9a7b-1c2d3e4f5a6b';
const BOB = '1c6c4d2f-6e5b-4f70-8b8c-2d3e4f5a6b7c';
const ADDR = ['0x' + 'a'.repeat(40), '0x' + 'b'.repeat(40), '0x' + 'c'.repeat(40)];
const descriptor: ClusterDescriptor = {
  clusterId: 'qk-unit-usage',
  size: 3,
  threshold: 2,
  nodes: ADDR.map((nodeAddress, i) => ({ id: `node-${i}`, slot: i, peerId: `p${i}`, nodeAddress, signingPublicKey: '02', multiaddrs: [], ...(i < 2 ? { httpUrl: `http://127.0.0.1:${3010 + i}` } : {}) })),
};
/** The same three nodes, all coordinators: for the tests where three coordinators count. */
const allCoordinators: ClusterDescriptor = { ...descriptor, nodes: descriptor.nodes.map((n, i) => ({ ...n, httpUrl: `http://127.0.0.1:${3010 + i}` })) };
const MAY = Date.parse('2026-05-01T00:00:00Z');
const JUNE = Date.parse('2026-06-01T00:00:00Z');

const limits = (bytesPerCycle: number, requestsPerCycle: number, requestsPerSecond = 1000) => ({ bytesPerCycle, requestsPerCycle, requestsPerSecond });
const PLANS: Plan[] = [
  { id: 'roomy', cycle: 'monthly', encryption: limits(1e9, 1e6), decryption: limits(1e9, 1e6) },
  { id: 'tiny', cycle: 'monthly', encryption: limits(10, 100), decryption: limits(20, 3) },
  { id: 'slow', cycle: 'monthly', encryption: limits(1e9, 1e6, 2), decryption: limits(1e9, 1e6, 0.5) },
  { id: 'day', cycle: 'daily', encryption: limits(1e9, 5), decryption: limits(1e9, 5) },
];

/**
 * One replica all coordinators read and write: a record is applied (and every coordinator's engine
 * hook told) when its write lands, before the writer sees its acks — as on a member that acked.
 */
function sharedReplica() {
  const states = new Map<string, ReplicatedRecord>();
  const hooks: Array<(records: ReplicatedRecord[]) => void> = [];
  let seq = 0;
  return {
    states,
    hooks,
    put(origin: string, intent: WriteIntent, at: number) {
      const record: ReplicatedRecord = { kind: intent.kind, key: intent.key, origin, seq: ++seq, hlc: [at, seq], body: intent.body, sig: '' };
      const k = `${intent.kind}!${intent.key}`;
      const kind = intent.kind === 'usage' ? usageKind : { name: intent.kind, writers: ['coordinator'] as const };
      if (supersedes(kind as never, states.get(k), record)) states.set(k, record);
      for (const hook of hooks) hook([record]);
      return record;
    },
  };
}

interface Harness {
  svc: UsageCapability;
  /** Acks a flush gets (threshold 2): below it, counts stay unconfirmed. */
  acks: number;
  /** When set, flushes wait for this before they land. */
  gate: Promise<void> | undefined;
  writes: WriteIntent[];
  /** Admissions that waited for a flush (the metric). */
  waits: number;
}

function coordinator(
  replica: ReturnType<typeof sharedReplica>,
  index: number,
  clock: () => number,
  options: Partial<UsageOptions> = {},
  monotonic = () => 0,
  cluster: ClusterDescriptor = descriptor,
): Harness {
  const h: Harness = { svc: undefined as never, acks: 3, gate: undefined, writes: [], waits: 0 };
  h.svc = createUsageService(
    // The fixed caps unless a test scales them (maxOvershootFraction).
    { plans: PLANS, defaultPlan: 'roomy', flushIntervalMs: 60_000, maxUnflushedBytes: 100, maxUnflushedRequests: 4, maxOvershootFraction: 0, ...options },
    {
      replicator: {
        async replicate(intent) {
          h.writes.push(intent);
          if (h.gate) await h.gate;
          const record = replica.put(ADDR[index]!, intent, clock());
          return { record, acked: ADDR.slice(0, h.acks), failed: [] };
        },
      },
      state: {
        // Reads take a few event-loop turns, as a LevelDB read does: writes land meanwhile.
        get: async (kind, key) => {
          await new Promise<void>((r) => setImmediate(r));
          return replica.states.get(`${kind}!${key}`);
        },
        list: async function* () {},
      },
      descriptor: cluster,
      selfAddress: ADDR[index]!,
      verifier: { verify: async (request) => ({ principalId: request.data }) as never },
      clock,
      now: monotonic,
      logger: captureLogger().logger,
      metrics: { refusals: { inc: () => undefined }, flushDuration: { observe: () => undefined }, flushWaits: { inc: () => void (h.waits += 1) } },
    },
  );
  replica.hooks.push((records) => h.svc.onRecordsApplied(records));
  return h;
}

const assign = (replica: ReturnType<typeof sharedReplica>, principalId: string, planId: string) => replica.put(ADDR[0]!, { kind: 'plan', key: principalId, body: { planId, assignedAt: MAY } }, MAY);

async function refusal(p: Promise<unknown>): Promise<AppError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(AppError);
  return err as AppError;
}


/**
 * Alice on plan `planId` (encryption and decryption both `planLimits`), on a coordinator whose caps
 * scale to 1% of a limit and whose flushes wait until `release()`.
 */
function scaledCapsOnPlan(planId: string, planLimits: ReturnType<typeof limits>) {
  const replica = sharedReplica();
  replica.put(ADDR[0]!, { kind: 'plan', key: ALICE, body: { planId, assignedAt: MAY } }, MAY);
  const plans: Plan[] = [...PLANS, { id: planId, cycle: 'monthly', encryption: planLimits, decryption: planLimits }];
  const h = coordinator(replica, 0, () => MAY + 1000, { plans, maxOvershootFraction: 0.01 });
  let open!: () => void;
  h.gate = new Promise<void>((r) => (open = r));
  const release = () => {
    h.gate = undefined;
    open();
  };
  return { h, release };
}

describe('admission and counting', () => {
  it('counts at admission; commit keeps it, release takes it back, commit(actual) corrects the bytes', async () => {
    const replica = sharedReplica();
    const { svc } = coordinator(replica, 0, () => MAY + 1000);
    const a = await svc.admit(ALICE, 'encryption', 100);
    const b = await svc.admit(ALICE, 'encryption', 50);
    const c = await svc.admit(ALICE, 'encryption', 70);
    expect((await svc.report({ data: ALICE, signature: '' })).encryption).toMatchObject({ used: 220, count: 3 });
    a.commit();
    b.release();
    c.commit(30);
    // A second settle is a no-op.
    b.release();
    a.release();
    const report = await svc.report({ data: ALICE, signature: '' });
    expect(report.encryption).toMatchObject({ used: 130, count: 2 });
    expect(report.decryption).toMatchObject({ used: 0, count: 0 });
  });

  it('each of the six limit types refuses with its fields, and a refused request counts nothing', async () => {
    const replica = sharedReplica();
    assign(replica, ALICE, 'tiny');
    assign(replica, BOB, 'slow');
    const { svc } = coordinator(replica, 0, () => MAY + 1000);
    (await svc.admit(ALICE, 'encryption', 10)).commit();
    let err = await refusal(svc.admit(ALICE, 'encryption', 1));
    expect(err).toMatchObject({ code: 'LIMIT_EXCEEDED', message: 'Limit exceeded', status: 429 });
    expect(err.extra).toMatchObject({ limitType: 'encryption_data_limit', retryAfterSeconds: Math.ceil((JUNE - MAY - 1000) / 1000) });
    expect(err.extra!.detail).toMatch(/Encryption data limit of 10 bytes/);
    for (let i = 0; i < 3; i++) (await svc.admit(ALICE, 'decryption', 1)).commit();
    err = await refusal(svc.admit(ALICE, 'decryption', 1));
    expect(err.extra).toMatchObject({ limitType: 'decryption_request_limit' });
    err = await refusal(svc.admit(ALICE, 'decryption', 30));
    expect(err.extra).toMatchObject({ limitType: 'decryption_data_limit' });
    // Encryption request limit: a plan of 100 requests, 0-byte requests.
    const tinyRequests = sharedReplica();
    tinyRequests.put(ADDR[0]!, { kind: 'plan', key: ALICE, body: { planId: 'day', assignedAt: MAY } }, MAY);
    const day = coordinator(tinyRequests, 0, () => MAY + 1000).svc;
    for (let i = 0; i < 5; i++) (await day.admit(ALICE, 'encryption', 0)).commit();
    err = await refusal(day.admit(ALICE, 'encryption', 0));
    expect(err.extra).toMatchObject({ limitType: 'encryption_request_limit', retryAfterSeconds: 86_400 - 1 });
    // Rate limits: 2 per second, then 0.5 per second.
    (await svc.admit(BOB, 'encryption', 1)).commit();
    (await svc.admit(BOB, 'encryption', 1)).commit();
    err = await refusal(svc.admit(BOB, 'encryption', 1));
    expect(err.extra).toMatchObject({ limitType: 'encryption_rate_limit', retryAfterSeconds: 1 });
    (await svc.admit(BOB, 'decryption', 1)).commit();
    err = await refusal(svc.admit(BOB, 'decryption', 1));
    expect(err.extra).toMatchObject({ limitType: 'decryption_rate_limit', retryAfterSeconds: 2 });
    // Nothing refused was counted.
    expect((await svc.report({ data: ALICE, signature: '' })).encryption).toMatchObject({ used: 10, count: 1 });
    expect((await svc.report({ data: ALICE, signature: '' })).decryption).toMatchObject({ used: 3, count: 3 });
    expect((await svc.report({ data: BOB, signature: '' })).encryption).toMatchObject({ used: 2, count: 2 });
  });
});

describe('flushing', () => {
  it('one record per counter per flush, carrying the absolute counts', async () => {
    const replica = sharedReplica();
    const h = coordinator(replica, 0, () => MAY + 1000, { maxUnflushedRequests: 1000 });
    for (let i = 0; i < 10; i++) (await h.svc.admit(ALICE, 'encryption', 3)).commit();
    await h.svc.flush();
    expect(h.writes).toHaveLength(1);
    expect(h.writes[0]).toMatchObject({ kind: 'usage', body: { bytes: 30, requests: 10, refundedBytes: 0, refundedRequests: 0 } });
    await h.svc.flush();
    expect(h.writes).toHaveLength(1);
  });

  it('a flush starts at half the cap; beyond the cap, admission waits for it', async () => {
    const replica = sharedReplica();
    const h = coordinator(replica, 0, () => MAY + 1000);
    let open!: () => void;
    h.gate = new Promise<void>((r) => (open = r));
    // Cap 4 requests: the 2nd starts a flush (held at the gate), the 5th must wait for one.
    for (let i = 0; i < 4; i++) (await h.svc.admit(ALICE, 'encryption', 1)).commit();
    expect(h.writes[0]!.body).toMatchObject({ requests: 2 });
    // At most two rounds in flight.
    expect(h.writes.length).toBeLessThanOrEqual(2);
    let fifth = false;
    const waiting = h.svc.admit(ALICE, 'encryption', 1).then((r) => {
      fifth = true;
      return r;
    });
    await waitFor(() => h.waits === 1);
    expect(fifth).toBe(false);
    h.gate = undefined;
    open();
    (await waiting).commit();
    expect(fifth).toBe(true);
  });

  it('overlapping rounds acknowledged out of order never move the acknowledged counts back', async () => {
    const replica = sharedReplica();
    const h = coordinator(replica, 0, () => MAY + 1000, { maxUnflushedRequests: 1000 });
    const gates: Array<() => void> = [];
    h.gate = new Promise<void>((r) => gates.push(r));
    (await h.svc.admit(ALICE, 'encryption', 1)).commit();
    const first = h.svc.flush();
    h.gate = new Promise<void>((r) => gates.push(r));
    (await h.svc.admit(ALICE, 'encryption', 1)).commit();
    const second = h.svc.flush();
    expect(h.writes.map((w) => (w.body as { requests: number }).requests)).toEqual([1, 2]);
    // The newer write is acknowledged first, then the older one.
    gates[1]!();
    await second;
    gates[0]!();
    await first;
    h.gate = undefined;
    // Nothing is left to write: the acknowledged counts are the newer ones.
    await h.svc.flush();
    expect(h.writes).toHaveLength(2);
    expect(replica.states.get(`usage!${h.writes[0]!.key}`)!.body).toMatchObject({ requests: 2 });
  });

  it('bytes have a cap too, but one large request passes when nothing is pending', async () => {
    const replica = sharedReplica();
    const h = coordinator(replica, 0, () => MAY + 1000, { maxUnflushedRequests: 1000 });
    (await h.svc.admit(ALICE, 'encryption', 500)).commit();
    expect(h.writes).toHaveLength(1);
  });

  it('the cap scales with the limit: with a large limit no admission waits until the scaled cap, then one does', async () => {
    // Least cap 4 requests, but 1% of 1,000,000 requests: a cap of 10,000. No flush is ever
    // acknowledged meanwhile: every admission below is judged with nothing confirmed.
    const { h, release } = scaledCapsOnPlan('big', limits(1e12, 1e6, 1e6));
    const CAP = 10_000;
    for (let i = 0; i < CAP; i++) (await h.svc.admit(ALICE, 'encryption', 1)).commit();
    expect(h.waits).toBe(0);
    // The first flush started at half the scaled cap.
    expect(h.writes[0]!.body).toMatchObject({ requests: CAP / 2 });
    let next = false;
    const waiting = h.svc.admit(ALICE, 'encryption', 1).then((r) => {
      next = true;
      return r;
    });
    await waitFor(() => h.waits === 1);
    expect(next).toBe(false);
    expect((await h.svc.report({ data: ALICE, signature: '' })).encryption.count).toBe(CAP);
    release();
    (await waiting).commit();
    expect((await h.svc.report({ data: ALICE, signature: '' })).encryption.count).toBe(CAP + 1);
  });

  it('the byte cap scales with the data limit too', async () => {
    // Least cap 100 bytes (each request below would wait), scaled: 1% of 10^8 = 10^6 bytes.
    const { h, release } = scaledCapsOnPlan('bytes', limits(1e8, 1e6));
    for (let i = 0; i < 100; i++) (await h.svc.admit(ALICE, 'encryption', 10_000)).commit();
    expect(h.waits).toBe(0);
    expect(h.writes[0]!.body).toMatchObject({ bytes: 500_000 });
    const waiting = h.svc.admit(ALICE, 'encryption', 1);
    await waitFor(() => h.waits === 1);
    release();
    (await waiting).commit();
    expect((await h.svc.report({ data: ALICE, signature: '' })).encryption).toMatchObject({ used: 1_000_001, count: 101 });
  });

  it('a small limit keeps the least cap (the fraction of it is smaller)', async () => {
    // 1% of 100 requests is 1: the least cap, 4, applies.
    const { h, release } = scaledCapsOnPlan('hundred', limits(1e9, 100));
    for (let i = 0; i < 4; i++) (await h.svc.admit(ALICE, 'encryption', 1)).commit();
    const waiting = h.svc.admit(ALICE, 'encryption', 1);
    await waitFor(() => h.waits === 1);
    release();
    (await waiting).commit();
  });

  it('when flushes cannot reach a quorum, a counter at its cap answers 503 and counts nothing', async () => {
    const replica = sharedReplica();
    const h = coordinator(replica, 0, () => MAY + 1000);
    h.acks = 1;
    for (let i = 0; i < 4; i++) (await h.svc.admit(ALICE, 'encryption', 1)).commit();
    const err = await refusal(h.svc.admit(ALICE, 'encryption', 1));
    expect(err.code).toBe('QUORUM_UNAVAILABLE');
    expect(err.message).toMatch(/Usage cannot be recorded: 1 of 3 members acknowledged/);
    expect((await h.svc.report({ data: ALICE, signature: '' })).encryption.count).toBe(4);
    // Written locally all the same: a restart keeps them.
    expect(replica.states.get(`usage!${h.writes.at(-1)!.key}`)!.body).toMatchObject({ requests: 4 });
    h.acks = 3;
    (await h.svc.admit(ALICE, 'encryption', 1)).commit();
  });

  it('stop flushes what is left, and a restarted coordinator resumes from its own record', async () => {
    const replica = sharedReplica();
    const first = coordinator(replica, 0, () => MAY + 1000, { maxUnflushedRequests: 1000 });
    for (let i = 0; i < 7; i++) (await first.svc.admit(ALICE, 'decryption', 2)).commit();
    await first.svc.stop();
    await first.svc.stop();
    await expect(first.svc.admit(ALICE, 'decryption', 1)).rejects.toMatchObject({ code: 'NOT_READY' });
    const second = coordinator(replica, 0, () => MAY + 2000, { maxUnflushedRequests: 1000 });
    (await second.svc.admit(ALICE, 'decryption', 2)).commit();
    expect((await second.svc.report({ data: ALICE, signature: '' })).decryption).toMatchObject({ used: 16, count: 8 });
    await second.svc.flush();
    expect(second.writes.at(-1)!.body).toEqual({ bytes: 16, requests: 8, refundedBytes: 0, refundedRequests: 0 });
  });
});

describe('across coordinators', () => {
  it('each coordinator sees the others’ flushed counts, added to its own exact one', async () => {
    const replica = sharedReplica();
    const a = coordinator(replica, 0, () => MAY + 1000, { maxUnflushedRequests: 1000 });
    const b = coordinator(replica, 1, () => MAY + 1000, { maxUnflushedRequests: 1000 });
    for (let i = 0; i < 3; i++) (await a.svc.admit(ALICE, 'encryption', 10)).commit();
    (await b.svc.admit(ALICE, 'encryption', 5)).commit();
    expect((await a.svc.report({ data: ALICE, signature: '' })).encryption.used).toBe(30);
    await Promise.all([a.svc.flush(), b.svc.flush()]);
    expect((await a.svc.report({ data: ALICE, signature: '' })).encryption).toMatchObject({ used: 35, count: 4 });
    expect((await b.svc.report({ data: ALICE, signature: '' })).encryption).toMatchObject({ used: 35, count: 4 });
  });

  it('under any interleaving, a limit is overshot by at most the cap (fixed or scaled) per other coordinator', async () => {
    const REQUEST_LIMIT = 20;
    const BYTE_LIMIT = 100;
    const LARGEST_REQUEST = 4;
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(fc.nat(2), fc.constantFrom('admit', 'admit', 'admit', 'flush'), fc.nat(40), fc.integer({ min: 0, max: LARGEST_REQUEST })), { minLength: 60, maxLength: 150 }),
        // The fixed caps alone (fraction 0), or a fraction that scales them above the least caps.
        fc.record({ maxUnflushedRequests: fc.integer({ min: 1, max: 3 }), maxUnflushedBytes: fc.integer({ min: 1, max: 8 }), maxOvershootFraction: fc.constantFrom(0, 0.1, 0.15) }),
        async (steps, caps) => {
          const replica = sharedReplica();
          replica.put(ADDR[0]!, { kind: 'plan', key: ALICE, body: { planId: 'capped', assignedAt: MAY } }, MAY);
          const plans: Plan[] = [...PLANS, { id: 'capped', cycle: 'monthly', encryption: limits(BYTE_LIMIT, REQUEST_LIMIT), decryption: limits(BYTE_LIMIT, REQUEST_LIMIT) }];
          // The documented cap: max(least cap, ⌊fraction × limit⌋); for bytes, or the largest request.
          const requestCap = Math.max(caps.maxUnflushedRequests, Math.floor(caps.maxOvershootFraction * REQUEST_LIMIT));
          const byteCap = Math.max(caps.maxUnflushedBytes, Math.floor(caps.maxOvershootFraction * BYTE_LIMIT), LARGEST_REQUEST);
          // Three coordinators; flushes happen only when a step says so (and when the cap forces one).
          const coords = [0, 1, 2].map((i) => coordinator(replica, i, () => MAY + 1000, { plans, ...caps }, undefined, allCoordinators));
          let requests = 0;
          let bytes = 0;
          await Promise.all(
            steps.map(async ([who, what, delay, size]) => {
              // Every step starts after its own number of event-loop turns, so flushes land between admissions.
              for (let i = 0; i < delay; i++) await new Promise<void>((r) => setImmediate(r));
              if (what === 'flush') return coords[who]!.svc.flush();
              const r = await coords[who]!.svc.admit(ALICE, 'encryption', size).catch(() => undefined);
              if (r) {
                requests++;
                bytes += size;
                r.commit();
              }
            }),
          );
          expect(requests).toBeLessThanOrEqual(REQUEST_LIMIT + 2 * requestCap);
          expect(bytes).toBeLessThanOrEqual(BYTE_LIMIT + 2 * byteCap);
        },
      ),
      { numRuns: 100 },
    );
  });

  it('the bound is reached: without flushes landing, each other coordinator adds its whole scaled cap', async () => {
    const LIMIT = 100;
    const replica = sharedReplica();
    replica.put(ADDR[0]!, { kind: 'plan', key: ALICE, body: { planId: 'hundred', assignedAt: MAY } }, MAY);
    const plans: Plan[] = [...PLANS, { id: 'hundred', cycle: 'monthly', encryption: limits(1e9, LIMIT), decryption: limits(1e9, LIMIT) }];
    // Scaled cap: max(4, ⌊0.1 × 100⌋) = 10.
    const coords = [0, 1, 2].map((i) => coordinator(replica, i, () => MAY + 1000, { plans, maxOvershootFraction: 0.1 }, undefined, allCoordinators));
    const gates = coords.map((h) => {
      let open!: () => void;
      h.gate = new Promise<void>((r) => (open = r));
      return open;
    });
    // Coordinators 1 and 2 each admit their whole cap, which nobody else sees (their flushes never
    // land), and not one request more: the next waits for a flush.
    const stuck: Array<Promise<unknown>> = [];
    for (const h of coords.slice(1)) {
      for (let i = 0; i < 10; i++) (await h.svc.admit(ALICE, 'encryption', 1)).commit();
      stuck.push(h.svc.admit(ALICE, 'encryption', 1).catch(() => undefined));
      await waitFor(() => h.waits === 1);
    }
    // Coordinator 0, seeing none of it, admits up to the limit, flushing as it goes.
    coords[0]!.gate = undefined;
    gates[0]!();
    let admitted = 20;
    for (;;) {
      const r = await coords[0]!.svc.admit(ALICE, 'encryption', 1).catch(() => undefined);
      if (!r) break;
      r.commit();
      admitted++;
    }
    expect(admitted).toBe(LIMIT + 2 * 10);
    // Once their flushes land, the waiting admissions see the total and are refused.
    for (const open of gates) open();
    expect(await Promise.all(stuck)).toEqual([undefined, undefined]);
  });
});

describe('cycles and the report', () => {
  it('a new cycle starts from zero and the report names it', async () => {
    const replica = sharedReplica();
    let now = JUNE - 10_000;
    const { svc } = coordinator(replica, 0, () => now);
    (await svc.admit(ALICE, 'encryption', 9)).commit();
    let report = await svc.report({ data: ALICE, signature: '' });
    expect(report).toMatchObject({ periodStart: String(MAY), periodEnd: String(JUNE), cycleType: 'monthly', planId: 'roomy' });
    expect(report.encryption.used).toBe(9);
    now = JUNE;
    report = await svc.report({ data: ALICE, signature: '' });
    expect(report).toMatchObject({ periodStart: String(JUNE), periodEnd: String(Date.parse('2026-07-01T00:00:00Z')) });
    expect(report.encryption).toMatchObject({ used: 0, count: 0 });
    (await svc.admit(ALICE, 'encryption', 4)).commit();
    expect((await svc.report({ data: ALICE, signature: '' })).encryption.used).toBe(4);
  });

  it('its numbers agree with each other', async () => {
    const replica = sharedReplica();
    const { svc } = coordinator(replica, 0, () => MAY + 1000);
    (await svc.admit(ALICE, 'encryption', 123_456_789)).commit();
    const { encryption } = await svc.report({ data: ALICE, signature: '' });
    expect(encryption.remaining).toBe(encryption.limit - encryption.used);
    expect(encryption.limitGB).toBe(encryption.limit / 2 ** 30);
    expect(encryption.usedGB).toBe(encryption.used / 2 ** 30);
    expect(encryption.remainingGB).toBe(encryption.limitGB - encryption.usedGB);
    expect(encryption).toMatchObject({ requestLimit: 1e6, rateLimit: 1000, count: 1 });
  });

  it('plans: an unknown plan is 400, an unknown principal 404; an assigned plan applies', async () => {
    const replica = sharedReplica();
    const h = coordinator(replica, 0, () => MAY + 1000);
    await expect(h.svc.assignPlan(ALICE, 'gold')).rejects.toMatchObject({ code: 'BAD_REQUEST' });
    await expect(h.svc.assignPlan('nobody', 'tiny')).rejects.toMatchObject({ code: 'BAD_REQUEST' });
    await expect(h.svc.assignPlan(ALICE, 'tiny')).rejects.toMatchObject({ code: 'NOT_FOUND' });
    replica.put(ADDR[0]!, { kind: 'principal', key: ALICE, body: {} }, MAY);
    expect(await h.svc.planOf(ALICE)).toEqual({ principalId: ALICE, planId: 'roomy', assigned: false, assignedAt: null });
    expect(await h.svc.assignPlan(ALICE, 'tiny')).toMatchObject({ principalId: ALICE, planId: 'tiny', assigned: true, assignedAt: new Date(MAY + 1000).toISOString() });
    expect((await h.svc.report({ data: ALICE, signature: '' })).planId).toBe('tiny');
    // A plan this node does not know (another node's config): the default applies.
    replica.put(ADDR[1]!, { kind: 'plan', key: ALICE, body: { planId: 'platinum', assignedAt: MAY + 2000 } }, MAY + 2000);
    expect((await h.svc.report({ data: ALICE, signature: '' })).planId).toBe('roomy');
  });
});
