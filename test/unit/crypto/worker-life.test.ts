/**
 * The crypto pools' threads stopped safely (src/crypto/worker-life.ts): V8 aborted the whole process
 * when a pool closed while its thread was still evaluating its modules (the CI failure of
 * test/integration/secrets-failures.test.ts, a member stopped right after its verify thread started).
 * In a child process, each pool's thread is started and the pool closed after every wait from 0 to
 * 90 ms: the process must live to say so. On the code before, it aborted in each of 3 runs.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const SCRIPT = fileURLToPath(new URL('../../fixtures/crypto-pool-stops.ts', import.meta.url));

describe('crypto pool threads', () => {
  it('survive their pool closing at any moment of their start', async () => {
    const { stdout } = await run(process.execPath, [SCRIPT, '90'], { timeout: 120_000 });
    expect(stdout.trim()).toBe('survived');
  }, 150_000);
});
