/**
 * A first encrypt and decrypt with `quorumkeep/client` (docs/client.md), against a local cluster:
 * start one with `quorumkeep local` (or `npm start` in a checkout), then run
 *
 *   node --conditions=source examples/first-encrypt.ts   (in a checkout: the TypeScript source)
 *   node first-encrypt.ts                                 (in a project that installed quorumkeep)
 *
 * The code mail is read from the local cluster's outboxes (QK_OUTBOX, default ./data); QK_URL names
 * another coordinator. The test suite runs this file (test/e2e/examples.test.ts).
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient, readOutboxCode } from 'quorumkeep/client';

const url = process.env['QK_URL'] ?? 'http://127.0.0.1:3010';
const outbox = process.env['QK_OUTBOX'] ?? './data';
const email = process.env['EMAIL'] ?? `first-${Date.now()}@example.org`;
const password = process.env['QK_PASSWORD'] ?? 'correct horse battery staple';

const client = createClient({ url });
const work = await mkdtemp(join(tmpdir(), 'qk-first-'));
try {
  // An account: register, then the mailed code (here from the local outbox), then a session.
  await client.register(email, password);
  await client.verifyEmail(email, await readOutboxCode({ dir: outbox, email }));
  await client.login({ email, password });

  const { secretId } = await client.createSecret();
  console.log(`secret: ${secretId}`);

  const sealed = await client.encrypt({ secretId, plaintext: 'hello, quorumkeep' });
  console.log(`decrypted: ${await client.decrypt(sealed)}`);

  // A file: upload, job, download, with progress.
  const notes = join(work, 'notes.txt');
  await writeFile(notes, 'a file of notes\n');
  const onProgress = (p: { stage: string }) => process.stderr.write(`${p.stage} `);
  const archive = await client.encryptFile({ secretId, path: notes, out: `${notes}.cifer`, onProgress });
  const back = await client.decryptFile({ secretId, path: archive.out, out: join(work, 'notes.out.txt'), onProgress });
  process.stderr.write('\n');
  const same = (await readFile(back.out)).equals(await readFile(notes));
  console.log(`file round trip: ${same ? 'identical' : 'DIFFERENT'}`);
  if (!same) process.exitCode = 1;
} finally {
  // Zero the session key.
  client.close();
  await rm(work, { recursive: true, force: true });
}
