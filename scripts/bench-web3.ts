/**
 * `npm run bench -- web3` (issue 14): Web3 encrypt and decrypt latency next to Web2's in the same
 * run, on one 5-member, 2-coordinator cluster and a local chain (anvil, a block every 2 s like Base),
 * and the JSON-RPC calls the nodes make per request, counted by an HTTP proxy between them and the
 * chain. Target: a Web3 decrypt with a warm cache adds at most one RPC round trip per member over
 * Web2's — judged against the RPC round trip measured in the same run.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { Address } from 'viem';
import { startLocalCluster, waitFor } from '../src/testing/index.ts';
import { fromHex, signPersonalMessage } from '../src/crypto/index.ts';
import { createSecretOnChain, deployController, fund, readSecretState, startAnvil, whitelist, type DevAccount } from '../test/utils/anvil.ts';
import { principalWithSession } from '../test/utils/session.ts';
import { BENCH_PLAN, median, ms, percentile, post, table } from './bench-lib.ts';

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
    const chainConfig = { chainId: CHAIN_ID, name: 'Base (anvil)', rpcUrl: proxy.url, secretsControllerAddress: controller, blockTimeMs: BLOCK_TIME_MS };
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
    let stopReading = () => {};
    try {
      const [A, B] = cluster.coordinators as [string, string];
      const syncer = cluster.descriptor.nodes[0]!.nodeAddress as Address;
      await fund(chain, syncer, '1');
      await whitelist(chain, controller, syncer);
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
      const web3Signed = (subject: string | number | bigint, block: number, extra: string) => {
        const data = `${CHAIN_ID}_${subject}_${wallet.address}_${block}_${extra}`;
        return { data, signature: signPersonalMessage(data, walletKey) };
      };
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

      const row = (values: number[]): [string, string][] => [
        ['p50', `${ms(median(values))}  (${(median(values) / rpcRtt).toFixed(1)}× RPC RTT)`],
        ['p99', ms(percentile(values, 99))],
      ];
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
}
