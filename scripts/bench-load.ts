/**
 * Load generator for `npm run bench`, run in a worker thread so the client's CPU is not charged to
 * the server's core. It speaks minimal HTTP/1.1 over keep-alive sockets (one request in flight per
 * connection): a fetch() client costs more CPU per request than the routes it measures, and on a
 * 2-core machine it would be the bottleneck.
 */
import { connect, type Socket } from 'node:net';
import { parentPort, workerData } from 'node:worker_threads';

interface LoadJob {
  url: string;
  bodies: string[];
  concurrency: number;
}

const job = workerData as LoadJob;
const target = new URL(job.url);
const latencies: number[] = [];
let next = 0;
let failures = 0;
let firstFailure: string | undefined;

/** One keep-alive connection sending requests one after another. */
async function client(): Promise<void> {
  const socket: Socket = connect({ host: target.hostname, port: Number(target.port), noDelay: true });
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  let buffer: Buffer = Buffer.alloc(0);
  let waiting: (() => void) | undefined;
  socket.on('data', (chunk: Buffer) => {
    buffer = buffer.length === 0 ? chunk : Buffer.concat([buffer, chunk]);
    waiting?.();
  });
  const more = () => new Promise<void>((resolve) => (waiting = resolve));
  while (next < job.bodies.length) {
    const body = Buffer.from(job.bodies[next++]!);
    const t0 = performance.now();
    socket.write(`POST ${target.pathname} HTTP/1.1\r\nHost: ${target.host}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`);
    socket.write(body);
    let headerEnd: number;
    while ((headerEnd = buffer.indexOf('\r\n\r\n')) < 0) await more();
    const head = buffer.subarray(0, headerEnd).toString('latin1');
    const length = Number(/content-length: *(\d+)/i.exec(head)?.[1] ?? 0);
    while (buffer.length < headerEnd + 4 + length) await more();
    const status = Number(head.slice(9, 12));
    const text = buffer.subarray(headerEnd + 4, headerEnd + 4 + length).toString();
    buffer = buffer.subarray(headerEnd + 4 + length);
    latencies.push(performance.now() - t0);
    if (status !== 200) {
      failures++;
      firstFailure ??= `${status} ${text.slice(0, 200)}`;
    }
  }
  socket.end();
}

const t0 = performance.now();
await Promise.all(Array.from({ length: job.concurrency }, client));
parentPort!.postMessage({ latencies, wallMs: performance.now() - t0, failures, firstFailure });
