/**
 * POST /encrypt-payload's order of work (docs/http.md, Payload encryption): with the request crypto
 * thread's fused operation the signer's recovery and the seal are one step, taken only for a Web2
 * secret this replica holds and may use; whatever the step, a forged string is refused exactly as
 * before and its envelope never leaves the service. The payloads service with the real verifier and
 * the real crypto (inline); the state, the secrets' lookups and usage are stubs.
 */
import { describe, expect, it } from 'vitest';
import { createPayloadsService } from '../../../../src/core/payloads/service.ts';
import { createSignedDataVerifier } from '../../../../src/core/sessions/signed-data.ts';
import type { StateReader } from '../../../../src/core/replication/ports.ts';
import type { SecretBody } from '../../../../src/core/secrets/records.ts';
import { resolvedOf } from '../../../../src/core/secrets/service.ts';
import type { UsageAdmission } from '../../../../src/core/usage/types.ts';
import { createRequestCryptoPool } from '../../../../src/crypto/request-pool.ts';
import { addressOfPrivateKey, fromHex, mlkemPublicKeyFromSeed, openPayloadWithSeed, recoverPersonalSigner, signPersonalMessage, systemRandom, toBase64, toHex } from '../../../../src/crypto/index.ts';
import { createLogger } from '../../../../src/log/index.ts';
import { AppError } from '../../../../src/errors/index.ts';

const PRINCIPAL = 'p-1';
const wallet = systemRandom(32);
const intruder = systemRandom(32);
const address = addressOfPrivateKey(wallet).toLowerCase();
const seed = systemRandom(64);
const publicKeyCid = toBase64(mlkemPublicKeyFromSeed(seed));
const sessionPublicKey = toHex(systemRandom(32));

function secretRecord(secretId: number, over: Partial<SecretBody> = {}): SecretBody {
  return { secretId, ownerPrincipalId: PRINCIPAL, delegatePrincipalId: null, clusterId: 'c', secretType: 1, publicKeyCid, isSyncing: false, createdAt: 1, updatedAt: 1, ...over } as SecretBody;
}

/**
 * The service, with tallies of each crypto step. `replica`: the secrets this node holds; `beyond`:
 * those only a read past the replica finds (another coordinator wrote them a moment ago).
 */
function setup(options: { replica?: SecretBody[]; beyond?: SecretBody[]; fusedFails?: boolean } = {}) {
  const steps = { recover: 0, seal: 0, fused: 0, admitted: 0 };
  const replica = new Map((options.replica ?? []).map((s) => [s.secretId, s]));
  const beyond = new Map([...replica, ...(options.beyond ?? []).map((s) => [s.secretId, s] as const)]);
  const records: Record<string, unknown> = {
    [`session/${address}`]: { principalId: PRINCIPAL, sessionAddress: address, publicKey: sessionPublicKey, issuedAt: 0, expiresAt: Date.now() + 3_600_000, grants: [] },
    [`principal/${PRINCIPAL}`]: { status: 'active', ed25519PublicKey: sessionPublicKey },
  };
  const state = { get: async (kind: string, key: string) => (records[`${kind}/${key}`] ? { body: records[`${kind}/${key}`] } : undefined) } as unknown as StateReader;
  const pool = createRequestCryptoPool({ thread: false });
  const verifier = createSignedDataVerifier({
    state,
    recoverSigner: (m, s) => {
      steps.recover += 1;
      return recoverPersonalSigner(m, s);
    },
    clock: () => Date.now(),
    chains: { get: (id) => (id === 8453 ? { chainId: 8453, name: 'Base', freshnessWindow: 300, blockNumber: async () => 1000 } : undefined) },
  });
  const usage: UsageAdmission = {
    async admit(principalId, direction, bytes) {
      steps.admitted += 1;
      return { principalId, direction, bytes, commit: () => undefined, release: () => undefined };
    },
  };
  const payloads = createPayloadsService({
    verifier,
    secrets: {
      getSecret: async (id) => replica.get(id),
      resolveSecret: async (chainId, id) => {
        const s = beyond.get(id);
        if (chainId === 8453 && s) return { ...resolvedOf(s), chainId, owner: address };
        if (!s) throw new AppError('NOT_FOUND', `Secret ${id} not found`);
        return resolvedOf(s);
      },
      recoverSeed: async () => {
        throw new Error('not used');
      },
    },
    usage,
    seal: (publicKey, plaintext) => {
      steps.seal += 1;
      return pool.seal(publicKey, plaintext);
    },
    recoverAndSeal: async (...args) => {
      steps.fused += 1;
      return options.fusedFails ? undefined : pool.recoverAndSeal(...args);
    },
    logger: createLogger({ level: 'silent' }),
  });
  return { payloads, steps };
}

const request = (secretId: number | string, plaintext: string, by = wallet) => {
  const data = `-1_${secretId}_${address}_${Date.now()}_${plaintext}`;
  return { data, signature: signPersonalMessage(data, by) };
};

const opened = (r: { cifer: string; encryptedMessage: string }) => new TextDecoder().decode(openPayloadWithSeed(seed, fromHex(r.cifer), fromHex(r.encryptedMessage)));

describe('encrypt: the signer and the envelope in one step', () => {
  it('a secret in this replica: one fused step, no separate recovery or seal; the envelope opens to the plaintext', async () => {
    const { payloads, steps } = setup({ replica: [secretRecord(7)] });
    const r = await payloads.encrypt(request(7, 'hello_world'), 'hex');
    expect(opened(r)).toBe('hello_world');
    expect(r).toMatchObject({ chainId: -1, secretId: 7, outputFormat: 'hex' });
    expect(steps).toEqual({ recover: 0, seal: 0, fused: 1, admitted: 1 });
  });

  it('a forged string for a secret in this replica: 403 as before, nothing admitted, the envelope dropped', async () => {
    const { payloads, steps } = setup({ replica: [secretRecord(7)] });
    await expect(payloads.encrypt(request(7, 'x', intruder), 'hex')).rejects.toMatchObject({ code: 'FORBIDDEN', message: 'Signature does not match the signer address in data' });
    expect(steps).toEqual({ recover: 0, seal: 0, fused: 1, admitted: 0 });
  });

  it('a forged string for a secret nobody holds is 403, not 404: the existence of a secret is no answer to a forged string', async () => {
    const { payloads, steps } = setup();
    await expect(payloads.encrypt(request(99, 'x', intruder), 'hex')).rejects.toMatchObject({ code: 'FORBIDDEN' });
    await expect(payloads.encrypt(request(99, 'x'), 'hex')).rejects.toMatchObject({ code: 'NOT_FOUND' });
    expect(steps).toMatchObject({ recover: 2, seal: 0, fused: 0 });
  });

  it('a forged string for a syncing secret is 403 on its signature; a genuine one is 403 "syncing" (the order of the two steps)', async () => {
    const { payloads, steps } = setup({ replica: [secretRecord(7, { isSyncing: true })] });
    await expect(payloads.encrypt(request(7, 'x', intruder), 'hex')).rejects.toMatchObject({ message: 'Signature does not match the signer address in data' });
    await expect(payloads.encrypt(request(7, 'x'), 'hex')).rejects.toMatchObject({ message: 'Secret 7 is syncing; try again shortly' });
    expect(steps).toMatchObject({ fused: 0, seal: 0 });
  });

  it('a secret only a read past this replica finds: the two steps apart, the same envelope', async () => {
    const { payloads, steps } = setup({ beyond: [secretRecord(8)] });
    expect(opened(await payloads.encrypt(request(8, 'late'), 'hex'))).toBe('late');
    expect(steps).toEqual({ recover: 1, seal: 1, fused: 0, admitted: 1 });
  });

  it('a malformed secret id never reaches a lookup or the fused step: 400 as before', async () => {
    const { payloads, steps } = setup({ replica: [secretRecord(7)] });
    await expect(payloads.encrypt(request('07', 'x'), 'hex')).rejects.toMatchObject({ code: 'BAD_REQUEST' });
    expect(steps).toMatchObject({ fused: 0 });
  });

  it('a Web3 string never takes the fused step: its secret is the chain\'s to resolve, after the signature', async () => {
    const { payloads, steps } = setup({ replica: [secretRecord(7)] });
    const data = `8453_7_${address}_999_on chain`;
    expect(opened(await payloads.encrypt({ data, signature: signPersonalMessage(data, wallet) }, 'hex'))).toBe('on chain');
    expect(steps).toEqual({ recover: 1, seal: 1, fused: 0, admitted: 1 });
  });

  it('when the fused step cannot seal, the two steps run apart and answer as they always did', async () => {
    const { payloads, steps } = setup({ replica: [secretRecord(7)], fusedFails: true });
    expect(opened(await payloads.encrypt(request(7, 'again'), 'hex'))).toBe('again');
    expect(steps).toEqual({ recover: 1, seal: 1, fused: 1, admitted: 1 });
  });
});

describe('a payload is one byte at least (docs/http.md, Payload encryption)', () => {
  const cifer = toHex(new Uint8Array(1104));

  it('encrypt refuses an empty message with 400 BAD_REQUEST, before any admission; one byte is enough', async () => {
    const { payloads, steps } = setup({ replica: [secretRecord(7)] });
    await expect(payloads.encrypt(request(7, ''), 'hex')).rejects.toMatchObject({ code: 'BAD_REQUEST' });
    expect(steps.admitted).toBe(0);
    expect(opened(await payloads.encrypt(request(7, 'x'), 'hex'))).toBe('x');
  });

  it('decrypt answers an empty encryptedMessage (empty, or `0x` alone) with the 400 BAD_REQUEST of a malformed one, before any share is asked for', async () => {
    const { payloads } = setup({ replica: [secretRecord(7)] });
    const malformed = await payloads.decrypt(request(7, 'zz'), cifer, 'hex').catch((err: unknown) => err);
    expect(malformed).toMatchObject({ code: 'BAD_REQUEST' });
    // recoverSeed would throw a plain Error: a 400 here means no member was asked.
    for (const [message, format] of [['', 'hex'], ['0x', 'hex'], ['', 'base64']] as const) {
      await expect(payloads.decrypt(request(7, message), format === 'hex' ? cifer : toBase64(new Uint8Array(1104)), format)).rejects.toMatchObject({ code: (malformed as AppError).code });
    }
  });
});
