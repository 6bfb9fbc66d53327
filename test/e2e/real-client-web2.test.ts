/**
 * The real client's Web2 flow: cifer-sdk (test/vendor/cifer-sdk, its sources unchanged) against a
 * 3-member cluster with two coordinators, everything through the client's own functions — an account
 * registered, its email verified with the mailed OTP, an Ed25519 key registered; a managed session
 * (an ephemeral session wallet the key vouches for); a secret, listed; payloads encrypted and
 * decrypted; a file encrypted and decrypted by jobs; a delegate found by email, set, and decrypting.
 *
 * The client's private-key signer (every session's) counts a string's UTF-16 code units in its
 * EIP-191 prefix, not its bytes: an encrypt of anything but ASCII used to be refused 403
 * (docs/security.md, "Signed strings"). Such a signature holds for its own string only.
 *
 * The client's permit requests send the form before Permits V2 — no requestId — which quorumkeep
 * refuses 400 unless `permits.acceptLegacy` is on (docs/permits.md, "The legacy form"). This cluster
 * has it on: the client's transfer goes through, confirmed from the mailed link; its rotate, which the
 * switch does not cover, is still a 400.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RpcReadClient, web2, type Ed25519Signer } from 'cifer-sdk';
import { startLocalCluster, waitFor, type LocalCluster } from 'quorumkeep/testing';
import { WEB2_CHAIN_ID, signedData } from 'quorumkeep/client';
import { ed25519PublicKeyOf, signEd25519, systemRandom, toHex } from '../../src/crypto/index.ts';
import { getJson, postJson } from '../utils/http.ts';
import { confirmLinkOf } from '../utils/permits.ts';
import { expectApiError, newEmail, otpFrom } from '../utils/web2.ts';

let cluster: LocalCluster;

/** A user of the client: an account set up through `url`, and a Web2 client with a managed session on it. */
interface SdkUser {
  email: string;
  password: string;
  principalId: string;
  client: web2.Web2Client;
}

async function sdkUser(url: string, tag: string): Promise<SdkUser> {
  const email = newEmail(tag);
  const password = `pw-${toHex(systemRandom(8))}`;
  const { principalId } = await web2.auth.register({ email, password, blackboxUrl: url });
  expect((await web2.auth.verifyEmail({ email, otp: await otpFrom(cluster, email, 'verify'), blackboxUrl: url })).emailVerified).toBe(true);
  const seed = systemRandom(32);
  const ed25519Signer: Ed25519Signer = { sign: async (message) => signEd25519(seed, message), getPublicKey: () => ed25519PublicKeyOf(seed) };
  expect((await web2.auth.registerKey({ principalId, password, ed25519Signer, blackboxUrl: url })).nodeRegistrationStatus).toBe('complete');
  // The client's Web2 "block number" is its clock: its RPC reader answers Date.now() for chain -1.
  const client = web2.createClient({ blackboxUrl: url, readClient: new RpcReadClient({ rpcUrlByChainId: {} }) });
  await client.createManagedSession({ principalId, ed25519Signer });
  return { email, password, principalId, client };
}

let alice: SdkUser;
let bob: SdkUser;
let secretId: number;

beforeAll(async () => {
  cluster = await startLocalCluster({ size: 3, threshold: 2, coordinators: 2, nodeConfig: { permits: { acceptLegacy: true } } });
  [alice, bob] = await Promise.all([sdkUser(cluster.coordinators[0]!, 'alice'), sdkUser(cluster.coordinators[1]!, 'bob')]);
  ({ secretId } = await alice.client.createSecret());
}, 60_000);
afterAll(() => cluster?.stop());

describe('the real client (cifer-sdk), Web2', () => {
  it('lists the secret it created, owned by its principal', async () => {
    const { secrets } = await alice.client.listSecrets();
    expect(secrets.find((s) => s.secretId === secretId)).toMatchObject({ ownerPrincipalId: alice.principalId, delegatePrincipalId: null });
  });

  it('encrypts and decrypts text in any script: ASCII, accents, CJK, emoji (surrogate pairs)', async () => {
    for (const plaintext of ['hello', 'café crème', '秘密のメッセージ', 'key 🔑 and lock 🔒', 'mixed: ü ß € 𝄞']) {
      const sealed = await alice.client.payload.encryptPayload({ secretId, plaintext });
      const { decryptedMessage } = await alice.client.payload.decryptPayload({ secretId, encryptedMessage: sealed.encryptedMessage, cifer: sealed.cifer });
      expect(decryptedMessage).toBe(plaintext);
    }
  });

  it('a file (its name not ASCII) through encrypt and decrypt jobs: uploaded, polled, downloaded, the same bytes back', async () => {
    const bytes = Uint8Array.from({ length: 200_000 }, (_, i) => (i * 31 + (i >> 8)) & 0xff);
    const encrypt = await alice.client.files.encryptFile({ secretId, file: new File([bytes], 'résumé 📄.bin') });
    expect((await alice.client.jobs.pollUntilComplete(encrypt.jobId, undefined, { intervalMs: 50 })).status).toBe('completed');
    const sealed = await alice.client.jobs.download(encrypt.jobId, { secretId });
    expect(sealed.size).toBeGreaterThan(bytes.length);
    const decrypt = await alice.client.files.decryptFile({ secretId, file: new File([sealed], 'résumé 📄.bin.cifer') });
    const done = await alice.client.jobs.pollUntilComplete(decrypt.jobId, undefined, { intervalMs: 50 });
    expect(done).toMatchObject({ status: 'completed', resultFileName: 'résumé 📄.bin' });
    expect(new Uint8Array(await (await alice.client.jobs.download(decrypt.jobId, { secretId })).arrayBuffer())).toEqual(bytes);
  });

  it('a delegate found by email, set by the owner, decrypts on the other coordinator', async () => {
    const sealed = await alice.client.payload.encryptPayload({ secretId, plaintext: 'für Bob' });
    const found = await alice.client.getByEmail(bob.email);
    expect(found.principalId).toBe(bob.principalId);
    await alice.client.setDelegate({ secretId, delegatePrincipalId: found.principalId });
    expect((await bob.client.payload.decryptPayload({ secretId, encryptedMessage: sealed.encryptedMessage, cifer: sealed.cifer })).decryptedMessage).toBe('für Bob');
  });

  it("a signature in the client's form holds for its own string only", async () => {
    const session = alice.client.session!;
    const url = cluster.coordinators[1]!;
    const data = signedData(WEB2_CHAIN_ID, secretId, session.sessionAddress.toLowerCase(), Date.now(), 'café');
    const signature = await session.signer.signMessage(data);
    expect((await postJson(`${url}/encrypt-payload`, { data, signature })).status).toBe(200);
    // The same signature on strings that differ in the message, or only in its length.
    for (const other of [data.replace('café', 'cafe'), data.replace('café', 'cafés'), data.replace('café', 'caf')]) {
      expectApiError(await postJson(`${url}/encrypt-payload`, { data: other, signature }), 403, 'FORBIDDEN');
    }
  });

  it("with permits.acceptLegacy, the client's transfer permit, confirmed from the mailed link, makes the other user the owner; its rotate is still 400", async () => {
    const { secretId: moving } = await alice.client.createSecret();
    const permit = await alice.client.requestPermit({ action: 'transfer', secretId: moving, payload: { newOwnerPrincipalId: bob.principalId } });
    expect(permit).toMatchObject({ success: true, action: 'transfer' });
    const link = await confirmLinkOf(cluster, permit.permitId);
    expect((await getJson(`${cluster.coordinators[1]}${link.pathAndQuery}`)).status).toBe(200);
    // The confirmation is on a quorum when answered; the listing is its coordinator's replica, which may not be of that quorum.
    await waitFor(async () => (await bob.client.listSecrets()).secrets.some((s) => s.secretId === moving && s.ownerPrincipalId === bob.principalId), { timeoutMs: 10_000, description: 'the secret listed as the new owner\'s' });
    await expect(alice.client.requestPermit({ action: 'rotate', email: alice.email, password: alice.password, payload: { newPublicKey: toHex(ed25519PublicKeyOf(systemRandom(32))) } })).rejects.toThrow('requestId is required');
  });
});
