/**
 * The local test chain (docs/web3.md § "Test chain"): anvil starts fast, and the test secrets
 * controller compiles to exactly the repository's ABI and behaves as the cluster expects.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeFunctionResult, encodeFunctionData, parseEventLogs, zeroAddress, type Address, type Hex, type TransactionReceipt } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { secretsControllerAbi } from '../../src/evm/secrets-controller-abi.ts';
import { compileSecretsController } from '../../scripts/build-contract.ts';
import artifact from '../../src/evm/artifacts/secrets-controller.json' with { type: 'json' };
import {
  clientRpc,
  createSecretOnChain,
  deployController,
  fund,
  markSecretSyncedOnChain,
  mine,
  readSecretState,
  revertReasonOf,
  setDelegateOnChain,
  startAnvil,
  transferSecretOnChain,
  whitelist,
  type AnvilChain,
  type DevAccount,
} from '../utils/anvil.ts';

interface AbiParam {
  name?: string;
  type: string;
  indexed?: boolean;
  components?: AbiParam[];
}
interface AbiEntry {
  type: string;
  name?: string;
  inputs?: AbiParam[];
  outputs?: AbiParam[];
  stateMutability?: string;
  anonymous?: boolean;
}

/** An ABI without `internalType` (compiler noise), entries sorted by kind and signature. */
function normalizeAbi(abi: readonly unknown[]): AbiEntry[] {
  const param = (p: AbiParam): AbiParam => ({
    name: p.name ?? '',
    type: p.type,
    ...(p.indexed === undefined ? {} : { indexed: p.indexed }),
    ...(p.components ? { components: p.components.map(param) } : {}),
  });
  const entry = (e: AbiEntry): AbiEntry => ({
    type: e.type,
    ...(e.name === undefined ? {} : { name: e.name }),
    ...(e.inputs ? { inputs: e.inputs.map(param) } : {}),
    ...(e.outputs ? { outputs: e.outputs.map(param) } : {}),
    ...(e.stateMutability === undefined ? {} : { stateMutability: e.stateMutability }),
    ...(e.anonymous === undefined ? {} : { anonymous: e.anonymous }),
  });
  const key = (e: AbiEntry) => `${e.type} ${e.name ?? ''}(${(e.inputs ?? []).map((p) => p.type).join(',')})`;
  return (abi as AbiEntry[]).map(entry).sort((a, b) => key(a).localeCompare(key(b)));
}

function account(chain: AnvilChain, i: number): DevAccount {
  const a = chain.accounts[i];
  if (!a) throw new Error(`no dev account ${i}`);
  return a;
}

function eventsOf<N extends 'SecretCreated' | 'SecretSynced' | 'DelegateUpdated' | 'SecretOwnershipTransferred'>(receipt: TransactionReceipt, eventName: N) {
  return parseEventLogs({ abi: secretsControllerAbi, eventName, logs: receipt.logs });
}

describe('the test secrets controller artifact', () => {
  it('has exactly the ABI of src/evm (ignoring order and internalType)', () => {
    expect(normalizeAbi(artifact.abi)).toEqual(normalizeAbi(secretsControllerAbi));
  });

  it('is what contracts/SecretsController.sol compiles to (run npm run build:contract)', async () => {
    const fresh = await compileSecretsController();
    expect(fresh.solcVersion).toBe(artifact.solcVersion);
    expect(fresh.abi).toEqual(artifact.abi);
    expect(fresh.bytecode).toBe(artifact.bytecode);
  });
});

describe('anvil with the test secrets controller', () => {
  let chain: AnvilChain;
  let controller: Address;
  let owner: DevAccount; // deploys and owns the controller
  let alice: DevAccount;
  let bob: DevAccount;
  let carol: DevAccount;
  // The designated node: a fresh key, funded and whitelisted as the cluster's would be.
  const nodeKey: Hex = generatePrivateKey();
  const nodeAddress = privateKeyToAccount(nodeKey).address;

  beforeAll(async () => {
    chain = await startAnvil({ chainId: 8453 });
    [owner, alice, bob, carol] = [account(chain, 0), account(chain, 1), account(chain, 2), account(chain, 3)];
    controller = await deployController(chain);
  });
  afterAll(async () => {
    await chain?.stop();
  });

  // How fast anvil starts is the bench's figure (`npm run bench -- web3`), not this test's.
  it('starts on chain 8453 with the ten funded dev accounts', async () => {
    expect(chain.rpcUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(chain.wsUrl).toBe(chain.rpcUrl.replace('http:', 'ws:'));
    expect(await chain.publicClient.getChainId()).toBe(8453);
    expect(chain.accounts).toHaveLength(10);
    expect(owner.address).toBe('0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266');
    expect(await chain.publicClient.getBalance({ address: alice.address })).toBe(10_000n * 10n ** 18n);
  });

  it('is initialized: owner, first id 1, default type 1, no fee', async () => {
    const read = <F extends 'owner' | 'nextSecretId' | 'defaultSecretType' | 'secretCreationFee'>(functionName: F) =>
      chain.publicClient.readContract({ address: controller, abi: secretsControllerAbi, functionName });
    expect(await read('owner')).toBe(owner.address);
    expect(await read('nextSecretId')).toBe(1n);
    expect(await read('defaultSecretType')).toBe(1);
    expect(await read('secretCreationFee')).toBe(0n);
    const again = chain.walletClient(owner.privateKey).writeContract({ address: controller, abi: secretsControllerAbi, functionName: 'initialize', args: [0n, 1] });
    expect(await revertReasonOf(again)).toBe('already initialized');
  });

  it('createSecret assigns ids 1, 2, … and emits SecretCreated; the new secret is syncing with no cid', async () => {
    const first = await createSecretOnChain(chain, controller, alice.privateKey);
    const second = await createSecretOnChain(chain, controller, alice.privateKey, { secretType: 2 });
    expect([first, second]).toEqual([1n, 2n]);

    const logs = await chain.publicClient.getContractEvents({ address: controller, abi: secretsControllerAbi, eventName: 'SecretCreated', fromBlock: 0n });
    expect(logs.map((l) => l.args)).toEqual([
      { secretId: 1n, owner: alice.address, secretType: 1 },
      { secretId: 2n, owner: alice.address, secretType: 2 },
    ]);
    expect(await readSecretState(chain, controller, first)).toEqual({
      owner: alice.address,
      delegate: zeroAddress,
      isSyncing: true,
      clusterId: 0,
      secretType: 1,
      publicKeyCid: '',
    });
    const [owned, delegated] = await chain.publicClient.readContract({ address: controller, abi: secretsControllerAbi, functionName: 'getSecretsByWallet', args: [alice.address] });
    expect([...owned].sort()).toEqual([1n, 2n]);
    expect(delegated).toEqual([]);
  });

  it('markSecretSynced: refused unless whitelisted, then once, "already synced" after', async () => {
    const secretId = await createSecretOnChain(chain, controller, alice.privateKey);
    await fund(chain, nodeAddress, '1');
    expect(await chain.publicClient.getBalance({ address: nodeAddress })).toBe(10n ** 18n);

    expect(await revertReasonOf(markSecretSyncedOnChain(chain, controller, nodeKey, secretId))).toBe('caller is not a whitelisted black box');

    await whitelist(chain, controller, nodeAddress);
    expect(await chain.publicClient.readContract({ address: controller, abi: secretsControllerAbi, functionName: 'isBlackBoxWhitelisted', args: [nodeAddress] })).toBe(true);
    expect(await chain.publicClient.readContract({ address: controller, abi: secretsControllerAbi, functionName: 'getAllBlackBoxes' })).toEqual([nodeAddress]);

    const receipt = await markSecretSyncedOnChain(chain, controller, nodeKey, secretId, { clusterId: 3, publicKeyCid: 'cifer' });
    expect(eventsOf(receipt, 'SecretSynced').map((e) => e.args)).toEqual([{ secretId, clusterId: 3, publicKeyCid: 'cifer' }]);
    expect(await readSecretState(chain, controller, secretId)).toMatchObject({ isSyncing: false, clusterId: 3, publicKeyCid: 'cifer' });

    expect(await revertReasonOf(markSecretSyncedOnChain(chain, controller, nodeKey, secretId))).toBe('already synced');
    expect(await revertReasonOf(markSecretSyncedOnChain(chain, controller, nodeKey, 999n))).toBe('Secret not found');
    const tooLong = 'x'.repeat(129);
    const other = await createSecretOnChain(chain, controller, alice.privateKey);
    expect(await revertReasonOf(markSecretSyncedOnChain(chain, controller, nodeKey, other, { publicKeyCid: tooLong }))).toBe('publicKeyCid too long');
  });

  it('setDelegate and transferSecret: only the secret owner; events and state follow', async () => {
    const secretId = await createSecretOnChain(chain, controller, alice.privateKey);
    expect(await revertReasonOf(setDelegateOnChain(chain, controller, bob.privateKey, secretId, bob.address))).toBe('Not secret owner');

    const delegated = await setDelegateOnChain(chain, controller, alice.privateKey, secretId, bob.address);
    expect(eventsOf(delegated, 'DelegateUpdated').map((e) => e.args)).toEqual([{ secretId, newDelegate: bob.address }]);
    expect(await chain.publicClient.readContract({ address: controller, abi: secretsControllerAbi, functionName: 'getDelegate', args: [secretId] })).toBe(bob.address);
    expect(await chain.publicClient.readContract({ address: controller, abi: secretsControllerAbi, functionName: 'getSecretsCountByWallet', args: [bob.address] })).toEqual([0n, 1n]);

    expect(await revertReasonOf(transferSecretOnChain(chain, controller, bob.privateKey, secretId, bob.address))).toBe('Not secret owner');
    const transferred = await transferSecretOnChain(chain, controller, alice.privateKey, secretId, carol.address);
    expect(eventsOf(transferred, 'SecretOwnershipTransferred').map((e) => e.args)).toEqual([{ secretId, oldOwner: alice.address, newOwner: carol.address }]);
    // The transfer clears the delegate, announced as its own DelegateUpdated.
    expect(eventsOf(transferred, 'DelegateUpdated').map((e) => e.args)).toEqual([{ secretId, newDelegate: zeroAddress }]);
    expect(await readSecretState(chain, controller, secretId)).toMatchObject({ owner: carol.address, delegate: zeroAddress });
    expect(await chain.publicClient.readContract({ address: controller, abi: secretsControllerAbi, functionName: 'getSecretOwner', args: [secretId] })).toBe(carol.address);
    expect(await chain.publicClient.readContract({ address: controller, abi: secretsControllerAbi, functionName: 'getSecretsByWallet', args: [carol.address] })).toEqual([[secretId], []]);
    expect(await chain.publicClient.readContract({ address: controller, abi: secretsControllerAbi, functionName: 'getSecretsCountByWallet', args: [bob.address] })).toEqual([0n, 0n]);

    // The old owner has lost control.
    expect(await revertReasonOf(setDelegateOnChain(chain, controller, alice.privateKey, secretId, alice.address))).toBe('Not secret owner');
  });

  // The published controller's reason strings (its SDK documentation quotes them); the real client
  // turns a revert whose message contains `Secret not found` into its SecretNotFoundError.
  it('reverts with the published reason strings: Secret not found, Not secret owner, Delegate unchanged, New owner is zero, Already secret owner', async () => {
    const unknown = 999_999n;
    const read = (functionName: 'getSecretState' | 'getSecretOwner' | 'getDelegate') =>
      chain.publicClient.readContract({ address: controller, abi: secretsControllerAbi, functionName, args: [unknown] });
    for (const functionName of ['getSecretState', 'getSecretOwner', 'getDelegate'] as const) expect(await revertReasonOf(read(functionName))).toBe('Secret not found');
    expect(await revertReasonOf(setDelegateOnChain(chain, controller, alice.privateKey, unknown, bob.address))).toBe('Secret not found');
    expect(await revertReasonOf(transferSecretOnChain(chain, controller, alice.privateKey, unknown, bob.address))).toBe('Secret not found');

    const secretId = await createSecretOnChain(chain, controller, alice.privateKey);
    expect(await revertReasonOf(setDelegateOnChain(chain, controller, alice.privateKey, secretId, zeroAddress))).toBe('Delegate unchanged');
    await setDelegateOnChain(chain, controller, alice.privateKey, secretId, bob.address);
    expect(await revertReasonOf(setDelegateOnChain(chain, controller, alice.privateKey, secretId, bob.address))).toBe('Delegate unchanged');
    expect(await revertReasonOf(transferSecretOnChain(chain, controller, alice.privateKey, secretId, zeroAddress))).toBe('New owner is zero');
    expect(await revertReasonOf(transferSecretOnChain(chain, controller, alice.privateKey, secretId, alice.address))).toBe('Already secret owner');
  });

  it("the client's getSecret path: a raw eth_call of getSecretState for an unknown id fails with a message containing `Secret not found`", async () => {
    // The client's getSecret: eth_call at "latest"; a failure whose message includes
    // `Secret not found` becomes its SecretNotFoundError.
    const getSecretState = (secretId: bigint) =>
      clientRpc<Hex>(chain, 'eth_call', [{ to: controller, data: encodeFunctionData({ abi: secretsControllerAbi, functionName: 'getSecretState', args: [secretId] }) }, 'latest']);
    await expect(getSecretState(999_999n)).rejects.toThrow('Secret not found');
    const known = await getSecretState(await createSecretOnChain(chain, controller, alice.privateKey));
    expect(decodeFunctionResult({ abi: secretsControllerAbi, functionName: 'getSecretState', data: known })[0]).toBe(alice.address);
  });

  it('only the contract owner manages the whitelist, fee and balance', async () => {
    const asAlice = chain.walletClient(alice.privateKey);
    expect(await revertReasonOf(whitelist(chain, controller, alice.address, alice))).toBe('caller is not the owner');
    expect(await revertReasonOf(asAlice.writeContract({ address: controller, abi: secretsControllerAbi, functionName: 'setSecretCreationFee', args: [1n] }))).toBe('caller is not the owner');

    const asOwner = chain.walletClient(owner.privateKey);
    const fee = 10n ** 15n;
    await chain.publicClient.waitForTransactionReceipt({ hash: await asOwner.writeContract({ address: controller, abi: secretsControllerAbi, functionName: 'setSecretCreationFee', args: [fee] }) });
    // The published controller wants the fee exactly (docs/web3.md, "The test contract").
    expect(await revertReasonOf(createSecretOnChain(chain, controller, alice.privateKey, { value: 0n }))).toBe('Incorrect fee');
    expect(await revertReasonOf(createSecretOnChain(chain, controller, alice.privateKey, { value: fee + 1n }))).toBe('Incorrect fee');
    await createSecretOnChain(chain, controller, alice.privateKey); // pays the current fee
    expect(await chain.publicClient.getBalance({ address: controller })).toBe(fee);

    const before = await chain.publicClient.getBalance({ address: carol.address });
    await chain.publicClient.waitForTransactionReceipt({ hash: await asOwner.writeContract({ address: controller, abi: secretsControllerAbi, functionName: 'withdrawBalance', args: [carol.address, fee] }) });
    expect(await chain.publicClient.getBalance({ address: carol.address })).toBe(before + fee);
  });

  it('black boxes can be removed; contract ownership moves and can be renounced', async () => {
    const other = await deployController(chain);
    const read = chain.publicClient;
    const confirm = async (sent: Promise<Hex>) => {
      const receipt = await read.waitForTransactionReceipt({ hash: await sent });
      expect(receipt.status).toBe('success');
      return receipt;
    };
    await whitelist(chain, other, alice.address);
    await whitelist(chain, other, bob.address);
    expect(await read.readContract({ address: other, abi: secretsControllerAbi, functionName: 'getBlackBoxCount' })).toBe(2);
    const asOwner = chain.walletClient(owner.privateKey);
    await confirm(asOwner.writeContract({ address: other, abi: secretsControllerAbi, functionName: 'removeWhitelistedBlackBox', args: [alice.address] }));
    expect(await read.readContract({ address: other, abi: secretsControllerAbi, functionName: 'getAllBlackBoxes' })).toEqual([bob.address]);
    expect(await read.readContract({ address: other, abi: secretsControllerAbi, functionName: 'whitelistedBlackBoxes', args: [alice.address] })).toBe(false);

    const moved = await confirm(asOwner.writeContract({ address: other, abi: secretsControllerAbi, functionName: 'transferOwnership', args: [carol.address] }));
    expect(parseEventLogs({ abi: secretsControllerAbi, eventName: 'OwnershipTransferred', logs: moved.logs }).map((e) => e.args)).toEqual([
      { previousOwner: owner.address, newOwner: carol.address },
    ]);
    expect(await revertReasonOf(whitelist(chain, other, alice.address, owner))).toBe('caller is not the owner');
    await confirm(chain.walletClient(carol.privateKey).writeContract({ address: other, abi: secretsControllerAbi, functionName: 'renounceOwnership' }));
    expect(await read.readContract({ address: other, abi: secretsControllerAbi, functionName: 'owner' })).toBe(zeroAddress);
  });

  it('mine(n) advances the chain by n blocks (for confirmations)', async () => {
    const before = await chain.publicClient.getBlockNumber({ cacheTime: 0 });
    await mine(chain, 5);
    expect(await chain.publicClient.getBlockNumber({ cacheTime: 0 })).toBe(before + 5n);
  });
});
