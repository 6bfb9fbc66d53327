/**
 * Key registration and the members' acknowledgements (src/core/accounts/node-registrations.ts) over
 * stub deps: an in-memory replica whose members ack as the test says, stub Ed25519 and password
 * checks, a captured log.
 */
import { describe, expect, it } from 'vitest';
import { createNodeRegistrations } from '../../../../src/core/accounts/node-registrations.ts';
import { createAccountReplica } from '../../../../src/core/accounts/replica.ts';
import { emailHexOf } from '../../../../src/core/accounts/rules.ts';
import type { ClusterNodeEntry } from '../../../../src/core/replication/ports.ts';
import { captureLogger } from '../../../utils/log.ts';
import { NOW, PRINCIPAL_ID, descriptor, memoryReplica, principalBody, versionAfter, type Answer } from './fixtures.ts';

const KEY = 'ab'.repeat(32);
const OLD_KEY = 'ef'.repeat(32);
const SIGNATURE = 'cd'.repeat(64);
const address = (slot: number) => descriptor.nodes[slot]!.nodeAddress;

/** Members at `slots` ack every write; the others fail it. */
const acking =
  (...slots: number[]): Answer =>
  () => ({
    acked: slots.map(address),
    failed: descriptor.nodes.filter((n) => !slots.includes(n.slot!)).map((n) => ({ nodeAddress: n.nodeAddress, slot: n.slot!, error: 'timeout' })),
  });

function setup(options: { answer?: Answer; self?: ClusterNodeEntry; duringPasswordCheck?: () => void } = {}) {
  const memory = memoryReplica(options.answer);
  const capture = captureLogger();
  const clock = () => NOW;
  const cryptoCalls: string[] = [];
  const keys = createNodeRegistrations({
    replica: createAccountReplica({ state: memory.state, replicator: memory.replicator, versions: memory.versions, clock }),
    replicator: memory.replicator,
    membership: { descriptor, self: options.self ?? descriptor.nodes[1]!, isReachable: () => true, reachableCount: () => 5 },
    crypto: {
      isEd25519PublicKeyHex: (hex) => /^[0-9a-f]{64}$/.test(hex),
      verifyPassword: async (password, phc) => {
        cryptoCalls.push('verify');
        options.duringPasswordCheck?.();
        return phc.startsWith(`$argon2id$pw$${password}$`);
      },
      verifyDummy: async () => {
        cryptoCalls.push('dummy');
        return false;
      },
      verifyEd25519: (publicKey, message, signature) => message === `cifer_register:${publicKey}` && signature === SIGNATURE,
    },
    clock,
    log: capture.logger.child({ module: 'accounts' }),
  });
  /** Member `slot`'s ack of `key` for the principal. */
  const ack = (slot: number, key = KEY) => memory.put('nodeRegistration', `${PRINCIPAL_ID}:${slot}`, { principalId: PRINCIPAL_ID, slot, ed25519PublicKey: key, storedAt: NOW });
  return { keys, memory, capture, cryptoCalls, ack };
}

describe('registerKey', () => {
  it('sends the key with its proof to every member whatever the quorum, and reports how far it got', async () => {
    const s = setup({ answer: acking(0, 1, 2) });
    const held = s.memory.put('principal', PRINCIPAL_ID, principalBody());
    const result = await s.keys.registerKey(PRINCIPAL_ID, 'right', KEY, `0x${SIGNATURE.toUpperCase()}`);
    expect(result).toEqual({
      principalId: PRINCIPAL_ID,
      emailHex: emailHexOf(principalBody().email),
      nodeRegistrationStatus: 'partial',
      failedNodes: [address(3), address(4)],
      nodeErrors: { [address(3)]: 'timeout', [address(4)]: 'timeout' },
    });
    // The next version of the principal, by registerKey, through slot 0.
    expect(s.memory.writes).toEqual([
      {
        kind: 'principal',
        key: PRINCIPAL_ID,
        body: principalBody({ ed25519PublicKey: KEY, keyProof: SIGNATURE, keyPermitId: null, updatedAt: NOW, v: versionAfter(held, 'registerKey') }),
        requireQuorum: false,
      },
    ]);
    expect(s.capture.lines()).toMatchObject([{ module: 'accounts', msg: 'key registered', principalId: PRINCIPAL_ID, status: 'partial', acked: 3 }]);
  });

  it('registering the key already registered is accepted again: no new version, the current one sent again to the other members', async () => {
    const s = setup({ answer: acking(0, 2, 3) });
    const held = s.memory.put('principal', PRINCIPAL_ID, principalBody({ ed25519PublicKey: KEY, keyProof: SIGNATURE }));
    // This member (slot 1) holds it, and three others stored it again.
    await expect(s.keys.registerKey(PRINCIPAL_ID, 'right', KEY, SIGNATURE)).resolves.toMatchObject({ nodeRegistrationStatus: 'partial', failedNodes: [address(4)] });
    expect(s.memory.writes).toEqual([]);
    expect(s.memory.resends).toEqual([{ record: held, slots: [0, 2, 3, 4] }]);
  });

  it.each([
    ['the same key: nothing more is written, and it is sent again', KEY, 'resolves'],
    ['another key: 409, nothing written', OLD_KEY, 'rejects'],
  ] as const)('a key registered meanwhile, after the password check, is judged on the version held then — %s', async (_name, registered, outcome) => {
    let raced = false;
    const s = setup({
      duringPasswordCheck: () => {
        if (raced) return;
        raced = true;
        const found = s.memory.record('principal', PRINCIPAL_ID)!;
        s.memory.put('principal', PRINCIPAL_ID, principalBody({ ed25519PublicKey: registered, keyProof: SIGNATURE, v: versionAfter(found, 'registerKey') }));
      },
    });
    s.memory.put('principal', PRINCIPAL_ID, principalBody());
    const call = s.keys.registerKey(PRINCIPAL_ID, 'right', KEY, SIGNATURE);
    if (outcome === 'resolves') {
      await expect(call).resolves.toMatchObject({ nodeRegistrationStatus: 'complete' });
      expect(s.memory.resends).toHaveLength(1);
    } else await expect(call).rejects.toMatchObject({ code: 'CONFLICT' });
    expect(s.memory.writes).toEqual([]);
    expect(s.memory.body('principal', PRINCIPAL_ID)).toMatchObject({ ed25519PublicKey: registered, v: { n: 3 } });
  });

  it('reaching no member is a 409 carrying the report', async () => {
    const s = setup({ answer: acking() });
    s.memory.put('principal', PRINCIPAL_ID, principalBody());
    await expect(s.keys.registerKey(PRINCIPAL_ID, 'right', KEY, SIGNATURE)).rejects.toMatchObject({
      code: 'CONFLICT',
      message: 'Key registration reached no member',
      extra: { nodeRegistrationStatus: 'failed', failedNodes: descriptor.nodes.map((n) => n.nodeAddress) },
    });
  });

  it('checks shapes before the principal, and spends a dummy password check on an unknown or deleted one', async () => {
    const s = setup();
    await expect(s.keys.registerKey('nope', 'right', KEY, SIGNATURE)).rejects.toMatchObject({ code: 'BAD_REQUEST', message: 'principalId is malformed' });
    await expect(s.keys.registerKey(PRINCIPAL_ID, 'right', KEY.toUpperCase(), SIGNATURE)).rejects.toMatchObject({ code: 'BAD_REQUEST' });
    await expect(s.keys.registerKey(PRINCIPAL_ID, 'right', KEY, 'cd')).rejects.toMatchObject({ code: 'BAD_REQUEST' });
    expect(s.cryptoCalls).toEqual([]);
    await expect(s.keys.registerKey(PRINCIPAL_ID, 'right', KEY, SIGNATURE)).rejects.toMatchObject({ code: 'NOT_FOUND', message: 'Principal not found' });
    s.memory.put('principal', PRINCIPAL_ID, principalBody({ status: 'deleted' }));
    await expect(s.keys.registerKey(PRINCIPAL_ID, 'right', KEY, SIGNATURE)).rejects.toMatchObject({ code: 'NOT_FOUND', message: 'Principal not found' });
    expect(s.cryptoCalls).toEqual(['dummy', 'dummy']);
  });

  it.each([
    ['a wrong password', {}, 'wrong', SIGNATURE, 'UNAUTHORIZED', 'Invalid password'],
    ['an unverified email', { emailVerified: false }, 'right', SIGNATURE, 'FORBIDDEN', 'Email not verified'],
    ['a bad signature', {}, 'right', 'ce'.repeat(64), 'UNAUTHORIZED', 'Invalid Ed25519 signature'],
    ['another key registered', { ed25519PublicKey: OLD_KEY, keyProof: SIGNATURE }, 'right', SIGNATURE, 'CONFLICT', 'A different key is already registered; rotate it with a permit'],
  ])('%s: refused, nothing written', async (_name, change, password, signature, code, message) => {
    const s = setup();
    s.memory.put('principal', PRINCIPAL_ID, principalBody(change));
    await expect(s.keys.registerKey(PRINCIPAL_ID, password, KEY, signature)).rejects.toMatchObject({ code, message });
    expect(s.memory.writes).toEqual([]);
  });
});

describe('nodeRegistrationStatus and retryNodeRegistration', () => {
  it('counts the members whose ack names the current key', async () => {
    const s = setup();
    s.memory.put('principal', PRINCIPAL_ID, principalBody({ ed25519PublicKey: KEY, keyProof: SIGNATURE }));
    s.ack(0);
    s.ack(2);
    s.ack(3, OLD_KEY);
    expect(await s.keys.nodeRegistrationStatus(PRINCIPAL_ID)).toEqual({
      principalId: PRINCIPAL_ID,
      nodeRegistrationStatus: 'pending',
      successNodes: [address(0), address(2)],
      failedNodes: [address(1), address(3), address(4)],
    });
  });

  it('a retry resends the principal record to the members without an ack only', async () => {
    const s = setup({ answer: acking(1, 3) });
    const record = s.memory.put('principal', PRINCIPAL_ID, principalBody({ ed25519PublicKey: KEY, keyProof: SIGNATURE }));
    s.ack(0);
    s.ack(2);
    expect(await s.keys.retryNodeRegistration(PRINCIPAL_ID)).toEqual({
      principalId: PRINCIPAL_ID,
      nodeRegistrationStatus: 'partial',
      failedNodes: [address(4)],
      message: 'Re-sent to 3 member(s); 2 stored it',
    });
    expect(s.memory.resends).toEqual([{ record, slots: [1, 3, 4] }]);
  });

  it('a retry when every member holds the key resends nothing', async () => {
    const s = setup();
    s.memory.put('principal', PRINCIPAL_ID, principalBody({ ed25519PublicKey: KEY, keyProof: SIGNATURE }));
    for (const n of descriptor.nodes) s.ack(n.slot!);
    expect(await s.keys.retryNodeRegistration(PRINCIPAL_ID)).toEqual({ principalId: PRINCIPAL_ID, nodeRegistrationStatus: 'complete', failedNodes: [], message: 'Every member already holds the key' });
    expect(s.memory.resends).toEqual([]);
  });

  it('an unknown or deleted principal is a 404; one without a key a 404 for the status and a 400 for a retry', async () => {
    const s = setup();
    for (const call of [s.keys.nodeRegistrationStatus, s.keys.retryNodeRegistration]) {
      await expect(call('nope')).rejects.toMatchObject({ code: 'BAD_REQUEST', message: 'principalId is malformed' });
      await expect(call(PRINCIPAL_ID)).rejects.toMatchObject({ code: 'NOT_FOUND', message: 'Principal not found' });
    }
    s.memory.put('principal', PRINCIPAL_ID, principalBody({ status: 'deleted', ed25519PublicKey: KEY, keyProof: SIGNATURE }));
    await expect(s.keys.nodeRegistrationStatus(PRINCIPAL_ID)).rejects.toMatchObject({ code: 'NOT_FOUND', message: 'Principal not found' });
    s.memory.put('principal', PRINCIPAL_ID, principalBody());
    await expect(s.keys.nodeRegistrationStatus(PRINCIPAL_ID)).rejects.toMatchObject({ code: 'NOT_FOUND', message: 'No key registered for this principal' });
    await expect(s.keys.retryNodeRegistration(PRINCIPAL_ID)).rejects.toMatchObject({ code: 'BAD_REQUEST', message: 'No key registered for this principal' });
  });
});

describe('acknowledgements', () => {
  const ackWrite = (slot: number, key = KEY) => ({
    kind: 'nodeRegistration',
    key: `${PRINCIPAL_ID}:${slot}`,
    body: { principalId: PRINCIPAL_ID, slot, ed25519PublicKey: key, storedAt: NOW },
    requireQuorum: false,
  });

  it('a member acks an applied principal with a key once per key, without a quorum', async () => {
    const s = setup();
    const record = s.memory.put('principal', PRINCIPAL_ID, principalBody({ ed25519PublicKey: KEY, keyProof: SIGNATURE }));
    s.keys.onRecordsApplied([record]);
    await expect.poll(() => s.memory.writes).toEqual([ackWrite(1)]);
    expect(await s.keys.reconcileNodeRegistrations()).toBe(0);
    // A new key is acked again.
    const rotated = s.memory.put('principal', PRINCIPAL_ID, principalBody({ ed25519PublicKey: OLD_KEY, keyProof: SIGNATURE }));
    s.keys.onRecordsApplied([rotated]);
    await expect.poll(() => s.memory.writes).toEqual([ackWrite(1), ackWrite(1, OLD_KEY)]);
  });

  it('ignores other kinds, principals without a key, and nodes that are not members', async () => {
    const s = setup();
    const keyless = s.memory.put('principal', PRINCIPAL_ID, principalBody());
    const otherKind = s.memory.put('emailIndex', emailHexOf('a@example.test'), { principalId: PRINCIPAL_ID });
    s.keys.onRecordsApplied([keyless, otherKind]);
    const gateway = setup({ self: { ...descriptor.nodes[1]!, slot: null } });
    gateway.memory.put('principal', PRINCIPAL_ID, principalBody({ ed25519PublicKey: KEY, keyProof: SIGNATURE }));
    expect(await gateway.keys.reconcileNodeRegistrations()).toBe(0);
    expect(s.memory.writes).toEqual([]);
    expect(gateway.memory.writes).toEqual([]);
  });

  it('reconcile writes the missing acks and says how many', async () => {
    const s = setup();
    s.memory.put('principal', PRINCIPAL_ID, principalBody({ ed25519PublicKey: KEY, keyProof: SIGNATURE }));
    expect(await s.keys.reconcileNodeRegistrations()).toBe(1);
    expect(s.memory.writes).toEqual([ackWrite(1)]);
    expect(s.capture.lines()).toMatchObject([{ module: 'accounts', msg: 'node registration acks reconciled', written: 1 }]);
    expect(await s.keys.reconcileNodeRegistrations()).toBe(0);
  });

  it('a failed ack is logged, not thrown', async () => {
    const s = setup({
      answer: () => {
        throw new Error('quorum lost');
      },
    });
    const record = s.memory.put('principal', PRINCIPAL_ID, principalBody({ ed25519PublicKey: KEY, keyProof: SIGNATURE }));
    s.keys.onRecordsApplied([record]);
    await expect.poll(() => s.capture.lines()).toMatchObject([{ level: 40, msg: 'node registration ack failed', principalId: PRINCIPAL_ID, err: 'quorum lost' }]);
  });
});
