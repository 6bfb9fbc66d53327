/**
 * The accounts' view of the replica (src/core/accounts/replica.ts) over an in-memory replica: which
 * principal a lookup finds, and how a principal change is written.
 */
import { describe, expect, it } from 'vitest';
import { AppError } from '../../../../src/errors/index.ts';
import { createAccountReplica } from '../../../../src/core/accounts/replica.ts';
import { emailHexOf } from '../../../../src/core/accounts/rules.ts';
import { NOW, PRINCIPAL_ID, memoryReplica, principalBody, versionAfter } from './fixtures.ts';

function setup(now = NOW) {
  const memory = memoryReplica();
  const replica = createAccountReplica({ state: memory.state, replicator: memory.replicator, versions: memory.versions, clock: () => now });
  return { memory, replica };
}

/** A principal body without its version: what a transition proposes. */
const unversioned = (overrides: Parameters<typeof principalBody>[0] = {}) => {
  const { v: _v, ...rest } = principalBody(overrides);
  return rest;
};

describe('principal lookups', () => {
  it('principal finds any status, activePrincipal only an active one', async () => {
    const { memory, replica } = setup();
    expect(await replica.principal(PRINCIPAL_ID)).toBeUndefined();
    const record = memory.put('principal', PRINCIPAL_ID, principalBody());
    expect(await replica.activePrincipal(PRINCIPAL_ID)).toEqual({ id: PRINCIPAL_ID, body: principalBody(), record });
    memory.put('principal', PRINCIPAL_ID, principalBody({ status: 'deleted' }));
    expect((await replica.principal(PRINCIPAL_ID))?.body.status).toBe('deleted');
    expect(await replica.activePrincipal(PRINCIPAL_ID)).toBeUndefined();
  });

  it('principalByEmail follows the email index to an active principal', async () => {
    const { memory, replica } = setup();
    const email = principalBody().email;
    memory.put('principal', PRINCIPAL_ID, principalBody());
    // Indexed nowhere yet, then indexed, then unindexed by a deletion.
    expect(await replica.principalByEmail(email)).toBeUndefined();
    memory.put('emailIndex', emailHexOf(email), { principalId: PRINCIPAL_ID });
    expect((await replica.principalByEmail(email))?.id).toBe(PRINCIPAL_ID);
    memory.put('principal', PRINCIPAL_ID, principalBody({ status: 'deleted' }));
    expect(await replica.principalByEmail(email)).toBeUndefined();
    memory.put('emailIndex', emailHexOf(email), { principalId: null });
    expect(await replica.principalByEmail(email)).toBeUndefined();
  });

  it('an index entry whose principal this replica does not hold yet finds nothing', async () => {
    const { memory, replica } = setup();
    memory.put('emailIndex', emailHexOf('a@example.test'), { principalId: PRINCIPAL_ID });
    expect(await replica.principalByEmail('a@example.test')).toBeUndefined();
  });
});

describe('updatePrincipal', () => {
  it('writes the next version: the whole body with the change, named by its transition after the version held, updatedAt the clock, passing requireQuorum on', async () => {
    const { memory, replica } = setup();
    const held = memory.put('principal', PRINCIPAL_ID, principalBody({ emailVerified: false, v: { n: 1, prev: null, change: 'register' } }));
    const found = (await replica.principal(PRINCIPAL_ID))!;
    const write = await replica.updatePrincipal(found, 'verifyEmail', { emailVerified: true }, { requireQuorum: false });
    const body = { ...unversioned({ emailVerified: true, updatedAt: NOW }), v: versionAfter(held, 'verifyEmail') };
    expect(memory.writes).toEqual([{ kind: 'principal', key: PRINCIPAL_ID, body, requireQuorum: false }]);
    expect(write).toMatchObject({ written: true, record: { kind: 'principal', key: PRINCIPAL_ID, body } });
    expect((await replica.principal(PRINCIPAL_ID))?.body.v).toMatchObject({ n: 2, prev: { origin: held.origin, seq: held.seq }, change: 'verifyEmail' });
  });

  it('never moves updatedAt back when the clock is behind the record', async () => {
    const { memory, replica } = setup(NOW - 120_000);
    const held = memory.put('principal', PRINCIPAL_ID, principalBody());
    await replica.updatePrincipal((await replica.principal(PRINCIPAL_ID))!, 'delete', { status: 'deleted' });
    expect(memory.body('principal', PRINCIPAL_ID)).toEqual({ ...unversioned({ status: 'deleted' }), v: versionAfter(held, 'delete') });
  });

  it('the change applies to the version held when it is written, not to the one the caller found', async () => {
    const { memory, replica } = setup();
    memory.put('principal', PRINCIPAL_ID, principalBody({ emailVerified: false }));
    const found = (await replica.principal(PRINCIPAL_ID))!;
    // Verified meanwhile.
    const verified = memory.put('principal', PRINCIPAL_ID, principalBody({ v: { n: 3, prev: { origin: found.record.origin, seq: found.record.seq }, change: 'verifyEmail' } }));
    const seen: boolean[] = [];
    await replica.updatePrincipal(found, 'resetPassword', (current) => (seen.push(current.emailVerified), { passwordHash: '$argon2id$pw$new$2' }));
    expect(seen).toEqual([true]);
    expect(memory.body('principal', PRINCIPAL_ID)).toEqual({ ...unversioned({ passwordHash: '$argon2id$pw$new$2', updatedAt: NOW }), v: versionAfter(verified, 'resetPassword') });
  });

  it('a change that returns nothing writes nothing and answers the version held; one that throws refuses', async () => {
    const { memory, replica } = setup();
    memory.put('principal', PRINCIPAL_ID, principalBody());
    const found = (await replica.principal(PRINCIPAL_ID))!;
    expect(await replica.updatePrincipal(found, 'registerKey', () => undefined)).toEqual({ written: false, current: found.record });
    await expect(
      replica.updatePrincipal(found, 'registerKey', () => {
        throw new AppError('CONFLICT', 'A different key is already registered; rotate it with a permit');
      }),
    ).rejects.toMatchObject({ code: 'CONFLICT' });
    expect(memory.writes).toEqual([]);
  });

  it('404 once the principal is deleted, or when this replica does not hold it', async () => {
    const { memory, replica } = setup();
    memory.put('principal', PRINCIPAL_ID, principalBody());
    const found = (await replica.principal(PRINCIPAL_ID))!;
    memory.put('principal', PRINCIPAL_ID, principalBody({ status: 'deleted' }));
    await expect(replica.updatePrincipal(found, 'resetPassword', { passwordHash: '$argon2id$pw$new$2' })).rejects.toMatchObject({ code: 'NOT_FOUND' });
    const other = setup();
    await expect(other.replica.updatePrincipal(found, 'resetPassword', { passwordHash: '$argon2id$pw$new$2' })).rejects.toMatchObject({ code: 'NOT_FOUND' });
    expect([...memory.writes, ...other.memory.writes]).toEqual([]);
  });
});

describe('writePrincipal', () => {
  it('builds a principal\'s first version from nothing, and a later one from the version held', async () => {
    const { memory, replica } = setup();
    const seen: unknown[] = [];
    const first = await replica.writePrincipal(PRINCIPAL_ID, (current) => (seen.push(current), { change: 'register', body: unversioned({ emailVerified: false }) }));
    expect(first).toMatchObject({ written: true, record: { body: { v: { n: 1, prev: null, change: 'register' } } } });
    const held = memory.record('principal', PRINCIPAL_ID)!;
    await replica.writePrincipal(PRINCIPAL_ID, (current) => (seen.push(current), { change: 'reregister', body: unversioned({ emailVerified: false, registration: 2 }) }));
    expect(seen).toEqual([undefined, held.body]);
    expect(memory.body('principal', PRINCIPAL_ID)).toEqual({ ...unversioned({ emailVerified: false, registration: 2 }), v: versionAfter(held, 'reregister') });
  });
});
