/**
 * The client's signed forms (src/client/forms.ts, signers.ts, files.ts) byte for byte against what the
 * server checks: its own message builders, its one signed-data verifier with every route's shape
 * (Web2 with a stored session, Web3 with a chain head), its Ed25519 verification, its multipart
 * parser, and the exact messages it refuses stale strings with (which the client's retry matches).
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { dataOf, isStaleRefusal, keyRegistrationMessage, restoreSession, sessionMessage, signedData, storeSession, ApiError, createSessionSigner, createWalletSigner, type Web2Session } from 'quorumkeep/client';
import { keyRegistrationMessage as serverKeyRegistrationMessage } from '../../../src/core/accounts/records.ts';
import { sessionMessage as serverSessionMessage } from '../../../src/core/sessions/service.ts';
import { createSignedDataVerifier } from '../../../src/core/sessions/signed-data.ts';
import type { SignedDataShape } from '../../../src/core/sessions/types.ts';
import type { StateReader } from '../../../src/core/replication/ports.ts';
import type { ChainHead } from '../../../src/core/web3/ports.ts';
import { addressOfPrivateKey, ed25519PublicKeyOf, generatePrivateKey, recoverPersonalSigner, signEd25519, systemRandom, toHex, verifyEd25519 } from '../../../src/crypto/index.ts';
import type { AppError } from '../../../src/errors/index.ts';
import { readMultipart } from '../../../src/http/multipart.ts';
import { multipartUpload } from '../../../src/client/files.ts';
import { cleanupStack, tempDir } from '../../utils/temp.ts';

const stack = cleanupStack();
afterEach(() => stack.run());

const PRINCIPAL = '3f1c2a4e-9b8d-4c7a-8e6f-5a4b3c2d1e0f';
const CHAIN = 8453;
const HEAD = 1000;

function newSession(expiresAt = Date.now() + 60_000): Web2Session {
  const privateKey = generatePrivateKey();
  return { principalId: PRINCIPAL, sessionAddress: addressOfPrivateKey(privateKey), privateKey, expiresAt, clockOffsetMs: 0 };
}

/** The server's verifier, holding one active session of `session` and a chain at block {@link HEAD}. */
function serverVerifier(session: Web2Session, now = Date.now) {
  const publicKey = 'ab'.repeat(32);
  const records: Record<string, unknown> = {
    [`session:${session.sessionAddress}`]: { body: { sessionAddress: session.sessionAddress, principalId: PRINCIPAL, publicKey, expiresAt: session.expiresAt } },
    [`principal:${PRINCIPAL}`]: { body: { status: 'active', ed25519PublicKey: publicKey } },
  };
  const state = { get: async (kind: string, key: string) => records[`${kind}:${key}`] } as unknown as StateReader;
  const chain: ChainHead = { chainId: CHAIN, name: 'Base', freshnessWindow: 300, blockNumber: async () => HEAD };
  return createSignedDataVerifier({ state, recoverSigner: recoverPersonalSigner, clock: now, chains: { get: (id) => (id === CHAIN ? chain : undefined) } });
}

/** As the client's transport turns an error answer into an ApiError: the body the server sends for `err`. */
function answered(err: unknown): ApiError {
  const e = err as AppError;
  return new ApiError('POST /x', 400, { error: e.message, code: e.code });
}

describe('Ed25519 messages', () => {
  it('register-key and session messages are the server\'s, with and without a ttl', () => {
    const publicKey = 'cd'.repeat(32);
    expect(keyRegistrationMessage(publicKey)).toBe(serverKeyRegistrationMessage(publicKey));
    const address = addressOfPrivateKey(generatePrivateKey());
    expect(sessionMessage(PRINCIPAL, '1767225600123', address)).toBe(serverSessionMessage(PRINCIPAL, '1767225600123', address));
    expect(sessionMessage(PRINCIPAL, '1767225600123', address, 3_600_000)).toBe(serverSessionMessage(PRINCIPAL, '1767225600123', address, 3_600_000));
    expect(sessionMessage(PRINCIPAL, '1', address, 60_000)).toBe(`cifer_session:${PRINCIPAL}:1:${address}:60000`);
  });

  it('a signature over them verifies as the server verifies it', () => {
    const seed = systemRandom(32);
    const publicKey = toHex(ed25519PublicKeyOf(seed));
    const message = keyRegistrationMessage(publicKey);
    expect(verifyEd25519(publicKey, serverKeyRegistrationMessage(publicKey), toHex(signEd25519(seed, message)))).toBe(true);
  });
});

describe('signed data strings through the server verifier', () => {
  /** Each route's string as the client builds it, and the shape the route verifies it with. */
  const routes = (address: string, chainId: number, fresh: number): Array<[string, string, SignedDataShape, { subject: string; extra: string[] }]> => [
    ['encrypt (underscores and non-ASCII in the plaintext)', dataOf.encrypt(chainId, 7, address, fresh, 'a_b ünï €'), { parts: 5, rest: true, web3: true }, { subject: '7', extra: ['a_b ünï €'] }],
    ['decrypt', dataOf.decrypt(chainId, 7, address, fresh, '0xdeadbeef'), { parts: 5, web3: true }, { subject: '7', extra: ['0xdeadbeef'] }],
    ['file', dataOf.file(chainId, 7, address, fresh), { parts: 4, web3: true }, { subject: '7', extra: [] }],
    ['download', dataOf.download(chainId, 7, address, fresh, 'job-1'), { parts: 6, web3: true }, { subject: '7', extra: ['job-1', 'download'] }],
    ['delete', dataOf.deleteJob(chainId, 7, address, fresh, 'job-1'), { parts: 6, web3: true }, { subject: '7', extra: ['job-1', 'delete'] }],
  ];

  it('Web2: every route\'s string from the session signer passes, as the session\'s principal', async () => {
    const session = newSession();
    const signer = createSessionSigner(session, { clock: Date.now, serverTime: async () => Date.now() });
    const verifier = serverVerifier(session);
    const fresh = (await signer.fresh())!;
    const web2Only: Array<[string, string, SignedDataShape, { subject: string; extra: string[] }]> = [
      ['create secret', dataOf.createSecret(signer.address, fresh), { parts: 4 }, { subject: '0', extra: [] }],
      ['list secrets', dataOf.listSecrets(PRINCIPAL, signer.address, fresh), { parts: 4 }, { subject: PRINCIPAL, extra: [] }],
      ['session status', dataOf.sessionStatus(signer.address, fresh), { parts: 4 }, { subject: '0', extra: [] }],
    ];
    for (const [name, data, shape, expected] of [...web2Only, ...routes(signer.address, -1, fresh)]) {
      const caller = await verifier.verify({ data, signature: signer.sign(data) }, shape);
      expect(caller, name).toMatchObject({ chainId: -1, userType: 'web2', principalId: PRINCIPAL, signer: session.sessionAddress, fresh, ...expected });
    }
  });

  it('Web3: every route\'s string from the wallet signer passes, with the block given or read', async () => {
    const key = generatePrivateKey();
    const wallet = createWalletSigner({ privateKey: '0x' + toHex(key), chainId: CHAIN }, { latestBlock: async () => HEAD - 1 });
    const verifier = serverVerifier(newSession());
    const fresh = (await wallet.fresh())!;
    expect(fresh).toBe(HEAD - 1);
    for (const [name, data, shape, expected] of routes(wallet.address, CHAIN, fresh)) {
      const caller = await verifier.verify({ data, signature: wallet.sign(data) }, shape);
      expect(caller, name).toMatchObject({ chainId: CHAIN, userType: 'web3', principalId: addressOfPrivateKey(key), fresh, ...expected });
    }
    const given = createWalletSigner({ privateKey: key, chainId: CHAIN, blockNumber: 990 }, { latestBlock: async () => HEAD });
    expect([await given.fresh(), await given.fresh({ renew: true })]).toEqual([990, HEAD]);
  });

  it('the two stale refusals are the ones the client retries; other bad input is not', async () => {
    const session = newSession(Date.now() + 3_600_000);
    const verifier = serverVerifier(session);
    const slow = createSessionSigner({ ...session, clockOffsetMs: -700_000 }, { clock: Date.now, serverTime: async () => Date.now() });
    const old = dataOf.file(-1, 7, slow.address, (await slow.fresh())!);
    const web2Stale = await verifier.verify({ data: old, signature: slow.sign(old) }, { parts: 4 }).catch(answered);
    expect(isStaleRefusal(web2Stale)).toBe(true);
    // After the renewal, the signer's clock is the server's.
    const renewed = (await slow.fresh({ renew: true }))!;
    const fresh = dataOf.file(-1, 7, slow.address, renewed);
    await expect(verifier.verify({ data: fresh, signature: slow.sign(fresh) }, { parts: 4 })).resolves.toMatchObject({ fresh: renewed });

    const wallet = createWalletSigner({ privateKey: generatePrivateKey(), chainId: CHAIN, blockNumber: HEAD - 301 }, { latestBlock: async () => HEAD });
    const stale = dataOf.file(CHAIN, 7, wallet.address, (await wallet.fresh())!);
    expect(isStaleRefusal(await verifier.verify({ data: stale, signature: wallet.sign(stale) }, { parts: 4, web3: true }).catch(answered))).toBe(true);
    const future = dataOf.file(CHAIN, 7, wallet.address, HEAD + 10);
    expect(isStaleRefusal(await verifier.verify({ data: future, signature: wallet.sign(future) }, { parts: 4, web3: true }).catch(answered))).toBe(false);
    const badPart = signedData(-1, 7, session.sessionAddress, Date.now(), 'extra');
    expect(isStaleRefusal(await verifier.verify({ data: badPart, signature: slow.sign(badPart) }, { parts: 4 }).catch(answered))).toBe(false);
  });

  it('a Web2 signer never repeats a timestamp and refuses once its session has ended', async () => {
    const signer = createSessionSigner(newSession(), { clock: () => 5_000, serverTime: async () => 5_000 });
    expect([await signer.fresh(), await signer.fresh(), await signer.fresh()]).toEqual([5_000, 5_001, 5_002]);
    const ended = createSessionSigner(newSession(Date.now() - 1), { clock: Date.now, serverTime: async () => Date.now() });
    await expect(ended.fresh()).rejects.toMatchObject({ code: 'SESSION_EXPIRED' });
  });

  it('close zeroes the keys and signs nothing after', () => {
    const session = newSession();
    const signer = createSessionSigner(session, { clock: Date.now, serverTime: async () => Date.now() });
    signer.dispose();
    expect(session.privateKey.every((b) => b === 0)).toBe(true);
    expect(() => signer.sign('x')).toThrow();
    const key = generatePrivateKey();
    const wallet = createWalletSigner({ privateKey: key, chainId: CHAIN }, { latestBlock: async () => HEAD });
    wallet.dispose();
    // The wallet works on its own copy: the caller's buffer is the caller's to zero.
    expect(key.some((b) => b !== 0)).toBe(true);
    expect(() => wallet.sign('x')).toThrow();
  });
});

describe('the stored session', () => {
  it('round-trips through JSON; a key that is not the address\'s is refused', () => {
    const session = newSession();
    const stored = JSON.parse(JSON.stringify(storeSession({ ...session, clockOffsetMs: 1234 })));
    const back = restoreSession(stored);
    expect(back).toEqual({ ...session, clockOffsetMs: 1234, expiresAt: session.expiresAt });
    expect(() => restoreSession({ ...stored, sessionAddress: addressOfPrivateKey(generatePrivateKey()) })).toThrow(/does not match/);
    expect(() => restoreSession({ ...stored, sessionKey: 'zz' })).toThrow(/sessionKey/);
    expect(() => restoreSession(null)).toThrow();
  });
});

describe('the upload body', () => {
  it('the server\'s multipart parser reads the signed fields before the file, the escaped name and every byte', async () => {
    const dir = await tempDir(stack);
    const path = join(dir, 'input.bin');
    const content = Buffer.from(Array.from({ length: 70_000 }, (_, i) => (i * 7) & 0xff));
    await writeFile(path, content);
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      readMultipart(req, {
        limits: { fileBytes: 1 << 20, fieldBytes: 4096, fields: 8, files: 1 },
        onFile: async (info, stream, before) => {
          for await (const c of stream) chunks.push(c as Buffer);
          res.setHeader('x-before', Object.keys(before).join(','));
          res.setHeader('x-name', encodeURIComponent(info.filename));
        },
      }).then(
        (form) => res.end(JSON.stringify({ ...form, declared: req.headers['content-length'], same: Buffer.concat(chunks).equals(content) })),
        (err: Error) => res.writeHead(500).end(err.message),
      );
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    stack.push(() => new Promise<void>((r) => server.close(() => r())));
    const progress: number[] = [];
    const upload = multipartUpload(
      [
        ['secretId', '7'],
        ['data', '-1_7_0xabc_1'],
        ['signature', '0x12'],
      ],
      { path, size: content.length, name: 'a "quoted"\nname.bin' },
      (p) => progress.push(p.stage === 'upload' ? p.bytes : -1),
    );
    const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`, { method: 'POST', body: upload.body as unknown as string, headers: upload.headers, duplex: 'half' } as RequestInit);
    const form = (await res.json()) as { fields: Record<string, string>; fieldOrder: string[]; declared: string; same: boolean; file: { bytes: number } };
    expect(res.headers.get('x-before')).toBe('secretId,data,signature');
    expect(decodeURIComponent(res.headers.get('x-name')!)).toBe('a "quoted"\nname.bin');
    expect(form).toMatchObject({ fields: { secretId: '7', data: '-1_7_0xabc_1', signature: '0x12' }, fieldOrder: ['secretId', 'data', 'signature', 'file'], same: true, file: { bytes: content.length } });
    expect(Number(form.declared)).toBe(Number(upload.headers['content-length']));
    expect(progress[0]).toBe(0);
    expect(progress.at(-1)).toBe(content.length);
  });
});
