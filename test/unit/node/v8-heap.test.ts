/**
 * The V8 tuning of a node process (src/node/v8-heap.ts): short-lived buffers outside the JS heap no
 * longer set off full collections of their own, and an operator's `--no-…` on node's command line
 * keeps V8's default. Each case runs in its own process (V8 flags are per process).
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const SCRIPT = fileURLToPath(new URL('../../fixtures/gc-majors.ts', import.meta.url));

async function majorGcs(nodeArgs: string[], mode: 'plain' | 'tuned'): Promise<number> {
  const { stdout } = await run(process.execPath, [...nodeArgs, SCRIPT, mode], { timeout: 60_000 });
  return (JSON.parse(stdout.trim()) as { majors: number }).majors;
}

describe('tuneHeapForNodes', () => {
  it('cuts the full GCs that 1 GiB of short-lived external buffers sets off, unless turned off on the command line', async () => {
    const [plain, tuned, optedOut] = await Promise.all([
      majorGcs([], 'plain'),
      majorGcs([], 'tuned'),
      majorGcs(['--no-external-memory-accounted-in-global-limit'], 'tuned'),
    ]);
    // Measured: 12–15 by default, 2–3 tuned.
    expect(plain).toBeGreaterThanOrEqual(6);
    expect(tuned).toBeLessThanOrEqual(plain / 2);
    expect(optedOut).toBeGreaterThanOrEqual(6);
  }, 90_000);
});
