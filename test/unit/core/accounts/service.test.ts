/**
 * The accounts service's abuse rules with the cluster stubbed through deps: two coordinators with
 * their own replicas (delivery between them held back at will, to play replication lag), A being slot
 * 0. Principals are written as in a cluster: each coordinator proposes versions through the real
 * sequencer (src/core/replication/sequencer.ts), slot 0 writes one only when it follows the version
 * slot 0 holds, and a coordinator that was behind takes slot 0's version and builds again on it.
 * Covers what the real-cluster tests can't force: a coordinator that has not seen the registration
 * before it, or the one a code was mailed for, and registrations written out of order.
 */
import { describe, expect, it } from 'vitest';
import { createAccountsService, type AccountCrypto } from '../../../../src/core/accounts/service.ts';
import { OTP_MAX_ATTEMPTS, accountKinds, type PrincipalBody } from '../../../../src/core/accounts/records.ts';
import { createCreator } from '../../../../src/core/replication/creator.ts';
import { createKindRegistry, supersedes } from '../../../../src/core/replication/kinds.ts';
import type { ClusterDescriptor, Replicator, WriteIntent } from '../../../../src/core/replication/ports.ts';
import type { ReplicatedRecord } from '../../../../src/core/replication/record.ts';
import { createSequencer } from '../../../../src/core/replication/sequencer.ts';
import { createLogger } from '../../../../src/log/index.ts';
import type { OutgoingMail } from '../../../../src/core/mail-port.ts';

const OTP_TTL_MS = 600_000;
const COOLDOWN_MS = 60_000;
const EMAIL = 'victim@example.test';

const descriptor: ClusterDescriptor = {
  clusterId: 'test-cluster',
  size: 5,
  threshold: 3,
  nodes: Array.from({ length: 5 }, (_, slot) => ({ id: `node-${slot}`, slot, peerId: `peer-${slot}`, nodeAddress: `0x${String(slot).repeat(40)}`, signingPublicKey: 'ab', multiaddrs: [] })),
};

/** Deterministic stand-ins for argon2: a "hash" shows what it hashes. */
function fakeCrypto(): AccountCrypto {
  let next = 100_000;
  return {
    hashPassword: async (pw) => `$argon2id$pw$${pw}$${next++}`,
    verifyPassword: async (pw, phc) => phc.startsWith(`$argon2id$pw$${pw}$`),
    verifyDummy: async () => false,
    generateOtp: () => String(next++),
    hashOtp: async (code, context) => `$argon2id$otp$${context}$${code}`,
    verifyOtp: async (code, context, phc) => phc === `$argon2id$otp$${context}$${code}`,
    isEd25519PublicKeyHex: (hex) => /^[0-9a-f]{64}$/.test(hex),
    verifyEd25519: () => true,
  };
}

type Name = 'A' | 'B';

/**
 * Two coordinators (A is slot 0) over a fake replication: each write is stored where it was made, under
 * that node's origin, and delivered to the other unless held. B reaches slot 0's create operations
 * through A's handler; its proposals can be held at slot 0's door (`holdProposals`).
 */
function cluster(options: { cooldownMs?: number } = {}) {
  let now = 1_800_000_000_000;
  let hlc = 0;
  const claims = new Map<string, string>();
  const mails: OutgoingMail[] = [];
  const kinds = createKindRegistry(accountKinds(descriptor));
  const replicas = { A: new Map<string, ReplicatedRecord>(), B: new Map<string, ReplicatedRecord>() };
  const addressOf = { A: descriptor.nodes[0]!.nodeAddress, B: descriptor.nodes[1]!.nodeAddress };
  const seqs = { A: 0, B: 0 };
  const held: Array<{ to: Name; record: ReplicatedRecord }> = [];
  let holding = false;
  /** Principal versions slot 0 wrote, in order. */
  const versions: ReplicatedRecord[] = [];
  /** B's proposals waiting at slot 0's door, and whether they are held there. */
  const doorway: Array<() => void> = [];
  let holdingProposals = false;

  function apply(replica: Map<string, ReplicatedRecord>, record: ReplicatedRecord): void {
    const id = `${record.kind}!${record.key}`;
    if (supersedes(kinds.get(record.kind)!, replica.get(id), record)) replica.set(id, record);
  }

  function coordinator(name: Name) {
    const other: Name = name === 'A' ? 'B' : 'A';
    const logger = createLogger({ level: 'silent' });
    const creator = createCreator(
      { timeoutMs: 1000 },
      {
        isCreator: name === 'A',
        counters: { next: async () => 1 },
        async requestCreate(request) {
          if (holdingProposals && (request as { op?: string }).op === 'propose') await new Promise<void>((resolve) => doorway.push(resolve));
          return creators.A!.handle(request);
        },
        logger,
      },
    );
    creators[name] = creator;
    const replicator: Pick<Replicator, 'replicate' | 'replicateAll' | 'resend' | 'resendAll'> = {
      async replicateAll(intents: WriteIntent[]) {
        const records = intents.map((intent) => ({ kind: intent.kind, key: intent.key, body: intent.body, origin: addressOf[name], seq: ++seqs[name], hlc: [now, ++hlc], sig: '0x' }) as ReplicatedRecord);
        for (const record of records) {
          if (record.kind === 'principal') versions.push(record);
          apply(replicas[name], record);
          if (holding) held.push({ to: other, record });
          else apply(replicas[other], record);
        }
        return { records, acked: [], failed: [] };
      },
      async replicate(intent: WriteIntent) {
        const { records, acked, failed } = await replicator.replicateAll([intent]);
        return { record: records[0]!, acked, failed };
      },
      resend: async (record) => ({ record, acked: [], failed: [] }),
      resendAll: async (records) => ({ records, acked: [], failed: [] }),
    };
    const state = {
      get: async (kind: string, key: string) => replicas[name].get(`${kind}!${key}`),
      list: async function* () {},
    };
    const membership = { descriptor, self: descriptor.nodes[name === 'A' ? 0 : 1]!, isReachable: () => true, reachableCount: () => 5 };
    const service = createAccountsService(
      { otpTtlMs: OTP_TTL_MS, mailCooldownMs: options.cooldownMs ?? COOLDOWN_MS, publicUrl: 'http://localhost' },
      {
        replicator: replicator as Replicator,
        // Proposed to slot 0 (A); what slot 0 sends back is merged into this replica (transitions are not
        // checked here: the records tests do that).
        versions: createSequencer({
          creator,
          kinds,
          sequenced: new Set(['principal']),
          membership,
          state,
          replicator,
          ingest: async (records) => records.forEach((r) => apply(replicas[name], r as ReplicatedRecord)),
          signDigest: () => `0x${'ee'.repeat(65)}`,
          logger,
        }),
        state,
        creator,
        membership,
        claims: { get: async (k) => claims.get(k), put: async (k, v) => void claims.set(k, v) },
        crypto: fakeCrypto(),
        mail: {
          send: async (m) => void mails.push(m),
          otpMail: ({ purpose, code }) => ({ subject: purpose, text: code, html: code }),
        },
        clock: () => now,
        logger,
      },
    );
    return service;
  }
  const creators: Record<string, ReturnType<typeof createCreator>> = {};
  const A = coordinator('A');
  const B = coordinator('B');
  return {
    A,
    B,
    mails,
    versions,
    advance: (ms: number) => void (now += ms),
    /** Hold back delivery between the coordinators until `release`. */
    hold: () => void (holding = true),
    /** Deliver the held writes (those `which` picks; then holding goes on), or all of them and stop holding. */
    release(which?: (record: ReplicatedRecord) => boolean) {
      if (!which) holding = false;
      const out = held.filter((h) => !which || which(h.record));
      held.splice(0, held.length, ...held.filter((h) => !out.includes(h)));
      for (const { to, record } of out) apply(replicas[to], record);
    },
    /** Hold B's proposals at slot 0's door until `releaseProposals`. */
    holdProposals: () => void (holdingProposals = true),
    /** B's proposals waiting at the door. */
    proposalsWaiting: () => doorway.length,
    releaseProposals() {
      holdingProposals = false;
      for (const open of doorway.splice(0)) open();
    },
    /** The newest code mailed for a purpose. */
    code: (purpose: string) => mails.filter((m) => m.subject === purpose).at(-1)!.text,
    principal: (replica: Name, id: string) => replicas[replica].get(`principal!${id}`)?.body as PrincipalBody | undefined,
  };
}

const wrong = (code: string, i = 0) => String((Number(code) + 1 + i) % 1_000_000).padStart(6, '0');

describe('registration hijack', () => {
  it('victim registers, attacker re-registers with another password, victim verifies: no password works until a reset by the mailbox owner', async () => {
    const c = cluster();
    const first = await c.A.register(EMAIL, 'victim-password');
    expect(first.created).toBe(true);
    c.advance(COOLDOWN_MS);
    const second = await c.B.register(EMAIL, 'attacker-password');
    expect(second).toMatchObject({ created: false, principalId: first.principalId });
    await c.A.verifyEmail(EMAIL, c.code('verify'));
    for (const password of ['victim-password', 'attacker-password']) {
      await expect(c.B.verifyCredentials(EMAIL, password)).rejects.toMatchObject({ code: 'PASSWORD_RESET_REQUIRED', status: 403 });
      await expect(c.A.registerKey(first.principalId, password, 'ab'.repeat(32), 'cd'.repeat(64))).rejects.toMatchObject({ code: 'PASSWORD_RESET_REQUIRED' });
    }
    // The code ended the cooldown: the owner asks for a reset right away.
    await c.B.forgotPassword(EMAIL);
    await c.A.resetPassword(EMAIL, c.code('reset'), 'victim-new-password');
    expect(await c.B.verifyCredentials(EMAIL, 'victim-new-password')).toEqual({ valid: true, principalId: first.principalId });
    await expect(c.B.verifyCredentials(EMAIL, 'attacker-password')).rejects.toMatchObject({ code: 'UNAUTHORIZED' });
  });

  it('a re-register with the same password stays uncontested', async () => {
    const c = cluster();
    await c.A.register(EMAIL, 'same-password');
    c.advance(COOLDOWN_MS);
    await c.B.register(EMAIL, 'same-password');
    await c.A.verifyEmail(EMAIL, c.code('verify'));
    expect((await c.B.verifyCredentials(EMAIL, 'same-password')).valid).toBe(true);
  });

  it('once contested, a later re-register with the first password does not clear it', async () => {
    const c = cluster();
    await c.A.register(EMAIL, 'victim-password');
    c.advance(COOLDOWN_MS);
    await c.B.register(EMAIL, 'attacker-password');
    c.advance(COOLDOWN_MS);
    await c.A.register(EMAIL, 'attacker-password');
    await c.B.verifyEmail(EMAIL, c.code('verify'));
    await expect(c.A.verifyCredentials(EMAIL, 'attacker-password')).rejects.toMatchObject({ code: 'PASSWORD_RESET_REQUIRED' });
  });

  it('a coordinator that has not seen the previous registration builds on slot 0\'s version of it: another password is contested', async () => {
    const c = cluster();
    c.hold();
    const { principalId } = await c.A.register(EMAIL, 'attacker-password');
    c.advance(COOLDOWN_MS);
    // B never saw A's registration: its first proposal names no previous version, and slot 0 answers with its own.
    await c.B.register(EMAIL, 'victim-password');
    const [first, second] = c.versions;
    expect(c.versions).toHaveLength(2);
    expect(first!.body).toMatchObject({ registration: 1, v: { n: 1, prev: null, change: 'register' } });
    expect(second!.body).toMatchObject({ registration: 2, passwordResetRequired: true, v: { n: 2, prev: { origin: first!.origin, seq: first!.seq }, change: 'reregister' } });
    // B holds what it wrote before delivery catches up.
    expect(c.principal('B', principalId)).toMatchObject({ registration: 2, passwordResetRequired: true });
    c.release();
    expect(c.principal('A', principalId)).toMatchObject({ registration: 2, passwordResetRequired: true });
    await c.A.verifyEmail(EMAIL, c.code('verify'));
    await expect(c.A.verifyCredentials(EMAIL, 'attacker-password')).rejects.toMatchObject({ code: 'PASSWORD_RESET_REQUIRED' });
  });

  it('a coordinator that has not seen the previous registration builds on slot 0\'s version of it: the same password stays uncontested', async () => {
    const c = cluster();
    c.hold();
    const { principalId } = await c.A.register(EMAIL, 'same-password');
    c.advance(COOLDOWN_MS);
    await c.B.register(EMAIL, 'same-password');
    expect(c.principal('B', principalId)).toMatchObject({ registration: 2, passwordResetRequired: false });
    c.release();
    await c.A.verifyEmail(EMAIL, c.code('verify'));
    expect((await c.B.verifyCredentials(EMAIL, 'same-password')).valid).toBe(true);
  });

  it('verifying with a code mailed for a registration the coordinator has not seen builds on slot 0\'s version: no password works until a reset', async () => {
    const c = cluster();
    const { principalId } = await c.A.register(EMAIL, 'first-password');
    c.advance(COOLDOWN_MS);
    c.hold();
    await c.A.register(EMAIL, 'second-password');
    // B gets the second registration's code, but its principal record is still in flight.
    c.release((r) => r.kind === 'otp');
    expect(c.principal('B', principalId)).toMatchObject({ registration: 1, passwordResetRequired: false });
    await c.B.verifyEmail(EMAIL, c.code('verify'));
    const [, reregistered, verified] = c.versions;
    expect(verified!.body).toMatchObject({ emailVerified: true, passwordResetRequired: true, v: { n: 3, prev: { origin: reregistered!.origin, seq: reregistered!.seq }, change: 'verifyEmail' } });
    c.release();
    for (const password of ['first-password', 'second-password']) {
      await expect(c.A.verifyCredentials(EMAIL, password)).rejects.toMatchObject({ code: 'PASSWORD_RESET_REQUIRED' });
    }
  });

  it('slot 0 writes a registration only after the version it holds: an earlier registration that comes later writes nothing', async () => {
    const c = cluster();
    // The first registration's proposal is slow to reach slot 0…
    c.holdProposals();
    const first = c.B.register(EMAIL, 'first-password');
    await expect.poll(() => c.proposalsWaiting()).toBe(1);
    // …and the second one, through slot 0, is written first.
    c.advance(COOLDOWN_MS);
    const second = await c.A.register(EMAIL, 'second-password');
    c.releaseProposals();
    // The first registration (slot 0's count) is the one that created the principal, whichever version landed first.
    expect(await first).toMatchObject({ principalId: second.principalId, created: true });
    expect(second.created).toBe(false);
    // One version only: the later registration, which never saw the earlier one and so counts as contested.
    expect(c.versions.map((r) => r.body)).toEqual([expect.objectContaining({ registration: 2, passwordResetRequired: true, v: expect.objectContaining({ n: 1, change: 'register' }) })]);
    for (const replica of ['A', 'B'] as const) expect(c.principal(replica, second.principalId)).toMatchObject({ registration: 2 });
    // Both registrants were mailed a code; verifying leaves no password valid until a reset.
    expect(c.mails.filter((m) => m.subject === 'verify')).toHaveLength(2);
    await c.B.verifyEmail(EMAIL, c.code('verify'));
    for (const password of ['first-password', 'second-password']) {
      await expect(c.A.verifyCredentials(EMAIL, password)).rejects.toMatchObject({ code: 'PASSWORD_RESET_REQUIRED' });
    }
  });

  it('principal merge: a later version wins whatever the clocks', () => {
    const kind = accountKinds(descriptor).find((k) => k.name === 'principal')!;
    const rec = (n: number, hlc: number) => ({ kind: 'principal', key: 'k', origin: 'o', seq: n, hlc: [hlc, 0], body: { v: { n } }, sig: '0x' }) as unknown as ReplicatedRecord;
    expect(supersedes(kind, rec(1, 50), rec(2, 10))).toBe(true);
    expect(supersedes(kind, rec(2, 10), rec(1, 50))).toBe(false);
  });
});

describe('guess budget', () => {
  it('is per principal and purpose over the OTP lifetime: six re-registers do not refill it', async () => {
    const c = cluster();
    await c.A.register(EMAIL, 'same-password');
    for (let i = 0; i < OTP_MAX_ATTEMPTS; i++) {
      await expect((i % 2 ? c.B : c.A).verifyEmail(EMAIL, wrong(c.code('verify')))).rejects.toMatchObject({ code: 'UNAUTHORIZED' });
      c.advance(COOLDOWN_MS);
      await c.A.register(EMAIL, 'same-password');
    }
    // Six codes issued; the newest, right one is refused: the budget is spent.
    await expect(c.B.verifyEmail(EMAIL, c.code('verify'))).rejects.toMatchObject({ code: 'UNAUTHORIZED' });
    // Once the window has passed a fresh code works.
    c.advance(OTP_TTL_MS);
    await c.A.resendOtp(EMAIL);
    expect(await c.B.verifyEmail(EMAIL, c.code('verify'))).toMatchObject({ emailVerified: true });
  });

  it('the window slides: old wrong guesses age out one by one', async () => {
    const c = cluster();
    await c.A.register(EMAIL, 'same-password');
    const code = c.code('verify');
    for (let i = 0; i < OTP_MAX_ATTEMPTS - 1; i++) await expect(c.A.verifyEmail(EMAIL, wrong(code, i))).rejects.toThrow();
    c.advance(OTP_TTL_MS / 2);
    await expect(c.A.verifyEmail(EMAIL, wrong(code, 9))).rejects.toThrow();
    // Five in the window: the right code is refused and, refused at the limit, the code is dead.
    await expect(c.A.verifyEmail(EMAIL, code)).rejects.toMatchObject({ code: 'UNAUTHORIZED' });
    c.advance(OTP_TTL_MS / 2);
    // Four aged out, one left: a new code gets four more tries, not five.
    await c.B.resendOtp(EMAIL);
    const fresh = c.code('verify');
    for (let i = 0; i < OTP_MAX_ATTEMPTS - 1; i++) await expect(c.B.verifyEmail(EMAIL, wrong(fresh, i))).rejects.toThrow();
    await expect(c.B.verifyEmail(EMAIL, fresh)).rejects.toMatchObject({ code: 'UNAUTHORIZED' });
  });
});

describe('mail cooldown', () => {
  it('register, resend-otp, forgot-password and request-deletion share one turn per email, known or unknown, through every coordinator', async () => {
    const c = cluster();
    const { principalId } = await c.A.register(EMAIL, 'same-password');
    await expect(c.B.register(EMAIL, 'same-password')).rejects.toMatchObject({ code: 'RATE_LIMITED', extra: { retryAfterSeconds: 60 } });
    await expect(c.B.resendOtp(EMAIL)).rejects.toMatchObject({ code: 'RATE_LIMITED' });
    await expect(c.A.forgotPassword(EMAIL)).rejects.toMatchObject({ code: 'RATE_LIMITED' });
    await expect(c.A.requestDeletion(EMAIL, 'same-password', principalId)).rejects.toMatchObject({ code: 'RATE_LIMITED' });
    c.advance(COOLDOWN_MS - 1000);
    await expect(c.A.resendOtp(EMAIL)).rejects.toMatchObject({ code: 'RATE_LIMITED', extra: { retryAfterSeconds: 1 } });
    c.advance(1000);
    await c.B.resendOtp(EMAIL);
    expect(c.mails.map((m) => m.to)).toEqual([EMAIL, EMAIL]);

    const unknown = 'nobody@example.test';
    await c.A.requestDeletion(unknown, 'whatever-password', principalId);
    await expect(c.B.register(unknown, 'some-password')).rejects.toMatchObject({ code: 'RATE_LIMITED' });
    await expect(c.B.forgotPassword(unknown)).rejects.toMatchObject({ code: 'RATE_LIMITED' });
  });

  it('parallel requests through both coordinators get one turn', async () => {
    const c = cluster();
    const results = await Promise.allSettled(Array.from({ length: 8 }, (_, i) => (i % 2 ? c.A : c.B).forgotPassword(EMAIL)));
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
  });

  it('without a cooldown, concurrent registrations through both coordinators still get one principal (slot 0 serialises claims)', async () => {
    const c = cluster({ cooldownMs: 0 });
    const results = await Promise.all(Array.from({ length: 8 }, (_, i) => (i % 2 ? c.A : c.B).register(EMAIL, 'same-password')));
    expect(new Set(results.map((r) => r.principalId)).size).toBe(1);
    expect(results.filter((r) => r.created)).toHaveLength(1);
  });

  it('a verified email is refused with 409 without spending a turn; a used code ends the cooldown', async () => {
    const c = cluster();
    const { principalId } = await c.A.register(EMAIL, 'same-password');
    await c.B.verifyEmail(EMAIL, c.code('verify'));
    await expect(c.A.register(EMAIL, 'same-password')).rejects.toMatchObject({ code: 'CONFLICT' });
    await c.A.requestDeletion(EMAIL, 'same-password', principalId);
    expect(c.mails.map((m) => m.subject)).toEqual(['verify', 'delete']);
  });
});
