/**
 * `npm start` with Web3 and nothing else to do (docs/web3.md, "Local chain"): `quorumkeep local` as a
 * real process runs anvil, deploys the controller, whitelists and funds the syncer, and every node
 * has the chain; a wallet creates a secret on chain and it round-trips through the coordinators. A
 * restart keeps the secret (anvil's state file), binds the ports of its flags and applies `QK_*`;
 * Ctrl-C stops anvil, and so does the parent's death; `--no-chain` runs without a chain. Then
 * `quorumkeep chain deploy-controller` against a fresh anvil.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { createPublicClient, createWalletClient, http, parseEventLogs, type Address, type Hex } from 'viem';
import { mnemonicToAccount } from 'viem/accounts';
import { getFreePortRange, waitFor } from 'quorumkeep/testing';
import { chainSchema, loadConfig } from '../../src/config/index.ts';
import { secretsControllerAbi } from '../../src/evm/secrets-controller-abi.ts';
import { fromHex, signPersonalMessage } from '../../src/crypto/index.ts';
import { getJson, postJson } from '../utils/http.ts';
import { cleanupStack, tempDir } from '../utils/temp.ts';
import { startAnvil, type AnvilChain } from '../utils/anvil.ts';
import { runCli } from '../utils/process-cluster.ts';
import { ANVIL_MNEMONIC, LOCAL_CHAIN_ID, interrupt, localViemChain, startLocal, type LocalProcess } from '../utils/local-process.ts';

const SIZE = 5;

const stack = cleanupStack();
afterAll(() => stack.run());

/** What the CLI printed, without the nodes' JSON log lines. */
function printedLines(local: LocalProcess): string[] {
  return local
    .output()
    .split('\n')
    .filter((line) => line.trim() !== '' && !line.startsWith('{'));
}

interface HealthChain {
  chainId: number;
  rpcUrl: string;
  secretsControllerAddress?: string;
  blockTimeMs: number;
}

async function chainsOf(url: string): Promise<HealthChain[]> {
  const health = await getJson<{ configurations: { chains: HealthChain[] }; supportedChains: number[] }>(`${url}/healthz`);
  return health.body.configurations.chains;
}

/** Whether anything answers JSON-RPC at `rpcUrl`. */
async function rpcAnswers(rpcUrl: string): Promise<boolean> {
  try {
    const res = await fetch(rpcUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] }) });
    return res.ok;
  } catch {
    return false;
  }
}

describe('quorumkeep local (npm start) with its local chain', () => {
  const wallet = mnemonicToAccount(ANVIL_MNEMONIC, { addressIndex: 1 });
  const walletKey = ('0x' + Buffer.from(wallet.getHdKey().privateKey!).toString('hex')) as Hex;
  let dir: string;
  let ports: { base: number; http: number; operator: number; http2: number };
  let local: LocalProcess;
  let controller: Address;
  let rpcUrl: string;
  let secretId: bigint;
  let sealed: { cifer: string; encryptedMessage: string };

  beforeAll(async () => {
    dir = join(await tempDir(stack, 'qk-local-chain-'), 'data');
    // One free range: libp2p, HTTP and operator ports, and the second run's HTTP ports.
    const base = await getFreePortRange(4 * SIZE);
    ports = { base, operator: base + SIZE, http: base + 2 * SIZE, http2: base + 3 * SIZE };
  });

  const portArgs = (http: number) => ['--base-port', String(ports.base), '--http-base-port', String(http), '--operator-base-port', String(ports.operator), '--chain-port', '0'];

  async function head(): Promise<number> {
    return Number(await createPublicClient({ chain: localViemChain(rpcUrl), transport: http(rpcUrl) }).getBlockNumber({ cacheTime: 0 }));
  }

  /** The wallet's signed string `<chain>_<secret>_<wallet>_<block>[_extra]`. */
  async function signed(id: bigint, ...extra: string[]) {
    const data = [LOCAL_CHAIN_ID, id, wallet.address, await head(), ...extra].join('_');
    return { data, signature: signPersonalMessage(data, fromHex(walletKey)) };
  }

  /** createSecret() as the wallet, through the controller; the id from SecretCreated. */
  async function createSecret(): Promise<bigint> {
    const chain = localViemChain(rpcUrl);
    const client = createWalletClient({ account: wallet, chain, transport: http(rpcUrl) });
    const reader = createPublicClient({ chain, transport: http(rpcUrl), pollingInterval: 100 });
    const hash = await client.writeContract({ address: controller, abi: secretsControllerAbi, functionName: 'createSecret', args: [] });
    const receipt = await reader.waitForTransactionReceipt({ hash, pollingInterval: 100 });
    const [created] = parseEventLogs({ abi: secretsControllerAbi, eventName: 'SecretCreated', logs: receipt.logs });
    return created!.args.secretId;
  }

  /** Until the syncer dealt the secret and marked it synced, and every coordinator serves its key. */
  async function served(id: bigint): Promise<void> {
    const reader = createPublicClient({ chain: localViemChain(rpcUrl), transport: http(rpcUrl) });
    await waitFor(
      async () => {
        const [, , isSyncing] = await reader.readContract({ address: controller, abi: secretsControllerAbi, functionName: 'getSecretState', args: [id] });
        if (isSyncing) return false;
        const keys = await Promise.all(local.coordinators.map((url) => getJson(`${url}/secret-public-key/${LOCAL_CHAIN_ID}/${id}`)));
        return keys.every((k) => k.status === 200);
      },
      { timeoutMs: 30_000, intervalMs: 100, description: `secret ${id} synced and served` },
    );
  }

  it('advertises the chain on /healthz; a wallet creates a secret on it, the cluster deals it, and a payload round-trips', async () => {
    local = await startLocal(stack, dir, portArgs(ports.http));
    expect(local.coordinators).toEqual([`http://127.0.0.1:${ports.http}`, `http://127.0.0.1:${ports.http + 1}`]);
    const [A, B] = local.coordinators as [string, string];
    const chains = await chainsOf(A);
    const entry = chains.find((c) => c.chainId === LOCAL_CHAIN_ID);
    expect(entry).toMatchObject({ rpcUrl: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/), secretsControllerAddress: expect.stringMatching(/^0x[0-9a-f]{40}$/) });
    // The default chain stays listed next to it, and every coordinator says the same.
    expect(chains.map((c) => c.chainId)).toContain(8453);
    expect(await chainsOf(B)).toEqual(chains);
    rpcUrl = entry!.rpcUrl;
    controller = entry!.secretsControllerAddress as Address;
    const reader = createPublicClient({ chain: localViemChain(rpcUrl), transport: http(rpcUrl) });
    expect(await reader.getChainId()).toBe(LOCAL_CHAIN_ID);
    expect(await reader.getCode({ address: controller })).toMatch(/^0x[0-9a-f]{2,}/);
    // Without QK_HTTP_METRICS_PUBLIC, /metrics needs the admin token.
    expect((await fetch(`${A}/metrics`)).status).toBe(401);

    secretId = await createSecret();
    await served(secretId);
    const enc = await postJson<{ cifer: string; encryptedMessage: string }>(`${A}/encrypt-payload`, await signed(secretId, 'gm from a wallet'));
    expect(enc.status, JSON.stringify(enc.body)).toBe(200);
    sealed = enc.body;
    const dec = await postJson<{ decryptedMessage: string }>(`${B}/decrypt-payload`, { cifer: sealed.cifer, ...(await signed(secretId, sealed.encryptedMessage)) });
    expect(dec.status, JSON.stringify(dec.body)).toBe(200);
    expect(dec.body.decryptedMessage).toBe('gm from a wallet');
  });

  it('Ctrl-C stops the chain; a rerun keeps the secret, binds its new --http-base-port and applies QK_* variables', async () => {
    expect(await interrupt(local)).toBe(0);
    expect(await rpcAnswers(rpcUrl)).toBe(false);
    const oldA = local.coordinators[0]!;

    local = await startLocal(stack, dir, portArgs(ports.http2), { QK_HTTP_METRICS_PUBLIC: 'true' });
    expect(local.coordinators).toEqual([`http://127.0.0.1:${ports.http2}`, `http://127.0.0.1:${ports.http2 + 1}`]);
    const [A, B] = local.coordinators as [string, string];
    await expect(fetch(`${oldA}/healthz`)).rejects.toThrow();
    expect((await fetch(`${A}/metrics`)).status).toBe(200);
    // The coordinators know each other at the new ports.
    const health = await getJson<{ clusterMap: Record<string, { httpUrl?: string }> }>(`${B}/healthz`);
    expect(Object.values(health.body.clusterMap).map((m) => m.httpUrl).filter(Boolean)).toEqual([A, B]);

    const entry = (await chainsOf(A)).find((c) => c.chainId === LOCAL_CHAIN_ID)!;
    expect(entry.secretsControllerAddress).toBe(controller);
    rpcUrl = entry.rpcUrl;
    const reader = createPublicClient({ chain: localViemChain(rpcUrl), transport: http(rpcUrl) });
    const [owner, , isSyncing] = await reader.readContract({ address: controller, abi: secretsControllerAbi, functionName: 'getSecretState', args: [secretId] });
    expect({ owner, isSyncing }).toEqual({ owner: wallet.address, isSyncing: false });
    // The syncer goes on where it stopped: a new secret is dealt too.
    const next = await createSecret();
    expect(next).toBe(secretId + 1n);
    await served(next);
    // The first run's ciphertext, decrypted again: its string signs a later block (a decrypt string is single-use).
    const dec = await postJson<{ decryptedMessage: string }>(`${B}/decrypt-payload`, { cifer: sealed.cifer, ...(await signed(secretId, sealed.encryptedMessage)) });
    expect(dec.status, JSON.stringify(dec.body)).toBe(200);
    expect(dec.body.decryptedMessage).toBe('gm from a wallet');
  });

  it('the chain does not outlive its parent; --no-chain runs the cluster without it', async () => {
    local.child.kill('SIGKILL');
    await local.exited;
    await waitFor(async () => !(await rpcAnswers(rpcUrl)), { timeoutMs: 10_000, description: 'anvil gone after its parent was killed' });

    local = await startLocal(stack, dir, [...portArgs(ports.http), '--no-chain']);
    const health = await getJson<{ supportedChains: number[] }>(`${local.coordinators[0]}/healthz`);
    expect(health.body.supportedChains).not.toContain(LOCAL_CHAIN_ID);
    const plain = printedLines(local);
    expect(await interrupt(local)).toBe(0);

    // Where there is no anvil binary, the cluster starts without a chain, and says so in one more line.
    local = await startLocal(stack, dir, portArgs(ports.http), { QK_ANVIL_BIN: join(dir, 'no-anvil-here') });
    const without = await getJson<{ supportedChains: number[] }>(`${local.coordinators[0]}/healthz`);
    expect(without.body.supportedChains).not.toContain(LOCAL_CHAIN_ID);
    expect(printedLines(local)).toHaveLength(plain.length + 1);
    expect(await interrupt(local)).toBe(0);
  });
});

describe('quorumkeep chain deploy-controller', () => {
  let chain: AnvilChain;
  beforeAll(async () => {
    chain = await startAnvil({ chainId: 84532 });
    stack.push(() => chain.stop());
  });

  it('deploys with the key from QK_DEPLOYER_KEY, whitelists, and prints an address with code and a valid chains entry', async () => {
    const [owner, syncer] = chain.accounts as [{ address: Address; privateKey: Hex }, { address: Address }];
    const result = await runCli(['chain', 'deploy-controller', '--rpc-url', chain.rpcUrl, '--whitelist', syncer.address], { env: { QK_DEPLOYER_KEY: owner.privateKey } });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout + result.stderr).not.toContain(owner.privateKey.slice(2));
    const address = /^deployed SecretsController at (0x[0-9a-fA-F]{40}) /m.exec(result.stdout)?.[1] as Address;
    expect(await chain.publicClient.getCode({ address })).toMatch(/^0x[0-9a-f]{2,}/);
    expect(await chain.publicClient.readContract({ address, abi: secretsControllerAbi, functionName: 'owner' })).toBe(owner.address);
    expect(await chain.publicClient.readContract({ address, abi: secretsControllerAbi, functionName: 'isBlackBoxWhitelisted', args: [syncer.address] })).toBe(true);

    const snippet = JSON.parse(result.stdout.slice(result.stdout.indexOf('\n{') + 1)) as Record<string, unknown>;
    expect(chainSchema.safeParse(snippet).success).toBe(true);
    expect(snippet).toMatchObject({ chainId: 84532, rpcUrl: chain.rpcUrl, secretsControllerAddress: address });
    const config = loadConfig({ env: {}, flags: { clusterFile: 'cluster.json', nodeId: 'node-0', dataDir: 'data', chains: [{ ...snippet, syncer: true }] } });
    expect(config.chains[0]).toMatchObject({ chainId: 84532, secretsControllerAddress: address, syncer: true });
  });

  it('refuses to run without a key, or with a malformed one (exit 2, one line)', async () => {
    const none = await runCli(['chain', 'deploy-controller', '--rpc-url', chain.rpcUrl], { env: { QK_DEPLOYER_KEY: '' } });
    expect(none.code).toBe(2);
    expect(none.stderr.trimEnd().split('\n')).toHaveLength(1);
    const bad = await runCli(['chain', 'deploy-controller', '--rpc-url', chain.rpcUrl, '--private-key', '0x1234']);
    expect(bad.code).toBe(2);
    expect(bad.stderr.trimEnd().split('\n')).toHaveLength(1);
  });
});
