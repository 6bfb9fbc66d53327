/**
 * The Web3 service's rules on a scripted chain (src/core/web3/service.ts): the confirmed view is read
 * at head − confirmations and cached only while the follower covers every block up to the one asked
 * for; an event of a secret drops its entry; the syncer deals a key once per secret and moves its
 * cursor only after the sync. The chain here is a port implementation driven by the test; the real
 * chain is in test/integration/web3-secrets.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { createWeb3Service, type Web3Dealer } from '../../../../src/core/web3/service.ts';
import type { ChainEvent, FollowEventsOptions, MarkSyncedResult, SecretState, Web3Chain } from '../../../../src/core/web3/ports.ts';
import { web3SecretKey } from '../../../../src/core/web3/records.ts';
import type { ReplicatedRecord } from '../../../../src/core/replication/record.ts';
import { createLogger } from '../../../../src/log/index.ts';
import { assertDecryptRight, assertUsable } from '../../../../src/core/secrets/rules.ts';
import { AppError } from '../../../../src/errors/index.ts';

const CHAIN_ID = 8453;
const ALICE = '0x' + 'a1'.repeat(20);
const BOB = '0x' + 'b0'.repeat(20);
const KEY = 'K'.repeat(1580);

/**
 * A chain whose head, states (by block) and event deliveries the test drives. `head` is what the
 * node's head reads answer; `latest`, when set, is the chain's real latest block, ahead of it (what a
 * read without a block number sees).
 */
function scriptedChain(options: { syncer?: boolean } = {}) {
  let head = 100;
  let latest: number | undefined;
  let createdFrom = 0;
  let syncedFrom = 0;
  /** Owner by block from which it holds. */
  const owners: Array<{ from: number; owner: string }> = [{ from: 0, owner: ALICE }];
  let deliver: FollowEventsOptions['onEvents'] | undefined;
  let fromBlock: number | undefined;
  /** Blocks read at; `latest` for a read without one. */
  const reads: Array<number | 'latest'> = [];
  const synced: number[] = [];
  let failSync = false;
  let whitelisted = true;
  let syncedTo: number | undefined;
  const chain: Web3Chain = {
    chainId: CHAIN_ID,
    name: 'test',
    freshnessWindow: 300,
    confirmations: 2,
    startBlock: 0,
    hasController: true,
    syncer: options.syncer ?? false,
    controllerClusterId: 0,
    blockNumber: async () => head,
    async getSecretState(_id, opts): Promise<SecretState | undefined> {
      const at = opts?.blockNumber ?? latest ?? head;
      reads.push(opts?.blockNumber ?? 'latest');
      if (at < createdFrom) return undefined;
      const owner = [...owners].reverse().find((o) => o.from <= at)!.owner;
      if (syncedTo === undefined || at < syncedFrom) return { owner, delegate: null, isSyncing: true, clusterId: 0, secretType: 1, publicKeyCid: '' };
      return { owner, delegate: null, isSyncing: false, clusterId: syncedTo, secretType: 1, publicKeyCid: 'cifer' };
    },
    isWhitelisted: async () => whitelisted,
    async markSecretSynced(secretId): Promise<MarkSyncedResult> {
      if (failSync) throw new Error('not funded');
      synced.push(Number(secretId));
      return { status: 'synced', transactionHash: '0x', blockNumber: head };
    },
    followEvents(o) {
      deliver = o.onEvents;
      fromBlock = o.fromBlock;
      return { nextBlock: o.fromBlock, stop: async () => undefined };
    },
  };
  return {
    chain,
    reads,
    synced,
    setHead: (b: number) => (head = b),
    setLatest: (b: number | undefined) => (latest = b),
    createdAt: (block: number) => (createdFrom = block),
    syncedAt: (block: number) => (syncedFrom = block),
    transferAt: (block: number, owner: string) => owners.push({ from: block, owner }),
    failSync: (v: boolean) => (failSync = v),
    whitelist: (v: boolean) => (whitelisted = v),
    syncedTo: (clusterId: number | undefined) => (syncedTo = clusterId),
    fromBlock: () => fromBlock,
    deliver: (events: ChainEvent[], toBlock: number) => deliver!(events, toBlock),
  };
}

const codeOf = (run: () => unknown) => {
  try {
    run();
  } catch (err) {
    return err instanceof AppError ? err.code : String(err);
  }
  return 'accepted';
};
const position = (blockNumber: number) => ({ chainId: CHAIN_ID, blockNumber, blockHash: '0x', logIndex: 0, transactionHash: '0x' });
const transferred = (secretId: number, block: number, to: string): ChainEvent => ({ ...position(block), name: 'SecretOwnershipTransferred', secretId: BigInt(secretId), from: ALICE, to });
const created = (secretId: number, block: number, secretType = 1): ChainEvent => ({ ...position(block), name: 'SecretCreated', secretId: BigInt(secretId), owner: ALICE, secretType });

function setup(options: { syncer?: boolean; cursor?: number } = {}) {
  const script = scriptedChain(options);
  const records = new Map<string, unknown>();
  const dealt: number[] = [];
  const cursors = new Map<number, number>(options.cursor === undefined ? [] : [[CHAIN_ID, options.cursor]]);
  const dealer: Web3Dealer = {
    async dealWeb3Secret(chainId, secretId, createdBlock) {
      dealt.push(secretId);
      records.set(web3SecretKey(chainId, secretId), { chainId, secretId, clusterId: 'c', secretType: 1, publicKeyCid: KEY, createdBlock, createdAt: 0 });
    },
  };
  const service = createWeb3Service({
    chains: { get: (id) => (id === CHAIN_ID ? script.chain : undefined), list: () => [script.chain] },
    state: {
      get: async (_kind, key) => (records.has(key) ? ({ body: records.get(key) } as ReplicatedRecord) : undefined),
      list: async function* () {},
    },
    cursors: { get: async (id) => cursors.get(id), put: async (id, block) => void cursors.set(id, block) },
    dealer: () => dealer,
    isCoordinator: true,
    selfAddress: '0x' + 'cc'.repeat(20),
    logger: createLogger({ level: 'silent' }),
  });
  return { script, service, records, dealt, cursors };
}

describe('the confirmed view', () => {
  it('is read at head − confirmations and served from the cache while the follower covers the block', async () => {
    const { script, service } = setup();
    await service.start();
    expect(script.fromBlock()).toBe(98);
    await script.deliver([], 98);
    expect((await service.confirmedState(CHAIN_ID, 1))?.owner).toBe(ALICE);
    expect((await service.confirmedState(CHAIN_ID, 1))?.owner).toBe(ALICE);
    expect(script.reads).toEqual([98]);
    // A new head the follower has not covered yet: read again rather than trust the entry.
    script.setHead(101);
    await service.confirmedState(CHAIN_ID, 1);
    expect(script.reads).toEqual([98, 99]);
    await script.deliver([], 99);
    await service.confirmedState(CHAIN_ID, 1);
    expect(script.reads).toEqual([98, 99]);
  });

  it('an event of the secret drops its entry: a transfer is seen once it is confirmations deep', async () => {
    const { script, service } = setup();
    await service.start();
    await script.deliver([], 98);
    expect((await service.confirmedState(CHAIN_ID, 1))?.owner).toBe(ALICE);
    script.transferAt(99, BOB);
    script.setHead(100);
    // Not confirmed yet at head 100 (99 > 100 − 2): still Alice, from the cache.
    expect((await service.confirmedState(CHAIN_ID, 1))?.owner).toBe(ALICE);
    script.setHead(101);
    await script.deliver([transferred(1, 99, BOB)], 99);
    expect((await service.confirmedState(CHAIN_ID, 1))?.owner).toBe(BOB);
    // Another secret's event does not drop this one.
    const readsBefore = script.reads.length;
    await script.deliver([transferred(2, 99, BOB)], 99);
    await service.confirmedState(CHAIN_ID, 1);
    expect(script.reads.length).toBe(readsBefore);
  });

  it('never reads behind what the follower already delivered, and keeps no read older than it', async () => {
    const { script, service } = setup();
    await service.start();
    script.transferAt(104, BOB);
    // The follower's head is ahead of the service's cached one: it delivered the transfer at 104.
    await script.deliver([transferred(1, 104, BOB)], 105);
    expect((await service.confirmedState(CHAIN_ID, 1))?.owner).toBe(BOB);
    expect(script.reads).toEqual([105]);
  });

  it('resolve: 403 while syncing without a key, 404 when another cluster keyed it, else the key with owner from the chain; 400 for a chain not enabled', async () => {
    const { script, service, records } = setup();
    await service.start();
    await expect(service.resolve(CHAIN_ID, 1)).rejects.toMatchObject({ code: 'FORBIDDEN', message: 'Secret 1 is syncing; try again shortly' });
    script.syncedTo(9);
    await expect(service.resolve(CHAIN_ID, 2)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    script.syncedTo(0);
    records.set(web3SecretKey(CHAIN_ID, 3), { publicKeyCid: KEY });
    await expect(service.resolve(CHAIN_ID, 3)).resolves.toMatchObject({ chainId: CHAIN_ID, secretId: 3, owner: ALICE, delegate: null, isSyncing: false, publicKeyCid: KEY });
    await expect(service.resolve(1, 1)).rejects.toMatchObject({ code: 'BAD_REQUEST' });
  });
});

describe('before refusing, the latest block (docs/web3.md, "Serving a secret")', () => {
  /** A started service, its follower caught up to the confirmed block 98 (head 100, 2 confirmations), secret 1 keyed. */
  async function keyed() {
    const s = setup();
    await s.service.start();
    await s.script.deliver([], 98);
    s.records.set(web3SecretKey(CHAIN_ID, 1), { publicKeyCid: KEY });
    return s;
  }

  it('a secret synced at the latest block but not yet confirmations deep is served, owner and delegate from the confirmed view', async () => {
    const { script, service } = await keyed();
    script.syncedTo(0);
    script.syncedAt(100);
    // Transferred in the same unconfirmed blocks: the decrypt right stays the confirmed owner's.
    script.transferAt(99, BOB);
    for (const resolve of [service.resolve, service.resolveOwn]) {
      const secret = await resolve(CHAIN_ID, 1);
      expect(secret).toMatchObject({ isSyncing: false, owner: ALICE, delegate: null, publicKeyCid: KEY });
      expect(secret.unconfirmed).toBeUndefined();
      expect(() => assertUsable(secret)).not.toThrow();
      expect(() => assertDecryptRight(secret, ALICE)).not.toThrow();
      expect(codeOf(() => assertDecryptRight(secret, BOB))).toBe('FORBIDDEN');
    }
    // The confirmed read is cached; the latest one is made for each answer that would have refused.
    expect(script.reads).toEqual([98, 'latest', 'latest']);
  });

  it('the latest block is read as it is, ahead of the cached head', async () => {
    const { script, service } = await keyed();
    script.syncedTo(0);
    script.syncedAt(101);
    script.setLatest(101);
    await expect(service.resolve(CHAIN_ID, 1)).resolves.toMatchObject({ isSyncing: false });
  });

  it('syncing at the latest block too: 403 `Secret <id> is syncing`, with or without a key dealt', async () => {
    const { script, service, records } = await keyed();
    await expect(service.resolve(CHAIN_ID, 1).then(assertUsable)).rejects.toMatchObject({ code: 'FORBIDDEN', message: 'Secret 1 is syncing; try again shortly' });
    records.delete(web3SecretKey(CHAIN_ID, 1));
    await expect(service.resolve(CHAIN_ID, 1)).rejects.toMatchObject({ code: 'FORBIDDEN', message: 'Secret 1 is syncing; try again shortly' });
    await expect(service.resolveOwn(CHAIN_ID, 1)).rejects.toMatchObject({ code: 'FORBIDDEN', reason: 'secret_unavailable' });
    expect(script.reads.filter((r) => r === 'latest')).toHaveLength(3);
  });

  it('created after the confirmed block: syncing rather than 404; once synced, encryptable but no decrypt until its owner is confirmed', async () => {
    const { script, service } = await keyed();
    script.createdAt(99);
    await expect(service.resolve(CHAIN_ID, 1).then(assertUsable)).rejects.toMatchObject({ code: 'FORBIDDEN', message: 'Secret 1 is syncing; try again shortly' });
    script.syncedTo(0);
    script.syncedAt(100);
    const secret = await service.resolve(CHAIN_ID, 1);
    expect(secret).toMatchObject({ isSyncing: false, owner: '', delegate: null, unconfirmed: true, publicKeyCid: KEY });
    expect(() => assertUsable(secret)).not.toThrow();
    expect(() => assertDecryptRight(secret, ALICE)).toThrow('Secret 1 is syncing; try again shortly');
  });

  it('unknown at the latest block too: 404 not found on chain', async () => {
    const { script, service } = await keyed();
    script.createdAt(1000);
    await expect(service.resolve(CHAIN_ID, 1)).rejects.toMatchObject({ code: 'NOT_FOUND', message: 'Secret 1 not found on chain 8453' });
    expect(script.reads).toEqual([98, 'latest']);
  });

  it('a secret the confirmed view shows synced costs no latest read', async () => {
    const { script, service } = await keyed();
    script.syncedTo(0);
    await service.resolve(CHAIN_ID, 1);
    await service.resolve(CHAIN_ID, 1);
    expect(script.reads).toEqual([98]);
  });
});

describe('the syncer', () => {
  it('deals once per secret of type 1, marks it synced, and saves the cursor only after', async () => {
    const { script, service, dealt, cursors } = setup({ syncer: true, cursor: 41 });
    await service.start();
    expect(script.fromBlock()).toBe(42);
    await script.deliver([created(5, 50), created(6, 50, 2)], 60);
    expect(dealt).toEqual([5]);
    expect(script.synced).toEqual([5]);
    expect(cursors.get(CHAIN_ID)).toBe(60);
    // The same range again (a crash before the cursor was saved): no second key, the sync re-sent.
    await script.deliver([created(5, 50)], 60);
    expect(dealt).toEqual([5]);
    expect(script.synced).toEqual([5, 5]);
  });

  it('deals nothing for a secret another cluster synced, nor while this node is not whitelisted', async () => {
    const { script, service, dealt, cursors } = setup({ syncer: true });
    await service.start();
    script.syncedTo(9);
    await script.deliver([created(8, 10)], 20);
    expect(dealt).toEqual([]);
    expect(script.synced).toEqual([]);
    expect(cursors.get(CHAIN_ID)).toBe(20);
    script.syncedTo(undefined);
    script.whitelist(false);
    await expect(script.deliver([created(9, 21)], 30)).rejects.toThrow(/not whitelisted/);
    expect(dealt).toEqual([]);
    expect(cursors.get(CHAIN_ID)).toBe(20);
    script.whitelist(true);
    await script.deliver([created(9, 21)], 30);
    expect(dealt).toEqual([9]);
  });

  it('a failed sync fails the range: the cursor stays, and the retry deals nothing new', async () => {
    const { script, service, dealt, cursors } = setup({ syncer: true });
    await service.start();
    expect(script.fromBlock()).toBe(0);
    script.failSync(true);
    await expect(script.deliver([created(7, 10)], 20)).rejects.toThrow(/not funded/);
    expect(cursors.get(CHAIN_ID)).toBeUndefined();
    script.failSync(false);
    await script.deliver([created(7, 10)], 20);
    expect(dealt).toEqual([7]);
    expect(script.synced).toEqual([7]);
    expect(cursors.get(CHAIN_ID)).toBe(20);
  });
});
