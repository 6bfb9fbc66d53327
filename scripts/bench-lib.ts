/** Helpers for `npm run bench`: percentiles and aligned output. */
import { writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';

/** Percentile (0–100) of a sample, nearest-rank. */
export function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank]!;
}

/** Median. */
export const median = (values: number[]) => percentile(values, 50);

/** Format ms with sensible precision. */
export function ms(v: number): string {
  return v < 1 ? `${(v * 1000).toFixed(0)} µs` : v < 100 ? `${v.toFixed(2)} ms` : `${v.toFixed(0)} ms`;
}

/** Run `fn` `count` times with `concurrency` workers; returns per-call latencies (ms) and wall time. */
export async function runConcurrent(count: number, concurrency: number, fn: (i: number) => Promise<unknown>): Promise<{ latencies: number[]; wallMs: number }> {
  const latencies: number[] = [];
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        const i = next++;
        const s = performance.now();
        await fn(i);
        latencies.push(performance.now() - s);
      }
    }),
  );
  return { latencies, wallMs: performance.now() - t0 };
}

/** POST `body` as JSON; the status and the parsed JSON answer. */
export async function post(url: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** Print a two-column table. */
export function table(title: string, rows: Array<[string, string]>): void {
  const w = Math.max(...rows.map(([k]) => k.length));
  console.log(`\n${title}`);
  for (const [k, v] of rows) console.log(`  ${k.padEnd(w)}  ${v}`);
}

/**
 * Run `fn`; with BENCH_CPU_PROFILE=<prefix> set, a V8 CPU profile of this process during it is written
 * to `<prefix>.<tag>.cpuprofile` (open it in Chrome DevTools, Performance panel).
 */
export async function withCpuProfile<T>(tag: string, fn: () => Promise<T>): Promise<T> {
  const prefix = process.env.BENCH_CPU_PROFILE;
  if (!prefix) return fn();
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  try {
    return await fn();
  } finally {
    const { profile } = await session.post('Profiler.stop');
    await writeFile(`${prefix}.${tag}.cpuprofile`, JSON.stringify(profile));
    session.disconnect();
  }
}
