/**
 * Web3 secrets end to end (docs/web3.md, "Web3 secrets"): a wallet creates a secret on a real local
 * chain (anvil, chain 8453, a test controller), the cluster's syncer (node 0) follows `SecretCreated`,
 * deals the key and marks the secret synced with `cifer`; payloads and files round-trip across both
 * coordinators; owner and delegate changes made on chain take effect without a restart; members read
 * the chain themselves; events missed while the syncer was down are processed once; an RPC outage is
 * a 503 naming the chain and heals by itself; usage counts and limits apply to wallets.
 * 5 members, 2 coordinators.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { zeroAddress, type Address } from 'viem';
import { startLocalCluster, waitFor, type LocalCluster } from 'quorumkeep/testing';
import { getJson, postJson } from '../utils/http.ts';
import { createSecretOnChain, deployController, fund, mine, readSecretState, setDelegateOnChain, startAnvil, transferSecretOnChain, whitelist, type AnvilChain, type DevAccount } from '../utils/anvil.ts';
import { downloadJob, multipartStream, patterned, postMultipart, waitForJob } from '../utils/files.ts';
import { startTcpProxy, type TcpProxy } from '../utils/tcp-proxy.ts';
import { startImpostor } from '../utils/impostor.ts';
import { refusalOf } from '../utils/refusal.ts';
import { AppError } from '../../src/errors/index.ts';
import { fromHex, signDigest, signPersonalMessage, toBase64, toHex } from '../../src/crypto/index.ts';
import { proposalDigest } from '../../src/core/replication/versions.ts';
import { openStore } from '../../src/store/index.ts';
import { signRecord } from '../../src/core/replication/record.ts';
import { web3SecretKey } from '../../src/core/web3/records.ts';
import type { Cluster } from '../../src/cluster/index.ts';

const CHAIN_ID = 8453;
const BLOCK_TIME_MS = 500;
const CONFIRMATIONS = 2;
const CHUNK = 1000;
const SYNCER = 0;
/** A plan for one wallet: three decrypts per cycle. */
const TIGHT = { bytesPerCycle: 1_000_000, requestsPerCycle: 3, requestsPerSecond: 100 };
const ROOMY = { bytesPerCycle: 1e12, requestsPerCycle: 1e9, requestsPerSecond: 1e6 };

let chain: AnvilChain;
let rpc: TcpProxy;
let controller: Address;
let cluster: LocalCluster;
let A: string;
let B: string;
let owner: DevAccount;
let stranger: DevAccount;
let delegate: DevAccount;
let newOwner: DevAccount;
let secretId: bigint;

beforeAll(async () => {
  chain = await startAnvil({ chainId: CHAIN_ID });
  controller = await deployController(chain);
  // The nodes reach the chain through a proxy the outage test can cut; the test talks to anvil directly.
  rpc = await startTcpProxy(chain.rpcUrl);
  const chainConfig = { chainId: CHAIN_ID, name: 'Base (anvil)', rpcUrl: rpc.url, secretsControllerAddress: controller, blockTimeMs: BLOCK_TIME_MS, confirmations: CONFIRMATIONS };
  cluster = await startLocalCluster({
    size: 5,
    threshold: 3,
    coordinators: 2,
    nodeConfig: {
      chains: [chainConfig],
      files: { chunkBytes: CHUNK },
      usage: { plans: [{ id: 'roomy', cycle: 'monthly', encryption: ROOMY, decryption: ROOMY }, { id: 'tight', cycle: 'monthly', encryption: ROOMY, decryption: TIGHT }] },
    },
    nodeConfigFor: (i) => (i === SYNCER ? { chains: [{ ...chainConfig, syncer: true }] } : {}),
  });
  [A, B] = cluster.coordinators as [string, string];
  [, owner, stranger, delegate, newOwner] = chain.accounts as [DevAccount, DevAccount, DevAccount, DevAccount, DevAccount];
  const syncer = cluster.descriptor.nodes[SYNCER]!.nodeAddress as Address;
  await fund(chain, syncer, '1');
  await whitelist(chain, controller, syncer);
  secretId = await createSecretOnChain(chain, controller, owner.privateKey);
  await syncedAndServed(secretId);
}, 90_000);
afterAll(async () => {
  await cluster?.stop();
  await rpc?.close();
  await chain?.stop();
});

async function head(): Promise<number> {
  return Number(await chain.publicClient.getBlockNumber({ cacheTime: 0 }));
}

/** Mine a block per round until `check` holds: confirmations come from blocks, and anvil mines on demand. */
function minedUntil<T>(check: () => Promise<T | undefined | false>, description: string, timeoutMs = 30_000): Promise<T> {
  return waitFor(
    async () => {
      await mine(chain, 1);
      return (await check()) || undefined;
    },
    { timeoutMs, intervalMs: 100, description },
  ) as Promise<T>;
}

/** Until the contract shows the secret synced by the cluster and both coordinators serve its key. */
async function syncedAndServed(id: bigint): Promise<string> {
  await minedUntil(async () => {
    const s = await readSecretState(chain, controller, id);
    return !s.isSyncing;
  }, `secret ${id} to be synced on chain`);
  return minedUntil(async () => {
    const keys = await Promise.all([A, B].map((url) => getJson<{ publicKey: string }>(`${url}/secret-public-key/${CHAIN_ID}/${id}`)));
    return keys.every((k) => k.status === 200) && keys[0]!.body.publicKey === keys[1]!.body.publicKey ? keys[0]!.body.publicKey : undefined;
  }, `secret ${id}'s key on both coordinators`);
}

/** A wallet's signed string `<chain>_<subject>_<wallet>_<block>[_extra…]`. */
function signed(account: DevAccount, subject: string | number | bigint, block: number, ...extra: string[]) {
  const data = [CHAIN_ID, subject, account.address, block, ...extra].join('_');
  return { data, signature: signPersonalMessage(data, fromHex(account.privateKey)) };
}

async function encrypt(url: string, account: DevAccount, id: bigint, text: string) {
  return postJson<{ cifer: string; encryptedMessage: string }>(`${url}/encrypt-payload`, signed(account, id, await head(), text));
}

async function decrypt(url: string, account: DevAccount, id: bigint, enc: { cifer: string; encryptedMessage: string }) {
  return postJson<{ decryptedMessage: string }>(`${url}/decrypt-payload`, { cifer: enc.cifer, ...signed(account, id, await head(), enc.encryptedMessage) });
}

/** A message sealed to the secret on A: what decrypts below open. */
async function sealedMessage(text: string, id = secretId) {
  const enc = await encrypt(A, owner, id, text);
  expect(enc.status, JSON.stringify(enc.body)).toBe(200);
  return enc.body;
}

describe('a secret created on chain', () => {
  it('is keyed by the cluster and marked synced with the sentinel; its public key is served on both coordinators', async () => {
    const state = await readSecretState(chain, controller, secretId);
    expect(state).toMatchObject({ owner: owner.address, isSyncing: false, clusterId: 0, secretType: 1, publicKeyCid: 'cifer' });
    const key = await getJson<{ chainId: number; secretId: number; publicKey: string }>(`${B}/secret-public-key/${CHAIN_ID}/${secretId}`);
    expect(key.body).toMatchObject({ success: true, chainId: CHAIN_ID, secretId: Number(secretId) });
    expect(Buffer.from(key.body.publicKey, 'base64')).toHaveLength(1184);
    // The same key on every member's replica: one key per secret.
    for (const member of cluster.members) {
      const record = await member.state.get('web3Secret', web3SecretKey(CHAIN_ID, Number(secretId)));
      expect((record?.body as { publicKeyCid: string }).publicKeyCid).toBe(key.body.publicKey);
    }
    // The deprecated signed form, with a wallet's string.
    const signedForm = await postJson(`${A}/secret-public-key`, { ...signed(stranger, secretId, await head()), chainId: CHAIN_ID, secretId: Number(secretId) });
    expect(signedForm.status, JSON.stringify(signedForm.body)).toBe(200);
    expect(signedForm.body.publicKey).toBe(key.body.publicKey);
    // An id the chain never made: 404. A secret of a type the cluster does not serve: 403, never keyed.
    expect((await getJson(`${A}/secret-public-key/${CHAIN_ID}/999999`)).status).toBe(404);
    const otherType = await createSecretOnChain(chain, controller, owner.privateKey, { secretType: 2 });
    const refused = await minedUntil(async () => {
      const res = await getJson(`${A}/secret-public-key/${CHAIN_ID}/${otherType}`);
      return res.status === 404 ? undefined : res;
    }, 'the type-2 secret to be confirmed');
    expect(refused.status).toBe(403);
    expect(refused.body.error).toBe('Secret type 2 is not supported');
  });

  it('the wallet encrypts on A and decrypts on B; a stranger may encrypt but gets 403 on decrypt', async () => {
    const enc = await sealedMessage('gm from the owner');
    const dec = await decrypt(B, owner, secretId, enc);
    expect(dec.status, JSON.stringify(dec.body)).toBe(200);
    expect(dec.body.decryptedMessage).toBe('gm from the owner');
    expect((await encrypt(B, stranger, secretId, 'anyone may encrypt')).status).toBe(200);
    const refused = await decrypt(A, stranger, secretId, enc);
    expect(refused.status).toBe(403);
  });

  it('a multi-chunk file: encrypt-file on A, decrypt-existing-file on B, the plaintext back with the download signature', async () => {
    const content = patterned(3 * CHUNK + 123, 7);
    const form = signed(owner, secretId, await head());
    const started = await postMultipart(
      `${A}/encrypt-file`,
      multipartStream([{ name: 'file', filename: 'ledger.csv', content }, { name: 'secretId', value: String(secretId) }, { name: 'data', value: form.data }, { name: 'signature', value: form.signature }]),
    );
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    const encryptJob = await waitForJob(A, started.body.jobId as string);
    expect(encryptJob).toMatchObject({ chainId: CHAIN_ID, secretId: Number(secretId), secretOwnerPrincipalId: owner.address.toLowerCase(), signerPrincipalId: owner.address.toLowerCase() });

    const decrypting = await postJson<{ jobId: string }>(`${B}/decrypt-existing-file`, { encryptJobId: encryptJob.id, ...signed(owner, secretId, await head()) });
    expect(decrypting.status, JSON.stringify(decrypting.body)).toBe(200);
    const job = await waitForJob(B, decrypting.body.jobId);
    expect((await downloadJob(B, job.id)).status).toBe(401);
    expect((await downloadJob(B, job.id, signed(stranger, secretId, await head(), job.id, 'download'))).status).toBe(403);
    const plain = await downloadJob(B, job.id, signed(owner, secretId, await head(), job.id, 'download'));
    expect(plain.status).toBe(200);
    expect(plain.bytes.equals(content)).toBe(true);

    // The .cifer itself uploaded to /decrypt-file on A, and the job deleted by its signer.
    const cifer = await downloadJob(A, encryptJob.id);
    expect(cifer.status).toBe(200);
    // A file decrypt string is 4 parts: used once, so a second decrypt in the same block waits for the next.
    await mine(chain, 1);
    const decForm = signed(owner, secretId, await head());
    const uploaded = await postMultipart(`${A}/decrypt-file`, multipartStream([{ name: 'file', filename: 'ledger.csv.cifer', content: cifer.bytes }, { name: 'data', value: decForm.data }, { name: 'signature', value: decForm.signature }]));
    expect(uploaded.status, JSON.stringify(uploaded.body)).toBe(200);
    const fromUpload = await waitForJob(A, uploaded.body.jobId as string);
    const again = await downloadJob(A, fromUpload.id, signed(owner, secretId, await head(), fromUpload.id, 'download'));
    expect(again.bytes.equals(content)).toBe(true);
    expect((await postJson(`${B}/jobs/${fromUpload.id}/delete`, signed(stranger, secretId, await head(), fromUpload.id, 'delete'))).status).toBe(403);
    expect((await postJson(`${B}/jobs/${fromUpload.id}/delete`, signed(owner, secretId, await head(), fromUpload.id, 'delete'))).status).toBe(200);

    // A stranger's decrypt is refused before any job exists.
    const strangers = await postJson(`${A}/decrypt-existing-file`, { encryptJobId: encryptJob.id, ...signed(stranger, secretId, await head()) });
    expect(strangers.status).toBe(403);
  });
});

describe('freshness of a wallet’s block number', () => {
  it('6 ahead is "in the future", older than the window is "too old", and the same request re-signed with a new block succeeds', async () => {
    const enc = await sealedMessage('fresh or not');
    const window = Math.ceil(600_000 / BLOCK_TIME_MS);
    const current = await head();
    const ahead = await postJson(`${A}/decrypt-payload`, { cifer: enc.cifer, ...signed(owner, secretId, current + 6, enc.encryptedMessage) });
    expect(ahead.status).toBe(400);
    expect(ahead.body.error).toBe(`Block number ${current + 6} is in the future (current: ${current})`);
    if (current <= window) await mine(chain, window - current + 2);
    const now = await head();
    // The coordinator caches its head for a block time: until it has read the mined blocks, the
    // stale block would still look fresh to it (the usage report has no side effect to spend).
    await waitFor(async () => (await postJson(`${A}/jobs/dataConsumption`, signed(owner, 0, now - window - 1))).status === 400, { timeoutMs: 10_000, description: 'the coordinator to see the new head' });
    const stale = signed(owner, secretId, now - window - 1, enc.encryptedMessage);
    const old = await postJson(`${A}/decrypt-payload`, { cifer: enc.cifer, ...stale });
    expect(old.status).toBe(400);
    expect(old.body.error).toBe(`Block number ${now - window - 1} is too old (current: ${now}, max window: ${window})`);
    // What the client does on "too old": sign again with the head.
    const again = await decrypt(A, owner, secretId, enc);
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    expect(again.body.decryptedMessage).toBe('fresh or not');
  });
});

describe('owner and delegate changes made on chain', () => {
  it('after setDelegate the delegate decrypts on both coordinators; after transferSecret the old owner gets 403 and the new one decrypts — no restart', async () => {
    const id = await createSecretOnChain(chain, controller, owner.privateKey);
    await syncedAndServed(id);
    const enc = await sealedMessage('for owner and delegate', id);
    expect((await decrypt(A, delegate, id, enc)).status).toBe(403);

    await setDelegateOnChain(chain, controller, owner.privateKey, id, delegate.address);
    for (const url of [A, B]) {
      const dec = await minedUntil(async () => {
        const res = await decrypt(url, delegate, id, enc);
        return res.status === 200 ? res : undefined;
      }, `the delegate to decrypt on ${url}`);
      expect(dec.body.decryptedMessage).toBe('for owner and delegate');
    }

    await transferSecretOnChain(chain, controller, owner.privateKey, id, newOwner.address);
    for (const url of [A, B]) {
      // Each node acts on the change once it is `confirmations` deep by its own head (cached for up
      // to a block time), so for a moment the nodes may disagree: wait for the new owner to pass.
      const dec = await minedUntil(async () => {
        const res = await decrypt(url, newOwner, id, enc);
        return res.status === 200 ? res : undefined;
      }, `the new owner to decrypt on ${url}`);
      expect(dec.body.decryptedMessage).toBe('for owner and delegate');
      expect((await decrypt(url, owner, id, enc)).status).toBe(403);
      // The test controller clears the delegate on transfer.
      expect((await decrypt(url, delegate, id, enc)).status).toBe(403);
    }

    // A delegate set, then cleared to the zero address, is no delegate (setting the zero address
    // again would revert "Delegate unchanged", as the published controller does).
    await setDelegateOnChain(chain, controller, newOwner.privateKey, id, delegate.address);
    await setDelegateOnChain(chain, controller, newOwner.privateKey, id, zeroAddress);
    await mine(chain, CONFIRMATIONS + 1);
    expect((await decrypt(A, newOwner, id, enc)).status).toBe(200);
  }, 90_000);
});

describe('usage for wallets', () => {
  it('dataConsumption reports the wallet; a plan assigned to the wallet limits its decrypts (429)', async () => {
    const wallet = stranger.address.toLowerCase();
    const assigned = await postJson(`${A}/admin/usage/plan`, { principalId: wallet, planId: 'tight' }, { authorization: `Bearer ${cluster.adminToken}` });
    expect(assigned.status, JSON.stringify(assigned.body)).toBe(200);
    // The stranger may not decrypt Alice's secret: give it one of its own.
    const own = await createSecretOnChain(chain, controller, stranger.privateKey);
    await syncedAndServed(own);
    const enc = await encrypt(A, stranger, own, 'counted');
    expect(enc.status).toBe(200);
    const outcomes: number[] = [];
    for (let i = 0; i < 4; i++) {
      // A decrypt string is used once: each decrypt signs a new block.
      await mine(chain, 1);
      outcomes.push((await decrypt(A, stranger, own, enc.body)).status);
    }
    expect(outcomes).toEqual([200, 200, 200, 429]);
    const report = await postJson(`${A}/jobs/dataConsumption`, signed(stranger, 0, await head()));
    expect(report.status).toBe(200);
    expect(report.body).toMatchObject({ userId: wallet, userType: 'web3', planId: 'tight' });
    expect(report.body.decryption).toMatchObject({ count: 3, requestLimit: 3 });
    expect((report.body.encryption as { count: number }).count).toBeGreaterThanOrEqual(1);
  }, 60_000);
});

describe('an RPC outage', () => {
  it('is a 503 naming the chain on Web3 routes while Web2 goes on; when the RPC is back it works without a restart', async () => {
    const enc = await sealedMessage('through the outage');
    rpc.cut();
    try {
      // The head is cached for a block time: past it, every Web3 request needs the chain.
      const refused = await waitFor(
        async () => {
          const res = await decrypt(B, owner, secretId, enc);
          return res.status === 503 ? res : undefined;
        },
        { timeoutMs: 20_000, intervalMs: 200, description: 'a 503 while the RPC is cut' },
      );
      expect(refused.body).toMatchObject({ code: 'CHAIN_UNAVAILABLE', chainId: CHAIN_ID });
      expect((refused.body as unknown as { error: string }).error).toMatch(/^Chain 8453 \(Base \(anvil\)\) RPC is unavailable/);
      expect(JSON.stringify(refused.body)).not.toContain(rpc.url);
      expect((await getJson(`${A}/healthz`)).status).toBe(200);
    } finally {
      rpc.restore();
    }
    // A new block per attempt: an attempt some members answered spent its string there.
    const dec = await minedUntil(async () => {
      const res = await decrypt(B, owner, secretId, enc);
      return res.status === 200 ? res : undefined;
    }, 'decrypts after the RPC is back');
    expect(dec.body.decryptedMessage).toBe('through the outage');
  }, 60_000);
});

describe('the syncer down', () => {
  it('secrets created while it was down are keyed after its restart; a re-delivered range deals no second key', async () => {
    await cluster.stopMember(SYNCER);
    const made = [await createSecretOnChain(chain, controller, owner.privateKey), await createSecretOnChain(chain, controller, newOwner.privateKey)];
    await mine(chain, CONFIRMATIONS + 1);
    expect((await readSecretState(chain, controller, made[0]!)).isSyncing).toBe(true);
    await cluster.restartMember(SYNCER);
    const keys = [await syncedAndServed(made[0]!), await syncedAndServed(made[1]!)];

    // A crash between acting and saving the cursor: the range comes again, and nothing is dealt twice.
    await cluster.stopMember(SYNCER);
    const store = await openStore({ location: `${cluster.members[SYNCER]!.config.dataDir}/db` });
    try {
      await store.putMeta(`web3-cursor:${CHAIN_ID}`, 0);
    } finally {
      await store.close();
    }
    await cluster.restartMember(SYNCER);
    await minedUntil(async () => {
      const status = await getJson<{ chainStatus: Array<{ chainId: number; cursor: number | null; lag: number | null }> }>(`${A}/healthz`);
      const own = status.body.chainStatus.find((c) => c.chainId === CHAIN_ID);
      return own?.cursor !== null && own?.cursor !== undefined && own.lag !== null && own.lag <= CONFIRMATIONS + 1;
    }, 'the syncer to follow past the re-delivered range');
    for (const [i, id] of made.entries()) {
      const served = await getJson<{ publicKey: string }>(`${B}/secret-public-key/${CHAIN_ID}/${id}`);
      expect(served.body.publicKey).toBe(keys[i]);
    }
    const metrics = await (await fetch(`${A}/metrics`, { headers: { authorization: `Bearer ${cluster.adminToken}` } })).text();
    // This process dealt nothing: the records were found first.
    expect(metrics).not.toMatch(/quorumkeep_web3_secrets_dealt_total\{[^}]*\} [1-9]/);
    // Still usable by its owner.
    const enc = await sealedMessage('after two restarts', made[0]!);
    expect((await decrypt(B, owner, made[0]!, enc)).status).toBe(200);
  }, 120_000);
});

describe('a lying coordinator', () => {
  let rogue: Cluster;
  let rogueKey: Uint8Array;
  beforeAll(async () => {
    // Coordinator 1's genuine identity (not the syncer, not whitelisted), driven by the test.
    ({ peer: rogue, signingKey: rogueKey } = await startImpostor(cluster, 1));
    await waitFor(() => [0, 2, 3, 4].every((slot) => rogue.membership.isReachable(slot)), { timeoutMs: 10_000, description: 'the rogue to reach the members' });
  }, 30_000);
  afterAll(() => rogue?.stop());

  it('that claims a stranger owns the secret gets no share: every member reads the owner from the chain', async () => {
    const enc = await sealedMessage('members read the chain');
    const strangerString = signed(stranger, secretId, await head(), enc.encryptedMessage);
    const outcomes = await Promise.all(
      [0, 2, 3, 4].map((slot) => refusalOf(() => rogue.callMember(slot, 'shard', { op: 'release', secretId: Number(secretId), ...strangerString, cifer: enc.cifer, inputFormat: 'hex' }, { signal: AbortSignal.timeout(10_000) }))),
    );
    for (const outcome of outcomes) expect(outcome).toEqual({ code: 'FORBIDDEN', reason: 'not_owner_or_delegate' });
  });

  it('cannot record a second key for a secret, nor key one itself: it is not whitelisted', async () => {
    let seq = 1_000_000;
    const body = (id: number) => ({ chainId: CHAIN_ID, secretId: id, clusterId: cluster.descriptor.clusterId, secretType: 1, publicKeyCid: toBase64(new Uint8Array(1184).fill(7)), createdBlock: 1, createdAt: Date.now() });
    /** The rogue's own `web3Secret` record: a key it made (so it knows the seed). Only slot 0 writes them. */
    const forged = (id: number) => signRecord(cluster.descriptor.clusterId, { kind: 'web3Secret', key: web3SecretKey(CHAIN_ID, id), origin: cluster.descriptor.nodes[1]!.nodeAddress, seq: seq++, hlc: [Date.now(), 0], body: { ...body(id), v: { n: 1, prev: null, change: 'deal' } } }, rogueKey);
    await expect(rogue.sendApply(2, [forged(Number(secretId))], { signal: AbortSignal.timeout(5000) })).rejects.toThrow(/writer_not_allowed/);
    /** The rogue's proposal to slot 0, vouched for with its genuine key. */
    const propose = (id: number) => {
      const key = web3SecretKey(CHAIN_ID, id);
      const unvouched = { ...body(id), v: { n: 1, prev: null, change: 'deal' } };
      const signature = '0x' + toHex(signDigest(proposalDigest(cluster.descriptor.clusterId, 'web3Secret', key, unvouched as never), rogueKey));
      const vouched = { ...unvouched, v: { ...unvouched.v, vouch: { nodeAddress: cluster.descriptor.nodes[1]!.nodeAddress, signature } } };
      return rogue.requestCreate({ op: 'propose', params: { proposals: [{ kind: 'web3Secret', key, body: vouched }] } }, { signal: AbortSignal.timeout(5000) });
    };
    // A secret that has its key: slot 0 holds a version, so the proposal follows nothing and writes nothing.
    expect(await propose(Number(secretId))).toMatchObject({ conflict: true });
    // A secret the syncer (slot 0 here) has not keyed yet: the rogue still may not, not being
    // whitelisted — slot 0 checks the proposal as every member would, against the chain.
    const fresh = Number(await createSecretOnChain(chain, controller, owner.privateKey));
    const refused = await propose(fresh).catch((e: unknown) => e as AppError);
    expect(refused).toBeInstanceOf(AppError);
    expect([(refused as AppError).code, (refused as AppError).reason]).toEqual(['FORBIDDEN', 'record_refused']);
    expect((refused as AppError).message).toMatch(/not_whitelisted|not_on_chain/);
    // The syncer keys it; the rogue's key is on no member.
    await minedUntil(async () => (await cluster.members[3]!.state.get('web3Secret', web3SecretKey(CHAIN_ID, fresh))) !== undefined, 'the syncer to key the fresh secret');
    expect((await cluster.members[3]!.state.get('web3Secret', web3SecretKey(CHAIN_ID, fresh)))!.body).not.toMatchObject({ publicKeyCid: body(fresh).publicKeyCid });
  });
});

