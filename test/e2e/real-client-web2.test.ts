/**
 * The real client's Web2 flow: cifer-sdk (test/vendor/cifer-sdk, its sources unchanged) against a
 * 3-member cluster with two coordinators — the account registered and verified with the mailed OTP,
 * then everything through the client's own Web2 client: its managed session (an ephemeral session
 * wallet, created with the account's Ed25519 key), a secret, the secret listed, and payloads
 * encrypted and decrypted.
 *
 * The client's session signer counts a string's UTF-16 code units in its EIP-191 prefix, not its
 * bytes: an encrypt of anything but ASCII used to be refused 403 (docs/security.md, "Signed strings").
 * Such a signature holds for its own string only.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RpcReadClient, web2 } from 'cifer-sdk';
import { startLocalCluster, type LocalCluster } from 'quorumkeep/testing';
import { WEB2_CHAIN_ID, signedData } from 'quorumkeep/client';
import { ed25519PublicKeyOf, signEd25519 } from '../../src/crypto/index.ts';
import { postJson } from '../utils/http.ts';
import { expectApiError, newEd25519, registerKey, verifiedAccount } from '../utils/web2.ts';

let cluster: LocalCluster;
let client: web2.Web2Client;
let secretId: number;

beforeAll(async () => {
  cluster = await startLocalCluster({ size: 3, threshold: 2, coordinators: 2 });
  const url = cluster.coordinators[0]!;
  const account = await verifiedAccount(cluster, url, 'sdk');
  const key = newEd25519();
  expect((await registerKey(url, account, key)).status).toBe(201);
  // The client's Web2 "block number" is its clock: its RPC reader answers Date.now() for chain -1.
  client = web2.createClient({ blackboxUrl: url, readClient: new RpcReadClient({ rpcUrlByChainId: {} }) });
  await client.createManagedSession({
    principalId: account.principalId,
    ed25519Signer: { sign: async (message) => signEd25519(key.seed, message), getPublicKey: () => ed25519PublicKeyOf(key.seed) },
  });
  ({ secretId } = await client.createSecret());
}, 60_000);
afterAll(() => cluster?.stop());

describe('the real client (cifer-sdk), Web2', () => {
  it('lists the secret it created, owned by its principal', async () => {
    const { secrets } = await client.listSecrets();
    expect(secrets.map((s) => s.secretId)).toContain(secretId);
    expect(secrets.find((s) => s.secretId === secretId)!.ownerPrincipalId).toBe(client.session!.principalId);
  });

  it('encrypts and decrypts text in any script: ASCII, accents, CJK, emoji (surrogate pairs)', async () => {
    for (const plaintext of ['hello', 'café crème', '秘密のメッセージ', 'key 🔑 and lock 🔒', 'mixed: ü ß € 𝄞']) {
      const sealed = await client.payload.encryptPayload({ secretId, plaintext });
      const { decryptedMessage } = await client.payload.decryptPayload({ secretId, encryptedMessage: sealed.encryptedMessage, cifer: sealed.cifer });
      expect(decryptedMessage).toBe(plaintext);
    }
  });

  it("a signature in the client's form holds for its own string only", async () => {
    const session = client.session!;
    const url = cluster.coordinators[1]!;
    const data = signedData(WEB2_CHAIN_ID, secretId, session.sessionAddress.toLowerCase(), Date.now(), 'café');
    const signature = await session.signer.signMessage(data);
    expect((await postJson(`${url}/encrypt-payload`, { data, signature })).status).toBe(200);
    // The same signature on strings that differ in the message, or only in its length's digits' place.
    for (const other of [data.replace('café', 'cafe'), data.replace('café', 'cafés'), data.replace('café', 'caf')]) {
      expectApiError(await postJson(`${url}/encrypt-payload`, { data: other, signature }), 403, 'FORBIDDEN');
    }
  });
});
