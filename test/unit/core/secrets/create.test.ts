/**
 * Slot 0's create claims (src/core/secrets/create.ts; docs/http.md, Secrets): a create string maps to
 * one secretId, leased to one attempt at a time, and a failed attempt gives its lease back.
 */
import { describe, expect, it } from 'vitest';
import { CREATE_LEASE_MS, createClaimName, leasedClaim, raiseSecretIdCounter, releasedClaim, renewedClaim, SECRET_ID_COUNTER } from '../../../../src/core/secrets/create.ts';
import type { StateReader } from '../../../../src/core/replication/ports.ts';
import type { ReplicatedRecord } from '../../../../src/core/replication/record.ts';
import { secretKey } from '../../../../src/core/secrets/records.ts';
import { AppError } from '../../../../src/errors/index.ts';

const T0 = 1_700_000_000_000;
const useKey = 'ab'.repeat(32);

describe('create claims', () => {
  it('a claim is named by its create string', () => {
    expect(createClaimName(useKey)).toBe(`secret-create:${useKey}`);
  });

  it('a new claim leases its id to the attempt for the lease time', () => {
    expect(leasedClaim(5, 'node-0', 'a1', T0)).toEqual({ secretId: 5, coordinator: 'node-0', attempt: 'a1', until: T0 + CREATE_LEASE_MS });
  });

  it('another attempt waits while the lease runs (503 with Retry-After), then takes the same id over', () => {
    const held = leasedClaim(5, 'node-0', 'a1', T0);
    let refused: unknown;
    try {
      renewedClaim(held, 'node-1', 'a2', T0 + CREATE_LEASE_MS - 1);
    } catch (err) {
      refused = err;
    }
    expect(refused).toBeInstanceOf(AppError);
    expect(refused).toMatchObject({ code: 'NOT_READY', message: 'This secret is being created; try again shortly', extra: { retryAfterSeconds: 1 } });
    expect(renewedClaim(held, 'node-1', 'a2', T0 + CREATE_LEASE_MS)).toEqual({ secretId: 5, coordinator: 'node-1', attempt: 'a2', until: T0 + 2 * CREATE_LEASE_MS });
  });

  it('the attempt holding the lease renews it at once', () => {
    const held = leasedClaim(5, 'node-0', 'a1', T0);
    expect(renewedClaim(held, 'node-0', 'a1', T0 + 1)).toEqual(leasedClaim(5, 'node-0', 'a1', T0 + 1));
    // A lease given back is open to anyone.
    expect(renewedClaim({ ...held, until: 0 }, 'node-1', 'a2', T0 + 1).attempt).toBe('a2');
  });

  it('only the attempt holding the lease gives it back; the id stays mapped', () => {
    const held = leasedClaim(5, 'node-0', 'a1', T0);
    expect(releasedClaim(held, 'a2')).toBeUndefined();
    expect(releasedClaim(held, 'a1')).toEqual({ ...held, until: 0 });
  });
});

describe('the secret id counter after slot 0 learnt its own log', () => {
  /** A replica of Web2 secrets with these ids, listed as the store lists them. */
  const replicaOf = (ids: number[]): StateReader => ({
    get: async () => undefined,
    async *list(kind, o = {}) {
      expect(kind).toBe('secret');
      const records = ids.map((id) => ({ kind, key: secretKey(id), body: { secretId: id } }) as unknown as ReplicatedRecord).sort((a, b) => (a.key < b.key ? -1 : 1));
      if (o.reverse) records.reverse();
      yield* records.slice(0, o.limit ?? records.length);
    },
  });

  it('is raised to the highest id the replica holds (an empty data dir starts at 0), and reports what it was', async () => {
    const raised: Array<[string, number]> = [];
    const raiseTo = async (counter: string, atLeast: number) => {
      raised.push([counter, atLeast]);
      return 0;
    };
    expect(await raiseSecretIdCounter({ state: replicaOf([3, 12, 9]), raiseTo })).toEqual({ before: 0, highest: 12 });
    expect(raised).toEqual([[SECRET_ID_COUNTER, 12]]);
    expect(await raiseSecretIdCounter({ state: replicaOf([]), raiseTo })).toEqual({ before: 0, highest: 0 });
  });
});
