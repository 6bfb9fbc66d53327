import { request, createServer, type Server } from 'node:http';
import { readdir } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { createSealedSpool, type SealedSpool } from '../../../src/core/files/spool.ts';
import { createBaseApp } from '../../../src/http/base-app.ts';
import { decodeClientFilename, readMultipart } from '../../../src/http/multipart.ts';
import { captureLogger } from '../../utils/log.ts';
import { cleanupStack, tempDir } from '../../utils/temp.ts';

const stack = cleanupStack();
afterEach(() => stack.run());

const BOUNDARY = '----qkTestBoundary7MA4YWxkTrZu0gW';
const LIMITS = { fileBytes: 64 * 1024, fieldBytes: 4096, fields: 8, files: 1 };

interface Harness {
  url: URL;
  dir: string;
  spools: SealedSpool[];
  /** Resolves when the first handler finished (answered or failed). */
  handled: () => Promise<void>;
}

async function startServer(): Promise<Harness> {
  const dir = await tempDir(stack);
  const spools: SealedSpool[] = [];
  let signal: () => void = () => undefined;
  // Resolved when the first request's handler has finished (each test's server handles one upload).
  const done = new Promise<void>((r) => (signal = r));
  const app = createBaseApp(captureLogger().logger, { trustProxy: false });
  app.use(async (ctx) => {
    try {
      let spool: SealedSpool | undefined;
      let before: Readonly<Record<string, string>> | undefined;
      try {
        const form = await readMultipart(ctx.req, {
          limits: LIMITS,
          onFile: async (_info, stream, fieldsBefore) => {
            before = fieldsBefore;
            spool = await createSealedSpool(dir, { chunkBytes: 1024, maxBytes: LIMITS.fileBytes });
            spools.push(spool);
            await pipeline(stream, spool);
          },
        });
        const parts: Buffer[] = [];
        for await (const p of spool!.read()) parts.push(p);
        ctx.body = { ...form, fieldsBefore: before, content: Buffer.concat(parts).toString('latin1') };
      } finally {
        await spool?.dispose();
      }
    } finally {
      signal();
    }
  });
  const server: Server = createServer(app.callback());
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  stack.push(() => new Promise<void>((r) => server.close(() => r())));
  const { port } = server.address() as AddressInfo;
  return { url: new URL(`http://127.0.0.1:${port}/upload`), dir, spools, handled: () => done };
}

function filePart(filename: string, body: Buffer | Iterable<Buffer>): Array<Buffer> {
  const head = Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\nContent-Type: application/octet-stream\r\n\r\n`);
  return [head, ...(Buffer.isBuffer(body) ? [body] : body), Buffer.from('\r\n')];
}

function fieldPart(name: string, value: string): Buffer {
  return Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`);
}

function clientForm(filename: string, content: Buffer | Iterable<Buffer>): Iterable<Buffer> {
  return [
    ...filePart(filename, content),
    fieldPart('secretId', '42'),
    fieldPart('data', '1_42_0xabc_1700000000000'),
    fieldPart('signature', '0xsig'),
    Buffer.from(`--${BOUNDARY}--\r\n`),
  ];
}

/** POST a body built as a stream (chunked); resolves with status and parsed JSON. */
function post(url: URL, body: Readable, contentType = `multipart/form-data; boundary=${BOUNDARY}`): Promise<{ status: number; json: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', headers: { 'Content-Type': contentType } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, json: JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown> }));
      res.on('error', reject);
    });
    req.on('error', reject);
    body.pipe(req);
  });
}

describe('readMultipart', () => {
  it.each([
    ['blob', 'blob'],
    ['r%C3%A9sum%C3%A9.pdf', 'résumé.pdf'],
    ['say %22hi%22.txt', 'say "hi".txt'],
  ])('streams the client form (%s) with its field order', async (_label, name) => {
    const h = await startServer();
    // The client escapes `"` as %22 and sends other characters as UTF-8 bytes.
    const wire = name.replace(/"/g, '%22');
    const content = Buffer.alloc(10_000, 'q');
    const body = Readable.from(clientForm(wire, [content.subarray(0, 3000), content.subarray(3000)]));
    const { status, json } = await post(h.url, body);
    expect(status).toBe(200);
    expect(json.fieldOrder).toEqual(['file', 'secretId', 'data', 'signature']);
    expect(json.fields).toEqual({ secretId: '42', data: '1_42_0xabc_1700000000000', signature: '0xsig' });
    expect(json.fieldsBefore).toEqual({});
    expect(json.file).toEqual({ fieldName: 'file', filename: name, mimeType: 'application/octet-stream', bytes: 10_000 });
    expect(json.content).toBe(content.toString('latin1'));
    expect(await readdir(h.dir)).toEqual([]);
  });

  it('hands the consumer the fields that came before the file (a client that signs first)', async () => {
    const h = await startServer();
    const body = Readable.from([
      fieldPart('data', '1_42_0xabc_1700000000000'),
      fieldPart('signature', '0xsig'),
      ...filePart('blob', Buffer.alloc(2000, 'f')),
      fieldPart('secretId', '42'),
      Buffer.from(`--${BOUNDARY}--\r\n`),
    ]);
    const { status, json } = await post(h.url, body);
    expect(status).toBe(200);
    expect(json.fieldOrder).toEqual(['data', 'signature', 'file', 'secretId']);
    expect(json.fieldsBefore).toEqual({ data: '1_42_0xabc_1700000000000', signature: '0xsig' });
    expect(json.fields).toEqual({ secretId: '42', data: '1_42_0xabc_1700000000000', signature: '0xsig' });
  });

  it('decodes only %22, %0D and %0A in filenames', () => {
    expect(decodeClientFilename('a%22b%0D%0Ac%0a%41%25')).toBe('a"b\r\nc\n%41%25');
  });

  it('answers 413 JSON for a file over the limit, leaving no spool, without resetting the connection', async () => {
    const h = await startServer();
    const big = Array.from({ length: 40 }, () => Buffer.alloc(4096, 'z')); // 160 KiB > 64 KiB
    const { status, json } = await post(h.url, Readable.from(clientForm('blob', big)));
    expect(status).toBe(413);
    expect(json).toMatchObject({ code: 'PAYLOAD_TOO_LARGE' });
    await h.handled();
    expect(await readdir(h.dir)).toEqual([]);
  });

  it('answers 400 JSON for a malformed body', async () => {
    const h = await startServer();
    const body = Readable.from([Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="x"\r\n\r\nabc`)]);
    const { status, json } = await post(h.url, body);
    expect(status).toBe(400);
    expect(json).toMatchObject({ code: 'BAD_REQUEST' });
    await h.handled();
    expect(await readdir(h.dir)).toEqual([]);
  });

  it('answers 400 without a boundary and 415 for another content type', async () => {
    const h = await startServer();
    expect((await post(h.url, Readable.from([Buffer.from('x')]), 'multipart/form-data')).status).toBe(400);
    const other = await post(h.url, Readable.from([Buffer.from('{}')]), 'application/json');
    expect(other.status).toBe(415);
    expect(other.json).toMatchObject({ code: 'UNSUPPORTED_MEDIA_TYPE' });
  });

  it('destroys the spool when the client aborts mid-upload', async () => {
    const h = await startServer();
    const req = request(h.url, { method: 'POST', headers: { 'Content-Type': `multipart/form-data; boundary=${BOUNDARY}` } });
    req.on('error', () => undefined);
    for (const b of filePart('blob', Buffer.alloc(8192, 'a')).slice(0, 2)) req.write(b);
    // Wait until the spool exists and has data, then cut the connection.
    while (h.spools.length === 0 || h.spools[0]!.bytes === 0) await new Promise((r) => setImmediate(r));
    req.destroy();
    await h.handled();
    expect(h.spools[0]!.destroyed).toBe(true);
    expect(await readdir(h.dir)).toEqual([]);
  });
});
