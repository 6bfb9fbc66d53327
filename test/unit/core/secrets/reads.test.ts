/**
 * Lookups of secrets (src/core/secrets/reads.ts): a member reads its own replica, a client's lookup
 * goes through the fresh reader before a 404, and Web3 secrets need a node with chains.
 */
import { describe, expect, it } from 'vitest';
import { createSecretReads, secretRecordOf, type Web3Secrets } from '../../../../src/core/secrets/reads.ts';
import { secretKey } from '../../../../src/core/secrets/records.ts';
import type { StateReader } from '../../../../src/core/replication/ports.ts';
import type { FreshReader } from '../../../../src/core/replication/fresh-read.ts';
import type { ReplicatedRecord } from '../../../../src/core/replication/record.ts';
import type { ResolvedSecret } from '../../../../src/core/secrets/types.ts';
import { web3SecretKey } from '../../../../src/core/web3/records.ts';

/** A replica in memory: kind → key → body. */
function memoryState(bodies: Record<string, Record<string, unknown>>): StateReader {
  const record = (body: unknown) => ({ body }) as unknown as ReplicatedRecord;
  return {
    get: async (kind, key) => (bodies[kind]?.[key] === undefined ? undefined : record(bodies[kind]![key])),
    async *list(kind) {
      for (const body of Object.values(bodies[kind] ?? {})) yield record(body);
    },
  };
}

const web2 = { secretId: 7, ownerPrincipalId: 'o', delegatePrincipalId: null, publicKeyCid: 'pk', isSyncing: false, secretType: 1 };
const web3 = { chainId: 31337, secretId: 7, publicKeyCid: 'pk3' };
const state = memoryState({ secret: { [secretKey(7)]: web2 }, web3Secret: { [web3SecretKey(31337, 7)]: web3 } });

describe('secret reads', () => {
  it('a secret’s record is read by its chain: secret for Web2, web3Secret for Web3', async () => {
    expect(await secretRecordOf(state, -1, 7)).toEqual(web2);
    expect(await secretRecordOf(state, 31337, 7)).toEqual(web3);
    expect(await secretRecordOf(state, 1, 7)).toBeUndefined();
    expect(await secretRecordOf(state, -1, 8)).toBeUndefined();
  });

  it('a member reads its replica; a client reads through the fresh reader', async () => {
    const asked: string[] = [];
    const fresh: FreshReader = {
      get: async (kind, key) => {
        asked.push(`${kind}/${key}`);
        return key === secretKey(9) ? ({ body: { ...web2, secretId: 9 } } as unknown as ReplicatedRecord) : state.get(kind, key);
      },
      reread: async () => undefined,
    };
    const reads = createSecretReads({ state, fresh });
    expect((await reads.findSecret(9)).secretId).toBe(9);
    expect(asked).toEqual([`secret/${secretKey(9)}`]);
    expect(await reads.getSecret(9)).toBeUndefined();
    await expect(reads.requireSecret(9)).rejects.toMatchObject({ code: 'NOT_FOUND', message: 'Secret 9 not found' });
    await expect(reads.findSecret(8)).rejects.toMatchObject({ code: 'NOT_FOUND', message: 'Secret 8 not found' });
    // Without a fresh reader a client's lookup is the replica's.
    expect(await createSecretReads({ state }).findSecret(7)).toEqual(web2);
  });

  it('Web3 secrets resolve through the chains’ view, and are a 400 on a node without chains', async () => {
    const resolved: ResolvedSecret = { chainId: 31337, secretId: 7, publicKeyCid: 'pk3', owner: '0xabc', delegate: null, isSyncing: false, secretType: 1 };
    const chains: Web3Secrets = { resolve: async () => resolved, resolveOwn: async () => resolved };
    const withChains = createSecretReads({ state, web3: () => chains });
    expect(withChains.web3Enabled()).toBe(true);
    expect(await withChains.resolveSecret(31337, 7)).toBe(resolved);
    expect(await withChains.resolveSecret(-1, 7)).toMatchObject({ chainId: -1, secretId: 7, owner: 'o', publicKeyCid: 'pk' });
    const without = createSecretReads({ state, web3: () => undefined });
    expect(without.web3Enabled()).toBe(false);
    await expect(without.resolveSecret(31337, 7)).rejects.toMatchObject({ code: 'BAD_REQUEST', message: 'Web3 secrets are not served by this node' });
  });
});
