/**
 * Dealing a key (src/core/secrets/dealing.ts; docs/architecture.md, Keys and crypto): each member's
 * share opens only for that member and that secret, sits at its slot's coordinate and matches its
 * digest; any threshold of them rebuild the seed of the public key. Below threshold stored shares
 * nothing is recorded; otherwise the missed shares are kept before the record is written.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { createKeyDealer, sealShares, type DealtKey } from '../../../../src/core/secrets/dealing.ts';
import { shareDigest, shareStoreAad } from '../../../../src/core/secrets/records.ts';
import type { MembershipView, WriteIntent } from '../../../../src/core/replication/ports.ts';
import { QuorumError } from '../../../../src/errors/index.ts';
import { combineShares, mlkemPublicKeyFromSeed, openSealed, shareXOfSlot, systemRandom, toBase64 } from '../../../../src/crypto/index.ts';
import { createRequestCryptoPool } from '../../../../src/crypto/request-pool.ts';
import { captureLogger } from '../../../utils/log.ts';
import { unitCluster } from '../../../utils/evidence.ts';

const c = unitCluster();
const { clusterId } = c.descriptor;

describe.each([
  ['inline', undefined],
  ['on the request crypto thread', 'thread'],
] as const)('sealShares, %s', (_, where) => {
  const ran: string[] = [];
  const pool = where === 'thread' ? createRequestCryptoPool({ minThreadBatch: 1, idleInlineMs: 0, onRun: (op, at) => ran.push(`${op}@${at}`) }) : undefined;
  afterAll(() => pool?.close());
  const seal = (seed: Uint8Array, label: number | string) => sealShares(seed, c.descriptor, label, pool?.deal);

  it('seals share i to member i at x = i + 1, with its digest; any threshold rebuild the seed', async () => {
    const seed = systemRandom(64);
    const { publicKey, shareDigests, boxes } = await seal(seed.slice(), 7);
    expect(publicKey).toEqual(mlkemPublicKeyFromSeed(seed));
    expect([...boxes.keys()]).toEqual([0, 1, 2, 3, 4]);
    const shares = c.keys.map((key, slot) => openSealed(key, boxes.get(slot)!, shareStoreAad(clusterId, 7, slot))!);
    shares.forEach((share, slot) => {
      expect(share[share.length - 1]).toBe(shareXOfSlot(slot));
      expect(shareDigests[slot]).toBe(shareDigest(clusterId, 7, slot, share));
    });
    expect(await combineShares([shares[4]!, shares[0]!, shares[2]!])).toEqual(seed);
    expect(await combineShares([shares[1]!, shares[3]!])).not.toEqual(seed);
    expect(ran).toEqual(pool ? ['deal@thread'] : []);
  });

  it('a box opens for its member and its secret only', async () => {
    const { boxes } = await seal(systemRandom(64), '31337:7');
    expect(openSealed(c.keys[1]!, boxes.get(0)!, shareStoreAad(clusterId, '31337:7', 0))).toBeUndefined();
    expect(openSealed(c.keys[0]!, boxes.get(0)!, shareStoreAad(clusterId, 7, 0))).toBeUndefined();
    expect(openSealed(c.keys[0]!, boxes.get(0)!, shareStoreAad(clusterId, '31337:7', 0))).toBeDefined();
  });

  it("leaves the caller's seed as it was (the operation zeroes its own copy)", async () => {
    const seed = systemRandom(64);
    const before = Uint8Array.from(seed);
    await seal(seed, 9);
    expect(seed).toEqual(before);
  });
});

describe('the key dealer with stub delivery', () => {
  const membership: MembershipView = { descriptor: c.descriptor, self: c.descriptor.nodes[0]!, isReachable: () => true, reachableCount: () => 5 };

  function dealer(failing: number[]) {
    const steps: string[] = [];
    const written: WriteIntent[] = [];
    const log = captureLogger();
    const random = (n: number) => new Uint8Array(n).fill(9);
    const d = createKeyDealer({
      membership,
      random,
      clock: () => 1_000,
      logger: log.logger,
      // A Web3 secret's key is written through slot 0 (a Web2 one by the caller's callback).
      versions: {
        update: async (kind: { name: string }, key: string, next: (current: undefined) => unknown) => {
          steps.push('replicate');
          const proposed = (await next(undefined)) as { body: WriteIntent['body'] };
          written.push({ kind: kind.name, key, body: proposed.body });
          return {} as never;
        },
      } as never,
      delivery: {
        deliver: async (_chainId, _secretId, boxes) => ({ stored: [...boxes.keys()].filter((s) => !failing.includes(s)), errors: new Map(failing.map((s) => [s, 'down'])) }),
        keepUndelivered: async (_chainId, _secretId, _boxes, errors) => void steps.push(`keep ${[...errors.keys()].join(',')}`),
      },
    });
    return { d, steps, written, log };
  }

  it('keeps the missed shares before it writes the record, and says the secret is propagating', async () => {
    const { d, steps } = dealer([4]);
    const dealt: DealtKey[] = [];
    const result = await d.deal(-1, 7, async (key) => {
      steps.push('record');
      dealt.push(key);
    });
    expect(result).toEqual({ status: 'propagating', stored: 4 });
    expect(steps).toEqual(['keep 4', 'record']);
    expect(dealt).toEqual([{ publicKeyCid: toBase64(mlkemPublicKeyFromSeed(new Uint8Array(64).fill(9))), now: 1_000, shareDigests: expect.any(Array) }]);
    expect(dealt[0]!.shareDigests).toHaveLength(5);
  });

  it('every member stored its share: complete, nothing kept back', async () => {
    const { d, steps } = dealer([]);
    expect(await d.deal(-1, 7, async () => void steps.push('record'))).toEqual({ status: 'complete', stored: 5 });
    expect(steps.at(-1)).toBe('record');
  });

  it('a record that cannot be written fails the deal', async () => {
    const { d } = dealer([]);
    await expect(
      d.deal(-1, 7, async () => {
        throw new QuorumError('Cluster membership failure', [], []);
      }),
    ).rejects.toBeInstanceOf(QuorumError);
  });

  it('below threshold stored shares: a QuorumError naming the members that missed theirs, and no record', async () => {
    const { d, steps, log } = dealer([2, 3, 4]);
    const dealt = d.deal(-1, 7, async () => void steps.push('record'));
    await expect(dealt).rejects.toBeInstanceOf(QuorumError);
    await expect(dealt).rejects.toMatchObject({ acked: [0, 1].map((s) => c.descriptor.nodes[s]!.nodeAddress) });
    expect(steps).toEqual([]);
    expect(log.lines().find((l) => l.msg === 'secret shares below threshold; secret abandoned')).toMatchObject({ chainId: -1, secretId: 7, stored: 2 });
  });

  it('a Web3 secret is keyed once for concurrent calls, into its web3Secret record', async () => {
    const { d, written } = dealer([]);
    await Promise.all([d.dealWeb3Secret(31337, 7, 100), d.dealWeb3Secret(31337, 7, 100)]);
    expect(written).toHaveLength(1);
    expect(written[0]).toMatchObject({ kind: 'web3Secret', body: { chainId: 31337, secretId: 7, clusterId, secretType: 1, createdBlock: 100, createdAt: 1_000 } });
  });
});
