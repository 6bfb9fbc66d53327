/**
 * The chain client (src/evm, docs/web3.md § "Chain client") against a real anvil with the test
 * secrets controller: head caching, secret state, RPC failures as 503 CHAIN_UNAVAILABLE,
 * markSecretSynced from the syncer's key, and event following with confirmations and cursors.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { hexToBytes, type Address, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { getFreePorts, waitFor } from 'quorumkeep/testing';
import { AppError } from '../../src/errors/index.ts';
import { ChainTransactionError, createChainClient, createChainClients, type ChainClient, type ChainClientDeps, type ChainClientOptions, type ChainEvent } from '../../src/evm/index.ts';
import { createMetrics, type NodeMetrics } from '../../src/metrics/index.ts';
import {
  createSecretOnChain,
  deployController,
  fund,
  markSecretSyncedOnChain,
  mine,
  setDelegateOnChain,
  startAnvil,
  transferSecretOnChain,
  whitelist,
  type AnvilChain,
  type DevAccount,
} from '../utils/anvil.ts';
import { captureLogger } from '../utils/log.ts';

const API_KEY = 'sk-very-secret-api-key';

let chain: AnvilChain;
let controller: Address;
let alice: DevAccount;
let bob: DevAccount;
let carol: DevAccount;

beforeAll(async () => {
  chain = await startAnvil({ chainId: 8453 });
  controller = await deployController(chain);
  [alice, bob, carol] = [account(1), account(2), account(3)];
});
afterAll(async () => {
  await chain?.stop();
});

// Cleanups of the running test, run in reverse order.
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()?.();
});

function account(i: number): DevAccount {
  const a = chain.accounts[i];
  if (!a) throw new Error(`no dev account ${i}`);
  return a;
}

interface Harness {
  client: ChainClient;
  metrics: NodeMetrics;
  logs: ReturnType<typeof captureLogger>;
}

/** A client of the anvil chain as "Base" (8453), with fast retries; stopped after the test. */
function makeClient(overrides: Partial<ChainClientOptions> = {}, deps: Partial<ChainClientDeps> = {}): Harness {
  const metrics = createMetrics({ processMetrics: false });
  const logs = captureLogger();
  const client = createChainClient(
    { chainId: 8453, name: 'Base', rpcUrl: chain.rpcUrl, secretsControllerAddress: controller, blockTimeMs: 1000, confirmations: 2, rpcBackoffMs: 10, rpcBackoffMaxMs: 40, ...overrides },
    { logger: logs.logger, metrics, ...deps },
  );
  cleanups.push(() => client.stop());
  return { client, metrics, logs };
}

/** How many `method` calls the client sent (its latency histogram's count). */
async function rpcCalls(metrics: NodeMetrics, method: string): Promise<number> {
  const { values } = await metrics.chainRpcDuration.get();
  return values.find((v) => v.metricName === 'quorumkeep_chain_rpc_duration_seconds_count' && v.labels.method === method)?.value ?? 0;
}

async function rpcErrors(metrics: NodeMetrics): Promise<number> {
  const { values } = await metrics.chainRpcErrors.get();
  return values.reduce((sum, v) => sum + v.value, 0);
}

/** The AppError `promise` rejects with. */
async function appErrorOf(promise: Promise<unknown>): Promise<AppError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof AppError)) throw new Error(`expected an AppError, got ${String(err)}`);
  return err;
}

/** An HTTP server that forwards JSON-RPC to anvil, or answers 503 while `down`. */
async function startFlakyProxy(target: string): Promise<{ url: string; down: boolean }> {
  const state = { url: '', down: false };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (state.down) {
        res.writeHead(503, { 'content-type': 'text/plain' }).end('upstream down');
        return;
      }
      fetch(target, { method: 'POST', headers: { 'content-type': 'application/json' }, body: Buffer.concat(chunks) })
        .then(async (upstream) => {
          res.writeHead(upstream.status, { 'content-type': 'application/json' }).end(await upstream.text());
        })
        .catch(() => res.writeHead(502).end());
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  cleanups.push(() => new Promise<void>((r) => server.close(() => r())));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v2/${API_KEY}`;
  return state;
}

describe('the head block', () => {
  it('is cached for at most a block time; fresh reads again; concurrent reads share one call', async () => {
    let clock = 1_700_000_000_000;
    const { client, metrics } = makeClient({ blockTimeMs: 2000 }, { now: () => clock });
    expect(client.freshnessWindow).toBe(300); // ceil(600000 / 2000)

    const first = await client.blockNumber();
    expect(first).toBe(Number(await chain.publicClient.getBlockNumber({ cacheTime: 0 })));
    expect(await client.blockNumber()).toBe(first);
    expect(await rpcCalls(metrics, 'eth_blockNumber')).toBe(1);
    expect(await rpcCalls(metrics, 'eth_chainId')).toBe(1); // the RPC serves 8453: checked once

    await mine(chain, 1);
    clock += 1999;
    expect(await client.blockNumber()).toBe(first); // still within one block time
    expect(await rpcCalls(metrics, 'eth_blockNumber')).toBe(1);
    expect(await client.blockNumber({ fresh: true })).toBe(first + 1);
    expect(await rpcCalls(metrics, 'eth_blockNumber')).toBe(2);

    await mine(chain, 1);
    clock += 2000; // a block time after the fresh read
    expect(await client.blockNumber()).toBe(first + 2);
    expect(await rpcCalls(metrics, 'eth_blockNumber')).toBe(3);

    const together = await Promise.all([client.blockNumber({ fresh: true }), client.blockNumber({ fresh: true }), client.blockNumber()]);
    expect(together).toEqual([first + 2, first + 2, first + 2]);
    expect(await rpcCalls(metrics, 'eth_blockNumber')).toBe(4);
    expect(await rpcCalls(metrics, 'eth_chainId')).toBe(1);

    expect(client.status()).toMatchObject({ chainId: 8453, name: 'Base', head: first + 2, headAt: clock, reachable: true, lastError: null });
    expect(await metrics.render()).toContain(`quorumkeep_chain_head{chain="8453"} ${first + 2}`);
  });
});

describe('getSecretState', () => {
  it('reads an existing secret (lowercase addresses, no delegate as null), at the head or at an older block', async () => {
    const { client } = makeClient({ secretsControllerAddress: controller.toUpperCase().replace('0X', '0x') });
    const secretId = await createSecretOnChain(chain, controller, alice.privateKey);
    const created = await client.blockNumber({ fresh: true });
    expect(await client.getSecretState(secretId)).toEqual({
      owner: alice.address.toLowerCase(),
      delegate: null,
      isSyncing: true,
      clusterId: 0,
      secretType: 1,
      publicKeyCid: '',
    });
    await setDelegateOnChain(chain, controller, alice.privateKey, secretId, bob.address);
    expect(await client.getSecretState(Number(secretId))).toMatchObject({ delegate: bob.address.toLowerCase() });
    expect(await client.getSecretState(secretId, { blockNumber: created })).toMatchObject({ delegate: null });
  });

  it('is undefined for a secret that does not exist', async () => {
    const { client, metrics } = makeClient();
    expect(await client.getSecretState(999_999n)).toBeUndefined();
    expect(await client.getSecretState(-1)).toBeUndefined();
    expect(await client.getSecretState(2n ** 256n)).toBeUndefined();
    // A revert is an answer: no retry, not an RPC error.
    expect(await rpcCalls(metrics, 'eth_call')).toBe(1);
    expect(await rpcErrors(metrics)).toBe(0);
    expect(client.status().reachable).toBe(true);
  });

  it('answers 503 naming the chain when no controller is configured, or none is deployed at the address', async () => {
    for (const secretsControllerAddress of [undefined, '0x0000000000000000000000000000000000000000']) {
      const { client } = makeClient({ secretsControllerAddress });
      expect(client.hasController).toBe(false);
      expect(client.status().secretsControllerAddress).toBeNull();
      const err = await appErrorOf(client.getSecretState(1n));
      expect(err).toMatchObject({ code: 'CHAIN_UNAVAILABLE', status: 503, message: 'Chain 8453 (Base) has no secrets controller configured', extra: { chainId: 8453 } });
      expect(() => client.followEvents({ fromBlock: 0, onEvents: () => undefined })).toThrow(AppError);
    }
    const nowhere = '0x00000000000000000000000000000000deadbeef';
    const { client } = makeClient({ secretsControllerAddress: nowhere });
    const err = await appErrorOf(client.getSecretState(1n));
    expect(err).toMatchObject({ code: 'CHAIN_UNAVAILABLE', message: `Chain 8453 (Base) has no secrets controller at ${nowhere}` });
  });
});

describe('RPC failures', () => {
  it('a closed port: 503 CHAIN_UNAVAILABLE naming the chain after its attempts, the URL never shown', async () => {
    const [port] = await getFreePorts(1);
    const { client, metrics, logs } = makeClient({ rpcUrl: `http://127.0.0.1:${port}/v3/${API_KEY}?key=${API_KEY}`, rpcAttempts: 3 });
    const err = await appErrorOf(client.blockNumber());
    expect(err).toMatchObject({ code: 'CHAIN_UNAVAILABLE', status: 503, message: 'Chain 8453 (Base) RPC is unavailable: connection refused', extra: { chainId: 8453 } });
    expect(await rpcErrors(metrics)).toBe(3); // three attempts, each counted
    expect(client.status()).toMatchObject({ reachable: false, lastError: 'connection refused', head: null, rpcUrl: `http://127.0.0.1:${port}/[redacted]` });
    expect((await appErrorOf(client.getSecretState(1n))).code).toBe('CHAIN_UNAVAILABLE');
    expect(logs.raw()).toContain('chain RPC unavailable');
    expect(logs.raw()).not.toContain(API_KEY);
    expect(JSON.stringify(client.status())).not.toContain(API_KEY);
  });

  it('an RPC that never answers: "timed out" after the per-call timeout', async () => {
    const silent = createServer(() => undefined); // accepts, never responds
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    cleanups.push(() => {
      silent.closeAllConnections();
      return new Promise<void>((r) => silent.close(() => r()));
    });
    const { client, metrics } = makeClient({ rpcUrl: `http://127.0.0.1:${(silent.address() as AddressInfo).port}`, rpcTimeoutMs: 150, rpcAttempts: 2 });
    const err = await appErrorOf(client.blockNumber());
    expect(err.message).toBe('Chain 8453 (Base) RPC is unavailable: timed out after 150 ms');
    expect(await rpcErrors(metrics)).toBe(2); // each attempt ended by the per-call timeout
  });

  it('an RPC serving another chain is refused', async () => {
    const { client } = makeClient({ chainId: 84532, name: 'Base Sepolia' });
    const err = await appErrorOf(client.getSecretState(1n));
    expect(err).toMatchObject({ code: 'CHAIN_UNAVAILABLE', message: 'Chain 84532 (Base Sepolia) RPC is unavailable: it serves chain 8453' });
  });

  it('an outage in the middle: 503 while down, answers again once back', async () => {
    const proxy = await startFlakyProxy(chain.rpcUrl);
    const { client, logs } = makeClient({ rpcUrl: proxy.url });
    const secretId = await createSecretOnChain(chain, controller, alice.privateKey);
    expect(await client.getSecretState(secretId)).toMatchObject({ isSyncing: true });
    proxy.down = true;
    const err = await appErrorOf(client.getSecretState(secretId));
    expect(err.message).toBe('Chain 8453 (Base) RPC is unavailable: HTTP 503');
    expect(client.status()).toMatchObject({ reachable: false, lastError: 'HTTP 503' });
    proxy.down = false;
    expect(await client.getSecretState(secretId)).toMatchObject({ isSyncing: true });
    expect(client.status()).toMatchObject({ reachable: true, lastError: 'HTTP 503' });
    expect(logs.raw()).not.toContain(API_KEY);
  });
});

describe('markSecretSynced', () => {
  // The designated node: a fresh key (its address is the node address), funded and whitelisted.
  let nodeKey: Hex;
  let nodeAddress: Address;
  beforeAll(async () => {
    nodeKey = generatePrivateKey();
    nodeAddress = privateKeyToAccount(nodeKey).address;
    await fund(chain, nodeAddress, '1');
    await whitelist(chain, controller, nodeAddress);
  });
  const syncer = (key: Hex = nodeKey, overrides: Partial<ChainClientOptions> = {}) => makeClient({ syncer: true, ...overrides }, { signingKey: hexToBytes(key) }).client;

  it('sends from the whitelisted key; a second call is "already-synced", not an error', async () => {
    const client = syncer();
    expect(client.syncerAddress).toBe(nodeAddress.toLowerCase());
    const secretId = await createSecretOnChain(chain, controller, alice.privateKey);
    const first = await client.markSecretSynced(secretId, 1, 'cifer');
    expect(first).toMatchObject({ status: 'synced', transactionHash: expect.stringMatching(/^0x[0-9a-f]{64}$/) });
    expect(await client.getSecretState(secretId)).toMatchObject({ isSyncing: false, clusterId: 1, publicKeyCid: 'cifer' });
    expect(await client.markSecretSynced(secretId, 1, 'cifer')).toEqual({ status: 'already-synced', clusterId: 1, publicKeyCid: 'cifer' });
  });

  it('counts a secret another black box synced as done', async () => {
    const other = generatePrivateKey();
    await fund(chain, privateKeyToAccount(other).address, '1');
    await whitelist(chain, controller, privateKeyToAccount(other).address);
    const secretId = await createSecretOnChain(chain, controller, alice.privateKey);
    await markSecretSyncedOnChain(chain, controller, other, secretId, { clusterId: 7 });
    expect(await syncer().markSecretSynced(secretId, 1, 'cifer')).toEqual({ status: 'already-synced', clusterId: 7, publicKeyCid: 'cifer' });
  });

  it('serializes concurrent sends, also when two clients share the key (nonce races re-send)', async () => {
    const ids: bigint[] = [];
    for (let i = 0; i < 6; i++) ids.push(await createSecretOnChain(chain, controller, bob.privateKey));
    const [a, b] = [syncer(), syncer()];
    const results = await Promise.all(ids.map((id, i) => (i % 2 === 0 ? a : b).markSecretSynced(id, 1, 'cifer')));
    expect(results.every((r) => r.status === 'synced')).toBe(true);
    for (const id of ids) expect(await a.getSecretState(id)).toMatchObject({ isSyncing: false });
  });

  it('from a key that is not whitelisted: a ChainTransactionError with the revert reason', async () => {
    const stranger = generatePrivateKey();
    const strangerAddress = privateKeyToAccount(stranger).address.toLowerCase();
    await fund(chain, strangerAddress as Address, '1');
    const secretId = await createSecretOnChain(chain, controller, alice.privateKey);
    const err = await syncer(stranger).markSecretSynced(secretId, 1, 'cifer').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ChainTransactionError);
    expect(err).toMatchObject({
      chainId: 8453,
      sender: strangerAddress,
      reason: 'reverted: caller is not a whitelisted black box',
      message: `Chain 8453 (Base): markSecretSynced(${secretId}) from ${strangerAddress} failed: reverted: caller is not a whitelisted black box`,
    });
    expect(await syncer().getSecretState(secretId)).toMatchObject({ isSyncing: true });
  });

  it('from a whitelisted key without gas money, for a missing secret, or on a node that is not the syncer: clear errors', async () => {
    const broke = generatePrivateKey();
    await whitelist(chain, controller, privateKeyToAccount(broke).address);
    const secretId = await createSecretOnChain(chain, controller, alice.privateKey);
    await expect(syncer(broke).markSecretSynced(secretId, 1, 'cifer')).rejects.toMatchObject({ name: 'ChainTransactionError', reason: 'insufficient funds for gas' });
    await expect(syncer().markSecretSynced(999_999n, 1, 'cifer')).rejects.toMatchObject({ name: 'ChainTransactionError', reason: 'Secret not found' });
    await expect(syncer(nodeKey, { syncer: false }).markSecretSynced(secretId, 1, 'cifer')).rejects.toThrow(/not the chain's syncer/);
  });
});

describe('followEvents', () => {
  // Each test follows its own controller, so the events are only the test's.
  let own: Address;
  let deployedAt: number;
  beforeAll(async () => {
    own = await deployController(chain);
    deployedAt = Number(await chain.publicClient.getBlockNumber({ cacheTime: 0 }));
  });

  interface Collector {
    events: ChainEvent[];
    toBlocks: number[];
    onEvents(events: readonly ChainEvent[], toBlock: number): void;
  }
  function collector(): Collector {
    const c: Collector = {
      events: [],
      toBlocks: [],
      onEvents: (events, toBlock) => {
        c.events.push(...events);
        c.toBlocks.push(toBlock);
      },
    };
    return c;
  }
  const lastTo = (c: Collector) => c.toBlocks.at(-1) ?? -1;
  const key = (e: ChainEvent) => `${e.blockNumber}:${e.logIndex}`;
  const followerClient = (overrides: Partial<ChainClientOptions> = {}) => makeClient({ secretsControllerAddress: own, ...overrides });

  it('delivers SecretCreated, DelegateUpdated, SecretOwnershipTransferred and SecretSynced in order, after the confirmations', async () => {
    const nodeKey = generatePrivateKey();
    const nodeAddress = privateKeyToAccount(nodeKey).address;
    await fund(chain, nodeAddress, '1');
    await whitelist(chain, own, nodeAddress);

    const { client, metrics } = makeClient({ secretsControllerAddress: own, syncer: true, confirmations: 2 }, { signingKey: hexToBytes(nodeKey) });
    const seen = collector();
    client.followEvents({ fromBlock: deployedAt, pollIntervalMs: 20, onEvents: seen.onEvents });

    const secretId = await createSecretOnChain(chain, own, alice.privateKey, { secretType: 1 });
    const createdAt = Number(await chain.publicClient.getBlockNumber({ cacheTime: 0 }));
    // Caught up to head − 2, and the new secret is not delivered yet.
    await waitFor(() => lastTo(seen) === createdAt - 2, { description: 'follower at head − confirmations' });
    expect(seen.events).toEqual([]);
    await mine(chain, 1);
    await waitFor(() => lastTo(seen) === createdAt - 1, { description: 'one more block' });
    expect(seen.events).toEqual([]);
    await mine(chain, 1);
    await waitFor(() => seen.events.length === 1, { description: 'SecretCreated after two confirmations' });
    expect(seen.events[0]).toMatchObject({ name: 'SecretCreated', chainId: 8453, secretId, owner: alice.address.toLowerCase(), secretType: 1, blockNumber: createdAt });

    await setDelegateOnChain(chain, own, alice.privateKey, secretId, bob.address);
    await transferSecretOnChain(chain, own, alice.privateKey, secretId, carol.address);
    await client.markSecretSynced(secretId, 1, 'cifer');
    await mine(chain, 2);
    await waitFor(() => seen.events.length === 5, { description: 'all five events' });
    expect(seen.events.map((e) => e.name)).toEqual(['SecretCreated', 'DelegateUpdated', 'DelegateUpdated', 'SecretOwnershipTransferred', 'SecretSynced']);
    expect(seen.events.slice(1)).toMatchObject([
      { secretId, delegate: bob.address.toLowerCase() },
      { secretId, delegate: null }, // the test controller clears the delegate on transfer
      { secretId, from: alice.address.toLowerCase(), to: carol.address.toLowerCase() },
      { secretId, clusterId: 1, publicKeyCid: 'cifer' },
    ]);
    // Ranges are contiguous and increasing; events sorted by block, then log index.
    expect(seen.toBlocks).toEqual([...seen.toBlocks].sort((a, b) => a - b));
    expect(new Set(seen.toBlocks).size).toBe(seen.toBlocks.length);
    const positions = seen.events.map((e) => e.blockNumber * 1000 + e.logIndex);
    expect(positions).toEqual([...positions].sort((a, b) => a - b));

    const head = Number(await chain.publicClient.getBlockNumber({ cacheTime: 0 }));
    await waitFor(() => client.status().cursor === head - 2, { description: 'status cursor' });
    expect(client.status()).toMatchObject({ cursor: head - 2, lag: 2 });
    expect(await metrics.render()).toMatch(/quorumkeep_chain_cursor_lag_blocks\{chain="8453"\} 2\b/);
  });

  it('resumes from a saved cursor without duplicates, and catches up a gap in bounded ranges', async () => {
    const first = collector();
    const { client } = followerClient({ confirmations: 0 });
    const follower = client.followEvents({ fromBlock: deployedAt, pollIntervalMs: 20, onEvents: first.onEvents });
    const a = await createSecretOnChain(chain, own, alice.privateKey);
    await waitFor(() => first.events.some((e) => e.name === 'SecretCreated' && e.secretId === a), { description: 'first follower sees secret a' });
    await follower.stop();
    const cursor = lastTo(first);
    expect(follower.nextBlock).toBe(cursor + 1);
    const deliveredBeforeStop = first.toBlocks.length;

    // While stopped: new secrets, and many blocks.
    const b = await createSecretOnChain(chain, own, bob.privateKey);
    await mine(chain, 40);
    const c = await createSecretOnChain(chain, own, carol.privateKey);
    await setDelegateOnChain(chain, own, carol.privateKey, c, alice.address);
    expect(first.toBlocks.length).toBe(deliveredBeforeStop); // nothing after stop()

    const second = collector();
    const { client: restarted } = followerClient({ confirmations: 0 });
    const head = Number(await chain.publicClient.getBlockNumber({ cacheTime: 0 }));
    restarted.followEvents({ fromBlock: cursor + 1, pollIntervalMs: 20, maxBlocksPerQuery: 7, onEvents: second.onEvents });
    await waitFor(() => lastTo(second) >= head, { description: 'restarted follower catches up' });
    expect(second.toBlocks.length).toBeGreaterThanOrEqual(Math.ceil((head - cursor) / 7));

    // Together, exactly what one follower from the deployment block sees.
    const whole = collector();
    const { client: reference } = followerClient({ confirmations: 0 });
    reference.followEvents({ fromBlock: deployedAt, pollIntervalMs: 20, onEvents: whole.onEvents });
    await waitFor(() => lastTo(whole) >= head, { description: 'reference follower' });
    const resumed = [...first.events, ...second.events].filter((e) => e.blockNumber <= head);
    expect(resumed.map(key)).toEqual(whole.events.filter((e) => e.blockNumber <= head).map(key));
    expect(new Set(resumed.map(key)).size).toBe(resumed.length);
    expect(second.events.filter((e) => e.name === 'SecretCreated').map((e) => e.secretId)).toEqual([b, c]);
  });

  it('re-delivers a range whose handler failed (at-least-once), then moves on', async () => {
    const { client } = followerClient({ confirmations: 0 });
    const delivered: ChainEvent[][] = [];
    let failOnce = true;
    const secretId = await createSecretOnChain(chain, own, alice.privateKey);
    client.followEvents({
      fromBlock: deployedAt,
      pollIntervalMs: 20,
      retryBackoffMs: 10,
      onEvents: (events) => {
        if (events.some((e) => e.name === 'SecretCreated' && e.secretId === secretId) && failOnce) {
          failOnce = false;
          throw new Error('database is busy');
        }
        delivered.push([...events]);
      },
    });
    await waitFor(() => delivered.flat().some((e) => e.name === 'SecretCreated' && e.secretId === secretId), { description: 'redelivery' });
    expect(failOnce).toBe(false);
    expect(delivered.flat().filter((e) => e.name === 'SecretCreated' && e.secretId === secretId)).toHaveLength(1);
  });

  it('rides out an RPC outage with backoff and delivers what happened meanwhile', async () => {
    const proxy = await startFlakyProxy(chain.rpcUrl);
    const { client, metrics, logs } = followerClient({ rpcUrl: proxy.url, confirmations: 1 });
    const seen = collector();
    const from = Number(await chain.publicClient.getBlockNumber({ cacheTime: 0 })) + 1;
    client.followEvents({ fromBlock: from, pollIntervalMs: 20, retryBackoffMs: 20, retryBackoffMaxMs: 100, onEvents: seen.onEvents });
    await waitFor(() => seen.toBlocks.length > 0 || client.status().head !== null, { description: 'follower running' });

    proxy.down = true;
    const secretId = await createSecretOnChain(chain, own, alice.privateKey);
    await mine(chain, 1);
    // Long enough for a whole read (all its attempts) to fail and the follower to back off.
    await waitFor(() => logs.raw().includes('event follower: chain read failed'), { description: 'follower backing off' });
    expect(client.status()).toMatchObject({ reachable: false, lastError: 'HTTP 503' });
    expect(await rpcErrors(metrics)).toBeGreaterThan(0);
    expect(seen.events).toEqual([]);

    proxy.down = false;
    await waitFor(() => seen.events.some((e) => e.name === 'SecretCreated' && e.secretId === secretId), { description: 'delivered after the outage' });
    expect(client.status().reachable).toBe(true);
    expect(logs.raw()).not.toContain(API_KEY);
  });

  it('one follower per client; stop() is idempotent', async () => {
    const { client } = followerClient();
    const follower = client.followEvents({ fromBlock: deployedAt, pollIntervalMs: 20, onEvents: () => undefined });
    expect(() => client.followEvents({ fromBlock: deployedAt, onEvents: () => undefined })).toThrow(/already being followed/);
    await Promise.all([follower.stop(), follower.stop(), client.stop()]);
    await client.stop();
  });
});

describe('createChainClients', () => {
  it('serves each configured chain by id and reports every status', async () => {
    const { logger } = captureLogger();
    const clients = await createChainClients(
      [
        { chainId: 8453, name: 'Base', rpcUrl: chain.rpcUrl, secretsControllerAddress: controller, blockTimeMs: 2000 },
        { chainId: 84532, name: 'Base Sepolia', rpcUrl: `https://sepolia.example/rpc/${API_KEY}`, blockTimeMs: 2000 },
      ],
      { logger },
    );
    cleanups.push(() => clients.stop());
    expect(clients.get(8453)?.name).toBe('Base');
    expect(clients.get(1)).toBeUndefined();
    expect(await clients.get(8453)?.blockNumber()).toBe(Number(await chain.publicClient.getBlockNumber({ cacheTime: 0 })));
    expect(clients.status().map((s) => [s.chainId, s.rpcUrl, s.secretsControllerAddress])).toEqual([
      [8453, chain.rpcUrl, controller.toLowerCase()],
      [84532, 'https://sepolia.example/[redacted]', null],
    ]);
  });
});
