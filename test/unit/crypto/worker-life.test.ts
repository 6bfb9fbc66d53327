/**
 * The crypto pools' threads stopped safely (src/crypto/worker-life.ts): V8 aborted the whole process
 * when a pool closed while its thread was still evaluating its modules (the CI failure of
 * test/integration/secrets-failures.test.ts, a member stopped right after its verify thread started).
 * In a child process, each pool's thread is started and the pool closed after every wait from 0 to
 * 90 ms: the process must live to say so. On the code before, it aborted in each of 3 runs.
 * And each thread runs below the event loop (`runBelowEventLoop`): in a child process started at a
 * given nice value, the pools' threads are that many steps lower (at most 19), the main thread as it was.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { CRYPTO_THREAD_NICE_STEPS } from '../../../src/crypto/worker-life.ts';

const run = promisify(execFile);
const SCRIPT = fileURLToPath(new URL('../../fixtures/crypto-pool-stops.ts', import.meta.url));
const NICE_SCRIPT = fileURLToPath(new URL('../../fixtures/crypto-thread-nice.ts', import.meta.url));

describe('crypto pool threads', () => {
  it('survive their pool closing at any moment of their start', async () => {
    const { stdout } = await run(process.execPath, [SCRIPT, '90'], { timeout: 120_000 });
    expect(stdout.trim()).toBe('survived');
  }, 150_000);

  it.runIf(process.platform === 'linux')('run below the event loop, whatever nice value the process started at', async () => {
    for (const start of [0, 5, 15]) {
      const { stdout } = await run('nice', ['-n', String(start), process.execPath, NICE_SCRIPT], { timeout: 60_000 });
      const { main, workers } = JSON.parse(stdout) as { main: number; workers: number[] };
      expect(main).toBe(start);
      // The verify pool's thread and the request pool's.
      expect(workers).toEqual([Math.min(19, start + CRYPTO_THREAD_NICE_STEPS), Math.min(19, start + CRYPTO_THREAD_NICE_STEPS)]);
    }
  }, 120_000);
});
