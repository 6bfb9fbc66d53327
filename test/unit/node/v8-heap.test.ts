/**
 * The V8 tuning of a node process (src/node/v8-heap.ts): short-lived buffers outside the JS heap no
 * longer set off full collections of their own; the old generation's growth is governed — a small
 * heap under load collects far less often, a large one stays within 20% of what is alive; an
 * operator's flag on node's command line keeps its value (each case in its own process: V8 flags are
 * per process); the settings a node must be started with are the shipped unit's, and a process
 * without them is told which.
 */
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { HEAP_GROWING_PERCENT, HEAP_SLACK_PER_NODE_MB, NODE_PROCESS_SETTINGS, NODE_V8_FLAGS, heapGrowingPercent, missingProcessSettings, v8FlagsToSet } from '../../../src/node/v8-heap.ts';

const run = promisify(execFile);
const SCRIPT = fileURLToPath(new URL('../../fixtures/gc-majors.ts', import.meta.url));
const GROWTH = fileURLToPath(new URL('../../fixtures/heap-growth.ts', import.meta.url));
const MIB = 1024 * 1024;

async function majorGcs(nodeArgs: string[], mode: 'plain' | 'tuned'): Promise<number> {
  const { stdout } = await run(process.execPath, [...nodeArgs, SCRIPT, mode], { timeout: 60_000 });
  return (JSON.parse(stdout.trim()) as { majors: number }).majors;
}

describe('tuneHeapForNodes', () => {
  it('cuts the full GCs that 1 GiB of short-lived external buffers sets off, unless turned off on the command line', async () => {
    // One process's count moves with the machine's load (measured one after another, Node 24.21:
    // 9–13 by default, 2–6 tuned; a tuned 6 beside a default 11 under a loaded CI run), so each mode
    // runs five times and the sums are compared.
    const sums = { plain: 0, tuned: 0, optedOut: 0 };
    for (let round = 0; round < 5; round++) {
      const [plain, tuned, optedOut] = await Promise.all([
        majorGcs([], 'plain'),
        majorGcs([], 'tuned'),
        majorGcs(['--no-external-memory-accounted-in-global-limit'], 'tuned'),
      ]);
      sums.plain += plain;
      sums.tuned += tuned;
      sums.optedOut += optedOut;
    }
    expect(sums.plain).toBeGreaterThanOrEqual(30);
    expect(sums.tuned).toBeLessThanOrEqual(sums.plain * 0.6);
    expect(sums.tuned).toBeLessThanOrEqual(sums.optedOut * 0.6);
  }, 120_000);
});

/** The fixture's churn of objects that die old over `liveMb` MiB kept alive, in a process running `nodes` nodes. */
async function churn(liveMb: number, nodes: number, nodeArgs: string[] = []): Promise<{ majors: number; percent: number | null }> {
  // A young generation of 1 MiB: the fixture's ring of entries outlives two scavenges.
  const { stdout } = await run(process.execPath, ['--expose-gc', '--max-semi-space-size=1', ...nodeArgs, GROWTH, String(liveMb), String(nodes)], { timeout: 60_000 });
  return JSON.parse(stdout.trim()) as { majors: number; percent: number | null };
}

describe('the governed heap growth', () => {
  it('lets a small heap grow by at least 16 MiB a node, so objects dying old set off far fewer full collections', async () => {
    // Five nodes in one process (the bench's and `quorumkeep local`'s shape) with about 30 MiB alive.
    const [governed, fixed] = await Promise.all([churn(20, 5), churn(20, 5, ['--heap-growing-percent=20'])]);
    expect(governed.percent).toBe(HEAP_GROWING_PERCENT.max);
    // The operator's value on the command line stands: nothing governed.
    expect(fixed.percent).toBeNull();
    // Measured: 21 against 53.
    expect(fixed.majors).toBeGreaterThanOrEqual(20);
    expect(governed.majors).toBeLessThanOrEqual(fixed.majors / 2);
  }, 90_000);

  it('keeps a large heap within 20% of what is alive, as a member holding many secrets needs', async () => {
    // Well past the 80 MiB alive where the slack (16 MiB) is 20%: at 120 MiB asked, what the governor read
    // after a collection on a busy machine was at times just under it (21%).
    const large = await churn(200, 1);
    expect(large.percent).toBe(HEAP_GROWING_PERCENT.min);
  }, 90_000);

  it('is the slack a node over what survived, within its bounds', () => {
    const slack = HEAP_SLACK_PER_NODE_MB * MIB;
    expect(heapGrowingPercent(slack / 2, 1)).toBe(100);
    expect(heapGrowingPercent(slack, 1)).toBe(100);
    expect(heapGrowingPercent(2 * slack, 1)).toBe(50);
    expect(heapGrowingPercent(5 * slack, 1)).toBe(20);
    expect(heapGrowingPercent(50 * slack, 1)).toBe(20);
    expect(heapGrowingPercent(5 * slack, 5)).toBe(100);
    expect(heapGrowingPercent(10 * slack, 5)).toBe(50);
    expect(heapGrowingPercent(0, 0)).toBe(100);
  });
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
