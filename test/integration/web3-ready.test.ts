/**
 * "Ready" means ready (docs/web3.md, "Serving a secret"): the real client (cifer-sdk) waits until
 * `getSecretState` at the latest block shows the secret synced (`isSecretReady`,
 * `createSecretAndWaitReady`) and then encrypts once, without retrying. Coordinators judge by their
 * confirmed view (head − confirmations, the head cached for a block time), which is behind that, so
 * they re-read the latest block before refusing a secret as syncing or unknown. And the refusal
 * names the secret, in the form the client maps to its `SecretNotReadyError`.
 *
 * A real chain that mines on its own (anvil, one block a second) with 3 confirmations: before the
 * re-read, both coordinators answered 403 for about 3 s after the client's "ready", and 404 right
 * after creation. 3 members, 2 coordinators.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeFunctionResult, encodeFunctionData, type Address, type Hex } from 'viem';
import { startLocalCluster, waitFor, type LocalCluster } from 'quorumkeep/testing';
import { secretsControllerAbi } from '../../src/evm/secrets-controller-abi.ts';
import { fromHex, signPersonalMessage } from '../../src/crypto/index.ts';
import { getJson, postJson, type JsonResponse } from '../utils/http.ts';
import { clientRpc, createSecretOnChain, deployController, fund, headOf, readSecretState, revertReasonOf, startAnvil, whitelist, type AnvilChain, type DevAccount } from '../utils/anvil.ts';

const CHAIN_ID = 8453;
const BLOCK_TIME_S = 1;
const CONFIRMATIONS = 3;
const SYNCER = 0;
/** Secrets taken through create → ready → encrypt, one after the other. */
const ROUNDS = 4;

let chain: AnvilChain;
let controller: Address;
let cluster: LocalCluster;
let coordinators: string[];
let wallets: DevAccount[];

beforeAll(async () => {
  chain = await startAnvil({ chainId: CHAIN_ID, blockTimeSeconds: BLOCK_TIME_S });
  controller = await deployController(chain);
  const chainConfig = { chainId: CHAIN_ID, name: 'Base (anvil)', rpcUrl: chain.rpcUrl, secretsControllerAddress: controller, blockTimeMs: BLOCK_TIME_S * 1000, confirmations: CONFIRMATIONS };
  cluster = await startLocalCluster({
    size: 3,
    threshold: 2,
    coordinators: 2,
    nodeConfig: { chains: [chainConfig] },
    nodeConfigFor: (i) => (i === SYNCER ? { chains: [{ ...chainConfig, syncer: true }] } : {}),
  });
  coordinators = cluster.coordinators;
  wallets = chain.accounts.slice(1, 1 + ROUNDS);
  const syncer = cluster.descriptor.nodes[SYNCER]!.nodeAddress as Address;
  await fund(chain, syncer, '1');
  await whitelist(chain, controller, syncer);
  // The confirmed view reads `confirmations` below the head: until then it finds no contract there.
  const deployed = await headOf(chain);
  await waitFor(async () => (await headOf(chain)) > deployed + CONFIRMATIONS, { timeoutMs: 30_000, description: 'the controller confirmations deep' });
}, 120_000);
afterAll(async () => {
  await cluster?.stop();
  await chain?.stop();
});

/** The client's `isSecretReady`: `getSecretState` by eth_call at "latest"; ready when not syncing and the cid is set. */
async function isSecretReady(secretId: bigint): Promise<boolean> {
  const data = encodeFunctionData({ abi: secretsControllerAbi, functionName: 'getSecretState', args: [secretId] });
  const result = await clientRpc<Hex>(chain, 'eth_call', [{ to: controller, data }, 'latest']);
  const [, , isSyncing, , , publicKeyCid] = decodeFunctionResult({ abi: secretsControllerAbi, functionName: 'getSecretState', data: result });
  return !isSyncing && publicKeyCid !== '';
}

/** The client's block for a signed string: `eth_blockNumber` on its RPC. */
async function clientBlock(): Promise<number> {
  return Number.parseInt(await clientRpc<string>(chain, 'eth_blockNumber', []), 16);
}

/**
 * The secret id the client's `parseBlackboxErrorResponse` finds in an error message for its
 * `SecretNotReadyError`, or undefined when it would not map the message to one.
 */
function clientNotReadyId(message: string): bigint | undefined {
  if (!message.includes('is syncing') && !message.includes('not ready')) return undefined;
  const match = /secret\s*(\d+)/i.exec(message);
  return match ? BigInt(match[1]!) : undefined;
}

async function encrypt(url: string, wallet: DevAccount, secretId: bigint, text: string): Promise<JsonResponse<{ cifer: string; encryptedMessage: string; error?: string; code?: string }>> {
  const data = [CHAIN_ID, secretId, wallet.address, await clientBlock(), text].join('_');
  return postJson(`${url}/encrypt-payload`, { data, signature: signPersonalMessage(data, fromHex(wallet.privateKey)) });
}

async function decrypt(url: string, wallet: DevAccount, secretId: bigint, enc: { cifer: string; encryptedMessage: string }): Promise<JsonResponse<{ decryptedMessage: string }>> {
  const data = [CHAIN_ID, secretId, wallet.address, await clientBlock(), enc.encryptedMessage].join('_');
  return postJson(`${url}/decrypt-payload`, { cifer: enc.cifer, data, signature: signPersonalMessage(data, fromHex(wallet.privateKey)) });
}

describe("after the client's readiness check", () => {
  it('encrypt succeeds at once on both coordinators, and decrypt right after; before that, the refusal names the secret as syncing', async () => {
    /** Per round: whether, when both coordinators encrypted, the secret was still syncing `confirmations` below the head. */
    const insideWindow: boolean[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const wallet = wallets[round]!;
      const secretId = await createSecretOnChain(chain, controller, wallet.privateKey);

      // Right after creation: on chain, not keyed yet (the syncer waits for confirmations). Both
      // coordinators say so in the form the client turns into SecretNotReadyError(secretId).
      const early = await Promise.all(coordinators.map((url) => encrypt(url, wallet, secretId, 'too early')));
      for (const res of early) {
        expect(res.status, JSON.stringify(res.body)).toBe(403);
        expect(res.body).toEqual({ error: `Secret ${secretId} is syncing; try again shortly`, code: 'FORBIDDEN' });
        expect(clientNotReadyId(res.body.error!)).toBe(secretId);
      }
      const key = await getJson<{ error: string; code: string }>(`${coordinators[1]}/secret-public-key/${CHAIN_ID}/${secretId}`);
      expect(key.status).toBe(403);
      expect(clientNotReadyId(key.body.error)).toBe(secretId);

      // The client polls isSecretReady and encrypts on the first "ready": here on both coordinators.
      await waitFor(() => isSecretReady(secretId), { timeoutMs: 60_000, intervalMs: 20, description: `secret ${secretId} ready at the latest block` });
      const text = `first try ${round}`;
      const encrypted = await Promise.all(coordinators.map((url) => encrypt(url, wallet, secretId, text)));
      const head = await clientBlock();
      insideWindow.push((await readSecretState(chain, controller, secretId, head - CONFIRMATIONS).catch(() => undefined))?.isSyncing ?? true);
      for (const res of encrypted) expect(res.status, JSON.stringify(res.body)).toBe(200);

      // Decrypt right away, on the other coordinator: the members release their shares as well.
      const [onA, onB] = encrypted as [(typeof encrypted)[0], (typeof encrypted)[0]];
      const opened = await Promise.all([decrypt(coordinators[1]!, wallet, secretId, onA.body), decrypt(coordinators[0]!, wallet, secretId, onB.body)]);
      for (const res of opened) {
        expect(res.status, JSON.stringify(res.body)).toBe(200);
        expect(res.body.decryptedMessage).toBe(text);
      }
    }
    // The test ran inside the window it is about: the confirmed view still said "syncing".
    expect(insideWindow.some(Boolean), 'no round encrypted while the sync was under confirmations').toBe(true);
  }, 180_000);
});

describe('a secret id the chain does not know', () => {
  it('is 404 on both coordinators, and the controller reverts "Secret not found" (the client\'s SecretNotFoundError)', async () => {
    const unknown = 999_999n;
    for (const url of coordinators) {
      const res = await encrypt(url, wallets[0]!, unknown, 'nobody');
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ error: `Secret ${unknown} not found on chain ${CHAIN_ID}`, code: 'NOT_FOUND' });
      expect(clientNotReadyId(res.body.error!)).toBeUndefined();
    }
    expect(await revertReasonOf(readSecretState(chain, controller, unknown))).toBe('Secret not found');
  });
});
