/**
 * Load generator for `npm run bench`, run in a worker thread so the HTTP client's own CPU (fetch,
 * JSON) is not charged to the server's core: POSTs pre-built bodies with N concurrent clients and
 * posts back the latencies.
 */
import { parentPort, workerData } from 'node:worker_threads';

interface LoadJob {
  url: string;
  bodies: string[];
  concurrency: number;
}

const job = workerData as LoadJob;
const latencies: number[] = [];
let next = 0;
let failures = 0;
let firstFailure: string | undefined;
const t0 = performance.now();
await Promise.all(
  Array.from({ length: job.concurrency }, async () => {
    while (next < job.bodies.length) {
      const body = job.bodies[next++]!;
      const s = performance.now();
      const res = await fetch(job.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      const text = await res.text();
      latencies.push(performance.now() - s);
      if (res.status !== 200) {
        failures++;
        firstFailure ??= `${res.status} ${text.slice(0, 200)}`;
      }
    }
  }),
);
parentPort!.postMessage({ latencies, wallMs: performance.now() - t0, failures, firstFailure });
