/**
 * `npm run bench -- web3` (issue 14): Web3 encrypt and decrypt latency next to Web2's in the same
 * run, on one 5-member, 2-coordinator cluster and a local chain (anvil, a block every 2 s like Base),
 * and the JSON-RPC calls the nodes make per request, counted by an HTTP proxy between them and the
 * chain. Target: a Web3 decrypt with a warm cache adds at most one RPC round trip per member over
 * Web2's — judged against the RPC round trip measured in the same run. Then (issue 29; alone with
 * `npm run bench -- web3-ready`) the time from a secret's SecretCreated block to the client's first
 * successful encrypt, at a 1 s and a 2 s block time.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { parseEventLogs, type Address } from 'viem';
import { startLocalCluster, waitFor, type LocalCluster } from '../src/testing/index.ts';
import { secretsControllerAbi } from '../src/evm/secrets-controller-abi.ts';
import { fromHex, signPersonalMessage } from '../src/crypto/index.ts';
import { createSecretOnChain, deployController, fund, headOf, readSecretState, startAnvil, whitelist, type AnvilChain, type DevAccount } from '../test/utils/anvil.ts';
import { principalWithSession } from '../test/utils/session.ts';
import { BENCH_PLAN, figure, median, ms, percentile, post, table } from './bench-lib.ts';

const CHAIN_ID = 8453;
const BLOCK_TIME_MS = 2000;
const ENCRYPTS = 300;
const DECRYPTS = 150;
const RTT_SAMPLES = 200;

/** An HTTP JSON-RPC proxy that counts the methods it forwards. */
async function countingProxy(target: string): Promise<{ url: string; counts: Map<string, number>; total(): number; close(): Promise<void> }> {
  const counts = new Map<string, number>();
  const body = (req: IncomingMessage) =>
    new Promise<Buffer>((resolve, reject) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c)).on('end', () => resolve(Buffer.concat(chunks))).on('error', reject);
    });
  const server: Server = createServer((req, res) => {
    void (async () => {
      const raw = await body(req);
      const parsed = JSON.parse(raw.toString('utf8')) as { method: string } | Array<{ method: string }>;
      for (const call of Array.isArray(parsed) ? parsed : [parsed]) counts.set(call.method, (counts.get(call.method) ?? 0) + 1);
      const upstream = await fetch(target, { method: 'POST', headers: { 'content-type': 'application/json' }, body: raw });
      res.writeHead(upstream.status, { 'content-type': 'application/json' });
      res.end(Buffer.from(await upstream.arrayBuffer()));
    })().catch((err: unknown) => {
      res.writeHead(502);
      res.end(String(err));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (!address || typeof address === 'string') throw new Error('proxy has no port');
  return {
    url: `http://127.0.0.1:${address.port}`,
    counts,
    total: () => [...counts.values()].reduce((a, b) => a + b, 0),
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}


/** A Web3 signed string in the client's form, `<chainId>_<secretId>_<wallet>_<block>_<message>`, EIP-191 signed. */
function signWeb3(wallet: DevAccount, walletKey: Uint8Array, subject: string | number | bigint, block: number, extra: string): { data: string; signature: string } {
  const data = `${CHAIN_ID}_${subject}_${wallet.address}_${block}_${extra}`;
  return { data, signature: signPersonalMessage(data, walletKey) };
}

/**
 * A 5-member, threshold-3, 2-coordinator cluster on `chain` (its nodes reading it at `rpcUrl`, a
 * block every `blockTimeMs`, the chain config's default `confirmations`), node 0 its syncer, funded
 * and whitelisted by the controller.
 */
async function startWeb3Cluster(chain: AnvilChain, controller: Address, rpcUrl: string, blockTimeMs: number): Promise<LocalCluster> {
  const chainConfig = { chainId: CHAIN_ID, name: 'Base (anvil)', rpcUrl, secretsControllerAddress: controller, blockTimeMs };
  const cluster = await startLocalCluster({
    size: 5,
    threshold: 3,
    coordinators: 2,
    nodeConfig: {
      chains: [chainConfig],
      http: { rateLimits: { perIpPerMinute: 0, perAccountPerMinute: 0 } },
      usage: { plans: [BENCH_PLAN] },
    },
    nodeConfigFor: (i) => (i === 0 ? { chains: [{ ...chainConfig, syncer: true }] } : {}),
  });
  try {
    const syncer = cluster.descriptor.nodes[0]!.nodeAddress as Address;
    await fund(chain, syncer, '1');
    await whitelist(chain, controller, syncer);
  } catch (err) {
    await cluster.stop();
    throw err;
  }
  return cluster;
}

/** How deep the cluster's nodes take a block as confirmed on the bench's chain (its config's `confirmations`). */
function confirmationsOf(cluster: LocalCluster): number {
  return cluster.members[0]!.config.chains.find((c) => c.chainId === CHAIN_ID)!.confirmations;
}

/** Sequential latencies of `count` requests built by `body(i)`; throws on any answer but 200. */
async function timed(url: string, count: number, body: (i: number) => unknown): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < count; i++) {
    const b = body(i);
    const t0 = performance.now();
    const res = await post(url, b);
    out.push(performance.now() - t0);
    if (res.status !== 200) throw new Error(`${url}: ${res.status} ${JSON.stringify(res.body)}`);
  }
  return out;
}

export async function benchWeb3(): Promise<void> {
  const anvilStarted = performance.now();
  const chain = await startAnvil({ chainId: CHAIN_ID, blockTimeSeconds: BLOCK_TIME_MS / 1000 });
  const anvilStartMs = performance.now() - anvilStarted;
  const proxy = await countingProxy(chain.rpcUrl);
  try {
    const controller = await deployController(chain);
    const cluster = await startWeb3Cluster(chain, controller, proxy.url, BLOCK_TIME_MS);
    let stopReading = () => {};
    try {
      const [A, B] = cluster.coordinators as [string, string];
      const wallet = chain.accounts[1] as DevAccount;
      const walletKey = fromHex(wallet.privateKey);
      const web3Id = await createSecretOnChain(chain, controller, wallet.privateKey);
      await waitFor(async () => !(await readSecretState(chain, controller, web3Id)).isSyncing, { timeoutMs: 60_000, intervalMs: 200, description: 'the secret to be synced' });
      await waitFor(async () => (await fetch(`${B}/secret-public-key/${CHAIN_ID}/${web3Id}`)).status === 200, { timeoutMs: 30_000, intervalMs: 200, description: 'its key on B' });

      const web2 = await principalWithSession(cluster, A, 'bench');
      const created = await post(`${A}/web2/secret`, web2.signed(0));
      if (created.status !== 201) throw new Error(`web2 secret: ${created.status} ${JSON.stringify(created.body)}`);
      const web2Id = created.body.secretId as number;

      const head = async () => Number(await chain.publicClient.getBlockNumber({ cacheTime: 0 }));
      const web3Signed = (subject: string | number | bigint, block: number, extra: string) => signWeb3(wallet, walletKey, subject, block, extra);
      let block = await head();
      // The block to sign: the client reads it per request; here once per block time is the same number.
      const blockReader = setInterval(() => void head().then((b) => (block = b), () => undefined), 500);
      stopReading = () => clearInterval(blockReader);

      // The RPC round trip: eth_blockNumber straight to the chain.
      const rtts: number[] = [];
      for (let i = 0; i < RTT_SAMPLES; i++) {
        const t0 = performance.now();
        await chain.publicClient.getBlockNumber({ cacheTime: 0 });
        rtts.push(performance.now() - t0);
      }
      const rpcRtt = median(rtts);

      // Encrypt (A), then decrypt on B: Web2 and Web3 interleaved in halves so drift hits both.
      const enc2 = await timed(`${A}/encrypt-payload`, ENCRYPTS, (i) => web2.signed(web2Id, `web2 message ${i}`));
      const enc3 = await timed(`${A}/encrypt-payload`, ENCRYPTS, (i) => web3Signed(web3Id, block, `web3 message ${i}`));
      // Distinct messages: a decrypt string is used once, and Web3 strings in one block differ only by it.
      const sealed2 = await Promise.all(Array.from({ length: DECRYPTS }, (_, i) => post(`${A}/encrypt-payload`, web2.signed(web2Id, `d2 ${i}`)).then((r) => r.body)));
      const sealed3 = await Promise.all(Array.from({ length: DECRYPTS + 20 }, (_, i) => post(`${A}/encrypt-payload`, web3Signed(web3Id, block, `d3 ${i}`)).then((r) => r.body)));
      // The figure is the steady state: the confirmed view (what members read the owner from) must
      // know the secret as synced too. Until it does (confirmations blocks after the sync, and a block
      // more for a node's cached head) every member reads the latest block for each request as well
      // (docs/web3.md, "Serving a secret"): right, and one RPC call each.
      const confirmations = confirmationsOf(cluster);
      await waitFor(async () => !(await readSecretState(chain, controller, web3Id, (await head()) - confirmations - 1)).isSyncing, {
        timeoutMs: 60_000,
        intervalMs: 200,
        description: 'the secret synced in the confirmed view',
      });
      // Warm-up of the Web3 path on every member (state cache, head cache).
      await timed(`${B}/decrypt-payload`, 20, (i) => ({ cifer: sealed3[DECRYPTS + i]!.cifer, ...web3Signed(web3Id, block, sealed3[DECRYPTS + i]!.encryptedMessage as string) }));
      const dec2 = await timed(`${B}/decrypt-payload`, DECRYPTS, (i) => ({ cifer: sealed2[i]!.cifer, ...web2.signed(web2Id, sealed2[i]!.encryptedMessage as string) }));
      const before = new Map(proxy.counts);
      const t0 = performance.now();
      const dec3 = await timed(`${B}/decrypt-payload`, DECRYPTS, (i) => ({ cifer: sealed3[i]!.cifer, ...web3Signed(web3Id, block, sealed3[i]!.encryptedMessage as string) }));
      const seconds = (performance.now() - t0) / 1000;
      const during = new Map([...proxy.counts].map(([m, n]) => [m, n - (before.get(m) ?? 0)]));
      const calls = [...during.values()].reduce((a, b) => a + b, 0);
      // The followers poll on their own (eth_blockNumber + eth_getLogs every block time, per node):
      // what they would have made anyway over the same seconds is not the requests' doing.
      const background = 7 * 2 * (seconds / (BLOCK_TIME_MS / 1000));

      const added = median(dec3) - median(dec2);
      figure({
        name: 'Web3 decrypt, p50 added over Web2',
        value: added / rpcRtt,
        unit: 'RPC round trips',
        target: { op: '<=', value: 1 },
        note: `${ms(added)} over an RPC round trip of ${ms(rpcRtt)}; ${DECRYPTS} sequential decrypts each, warm caches`,
      });
      figure({ name: 'Web3 decrypt, RPC calls per request per member beyond polling', value: Math.max(0, calls - background) / DECRYPTS / 5, unit: '', note: `${calls} calls by all 7 nodes in ${seconds.toFixed(1)} s` });
      const row = (values: number[]): [string, string][] => [
        ['p50', `${ms(median(values))}  (${(median(values) / rpcRtt).toFixed(1)}× RPC RTT)`],
        ['p99', ms(percentile(values, 99))],
      ];
      figure({ name: 'local chain (anvil): start until it answers JSON-RPC', value: anvilStartMs, unit: 'ms', target: { op: '<=', value: 2000 } });
      table('The local chain (anvil)', [
        ['start, until it answers JSON-RPC', `${ms(anvilStartMs)}  (target ≤ 2 s)`],
        ['JSON-RPC round trip (eth_blockNumber, direct), p50', ms(rpcRtt)],
      ]);
      table(`POST /encrypt-payload on A, Web2 (${ENCRYPTS} sequential)`, row(enc2));
      table(`POST /encrypt-payload on A, Web3 (${ENCRYPTS} sequential)`, row(enc3));
      table(`POST /decrypt-payload on B, Web2 (${DECRYPTS} sequential, 3 shares of 5 members)`, row(dec2));
      table(`POST /decrypt-payload on B, Web3 (${DECRYPTS} sequential, warm caches; every member reads the chain's confirmed view)`, [
        ...row(dec3),
        ['added over Web2 (p50)', `${ms(median(dec3) - median(dec2))}  = ${((median(dec3) - median(dec2)) / rpcRtt).toFixed(2)} RPC round trips (target ≤ 1)`],
        ['RPC calls by all 7 nodes during the run', `${calls} in ${seconds.toFixed(1)} s: ${[...during].filter(([, n]) => n > 0).map(([m, n]) => `${m} ${n}`).join(', ')}`],
        ['… per request per member, beyond the followers’ polling', `${(Math.max(0, calls - background) / DECRYPTS / 5).toFixed(3)}`],
      ]);
    } finally {
      stopReading();
      await cluster.stop();
    }
  } finally {
    await proxy.close();
    await chain.stop();
  }
  await benchWeb3Ready();
}

/** Block times of `npm run bench -- web3-ready`, each on its own chain and cluster. */
const READY_BLOCK_TIMES_MS = [1000, 2000];
/** Secrets taken through create → ready → encrypt per block time, one after another. */
const READY_SECRETS = Number(process.env.BENCH_READY_SECRETS ?? 20);
/** How often the wallet asks for its createSecret receipt: fine enough to see the block when it lands. */
const RECEIPT_POLL_MS = 10;
/** How often the client asks whether the secret is ready (it polls too). */
const READY_POLL_MS = 50;
/** Longest wait for one secret to be mined, ready and encrypted to, before the run gives up. */
const READY_TIMEOUT_MS = 120_000;

/** One secret's way from its SecretCreated block to the first successful encrypt. */
interface ReadyTiming {
  /** SecretCreated receipt seen → the client's `isSecretReady`, ms. */
  toReadyMs: number;
  /** SecretCreated receipt seen → 200 of POST /encrypt-payload, ms. */
  toEncryptMs: number;
  /** The encrypts refused before that 200 (the first try after readiness should succeed). */
  refusals: Array<{ status: number; code: unknown; error: unknown }>;
}

/**
 * `npm run bench -- web3-ready` (issue 29): what a client waits from its `createSecret` to its first
 * successful encrypt, as the real client (cifer-sdk) does it — poll `getSecretState` at the latest
 * block until not syncing with a `publicKeyCid`, then encrypt once — at a 1 s and a 2 s block time,
 * next to the block time. Each secret is timed from when its receipt (the SecretCreated block) is
 * first seen; an encrypt refused after readiness is counted, reported, and retried until it succeeds.
 */
export async function benchWeb3Ready(): Promise<void> {
  for (const blockTimeMs of READY_BLOCK_TIMES_MS) await benchReadyAt(blockTimeMs);
}

async function benchReadyAt(blockTimeMs: number): Promise<void> {
  const started = performance.now();
  const chain = await startAnvil({ chainId: CHAIN_ID, blockTimeSeconds: blockTimeMs / 1000 });
  try {
    const controller = await deployController(chain);
    const deployedAt = await headOf(chain);
    const cluster = await startWeb3Cluster(chain, controller, chain.rpcUrl, blockTimeMs);
    try {
      const confirmations = confirmationsOf(cluster);
      // The confirmed view finds no contract until its deployment is `confirmations` deep (docs/web3.md, Limits).
      await waitFor(async () => (await headOf(chain)) > deployedAt + confirmations, { timeoutMs: 60_000, description: 'the controller confirmations deep' });
      const wallet = chain.accounts[1] as DevAccount;
      const walletKey = fromHex(wallet.privateKey);
      const fee = await chain.publicClient.readContract({ address: controller, abi: secretsControllerAbi, functionName: 'secretCreationFee' });
      const timings: ReadyTiming[] = [];
      for (let i = 0; i < READY_SECRETS; i++) {
        const coordinator = cluster.coordinators[i % 2]!;
        timings.push(await createThenEncrypt(chain, controller, wallet, walletKey, fee, coordinator, i));
      }

      const toEncrypt = timings.map((t) => t.toEncryptMs);
      const toReady = timings.map((t) => t.toReadyMs);
      const afterReady = timings.map((t) => t.toEncryptMs - t.toReadyMs);
      const inBlocks = (v: number) => `${(v / blockTimeMs).toFixed(2)} block times`;
      const refused = timings.flatMap((t, i) => t.refusals.map((r) => ({ secret: i, ...r })));
      const failedFirst = timings.filter((t) => t.refusals.length > 0).length;
      const at = `${blockTimeMs / 1000} s block`;
      const note = `${READY_SECRETS} secrets, confirmations ${confirmations}, block time ${ms(blockTimeMs)}`;
      figure({ name: `Web3: SecretCreated block → first encrypt, p50, ${at}`, value: median(toEncrypt) / blockTimeMs, unit: 'block times', note: `${ms(median(toEncrypt))}; ${note}` });
      figure({ name: `Web3: SecretCreated block → first encrypt, p99, ${at}`, value: percentile(toEncrypt, 99) / blockTimeMs, unit: 'block times', note: `${ms(percentile(toEncrypt, 99))}; ${note}` });
      figure({ name: `Web3: encrypts refused on the first try after "ready", ${at}`, value: failedFirst, unit: `of ${READY_SECRETS}`, target: { op: '<=', value: 0 }, note });
      table(
        `Web3 secret, SecretCreated block → first successful encrypt (${READY_SECRETS} secrets one after another, anvil a block every ${blockTimeMs / 1000} s, ` +
          `confirmations ${confirmations} (the chain config's default), 5 members, threshold 3, encrypts alternating between 2 coordinators)`,
        [
          ['block time', ms(blockTimeMs)],
          ['confirmations', String(confirmations)],
          ['p50', `${ms(median(toEncrypt))}  (${inBlocks(median(toEncrypt))})`],
          ['p99', `${ms(percentile(toEncrypt, 99))}  (${inBlocks(percentile(toEncrypt, 99))})`],
          ['  of which to the client’s “ready”, p50 / p99', `${ms(median(toReady))} / ${ms(percentile(toReady, 99))}`],
          ['  of which “ready” → 200, p50 / p99', `${ms(median(afterReady))} / ${ms(percentile(afterReady, 99))}`],
          ['first-try failures', `${failedFirst} of ${READY_SECRETS}  (target 0)`],
          ...refused.map((r): [string, string] => [`  secret #${r.secret}`, `${r.status} ${String(r.code)}: ${String(r.error)}`]),
          ['wall time (setup included)', `${((performance.now() - started) / 1000).toFixed(0)} s`],
        ],
      );
    } finally {
      await cluster.stop();
    }
  } finally {
    await chain.stop();
  }
}

/** One secret: createSecret, its receipt, the client's readiness poll, then encrypts until a 200. */
async function createThenEncrypt(chain: AnvilChain, controller: Address, wallet: DevAccount, walletKey: Uint8Array, fee: bigint, coordinator: string, index: number): Promise<ReadyTiming> {
  const waitOptions = (what: string, intervalMs: number) => ({ timeoutMs: READY_TIMEOUT_MS, intervalMs, description: `secret #${index}: ${what}` });
  const hash = await chain.walletClient(wallet.privateKey).writeContract({ address: controller, abi: secretsControllerAbi, functionName: 'createSecret', args: [], value: fee });
  // Throws TransactionReceiptNotFoundError until the block with it is mined.
  const receipt = await waitFor(() => chain.publicClient.getTransactionReceipt({ hash }), waitOptions('its createSecret receipt', RECEIPT_POLL_MS));
  const t0 = performance.now();
  if (receipt.status !== 'success') throw new Error(`createSecret ${hash} reverted`);
  const [created] = parseEventLogs({ abi: secretsControllerAbi, eventName: 'SecretCreated', logs: receipt.logs });
  if (!created) throw new Error(`createSecret ${hash} emitted no SecretCreated`);
  const secretId = created.args.secretId;

  // The client's isSecretReady: not syncing and a publicKeyCid, at the latest block.
  await waitFor(async () => {
    const state = await readSecretState(chain, controller, secretId);
    return !state.isSyncing && state.publicKeyCid !== '';
  }, waitOptions('ready at the latest block', READY_POLL_MS));
  const tReady = performance.now();
  const refusals: ReadyTiming['refusals'] = [];
  await waitFor(async () => {
    const res = await post(`${coordinator}/encrypt-payload`, signWeb3(wallet, walletKey, secretId, await headOf(chain), `ready ${index}`)).catch((err: unknown) => {
      refusals.push({ status: 0, code: 'no answer', error: err instanceof Error ? err.message : String(err) });
      throw err;
    });
    if (res.status !== 200) refusals.push({ status: res.status, code: res.body.code, error: res.body.error });
    return res.status === 200;
  }, waitOptions('a successful encrypt', READY_POLL_MS));
  const t1 = performance.now();
  return { toReadyMs: tReady - t0, toEncryptMs: t1 - t0, refusals };
}
