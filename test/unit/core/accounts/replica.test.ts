/**
 * The accounts' view of the replica (src/core/accounts/replica.ts) over an in-memory replica: which
 * principal a lookup finds, and how a principal change is written.
 */
import { describe, expect, it } from 'vitest';
import { createAccountReplica } from '../../../../src/core/accounts/replica.ts';
import { emailHexOf } from '../../../../src/core/accounts/rules.ts';
import { NOW, PRINCIPAL_ID, memoryReplica, principalBody } from './fixtures.ts';

function setup(now = NOW) {
  const memory = memoryReplica();
  const replica = createAccountReplica({ state: memory.state, replicator: memory.replicator, clock: () => now });
  return { memory, replica };
}

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
  it('writes the whole body with the change, updatedAt the clock, passing requireQuorum on', async () => {
    const { memory, replica } = setup();
    memory.put('principal', PRINCIPAL_ID, principalBody());
    const found = (await replica.principal(PRINCIPAL_ID))!;
    await replica.updatePrincipal(found, { emailVerified: false }, { requireQuorum: false });
    expect(memory.writes).toEqual([{ kind: 'principal', key: PRINCIPAL_ID, body: principalBody({ emailVerified: false, updatedAt: NOW }), requireQuorum: false }]);
  });

  it('never moves updatedAt back when the clock is behind the record', async () => {
    const { memory, replica } = setup(NOW - 120_000);
    memory.put('principal', PRINCIPAL_ID, principalBody());
    await replica.updatePrincipal((await replica.principal(PRINCIPAL_ID))!, { status: 'deleted' });
    expect(memory.body('principal', PRINCIPAL_ID)).toEqual(principalBody({ status: 'deleted' }));
  });
});
