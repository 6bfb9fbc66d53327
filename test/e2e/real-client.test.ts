/**
 * Issue 29's acceptance, with the real client: cifer-sdk (test/vendor/cifer-sdk, its sources
 * unchanged) against `quorumkeep local` — what `npm start` runs — as a real process with its defaults
 * (5 nodes, 2 coordinators, anvil mining a block per transaction and an empty one every 5 s); only
 * the ports are chosen free. Everything goes through the client's own functions: discovery from a
 * coordinator's /healthz, its RPC reader and private-key signer, `createSecretAndWaitReady` (its
 * create-secret transaction intent, sent here with viem, then its readiness poll), payload
 * encrypt/decrypt, and the file job flows (upload, job polling, download).
 *
 * - A secret the client reports ready encrypts on the first try, on either coordinator.
 * - The wallet decrypts two different files in the same block, and the same payload twice (text
 *   that is not ASCII, which its private-key signer signs in its own EIP-191 form).
 * - An unknown id is the client's `SecretNotFoundError` on chain; an encrypt for it the client's
 *   plain `BlackboxError` for our 404, not its "not ready" error.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { createPublicClient, createWalletClient, http, type Account, type Hex } from 'viem';
import { mnemonicToAccount } from 'viem/accounts';
import {
  blackbox,
  BlackboxError,
  createCiferSdk,
  flows,
  keyManagement,
  PrivateKeySignerAdapter,
  SecretNotFoundError,
  SecretNotReadyError,
  type CiferSdk,
  type FlowContext,
  type PollingStrategy,
  type TxExecutor,
} from 'cifer-sdk';
import { getFreePortRange, waitFor } from 'quorumkeep/testing';
import { patterned } from '../utils/files.ts';
import { ANVIL_MNEMONIC, LOCAL_CHAIN_ID, localViemChain, startLocal } from '../utils/local-process.ts';
import { cleanupStack, tempDir } from '../utils/temp.ts';

const SIZE = 5;
/**
 * The client's polls (readiness, file jobs) at a short interval: its default of 2 s would only make
 * the test slower, and the sooner it reports ready, the closer the encrypt follows the sync.
 */
const POLLING: PollingStrategy = { intervalMs: 100, maxAttempts: 600 };
/** anvil mines an empty block every 5 s: waiting for the next one takes at most that. */
const NEXT_BLOCK_TIMEOUT_MS = 15_000;
const FLOW_TIMEOUT_MS = 120_000;

const stack = cleanupStack();
afterAll(() => stack.run());

/** A request the client sent to a coordinator: its path and the signed string in its body. */
interface ClientCall {
  path: string;
  data: string | undefined;
}

/** A fetch for the client that records its requests, so a test can see how often it tried and what it signed. */
function recordingFetch(calls: ClientCall[]): typeof fetch {
  return (input, init) => {
    const url = input instanceof Request ? input.url : String(input);
    calls.push({ path: new URL(url).pathname, data: signedStringOf(init?.body) });
    return fetch(input, init);
  };
}

function signedStringOf(body: RequestInit['body']): string | undefined {
  if (typeof body === 'string') {
    const { data } = JSON.parse(body) as { data?: unknown };
    return typeof data === 'string' ? data : undefined;
  }
  if (body instanceof FormData) {
    const data = body.get('data');
    return typeof data === 'string' ? data : undefined;
  }
  return undefined;
}

/** The block of a signed string `<chainId>_<secretId>_<wallet>_<block>[_…]`. */
const blockOf = (data: string | undefined) => Number(data?.split('_')[3]);

/** The client's transaction executor, as a dapp gives it: the wallet sends the intent with viem. */
function viemTxExecutor(rpcUrl: string, account: Account): TxExecutor {
  const chain = localViemChain(rpcUrl);
  const wallet = createWalletClient({ account, chain, transport: http(rpcUrl) });
  const reader = createPublicClient({ chain, transport: http(rpcUrl), pollingInterval: 100 });
  return async (intent) => {
    expect(intent.chainId).toBe(LOCAL_CHAIN_ID);
    const hash = await wallet.sendTransaction({ to: intent.to, data: intent.data, value: intent.value });
    return {
      hash,
      waitReceipt: async () => {
        const receipt = await reader.waitForTransactionReceipt({ hash, pollingInterval: 100 });
        return {
          transactionHash: receipt.transactionHash,
          blockNumber: Number(receipt.blockNumber),
          status: receipt.status === 'success' ? 1 : 0,
          gasUsed: receipt.gasUsed,
          logs: receipt.logs.map((log) => ({
            address: log.address,
            topics: log.topics,
            data: log.data,
            blockNumber: Number(log.blockNumber),
            transactionHash: log.transactionHash,
            logIndex: log.logIndex,
            transactionIndex: log.transactionIndex,
          })),
        };
      },
    };
  };
}

describe('the real client (cifer-sdk) against quorumkeep local', () => {
  const wallet = mnemonicToAccount(ANVIL_MNEMONIC, { addressIndex: 1 });
  const signer = new PrivateKeySignerAdapter(('0x' + Buffer.from(wallet.getHdKey().privateKey!).toString('hex')) as Hex);
  let coordinators: [string, string];
  /** The client as created against each coordinator (discovery from its /healthz). */
  let sdks: CiferSdk[];
  /** The secret created through coordinator A, and a payload sealed to it there. */
  let secretId: bigint;
  let sealed: { cifer: string; encryptedMessage: string };
  // Not ASCII: the client's private-key signer counts UTF-16 code units in its EIP-191 prefix
  // (docs/security.md, "Signed strings").
  const plaintext = 'gm from the real client — café ✓';

  /** What every flow of the client needs, against coordinator `i`. */
  function flowContext(i: number, extra: Partial<FlowContext> = {}): FlowContext {
    const sdk = sdks[i]!;
    return {
      signer,
      readClient: sdk.readClient,
      blackboxUrl: sdk.blackboxUrl,
      chainId: LOCAL_CHAIN_ID,
      controllerAddress: sdk.getControllerAddress(LOCAL_CHAIN_ID),
      pollingStrategy: POLLING,
      ...extra,
    };
  }

  /** Until the chain's head moves past what it is now: the next ~5 s have no block boundary. */
  async function nextBlock(): Promise<void> {
    const readClient = sdks[0]!.readClient;
    const now = await readClient.getBlockNumber(LOCAL_CHAIN_ID);
    await waitFor(async () => (await readClient.getBlockNumber(LOCAL_CHAIN_ID)) > now, { timeoutMs: NEXT_BLOCK_TIMEOUT_MS, intervalMs: 20, description: `a block after ${now}` });
  }

  beforeAll(async () => {
    const dir = join(await tempDir(stack, 'qk-real-client-'), 'data');
    const base = await getFreePortRange(3 * SIZE);
    const local = await startLocal(stack, dir, ['--base-port', String(base), '--operator-base-port', String(base + SIZE), '--http-base-port', String(base + 2 * SIZE), '--chain-port', '0']);
    expect(local.coordinators).toHaveLength(2);
    coordinators = local.coordinators as [string, string];
    sdks = await Promise.all(coordinators.map((blackboxUrl) => createCiferSdk({ blackboxUrl })));
  }, 90_000);

  it('discovers the local chain from either coordinator; a secret it reports ready encrypts on the first try, on either one', async () => {
    for (const sdk of sdks) {
      expect(sdk.getSupportedChainIds()).toContain(LOCAL_CHAIN_ID);
      expect(sdk.getRpcUrl(LOCAL_CHAIN_ID)).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(sdk.getControllerAddress(LOCAL_CHAIN_ID)).toBe(sdks[0]!.getControllerAddress(LOCAL_CHAIN_ID));
    }
    const txExecutor = viemTxExecutor(sdks[0]!.getRpcUrl(LOCAL_CHAIN_ID), wallet);

    for (const i of [0, 1]) {
      // One secret per coordinator: created, then polled by the client until it reads it ready.
      const created = await flows.createSecretAndWaitReady(flowContext(i, { txExecutor }));
      expect(created.error).toBeUndefined();
      expect(created.success).toBe(true);
      const { secretId: id, state } = created.data!;
      expect({ ...state, owner: state.owner.toLowerCase() }).toMatchObject({ owner: wallet.address.toLowerCase(), isSyncing: false, secretType: 1, publicKeyCid: 'cifer' });

      // The client's next call, at once: one request, answered.
      const calls: ClientCall[] = [];
      const result = await blackbox.payload.encryptPayload({ chainId: LOCAL_CHAIN_ID, secretId: id, plaintext, signer, readClient: sdks[i]!.readClient, blackboxUrl: coordinators[i]!, fetch: recordingFetch(calls) });
      expect(calls.map((c) => c.path)).toEqual(['/encrypt-payload']);
      expect(result).toMatchObject({ chainId: LOCAL_CHAIN_ID, secretId: id, outputFormat: 'hex' });
      if (i === 0) {
        secretId = id;
        sealed = result;
      }
    }
  }, FLOW_TIMEOUT_MS);

  it('the wallet decrypts two different files in the same block: one signed string, both original files back', async () => {
    const originals = [new File([patterned(150_000, 1)], 'report.bin'), new File([patterned(3_000, 2)], 'notes.txt')];
    const encrypted = await Promise.all(originals.map((file) => flows.encryptFileJobFlow(flowContext(0), { secretId, file })));
    for (const flow of encrypted) {
      expect(flow.error).toBeUndefined();
      expect(flow.data!.job).toMatchObject({ type: 'encrypt', status: 'completed' });
    }

    // Right after a block, both at once: each reads the head and signs it before the next block.
    await nextBlock();
    const calls: ClientCall[] = [];
    const decrypted = await Promise.all(encrypted.map((flow) => flows.decryptFileJobFlow(flowContext(0, { fetch: recordingFetch(calls) }), { secretId, file: flow.data!.encryptedFile })));
    const strings = calls.filter((c) => c.path === '/decrypt-file').map((c) => c.data);
    expect(strings).toHaveLength(2);
    expect(blockOf(strings[0])).toBeGreaterThan(0);
    expect(blockOf(strings[1])).toBe(blockOf(strings[0]));
    // A file-decrypt string names no file: the two are the same string.
    expect(strings[1]).toBe(strings[0]);
    for (const [i, flow] of decrypted.entries()) {
      expect(flow.error).toBeUndefined();
      expect(flow.data!.job).toMatchObject({ type: 'decrypt', status: 'completed' });
      expect(Buffer.from(await flow.data!.decryptedFile.arrayBuffer()).equals(Buffer.from(await originals[i]!.arrayBuffer()))).toBe(true);
    }
  }, FLOW_TIMEOUT_MS);

  it('the wallet decrypts the same payload twice: the same ciphertext, the same plaintext both times', async () => {
    await nextBlock();
    const calls: ClientCall[] = [];
    const params = { chainId: LOCAL_CHAIN_ID, secretId, ...sealed, signer, readClient: sdks[0]!.readClient, blackboxUrl: coordinators[0], fetch: recordingFetch(calls) };
    const results = await Promise.all([blackbox.payload.decryptPayload(params), blackbox.payload.decryptPayload(params)]);
    expect(results).toEqual([{ decryptedMessage: plaintext }, { decryptedMessage: plaintext }]);
    // Signed in one block, the two requests carry the same string.
    expect(calls.map((c) => c.path)).toEqual(['/decrypt-payload', '/decrypt-payload']);
    expect(calls[1]!.data).toBe(calls[0]!.data);
  }, FLOW_TIMEOUT_MS);

  it("an unknown id: the client's SecretNotFoundError on chain, and its plain BlackboxError (404) for an encrypt", async () => {
    // Ids count from 1; this test created two.
    const unknown = 1_000_000n;
    const readParams = { chainId: LOCAL_CHAIN_ID, controllerAddress: sdks[0]!.getControllerAddress(LOCAL_CHAIN_ID), readClient: sdks[0]!.readClient };
    await expect(keyManagement.getSecret(readParams, unknown)).rejects.toBeInstanceOf(SecretNotFoundError);
    await expect(keyManagement.isSecretReady(readParams, unknown)).rejects.toMatchObject({ name: 'SecretNotFoundError', secretId: unknown });

    for (const [i, blackboxUrl] of coordinators.entries()) {
      const calls: ClientCall[] = [];
      const error = await blackbox.payload
        .encryptPayload({ chainId: LOCAL_CHAIN_ID, secretId: unknown, plaintext, signer, readClient: sdks[i]!.readClient, blackboxUrl, fetch: recordingFetch(calls) })
        .then(
          () => undefined,
          (err: unknown) => err,
        );
      expect(error).toBeInstanceOf(BlackboxError);
      expect(error).not.toBeInstanceOf(SecretNotReadyError);
      expect(error).toMatchObject({ code: 'BLACKBOX_ERROR', statusCode: 404, endpoint: '/encrypt-payload' });
      expect(calls).toHaveLength(1);
    }
  }, FLOW_TIMEOUT_MS);
});
