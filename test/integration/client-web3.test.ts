/**
 * `quorumkeep/client` signing as a Web3 wallet (docs/client.md, "Web3"), against a real local chain
 * (anvil, a test secrets controller) and a cluster following it: the latest block read from the RPC
 * the coordinator lists in `/healthz`, a payload and a file round trip, a block given too old retried
 * once with the chain's latest, and a wallet that is not the owner refused.
 * 3 members, 2 coordinators; node 0 is the chain's syncer.
 */
import { writeFile, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Address } from 'viem';
import { startLocalCluster, waitFor, type LocalCluster } from 'quorumkeep/testing';
import { createClient, type ClientDeps, type QuorumkeepClient, type WalletOptions } from 'quorumkeep/client';
import { getJson } from '../utils/http.ts';
import { createSecretOnChain, deployController, fund, headOf, mine, readSecretState, startAnvil, whitelist, type AnvilChain, type DevAccount } from '../utils/anvil.ts';
import { patterned } from '../utils/files.ts';
import { cleanupStack, tempDir } from '../utils/temp.ts';

const CHAIN_ID = 8453;
const BLOCK_TIME_MS = 500;
/** `ceil(600000 / blockTimeMs)`: how far behind the head a signed block may be. */
const WINDOW = 1200;
const CHUNK = 1000;

let chain: AnvilChain;
let controller: Address;
let cluster: LocalCluster;
let A: string;
let B: string;
let owner: DevAccount;
let stranger: DevAccount;
let secretId: number;
let work: string;
const stack = cleanupStack();
const clients: QuorumkeepClient[] = [];

function walletClient(url: string, account: DevAccount, wallet: Partial<WalletOptions> = {}, deps: ClientDeps = {}): QuorumkeepClient {
  const client = createClient({ url, pollIntervalMs: 50, wallet: { privateKey: account.privateKey, chainId: CHAIN_ID, ...wallet } }, deps);
  clients.push(client);
  return client;
}

beforeAll(async () => {
  chain = await startAnvil({ chainId: CHAIN_ID });
  controller = await deployController(chain);
  // A chain longer than the freshness window, so that a block can be too old.
  await mine(chain, WINDOW + 50);
  const chainConfig = { chainId: CHAIN_ID, name: 'Base (anvil)', rpcUrl: chain.rpcUrl, secretsControllerAddress: controller, blockTimeMs: BLOCK_TIME_MS, confirmations: 2 };
  cluster = await startLocalCluster({
    size: 3,
    threshold: 2,
    coordinators: 2,
    nodeConfig: { chains: [chainConfig], files: { chunkBytes: CHUNK } },
    nodeConfigFor: (i) => (i === 0 ? { chains: [{ ...chainConfig, syncer: true }] } : {}),
  });
  [A, B] = cluster.coordinators as [string, string];
  [, owner, stranger] = chain.accounts as [DevAccount, DevAccount, DevAccount];
  const syncer = cluster.descriptor.nodes[0]!.nodeAddress as Address;
  await fund(chain, syncer, '1');
  await whitelist(chain, controller, syncer);
  secretId = Number(await createSecretOnChain(chain, controller, owner.privateKey));
  // Mined a block at a time until the cluster synced it and both coordinators serve its key.
  await waitFor(
    async () => {
      await mine(chain, 1);
      if ((await readSecretState(chain, controller, BigInt(secretId))).isSyncing) return undefined;
      const keys = await Promise.all([A, B].map((url) => getJson(`${url}/secret-public-key/${CHAIN_ID}/${secretId}`)));
      return keys.every((k) => k.status === 200) || undefined;
    },
    { timeoutMs: 60_000, intervalMs: 100, description: `secret ${secretId} synced and served` },
  );
  work = await tempDir(stack, 'qk-client-web3-');
}, 120_000);

afterAll(async () => {
  for (const c of clients) c.close();
  await cluster?.stop();
  await chain?.stop();
  await stack.run();
});

describe('a Web3 wallet', () => {
  it('encrypts and decrypts with the latest block of the RPC the coordinator lists, through either coordinator', async () => {
    const rpcCalls: string[] = [];
    const watching: typeof fetch = (input, init) => {
      if (String(input) === chain.rpcUrl) rpcCalls.push(JSON.parse(String(init?.body)).method as string);
      return fetch(input, init);
    };
    const atA = walletClient(A, owner, {}, { fetch: watching });
    const sealed = await atA.encrypt({ secretId, plaintext: 'from a wallet_with underscores' });
    expect(sealed).toMatchObject({ chainId: CHAIN_ID, secretId });
    expect(rpcCalls).toEqual(['eth_blockNumber']);
    await expect(walletClient(B, owner).decrypt(sealed)).resolves.toBe('from a wallet_with underscores');
  });

  it('a block given too old is refused once, then signed again with the chain\'s latest', async () => {
    const stale = (await headOf(chain)) - WINDOW - 10;
    const sent: string[] = [];
    const watching: typeof fetch = (input, init) => {
      sent.push(String(input) === chain.rpcUrl ? 'rpc' : new URL(String(input)).pathname);
      return fetch(input, init);
    };
    const late = walletClient(A, owner, { blockNumber: stale, rpcUrl: chain.rpcUrl }, { fetch: watching });
    const sealed = await late.encrypt({ secretId, plaintext: 'late' });
    expect(sent).toEqual(['/encrypt-payload', 'rpc', '/encrypt-payload']);
    await expect(late.decrypt(sealed)).resolves.toBe('late');
    // A block source that only knows the stale block: the refusal stands, with the server's code.
    const stuck = walletClient(A, owner, { blockNumber: async () => stale });
    await expect(stuck.encrypt({ secretId, plaintext: 'x' })).rejects.toMatchObject({ status: 400, code: 'BAD_REQUEST' });
  });

  it('a file round trip; a wallet that is not the owner cannot decrypt', async () => {
    const input = join(work, 'wallet.bin');
    const content = patterned(CHUNK * 2 + 5, 9);
    await writeFile(input, content);
    const client = walletClient(A, owner);
    const encrypted = await client.encryptFile({ secretId, path: input, out: join(work, 'wallet.cifer') });
    const decrypted = await walletClient(B, owner).decryptFile({ secretId, path: encrypted.out, out: join(work, 'wallet.out') });
    expect(await readFile(decrypted.out)).toEqual(content);

    const sealed = await client.encrypt({ secretId, plaintext: 'owner only' });
    await expect(walletClient(A, stranger).decrypt(sealed)).rejects.toMatchObject({ status: 403, code: 'FORBIDDEN' });
  });
});
