/**
 * The V8 tuning of a node process (src/node/v8-heap.ts): short-lived buffers outside the JS heap no
 * longer set off full collections of their own, and an operator's `--no-…` on node's command line
 * keeps V8's default (each case in its own process: V8 flags are per process); the settings a node
 * must be started with are the shipped unit's, and a process without them is told which.
 */
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { NODE_PROCESS_SETTINGS, NODE_V8_FLAGS, missingProcessSettings, v8FlagsToSet } from '../../../src/node/v8-heap.ts';

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

describe('v8FlagsToSet', () => {
  it('sets every flag but one the operator chose on the command line, in either spelling', () => {
    expect(v8FlagsToSet([])).toEqual([...NODE_V8_FLAGS]);
    expect(v8FlagsToSet(['--max-semi-space-size=8', '--heap-growing-percent=0'])).toEqual(['--external-memory-accounted-in-global-limit', '--no-allocation-site-pretenuring']);
    expect(v8FlagsToSet(['--no-external_memory_accounted_in_global_limit', '--heap_growing_percent=50'])).toEqual(['--no-allocation-site-pretenuring']);
    expect(v8FlagsToSet(['--allocation_site_pretenuring', '--heap-growing-percent=20', '--external-memory-accounted-in-global-limit'])).toEqual([]);
  });
});

describe('NODE_PROCESS_SETTINGS', () => {
  it('are what the shipped systemd unit starts a node with', async () => {
    const doc = await readFile(fileURLToPath(new URL('../../../docs/deployment.md', import.meta.url)), 'utf8');
    const unit = doc.slice(doc.indexOf('[Service]'), doc.indexOf('[Install]'));
    const execStart = unit.split('\n').find((line) => line.startsWith('ExecStart='))!;
    const nodeArgs = execStart.slice(0, execStart.indexOf('quorumkeep.js')).split(/\s+/);
    for (const flag of NODE_PROCESS_SETTINGS.nodeFlags) expect(nodeArgs).toContain(flag);
    for (const [name, value] of Object.entries(NODE_PROCESS_SETTINGS.env)) expect(unit).toContain(`\nEnvironment=${name}=${value}\n`);
  });

  it('names each setting a process was started without, wherever the operator set it', () => {
    expect(missingProcessSettings({}, [])).toEqual(['MALLOC_ARENA_MAX=2', '--max-semi-space-size=8']);
    expect(missingProcessSettings({ MALLOC_ARENA_MAX: '2' }, ['--max-semi-space-size=8'])).toEqual([]);
    // The operator's own values count, as do NODE_OPTIONS and V8's underscore spelling.
    expect(missingProcessSettings({ MALLOC_ARENA_MAX: '4', NODE_OPTIONS: '--max-old-space-size=512 --max-semi-space-size=16' }, [])).toEqual([]);
    expect(missingProcessSettings({ MALLOC_ARENA_MAX: '2' }, ['--max_semi_space_size=4'])).toEqual([]);
    expect(missingProcessSettings({ MALLOC_ARENA_MAX: '2' }, ['--max-old-space-size=512'])).toEqual(['--max-semi-space-size=8']);
  });
});
