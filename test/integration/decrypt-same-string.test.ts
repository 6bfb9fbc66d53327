/**
 * The client's decrypts that share one signed string (issue 29, item 3; docs/security.md, Share
 * release): the deployed client signs `chainId_secretId_signer_block` for a file decrypt — no file
 * named — and `…_block_encryptedMessage` for a payload, where a Web2 "block" is `Date.now()`. Two files
 * decrypted by one signer in the same block (the same millisecond for Web2), or one payload decrypted
 * twice, send the same string. A member releases its share for a string to one coordinator only, the
 * first it released it to: that coordinator serves every such decrypt, and another coordinator is
 * refused (403). Real cluster of five members, two of them coordinators, over HTTP.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalCluster, type LocalCluster } from 'quorumkeep/testing';
import { postJson } from '../utils/http.ts';
import { expectApiError } from '../utils/web2.ts';
import { principalWithSession, type Principal } from '../utils/session.ts';
import { downloadJob, multipartStream, patterned, postMultipart, uniqueTimestamps, waitForJob } from '../utils/files.ts';

const CHUNK = 1000;
const PLAINTEXT = 'decrypted twice';

let cluster: LocalCluster;
let A: string;
let B: string;
let alice: Principal;
let secretId: number;
/** A payload sealed to Alice's secret. */
let payload: { encryptedMessage: string; cifer: string };
/** Two different files encrypted on A: their contents, encrypt jobs and `.cifer` archives. */
let files: { content: Buffer; jobId: string; zip: Buffer }[];
/** A timestamp no other signed string of this file has, unless a test repeats one on purpose. */
const at = uniqueTimestamps();

beforeAll(async () => {
  cluster = await startLocalCluster({ size: 5, threshold: 3, coordinators: 2, nodeConfig: { files: { chunkBytes: CHUNK } } });
  [A, B] = cluster.coordinators as [string, string];
  alice = await principalWithSession(cluster, A, 'alice');
  const created = await postJson<{ secretId: number }>(`${A}/web2/secret`, alice.signed(0, undefined, at()));
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  secretId = created.body.secretId;
  const sealed = await postJson<{ encryptedMessage: string; cifer: string }>(`${A}/encrypt-payload`, alice.signed(secretId, PLAINTEXT, at()));
  expect(sealed.status, JSON.stringify(sealed.body)).toBe(200);
  payload = sealed.body;
  files = [];
  for (const [i, size] of [2500, 1700].entries()) {
    const content = patterned(size, i + 1);
    const started = await postMultipart(`${A}/encrypt-file`, multipartStream([{ name: 'file', filename: `file${i}`, content }, { name: 'secretId', value: String(secretId) }, ...fields(alice.signed(secretId, undefined, at()))]));
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    const jobId = started.body.jobId as string;
    await waitForJob(A, jobId);
    const download = await downloadJob(A, jobId);
    expect(download.status).toBe(200);
    files.push({ content, jobId, zip: download.bytes });
  }
  await cluster.waitForConvergence();
}, 90_000);
afterAll(() => cluster?.stop());

function fields(signed: { data: string; signature: string }) {
  return [
    { name: 'data', value: signed.data },
    { name: 'signature', value: signed.signature },
  ];
}

/** POST /decrypt-payload of Alice's payload with `signed` (her 5-part string naming its message). */
const decryptPayload = (base: string, signed: { data: string; signature: string }) => postJson<{ decryptedMessage: string }>(`${base}/decrypt-payload`, { ...signed, cifer: payload.cifer });

/** POST /decrypt-file of `zip` with `signed` (a 4-part string). */
const decryptFile = (base: string, zip: Buffer, signed: { data: string; signature: string }) => postMultipart(`${base}/decrypt-file`, multipartStream([{ name: 'file', filename: 'x.cifer', content: zip }, ...fields(signed)]));

/** A started decrypt job's plaintext, downloaded with Alice's signature naming the job. */
async function plaintextOf(base: string, started: { status: number; body: Record<string, unknown> }): Promise<Buffer> {
  expect(started.status, JSON.stringify(started.body)).toBe(200);
  const job = await waitForJob(base, started.body.jobId as string);
  const plain = await downloadJob(base, job.id, alice.signed(secretId, `${job.id}_download`, at()));
  expect(plain.status).toBe(200);
  return plain.bytes;
}

describe('decrypts that share one signed string, as the client sends them', () => {
  it('the same payload decrypted twice with one string: 200 both times, one after the other and both at once', async () => {
    const signed = alice.signed(secretId, payload.encryptedMessage, at());
    for (let i = 0; i < 2; i++) {
      const res = await decryptPayload(A, signed);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body.decryptedMessage).toBe(PLAINTEXT);
    }
    const again = alice.signed(secretId, payload.encryptedMessage, at());
    const both = await Promise.all([decryptPayload(A, again), decryptPayload(A, again)]);
    for (const res of both) {
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body.decryptedMessage).toBe(PLAINTEXT);
    }
  }, 30_000);

  it('two different files decrypted with one 4-part string (same signer, same millisecond): both jobs complete, each with its own file', async () => {
    const signed = alice.signed(secretId, undefined, at());
    // At once, as a client decrypting two files in one go sends them.
    const [first, second] = await Promise.all(files.map((f) => decryptFile(A, f.zip, signed)));
    expect((await plaintextOf(A, first!)).equals(files[0]!.content)).toBe(true);
    expect((await plaintextOf(A, second!)).equals(files[1]!.content)).toBe(true);
    // And again later in the same block: a third decrypt, of a stored encrypt job's file.
    const existing = await postJson(`${A}/decrypt-existing-file`, { encryptJobId: files[1]!.jobId, ...signed });
    expect((await plaintextOf(A, existing)).equals(files[1]!.content)).toBe(true);
  }, 60_000);

  it('a string used through A is refused through B (403): members release it to one coordinator; a decrypt B forwards to A still runs there', async () => {
    const payloadString = alice.signed(secretId, payload.encryptedMessage, at());
    expect((await decryptPayload(A, payloadString)).status).toBe(200);
    expectApiError(await decryptPayload(B, payloadString), 403, 'FORBIDDEN');

    const fileString = alice.signed(secretId, undefined, at());
    await plaintextOf(A, await decryptFile(A, files[0]!.zip, fileString));
    expectApiError(await decryptFile(B, files[1]!.zip, fileString), 403, 'FORBIDDEN');
    // A decrypt-existing job runs on its encrypt job's coordinator: asked of B, it is forwarded to A,
    // the string's coordinator, and served.
    const forwarded = await postJson(`${B}/decrypt-existing-file`, { encryptJobId: files[1]!.jobId, ...fileString });
    expect((await plaintextOf(A, forwarded)).equals(files[1]!.content)).toBe(true);
    // A's own repeats still pass after B was refused.
    const again = await decryptPayload(A, payloadString);
    expect(again.status, JSON.stringify(again.body)).toBe(200);
  }, 60_000);
});
