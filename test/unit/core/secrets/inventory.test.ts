/**
 * The share inventory's full scan (src/core/secrets/inventory.ts) names every secret from its state
 * key alone: Web2 and Web3 secrets both counted, a held share counted held, a lacking one pending and
 * then missing, an acknowledged loss neither, and a key whose only version an equivocation displaced
 * (listed, with no winner) no secret at all.
 */
import { describe, expect, it } from 'vitest';
import { CONFIRM_MISSING_MS, createShareInventory } from '../../../../src/core/secrets/inventory.ts';
import { secretKey } from '../../../../src/core/secrets/records.ts';
import { web3SecretKey, web3SecretLabel } from '../../../../src/core/web3/records.ts';
import { lostSecretKey } from '../../../../src/core/secrets/lost-records.ts';
import type { ReplicatedRecord } from '../../../../src/core/replication/record.ts';
import { createLogger } from '../../../../src/log/index.ts';

const SLOT = 2;

function replica(records: Array<{ kind: string; key: string; body: unknown }>, listedOnly: Array<{ kind: string; key: string }>) {
  const winners = new Map(records.map((r) => [`${r.kind}!${r.key}`, { ...r, origin: '0x', seq: 1, hlc: [1, 0], sig: '0x' } as unknown as ReplicatedRecord]));
  const keys = [...records, ...listedOnly].map((r) => ({ kind: r.kind, key: r.key }));
  return {
    get: async (kind: string, key: string) => winners.get(`${kind}!${key}`),
    async *list(kind: string) {
      for (const r of winners.values()) if (r.kind === kind) yield r;
    },
    // Two pages: the pass goes on from one page to the next.
    async *keyPages(kind: string) {
      const all = keys.filter((k) => k.kind === kind).map((k) => k.key).sort();
      yield all.slice(0, 2);
      yield all.slice(2);
    },
  };
}

describe('the share inventory', () => {
  it('counts every secret from its key, Web2 and Web3, and skips a key with no winner', async () => {
    const web2 = (id: number) => ({ kind: 'secret', key: secretKey(id), body: { secretId: id, shareDigests: [] } });
    const web3 = (chainId: number, id: number) => ({ kind: 'web3Secret', key: web3SecretKey(chainId, id), body: { chainId, secretId: id, shareDigests: [] } });
    const state = replica(
      [web2(1), web2(2), web2(3), web2(4), web3(31337, 1), web3(31337, 2), { kind: 'lostSecret', key: lostSecretKey(-1, 4), body: {} }],
      // Secret 9's only version was displaced by an equivocation: its key is listed, it has no winner.
      [{ kind: 'secret', key: secretKey(9) }],
    );
    // Held: secrets 1 and 3 (Web2), 2 on chain 31337. Lacking: 2 (Web2), 1 on chain 31337; 4 is acknowledged lost; 9 is no secret.
    const held = new Set<number | string>([1, 3, web3SecretLabel(31337, 2)]);
    let now = 1_000_000;
    const looked: Array<number | string> = [];
    const inventory = createShareInventory({
      state,
      held: {
        slot: SLOT,
        clusterId: 'c',
        keyring: { decryptAtRest: () => new Uint8Array(0) },
        shares: {
          get: async () => undefined,
          has: async (label) => (looked.push(label), held.has(label)),
          heldLabels: async () => new Set(held),
        },
      },
      caughtUp: () => true,
      complete: () => true,
      settle: async () => true,
      signDigest: () => '0x',
      clock: () => now,
      logger: createLogger({ level: 'silent' }),
      signal: new AbortController().signal,
    });

    const first = (await inventory.refresh())!;
    expect(first).toMatchObject({ slot: SLOT, expected: 5, held: 3, acknowledgedLost: 1, pending: 2, missingTotal: 0, complete: true });
    // The held labels were read in one pass, not looked up one by one.
    expect(looked).toEqual([]);

    now += CONFIRM_MISSING_MS;
    const later = (await inventory.refresh())!;
    expect(later).toMatchObject({ expected: 5, held: 3, acknowledgedLost: 1, pending: 0, missingTotal: 2 });
    expect(later.missing).toEqual(expect.arrayContaining([
      { chainId: -1, secretId: 2 },
      { chainId: 31337, secretId: 1 },
    ]));
    expect(later.missing).toHaveLength(2);
  });
});
