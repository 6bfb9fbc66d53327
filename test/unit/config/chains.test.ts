/**
 * The `chains` config (src/config/schema.ts, docs/configuration.md) and how RPC URLs are shown
 * (src/config/redact.ts): providers put API keys in them.
 */
import { describe, expect, it } from 'vitest';
import { chainSchema, chainsSchema, DEFAULT_CHAINS, nodeConfigSchema, REDACTED, redactConfig, redactUrl } from '../../../src/config/index.ts';

const base = { chainId: 8453, name: 'Base', rpcUrl: 'https://mainnet.base.org', blockTimeMs: 2000 };

describe('chainSchema', () => {
  it('fills the defaults: 2 confirmations, start block 0, not the syncer, no controller', () => {
    expect(chainSchema.parse(base)).toEqual({ ...base, confirmations: 2, startBlock: 0, syncer: false, controllerClusterId: 0 });
    expect(DEFAULT_CHAINS).toEqual([chainSchema.parse(base)]);
  });

  it('takes every key, the controller address in either case', () => {
    const full = {
      ...base,
      wsRpcUrl: 'wss://base.example/ws',
      secretsControllerAddress: '0xAbCdEf0123456789aBcDeF0123456789ABCDEF01',
      confirmations: 0,
      startBlock: 12_345_678,
      syncer: true,
      controllerClusterId: 7,
    };
    expect(chainSchema.parse(full)).toEqual(full);
  });

  it.each([
    ['rpcUrl', { rpcUrl: 'wss://base.example' }],
    ['rpcUrl', { rpcUrl: 'not a url' }],
    ['wsRpcUrl', { wsRpcUrl: 'https://base.example' }],
    ['secretsControllerAddress', { secretsControllerAddress: '0x1234' }],
    ['controllerClusterId', { controllerClusterId: 256 }],
    ['chainId', { chainId: 0 }],
    ['chainId', { chainId: -1 }],
    ['blockTimeMs', { blockTimeMs: 0 }],
    ['confirmations', { confirmations: -1 }],
    ['startBlock', { startBlock: 1.5 }],
    ['syncer', { syncer: 'yes' }],
  ])('refuses a bad %s', (key, patch) => {
    const result = chainSchema.safeParse({ ...base, ...patch });
    expect(result.success).toBe(false);
    expect(result.error?.issues[0]?.path).toEqual([key]);
  });

  it('refuses unknown keys and a chain listed twice', () => {
    expect(chainSchema.safeParse({ ...base, rpcURL: 'https://x.example' }).success).toBe(false);
    const twice = chainsSchema.safeParse([base, { ...base, name: 'Base again' }]);
    expect(twice.success).toBe(false);
    expect(twice.error?.issues[0]).toMatchObject({ path: [1, 'chainId'], message: 'chain 8453 is listed twice' });
  });
});

describe('redactUrl', () => {
  it.each([
    ['https://mainnet.base.org', 'https://mainnet.base.org'],
    ['https://mainnet.base.org/', 'https://mainnet.base.org/'],
    ['http://127.0.0.1:8545', 'http://127.0.0.1:8545'],
    ['https://base-mainnet.g.alchemy.com/v2/abc123', `https://base-mainnet.g.alchemy.com/${REDACTED}`],
    ['https://rpc.example/?apikey=abc123', `https://rpc.example/${REDACTED}`],
    ['https://user:abc123@rpc.example', `https://rpc.example/${REDACTED}`],
    ['wss://base.example:8546/ws/abc123', `wss://base.example:8546/${REDACTED}`],
    ['not a url abc123', REDACTED],
  ])('%s → %s', (url, shown) => {
    expect(redactUrl(url)).toBe(shown);
  });

  it('is applied to every chain by redactConfig, which still validates', () => {
    const config = nodeConfigSchema.parse({
      clusterFile: '/etc/quorumkeep/cluster.json',
      nodeId: 'node-0',
      dataDir: '/var/lib/quorumkeep',
      chains: [{ ...base, rpcUrl: 'https://base.example/v2/abc123', wsRpcUrl: 'wss://base.example/v2/abc123' }],
    });
    const redacted = redactConfig(config);
    expect(JSON.stringify(redacted)).not.toContain('abc123');
    expect(redacted.chains[0]).toMatchObject({ rpcUrl: `https://base.example/${REDACTED}`, wsRpcUrl: `wss://base.example/${REDACTED}` });
    expect(nodeConfigSchema.safeParse(redacted).success).toBe(true);
    expect(config.chains[0]?.rpcUrl).toBe('https://base.example/v2/abc123');
  });
});
