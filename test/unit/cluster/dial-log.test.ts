/**
 * Failed dials at warn, at most once per peer per 30 s with a count (issue 11), and the start-up
 * check that a node listens where the cluster file says it does.
 */
import { describe, expect, it } from 'vitest';
import { createDialFailureLog, dialErrorReason } from '../../../src/cluster/dial-log.ts';
import { announcedAddressUnbound } from '../../../src/cluster/announce-check.ts';

const target = (nodeId: string) => ({ nodeId, peerId: `12D3Koo${nodeId}`, multiaddrs: [`/ip4/10.0.0.5/tcp/4010`] });
const refused = Object.assign(new Error('connect ECONNREFUSED 10.0.0.5:4010'), { code: 'ECONNREFUSED' });

function harness(options: { graceMs?: number } = {}) {
  let now = 1000;
  const lines: Array<Record<string, unknown>> = [];
  const log = createDialFailureLog({ intervalMs: 30_000, graceMs: options.graceMs ?? 0 }, { now: () => now, warn: (fields, message) => lines.push({ ...fields, message }) });
  return { log, lines, advance: (ms: number) => (now += ms) };
}

describe('dial failure log', () => {
  it('tells the first failure at once, then one line per 30 s with the count since the last', () => {
    const { log, lines, advance } = harness();
    log.failed(target('node-3'), refused);
    expect(lines).toEqual([
      { message: 'cannot dial peer', peer: 'node-3', peerId: '12D3Koonode-3', multiaddrs: ['/ip4/10.0.0.5/tcp/4010'], reason: 'connect ECONNREFUSED 10.0.0.5:4010', failures: 1, sinceMs: undefined },
    ]);
    for (let i = 0; i < 29; i++) {
      advance(1000);
      log.failed(target('node-3'), refused);
    }
    expect(lines).toHaveLength(1);
    advance(1000);
    log.failed(target('node-3'), refused);
    expect(lines).toHaveLength(2);
    expect(lines[1]).toMatchObject({ peer: 'node-3', failures: 30, sinceMs: 30_000 });
  });

  it('keeps peers apart, and starts again after a connection', () => {
    const { log, lines, advance } = harness();
    log.failed(target('node-3'), refused);
    log.failed(target('node-4'), refused);
    expect(lines.map((l) => l.peer)).toEqual(['node-3', 'node-4']);
    advance(1000);
    log.connected('node-3');
    log.failed(target('node-3'), refused);
    log.failed(target('node-4'), refused);
    expect(lines.map((l) => [l.peer, l.failures])).toEqual([
      ['node-3', 1],
      ['node-4', 1],
      ['node-3', 1],
    ]);
  });

  it('counts but does not tell failures during the start-up grace', () => {
    const { log, lines, advance } = harness({ graceMs: 10_000 });
    for (let i = 0; i < 9; i++) {
      log.failed(target('node-1'), refused);
      advance(1000);
    }
    expect(lines).toEqual([]);
    advance(1000);
    log.failed(target('node-1'), refused);
    expect(lines).toEqual([expect.objectContaining({ peer: 'node-1', failures: 10 })]);
  });

  it('words the reason in one line', () => {
    expect(dialErrorReason(refused)).toBe('connect ECONNREFUSED 10.0.0.5:4010');
    expect(dialErrorReason(Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }))).toBe('ECONNRESET: socket hang up');
    expect(dialErrorReason(Object.assign(new Error('The operation was aborted'), { name: 'AbortError' }))).toBe('timed out (The operation was aborted)');
    const aggregate = new AggregateError([refused, new Error('connect EHOSTUNREACH 10.0.0.6:4010'), refused], 'All multiaddr dials failed');
    expect(dialErrorReason(aggregate)).toBe('connect ECONNREFUSED 10.0.0.5:4010; connect EHOSTUNREACH 10.0.0.6:4010');
    expect(dialErrorReason('weird')).toBe('weird');
    expect(dialErrorReason(new Error('x'.repeat(2000))).length).toBe(500);
  });
});

describe('announced address check', () => {
  it('matches by host and port; wildcard listeners and DNS names match by port', () => {
    expect(announcedAddressUnbound(['/ip4/10.0.0.5/tcp/4010'], ['/ip4/10.0.0.5/tcp/4010/p2p/12D3KooWA'])).toBe(false);
    expect(announcedAddressUnbound(['/ip4/10.0.0.5/tcp/4010'], ['/ip4/0.0.0.0/tcp/4010', '/ip4/127.0.0.1/tcp/4010'])).toBe(false);
    expect(announcedAddressUnbound(['/dns4/node-5.example/tcp/4010'], ['/ip4/10.0.0.5/tcp/4010'])).toBe(false);
    expect(announcedAddressUnbound(['/ip4/10.0.0.5/tcp/4010'], ['/ip4/10.0.0.5/tcp/4011'])).toBe(true);
    expect(announcedAddressUnbound(['/ip4/10.0.0.5/tcp/4010'], ['/ip4/10.0.0.6/tcp/4010'])).toBe(true);
    expect(announcedAddressUnbound(['/ip6/fd00::5/tcp/4010'], ['/ip6/::/tcp/4010'])).toBe(false);
    // Nothing this check understands: no warning.
    expect(announcedAddressUnbound(['/unix/tmp/qk.sock'], ['/ip4/10.0.0.5/tcp/4010'])).toBe(false);
  });
});
