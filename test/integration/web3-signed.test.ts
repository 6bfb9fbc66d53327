/**
 * Web3 signed strings through a real cluster and a real local chain (docs/http.md, Signed data
 * strings and Usage; docs/web3.md): the routes built so far for Web3 — the usage report and the job
 * list — take a wallet's EIP-191 string with a block number from the chain, judge it against the
 * chain's head with the exact messages the deployed client matches, and treat the wallet as the user.
 * 5 members, 2 coordinators, anvil (chain 8453).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalCluster, type LocalCluster } from 'quorumkeep/testing';
import { postJson } from '../utils/http.ts';
import { headOf, mine, startAnvil, type AnvilChain } from '../utils/anvil.ts';
import { addressOfPrivateKey, fromHex, signPersonalMessage } from '../../src/crypto/index.ts';

const BLOCK_TIME_MS = 2000;
const WINDOW = Math.ceil(600_000 / BLOCK_TIME_MS);

let chain: AnvilChain;
let cluster: LocalCluster;
let A: string;
let B: string;
let key: Uint8Array;
let wallet: string;

beforeAll(async () => {
  chain = await startAnvil({ chainId: 8453 });
  cluster = await startLocalCluster({
    size: 5,
    threshold: 3,
    coordinators: 2,
    nodeConfig: { chains: [{ chainId: 8453, name: 'Base (anvil)', rpcUrl: chain.rpcUrl, blockTimeMs: BLOCK_TIME_MS }] },
  });
  [A, B] = cluster.coordinators as [string, string];
  key = fromHex(chain.accounts[3]!.privateKey);
  wallet = addressOfPrivateKey(key);
  // A head past the window, so "too old" has room.
  await mine(chain, WINDOW + 20);
}, 60_000);
afterAll(async () => {
  await cluster?.stop();
  await chain?.stop();
});

const head = () => headOf(chain);

function signed(subject: string | number, block: number, address = wallet) {
  const data = `8453_${subject}_${address}_${block}`;
  return { data, signature: signPersonalMessage(data, key) };
}

describe('Web3 signed strings on a real chain', () => {
  it('POST /jobs/dataConsumption: the wallet is the user (web3), on either coordinator, whatever the case of its address', async () => {
    for (const url of [A, B]) {
      const res = await postJson(`${url}/jobs/dataConsumption`, signed(0, await head(), wallet.toUpperCase().replace('0X', '0x')));
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body).toMatchObject({ success: true, userId: wallet.toLowerCase(), userType: 'web3', user_id: wallet.toLowerCase(), user_type: 'web3' });
      expect(res.body).not.toHaveProperty('wallet');
    }
  });

  it('a block too old or in the future answers the exact messages the client matches', async () => {
    const current = await head();
    const old = await postJson(`${A}/jobs/dataConsumption`, signed(0, current - WINDOW - 1));
    expect(old.status).toBe(400);
    expect(old.body.error).toBe(`Block number ${current - WINDOW - 1} is too old (current: ${current}, max window: ${WINDOW})`);
    const future = await postJson(`${A}/jobs/dataConsumption`, signed(0, current + 6));
    expect(future.status).toBe(400);
    expect(future.body.error).toBe(`Block number ${current + 6} is in the future (current: ${current})`);
    // A block mined after the coordinator cached its head: read again before refusing.
    await mine(chain, 3);
    const ahead = await postJson(`${A}/jobs/dataConsumption`, signed(0, (await head()) + 5));
    expect(ahead.status, JSON.stringify(ahead.body)).toBe(200);
  });

  it('another wallet’s signature is 403; a chain that is not enabled is 400; a Web2-only route refuses the chain', async () => {
    const other = '0x' + '11'.repeat(20);
    const forged = await postJson(`${A}/jobs/dataConsumption`, signed(0, await head(), other));
    expect(forged.status).toBe(403);
    const data = `1_0_${wallet}_${await head()}`;
    const unknown = await postJson(`${A}/jobs/dataConsumption`, { data, signature: signPersonalMessage(data, key) });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error).toBe('Chain 1 is not supported');
    const web2Only = await postJson(`${A}/web2/session/status`, signed(0, await head()));
    expect(web2Only.status).toBe(400);
    expect(web2Only.body.error).toBe('Chain 8453 is not supported');
  });

  it('POST /jobs lists nothing for a wallet with no jobs, on both coordinators', async () => {
    for (const url of [A, B]) {
      const res = await postJson(`${url}/jobs`, signed(0, await head()));
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body).toMatchObject({ success: true, jobs: [], count: 0 });
    }
  });

  it('/healthz shows operators each chain as last seen: its head and that it answers', async () => {
    const current = await head();
    await postJson(`${A}/jobs/dataConsumption`, signed(0, current + 5));
    const res = await fetch(`${A}/healthz`);
    const body = (await res.json()) as { supportedChains: number[]; chainStatus: Array<Record<string, unknown>> };
    expect(body.supportedChains).toEqual([8453]);
    expect(body.chainStatus).toEqual([expect.objectContaining({ chainId: 8453, name: 'Base (anvil)', reachable: true, lastError: null })]);
    expect(body.chainStatus[0]!.head as number).toBeGreaterThanOrEqual(current);
    expect(JSON.stringify(body.chainStatus)).not.toContain('127.0.0.1');
  });

  it('an unreachable chain RPC is a 503 naming the chain, never a 500', async () => {
    const block = await head();
    await chain.stop();
    // Ahead of the cached head: the coordinator must read the chain again, and cannot.
    const res = await postJson(`${A}/jobs/dataConsumption`, signed(0, block + 10));
    expect(res.status, JSON.stringify(res.body)).toBe(503);
    expect(res.body.code).toBe('CHAIN_UNAVAILABLE');
    expect(res.body.error).toMatch(/Chain 8453 \(Base \(anvil\)\)/);
    expect(JSON.stringify(res.body)).not.toContain(chain.rpcUrl);
  }, 30_000);
});
