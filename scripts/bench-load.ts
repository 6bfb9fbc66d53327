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
  /** Extra header lines, e.g. `X-Forwarded-For: 203.0.113.7`, for the body of the same index. */
  headers?: string[];
  /** Cycle through the bodies until the parent posts `"stop"` (a sustained flood). @default false */
  untilStopped?: boolean;
  /** `GET` these paths (of the url's host), one request each, instead of POSTing the bodies. */
  paths?: string[];
  /** A 2xx answer whose body does not contain this string counts as a failure (e.g. `"status":"complete"`). */
  expect?: string;
}

const job = workerData as LoadJob;
const target = new URL(job.url);
const latencies: number[] = [];
const requests = job.paths?.length ?? job.bodies.length;
let next = 0;
let failures = 0;
let firstFailure: string | undefined;
/** Answers by status code. */
const statuses: Record<number, number> = {};
let stopped = false;
parentPort!.on('message', (message) => {
  if (message === 'stop') stopped = true;
});
// The port alone must not keep the worker alive once the clients are done.
parentPort!.unref();
// Every client connects first, then all send at once (a burst is a burst); the parent hears `started`.
let connected = 0;
let allConnected!: () => void;
const ready = new Promise<void>((resolve) => (allConnected = resolve));

/** One keep-alive connection sending requests one after another. */
async function client(): Promise<void> {
  const socket: Socket = connect({ host: target.hostname, port: Number(target.port), noDelay: true });
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  if (++connected === job.concurrency) {
    parentPort!.postMessage({ started: true });
    allConnected();
  }
  await ready;
  let buffer: Buffer = Buffer.alloc(0);
  let waiting: (() => void) | undefined;
  socket.on('data', (chunk: Buffer) => {
    buffer = buffer.length === 0 ? chunk : Buffer.concat([buffer, chunk]);
    waiting?.();
  });
  const more = () => new Promise<void>((resolve) => (waiting = resolve));
  while (job.untilStopped ? !stopped : next < requests) {
    const i = next++ % requests;
    const extra = job.headers?.[i] === undefined ? '' : `${job.headers[i]}\r\n`;
    const t0 = performance.now();
    if (job.paths) socket.write(`GET ${job.paths[i]} HTTP/1.1\r\nHost: ${target.host}\r\n${extra}\r\n`);
    else {
      // Head and body in one write, one segment: as curl sends a small request (two writes with
      // Nagle off are two segments, and two reads for the server).
      const body = job.bodies[i]!;
      socket.write(`POST ${target.pathname} HTTP/1.1\r\nHost: ${target.host}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${extra}\r\n${body}`);
    }
    let headerEnd: number;
    while ((headerEnd = buffer.indexOf('\r\n\r\n')) < 0) await more();
    const head = buffer.subarray(0, headerEnd).toString('latin1');
    const length = Number(/content-length: *(\d+)/i.exec(head)?.[1] ?? 0);
    while (buffer.length < headerEnd + 4 + length) await more();
    const status = Number(head.slice(9, 12));
    const body = buffer.subarray(headerEnd + 4, headerEnd + 4 + length);
    buffer = buffer.subarray(headerEnd + 4 + length);
    latencies.push(performance.now() - t0);
    statuses[status] = (statuses[status] ?? 0) + 1;
    if (status < 200 || status > 299 || (job.expect !== undefined && !body.includes(job.expect))) {
      failures++;
      // Decoded only to report it: a success's body is not read (the client's CPU shares the host's two cores).
      firstFailure ??= `${status} ${body.subarray(0, 200).toString()}`;
    }
  }
  socket.end();
}

const t0 = performance.now();
const cpu0 = process.threadCpuUsage();
await Promise.all(Array.from({ length: job.concurrency }, client));
const cpu = process.threadCpuUsage(cpu0);
parentPort!.postMessage({ latencies, wallMs: performance.now() - t0, failures, firstFailure, statuses, cpuMicros: cpu.user + cpu.system });
