/**
 * Forged uploads against a real coordinator (docs/http.md, Files and jobs, "Unverified uploads";
 * docs/security.md, "Accounts and abuse"; issue 27). The deployed client sends the file before the
 * signed fields, so the coordinator writes an upload before it knows who sent it: three 700 MB forged
 * uploads once filled the disk budget and genuine uploads answered 503 for 20 s. Such bytes are now
 * held by a budget of their own, per source address and in all, apart from the disk budget of
 * verified uploads — here a few KB of each, and a disk budget that the forged bytes alone would
 * have filled under the old accounting.
 *
 * The clients are told apart by their real source address: requests are sent from 127.0.0.2,
 * 127.0.0.3, … (Linux routes all of 127.0.0.0/8 to loopback; the coordinator does not trust a proxy,
 * so `ctx.ip` is the socket's address). Every wait is on a condition: the budget's gauge on
 * `/metrics`, the flood's answer count, a job's status.
 */
import { createHash } from 'node:crypto';
import { request, type ClientRequest } from 'node:http';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startLocalCluster, waitFor, type LocalCluster } from 'quorumkeep/testing';
import { BOUNDARY, downloadJob, multipartStream, patterned, postMultipart, unzip, waitForJob, type FormPart } from '../utils/files.ts';
import { postJson, type JsonResponse } from '../utils/http.ts';
import { newSessionWallet, principalWithSession, signData, type Principal } from '../utils/session.ts';
import { cleanupStack } from '../utils/temp.ts';
import { expectApiError } from '../utils/web2.ts';

const CHUNK = 1000;
/** What one address's unverified uploads may hold (`files.maxUnverifiedBytesPerAddress`). */
const PER_ADDRESS = 20_000;
/** What every address's may hold together: three attackers' allowances and one more. */
const TOTAL = 4 * PER_ADDRESS;
/** The disk budget of verified uploads: three forged allowances would fill it (the old accounting did). */
const DISK = 3 * PER_ADDRESS;
/** A genuine file: fits the per-address allowance, and its job's result fits the disk budget. */
const GENUINE_BYTES = 10_000;
const ATTACKERS = ['127.0.0.2', '127.0.0.3', '127.0.0.4'];

let cluster: LocalCluster;
let A: string;
let alice: Principal;
let secretId: number;
let spoolDir: string;

beforeAll(async () => {
  cluster = await startLocalCluster({
    size: 3,
    threshold: 2,
    coordinators: 1,
    nodeConfig: {
      // Stalled uploads are released by the tests, never by the request deadline.
      http: { requestTimeoutMs: 300_000 },
      files: { chunkBytes: CHUNK, maxFileBytes: 64_000, maxDiskBytes: DISK, maxUnverifiedBytesPerAddress: PER_ADDRESS, maxUnverifiedBytes: TOTAL },
    },
  });
  A = cluster.coordinators[0]!;
  alice = await principalWithSession(cluster, A, 'alice');
  const created = await postJson<{ secretId: number }>(`${A}/web2/secret`, alice.signed(0));
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  secretId = created.body.secretId;
  const { config } = cluster.members[0]!;
  spoolDir = join(config.files.dir || join(config.dataDir, 'files'), 'spool');
}, 60_000);
afterAll(() => cluster?.stop());

const stack = cleanupStack();
afterEach(async () => {
  await stack.run();
  // Every forged upload is gone: nothing held, no spool left.
  await waitFor(async () => (await metric('quorumkeep_file_unverified_bytes')) === 0 && (await readdir(spoolDir)).length === 0, {
    timeoutMs: 10_000,
    description: 'every unverified upload released',
  });
});

/** A forged `{ data, signature }`: alice's address, another key's signature. */
function forged(): { data: string; signature: string } {
  return signData(newSessionWallet(), `-1_${secretId}_${alice.wallet.address}_${Date.now()}`);
}

/** The client's form (file first), or with `data` and `signature` first. */
function form(content: Buffer, signed: { data: string; signature: string }, order: 'file_first' | 'fields_first' = 'file_first'): FormPart[] {
  const file: FormPart = { name: 'file', filename: 'upload.bin', content };
  const fields: FormPart[] = [{ name: 'data', value: signed.data }, { name: 'signature', value: signed.signature }];
  const secret: FormPart = { name: 'secretId', value: String(secretId) };
  return order === 'file_first' ? [file, secret, ...fields] : [...fields, file, secret];
}

function encryptFile(parts: FormPart[], from?: string): Promise<JsonResponse> {
  return postMultipart(`${A}/encrypt-file`, multipartStream(parts), from ? { localAddress: from } : {});
}

/** The sum of a metric's samples whose labels include every one of `labels`. */
async function metric(name: string, labels: string[] = []): Promise<number> {
  const res = await fetch(`${A}/metrics`, { headers: { Authorization: `Bearer ${cluster.adminToken}` } });
  const text = await res.text();
  return [...text.matchAll(new RegExp(`^${name}(?:\\{([^}]*)\\})? (\\S+)$`, 'gm'))]
    .filter((m) => labels.every((l) => (m[1] ?? '').split(',').includes(l)))
    .reduce((sum, m) => sum + Number(m[2]), 0);
}

/**
 * A forged upload from `from` that declares its whole length (so its allowance is reserved at once),
 * sends its `PER_ADDRESS`-byte file and then stalls before its fields: it holds the address's whole
 * allowance until the test ends it (the cleanup stack cuts it).
 */
function holdAllowance(from: string): ClientRequest {
  const head = Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="held"\r\nContent-Type: application/octet-stream\r\n\r\n`);
  const signed = forged();
  const tail = Buffer.from(
    `\r\n--${BOUNDARY}\r\nContent-Disposition: form-data; name="data"\r\n\r\n${signed.data}\r\n` +
      `--${BOUNDARY}\r\nContent-Disposition: form-data; name="signature"\r\n\r\n${signed.signature}\r\n--${BOUNDARY}--\r\n`,
  );
  const file = Buffer.alloc(PER_ADDRESS, 'x');
  const req = request(`${A}/encrypt-file`, {
    method: 'POST',
    localAddress: from,
    headers: { 'Content-Type': `multipart/form-data; boundary=${BOUNDARY}`, 'Content-Length': String(head.length + file.length + tail.length) },
  });
  req.on('error', () => undefined);
  req.write(head);
  req.write(file);
  stack.push(() => req.destroy());
  return req;
}

interface Flood {
  /** Answers so far. */
  answers(): number;
  /** Stop sending; resolves with every answer by `<status> <code>` once the last is in. Idempotent. */
  stop(): Promise<Map<string, number>>;
}

/** Forged uploads from `from`, `concurrency` at a time, each sent as soon as the one before is answered. */
function flood(from: string, concurrency: number, content: Buffer): Flood {
  let running = true;
  let answered = 0;
  const tally = new Map<string, number>();
  const note = (key: string) => tally.set(key, (tally.get(key) ?? 0) + 1);
  const loops = Array.from({ length: concurrency }, async () => {
    const signed = forged();
    while (running) {
      try {
        const res = await encryptFile(form(content, signed), from);
        note(`${res.status} ${String(res.body.code)}`);
      } catch (err) {
        // A reset connection or a body that is not JSON: the test fails on it below.
        note(`failed ${(err as Error).message}`);
      }
      answered += 1;
    }
  });
  const stop = async () => {
    running = false;
    await Promise.all(loops);
    return tally;
  };
  stack.push(stop);
  return { answers: () => answered, stop };
}

/** A genuine upload's answer: 200, a job that completes with the file's size and hash; the job is then deleted (the disk budget is small). */
async function expectJobOf(res: JsonResponse, content: Buffer): Promise<void> {
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  const jobId = res.body.jobId as string;
  await waitForJob(A, jobId);
  const download = await downloadJob(A, jobId);
  expect(download.status).toBe(200);
  const metadata = JSON.parse((await unzip(download.bytes)).get('metadata.json')!.toString('utf8')) as Record<string, unknown>;
  expect(metadata).toMatchObject({ originalSize: content.length, originalHash: createHash('sha256').update(content).digest('hex') });
  expect((await postJson(`${A}/jobs/${jobId}/delete`, alice.signed(secretId, `${jobId}_delete`))).status).toBe(200);
}

/** Wait until every one of `addresses` holds its whole allowance (on top of what is held already). */
async function allowancesHeld(addresses: string[]): Promise<void> {
  const before = await metric('quorumkeep_file_unverified_bytes');
  for (const from of addresses) holdAllowance(from);
  await waitFor(async () => (await metric('quorumkeep_file_unverified_bytes')) === before + addresses.length * PER_ADDRESS, {
    timeoutMs: 10_000,
    description: `${addresses.length} allowances held`,
  });
}

describe('unverified uploads (issue 27)', () => {
  it('forged uploads from three addresses at full speed never make a genuine upload fail', async () => {
    const answers = new Map<string, number>();
    const floodAll = (): Flood[] => ATTACKERS.map((from) => flood(from, 3, forgedFile));
    const stopAll = async (floods: Flood[]): Promise<void> => {
      for (const f of floods) for (const [key, n] of await f.stop()) answers.set(key, (answers.get(key) ?? 0) + n);
    };
    // Each forged file is over the per-address allowance: every one that gets in writes until its
    // address's allowance is full, and is cut there.
    const forgedFile = patterned(PER_ADDRESS + 5000, 1);
    const running = (floods: Flood[], from: number[]): boolean => floods.every((f, i) => f.answers() >= from[i]! + 10);

    // 1. The floods fill their allowances over and over, at full speed.
    let floods = floodAll();
    await waitFor(async () => running(floods, [0, 0, 0]) && (await metric('quorumkeep_file_unverified_refusals_total', ['limit="upload"'])) > 0, {
      timeoutMs: 20_000,
      description: 'the floods filling their allowances',
    });
    // A genuine client sends its file first, as the deployed client does, while they go on.
    let seen = floods.map((f) => f.answers());
    const first = patterned(GENUINE_BYTES, 2);
    await expectJobOf(await encryptFile(form(first, alice.signed(secretId))), first);
    expect(running(floods, seen), 'the floods ran all along').toBe(true);
    await stopAll(floods);

    // 2. Worst case: each attacker address holds its whole allowance, and floods on.
    await waitFor(async () => (await metric('quorumkeep_file_unverified_bytes')) === 0, { description: 'the floods gone' });
    await allowancesHeld(ATTACKERS);
    floods = floodAll();
    await waitFor(() => running(floods, [0, 0, 0]), { timeoutMs: 20_000, description: 'the floods running' });
    seen = floods.map((f) => f.answers());
    const second = patterned(GENUINE_BYTES, 3);
    await expectJobOf(await encryptFile(form(second, alice.signed(secretId))), second);
    expect(running(floods, seen), 'the floods ran all along').toBe(true);
    await stopAll(floods);
    expect(await metric('quorumkeep_file_unverified_bytes')).toBe(ATTACKERS.length * PER_ADDRESS);

    // Every forged upload was answered in JSON with a refusal of its own: its address's allowance
    // full (429) or its file over it (413) — never a reset, never a 500, never the disk budget's 503.
    expect([...answers.keys()].sort()).toEqual(['413 PAYLOAD_TOO_LARGE', '429 RATE_LIMITED']);
  }, 120_000);

  it("a genuine client behind an attacker's address is refused a file sent first (429), and accepted when it signs first", async () => {
    const [shared] = ATTACKERS as [string];
    await allowancesHeld([shared]);
    const content = patterned(GENUINE_BYTES, 3);
    const fileFirst = await encryptFile(form(content, alice.signed(secretId)), shared);
    expectApiError(fileFirst, 429, 'RATE_LIMITED');
    expect(fileFirst.headers.get('retry-after')).toBe(String(fileFirst.body.retryAfterSeconds));

    // Signed first: verified before the file is written, so the address's allowance is not needed…
    const fieldsFirst = await metric('quorumkeep_file_uploads_total', ['order="fields_first"']);
    await expectJobOf(await encryptFile(form(content, alice.signed(secretId), 'fields_first'), shared), content);
    // …and a forged upload signed first is refused before a byte of it is spooled (a spool's bytes
    // count once it closes: the held one's only when the test ends it).
    const spooled = await metric('quorumkeep_file_bytes_total', ['direction="upload"']);
    expectApiError(await encryptFile(form(content, forged(), 'fields_first'), shared), 403, 'FORBIDDEN');
    expect(await metric('quorumkeep_file_bytes_total', ['direction="upload"'])).toBe(spooled);
    expect(await metric('quorumkeep_file_uploads_total', ['order="fields_first"'])).toBe(fieldsFirst + 2);
  }, 60_000);

  it('a file sent first over the per-address allowance is 413; with the budget in all used up, 503 — except for a client that signs first', async () => {
    await allowancesHeld(ATTACKERS);
    const tooBig = await encryptFile(form(patterned(PER_ADDRESS + 1, 4), alice.signed(secretId)), '127.0.0.5');
    expectApiError(tooBig, 413, 'PAYLOAD_TOO_LARGE');
    expect(tooBig.body.limitBytes).toBe(PER_ADDRESS);

    // A fourth address's allowance fills the budget in all.
    await allowancesHeld(['127.0.0.5']);
    expect(await metric('quorumkeep_file_unverified_bytes')).toBe(TOTAL);
    const content = patterned(GENUINE_BYTES, 5);
    const refused = await encryptFile(form(content, alice.signed(secretId)), '127.0.0.6');
    expectApiError(refused, 503, 'OVERLOADED');
    expect(refused.headers.get('retry-after')).toBe(String(refused.body.retryAfterSeconds));
    await expectJobOf(await encryptFile(form(content, alice.signed(secretId), 'fields_first'), '127.0.0.6'), content);
  }, 60_000);
});
