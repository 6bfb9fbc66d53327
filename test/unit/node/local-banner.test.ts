/**
 * What `quorumkeep local` prints once its cluster is up (src/node/local-banner.ts): the coordinator
 * URLs one a line (scripts read them), the operator URLs, where each coordinator's mail goes, the
 * chain or that there is none, and how to stop.
 */
import { describe, expect, it } from 'vitest';
import { localBanner } from '../../../src/node/local-banner.ts';

const run = {
  size: 3,
  threshold: 2,
  dir: '/srv/qk',
  created: false,
  coordinators: ['http://127.0.0.1:3010', 'http://127.0.0.1:3011'],
  operators: ['http://127.0.0.1:3110', 'http://127.0.0.1:3111', 'http://127.0.0.1:3112'],
  mail: [
    { nodeId: 'node-0', outbox: '/srv/qk/node-0/outbox' },
    { nodeId: 'node-1', smtp: 'mail.example.org:587' },
  ],
};

describe('localBanner', () => {
  it('names the coordinators, the operator ports, the mail, that there is no chain, and how to stop', () => {
    const lines = localBanner(run);
    expect(lines[0]).toBe('local cluster of 3 (threshold 2) under /srv/qk is up');
    expect(lines.filter((l) => /^coordinator \S+$/.test(l))).toEqual(['coordinator http://127.0.0.1:3010', 'coordinator http://127.0.0.1:3011']);
    expect(lines).toContainEqual(expect.stringMatching(/^operator +http:\/\/127\.0\.0\.1:3110 http:\/\/127\.0\.0\.1:3111 http:\/\/127\.0\.0\.1:3112 /));
    expect(lines).toContainEqual(expect.stringMatching(/^mail +outbox \/srv\/qk\/node-0\/outbox /));
    expect(lines).toContainEqual(expect.stringMatching(/^mail +SMTP mail\.example\.org:587 \(node-1\)$/));
    expect(lines).toContainEqual(expect.stringMatching(/^chain +no local chain/));
    expect(lines.at(-2)).toMatch(/^press Ctrl-C to stop/);
  });

  it('names the chain: id, RPC URL, controller and syncer', () => {
    const entry = {
      chainId: 31337,
      name: 'Local (anvil)',
      rpcUrl: 'http://127.0.0.1:8545',
      secretsControllerAddress: '0x5fbdb2315678afecb367f032d93f642f64180aa3',
      blockTimeMs: 2000,
      confirmations: 0,
      startBlock: 0,
      syncer: true,
      controllerClusterId: 0,
    };
    const chain = { kind: 'anvil' as const, entry, syncer: { id: 'node-0', nodeAddress: '0x00000000000000000000000000000000000000aa' } };
    const lines = localBanner({ ...run, created: true, chain });
    expect(lines[0]).toMatch(/is up \(created by this run\)$/);
    expect(lines).toContainEqual(
      'chain       31337 (Local (anvil)) at http://127.0.0.1:8545: secrets controller 0x5fbdb2315678afecb367f032d93f642f64180aa3, syncer node-0 (0x00000000000000000000000000000000000000aa)',
    );
  });
});
