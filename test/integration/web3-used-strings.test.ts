/**
 * A Web3 decrypt string stays spent for as long as its block is fresh by the member's own head,
 * however far the wall clock moves (docs/security.md, Share release §5; src/core/secrets/used-strings.ts):
 * a real local chain (anvil) that mines only when told to, a cluster whose clock the test moves 25
 * minutes ahead — past the 20 minutes after which members used to forget a Web3 string — and members
 * pruning every 100 ms. A string the chain has left two windows behind is forgotten (the prune's log
 * line says so on each member); one it has not is refused again to another coordinator (a member
 * releases for a string to the first coordinator it released it to only).
 * 3 members, all needed (threshold 3): every member releases for every decrypt, so every member holds
 * every mark. 2 coordinators: A, the chain's syncer, decrypts first; B replays.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Address } from 'viem';
import { startLocalCluster, waitFor, type LocalCluster } from 'quorumkeep/testing';
import { getJson, postJson } from '../utils/http.ts';
import { createSecretOnChain, deployController, fund, headOf, mine, readSecretState, startAnvil, whitelist, type AnvilChain, type DevAccount } from '../utils/anvil.ts';
import { fromHex, signPersonalMessage } from '../../src/crypto/index.ts';

const CHAIN_ID = 8453;
const BLOCK_TIME_MS = 2000;
/** The freshness window in blocks, `ceil(600000 / blockTimeMs)`. */
const WINDOW = Math.ceil(600_000 / BLOCK_TIME_MS);
const SIZE = 3;
/** Past the 20 minutes after which a member used to forget a Web3 string. */
const CLOCK_JUMP_MS = 25 * 60_000;

let chain: AnvilChain;
let cluster: LocalCluster;
let A: string;
let B: string;
let owner: DevAccount;
let secretId: bigint;
let clockOffset = 0;
/** Every node's log lines, parsed. */
const logged: Array<Record<string, unknown>> = [];

beforeAll(async () => {
  chain = await startAnvil({ chainId: CHAIN_ID });
  const controller = await deployController(chain);
  const chainConfig = { chainId: CHAIN_ID, name: 'Base (anvil)', rpcUrl: chain.rpcUrl, secretsControllerAddress: controller, blockTimeMs: BLOCK_TIME_MS };
  cluster = await startLocalCluster({
    size: SIZE,
    threshold: SIZE,
    coordinators: 2,
    clock: () => Date.now() + clockOffset,
    logLevel: 'info',
    logDestination: { write: (chunk: string) => void logged.push(...chunk.split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>)) },
    nodeConfig: { chains: [chainConfig], usage: { enabled: false }, secrets: { usedStringPruneIntervalMs: 100 } },
    nodeConfigFor: (i) => (i === 0 ? { chains: [{ ...chainConfig, syncer: true }] } : {}),
  });
  [A, B] = cluster.coordinators as [string, string];
  owner = chain.accounts[1]!;
  const syncer = cluster.descriptor.nodes[0]!.nodeAddress as Address;
  await fund(chain, syncer, '1');
  await whitelist(chain, controller, syncer);
  secretId = await createSecretOnChain(chain, controller, owner.privateKey);
  // Confirmations come from blocks, and anvil mines on demand.
  await waitFor(
    async () => {
      await mine(chain, 1);
      return !(await readSecretState(chain, controller, secretId)).isSyncing && (await getJson(`${A}/secret-public-key/${CHAIN_ID}/${secretId}`)).status === 200;
    },
    { timeoutMs: 30_000, intervalMs: 100, description: 'the secret synced and its key served' },
  );
  // A head past the window, so a string may sign a block that far back.
  await mine(chain, WINDOW + 10);
}, 90_000);
afterAll(async () => {
  await cluster?.stop();
  await chain?.stop();
});

/** The owner's signed string `<chain>_<secretId>_<wallet>_<block>_<last>`. */
function signedByOwner(block: number, last: string) {
  const data = [CHAIN_ID, secretId, owner.address, block, last].join('_');
  return { data, signature: signPersonalMessage(data, fromHex(owner.privateKey)) };
}

/** Until every member has logged forgetting used strings since log line `since`. */
function forgottenOnEveryMember(since: number, description: string): Promise<boolean> {
  return waitFor(
    () => {
      const nodes = new Set(logged.slice(since).filter((l) => l.msg === 'used strings forgotten').map((l) => l.node));
      return nodes.size === SIZE;
    },
    { timeoutMs: 15_000, description },
  );
}

describe('a used Web3 decrypt string', () => {
  it('is refused again after the clock moved 25 minutes while the chain did not leave its block two windows behind', async () => {
    const h = await headOf(chain);
    const enc = await postJson<{ cifer: string; encryptedMessage: string }>(`${A}/encrypt-payload`, signedByOwner(h, 'gm'));
    expect(enc.status, JSON.stringify(enc.body)).toBe(200);
    // Two strings over the same message: one signed near the back of the window, one at its front
    // (5 blocks ahead is the most the check allows).
    const older = { cifer: enc.body.cifer, ...signedByOwner(h - WINDOW + 2, enc.body.encryptedMessage) };
    const newer = { cifer: enc.body.cifer, ...signedByOwner(h + 5, enc.body.encryptedMessage) };
    for (const request of [older, newer]) {
      const first = await postJson<{ decryptedMessage: string }>(`${A}/decrypt-payload`, request);
      expect(first.status, JSON.stringify(first.body)).toBe(200);
      expect(first.body.decryptedMessage).toBe('gm');
    }
    // Through A again it is served (its own repeat); through B, refused.
    expect((await postJson(`${A}/decrypt-payload`, newer)).status).toBe(200);
    const replayed = await postJson(`${B}/decrypt-payload`, newer);
    expect(replayed.status).toBe(403);
    expect(replayed.body.code).toBe('FORBIDDEN');

    // The clock jumps 25 minutes; the chain moves just far enough for the older string to be two
    // windows behind (block < head − 2·window) while the newer one is still fresh (block ≥ head − window).
    clockOffset += CLOCK_JUMP_MS;
    const since = logged.length;
    await mine(chain, WINDOW + 3);
    await forgottenOnEveryMember(since, 'each member to forget the older string');
    // The same prune passes ran at the moved clock: the newer string is fresh by the head, and still A's.
    const again = await postJson(`${B}/decrypt-payload`, newer);
    expect(again.status, JSON.stringify(again.body)).toBe(403);
    expect(again.body.code).toBe('FORBIDDEN');

    // Once the chain leaves it two windows behind too, it goes: the marks do not pile up.
    const later = logged.length;
    await mine(chain, WINDOW + 10);
    await forgottenOnEveryMember(later, 'each member to forget the newer string');
    const stale = await postJson(`${A}/decrypt-payload`, newer);
    expect(stale.status).toBe(400);
    expect(stale.body.code).toBe('BAD_REQUEST');
  });
});
