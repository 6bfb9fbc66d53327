/**
 * `npm start` for people and for machines (docs/configuration.md, "`local`" and `log.format`):
 * `quorumkeep local` as a real process prints its banner before any log line — the coordinator URLs,
 * the operator URLs, each coordinator's mail outbox, the chain, how to stop — and then the nodes'
 * lines: JSON lines with `log.format: json`, one human line an event with `pretty` (written by
 * pino-pretty in a worker thread, flushed when Ctrl-C stops the process).
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getFreePortRange, waitFor } from 'quorumkeep/testing';
import { interrupt, startLocal, type LocalProcess } from '../utils/local-process.ts';
import { cleanupStack, tempDir } from '../utils/temp.ts';

const SIZE = 3;
const stack = cleanupStack();
afterAll(() => stack.run());

/** The banner's lines and every line after it (empty ones left out). */
function split(output: string): { banner: string[]; logs: string[] } {
  const lines = output.split('\n');
  const end = lines.findIndex((line) => line.startsWith('press Ctrl-C'));
  expect(end, output).toBeGreaterThan(0);
  return { banner: lines.slice(0, end + 1), logs: lines.slice(end + 1).filter((line) => line.trim() !== '') };
}

/** Until every node's start is logged, then Ctrl-C: the whole output, its exit code checked. */
async function runUntilStopped(local: LocalProcess): Promise<string> {
  await waitFor(() => local.output().split('node started').length - 1 === SIZE, { timeoutMs: 15_000, description: 'every node’s start logged' });
  expect(await interrupt(local)).toBe(0);
  return local.output();
}

describe('quorumkeep local: the banner, then the logs in log.format', () => {
  let dir: string;
  let base: number;
  const args = () => ['--size', String(SIZE), '--threshold', '2', '--no-chain', '--base-port', String(base), '--http-base-port', String(base + SIZE), '--operator-base-port', String(base + 2 * SIZE)];

  beforeAll(async () => {
    dir = join(await tempDir(stack, 'qk-local-logs-'), 'data');
    base = await getFreePortRange(3 * SIZE);
  });

  it('log.format json: the banner names the coordinators and the outboxes first, then every line is JSON', async () => {
    const output = await runUntilStopped(await startLocal(stack, dir, args(), { QK_LOG_LEVEL: 'info', QK_LOG_FORMAT: 'json' }));
    const { banner, logs } = split(output);

    expect(banner.filter((line) => line.startsWith('{')), output).toEqual([]);
    expect(banner.filter((line) => /^coordinator \S+$/.test(line))).toEqual([`coordinator http://127.0.0.1:${base + SIZE}`, `coordinator http://127.0.0.1:${base + SIZE + 1}`]);
    const operators = Array.from({ length: SIZE }, (_, i) => `http://127.0.0.1:${base + 2 * SIZE + i}`);
    expect(banner).toContainEqual(expect.stringContaining(operators.join(' ')));
    for (const node of ['node-0', 'node-1']) expect(banner).toContainEqual(expect.stringContaining(`outbox ${join(dir, node, 'outbox')}`));
    expect(banner).toContainEqual(expect.stringMatching(/^chain +no local chain/));

    const parsed = logs.map((line) => JSON.parse(line) as { level: number; time: string; node?: string; msg: string });
    for (const line of parsed) expect(line).toMatchObject({ level: expect.any(Number), time: expect.any(String), msg: expect.any(String) });
    expect(parsed.filter((l) => l.msg === 'node started').map((l) => l.node).sort()).toEqual(['node-0', 'node-1', 'node-2']);
    expect(parsed.filter((l) => l.msg === 'node stopped')).toHaveLength(SIZE);
  });

  it('log.format pretty: the same banner, then one human line an event, none of them JSON', async () => {
    // NO_COLOR: plain text to match, whatever the environment running the tests asks for.
    const output = await runUntilStopped(await startLocal(stack, dir, [...args(), '--log-format', 'pretty'], { QK_LOG_LEVEL: 'info', NO_COLOR: '1' }));
    const { banner, logs } = split(output);

    expect(banner.filter((line) => /^coordinator \S+$/.test(line))).toHaveLength(2);
    expect(banner).toContainEqual(expect.stringContaining(`outbox ${join(dir, 'node-0', 'outbox')}`));
    expect(logs.length).toBeGreaterThan(0);
    for (const line of logs) {
      expect(() => JSON.parse(line), line).toThrow();
      expect(line).toMatch(/^\[\d{2}:\d{2}:\d{2}\.\d{3}\] (TRACE|DEBUG|INFO|WARN|ERROR|FATAL): /);
    }
    for (const node of ['node-0', 'node-1', 'node-2']) {
      expect(logs).toContainEqual(expect.stringContaining(`INFO: ${node} node: node started {`));
      expect(logs).toContainEqual(expect.stringMatching(new RegExp(`INFO: ${node} node: node stopped$`)));
    }
  });
});
