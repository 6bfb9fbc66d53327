import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describeNodeKeys, generateNodeKeys } from '../../../src/cluster/identity.ts';
import { ConfigError, loadClusterFile, loadNodeSetup, parseClusterFile, writeClusterFile } from '../../../src/config/index.ts';
import type { ClusterDescriptor } from '../../../src/core/replication/ports.ts';
import { initCluster } from '../../../src/node/cluster-init.ts';
import { cleanupStack, tempDir } from '../../utils/temp.ts';

const REPO_ROOT = join(import.meta.dirname, '../../..');

const stack = cleanupStack();
afterEach(() => stack.run());

let dir: string;
beforeEach(async () => {
  dir = await tempDir(stack, 'qk-init-');
});

async function modeOf(path: string): Promise<number> {
  return (await stat(path)).mode & 0o777;
}

function messageOf(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error('expected a ConfigError');
}

describe('initCluster', () => {
  it('writes a valid cluster file, 0600 keys and configs every node accepts', async () => {
    const summary = await initCluster({ out: dir, size: 5, threshold: 3, basePort: 5010, httpBasePort: 5110, clusterId: 'qk-test' });

    const descriptor = loadClusterFile(join(dir, 'cluster.json'));
    expect(summary.clusterFile).toBe(join(dir, 'cluster.json'));
    expect(descriptor).toMatchObject({ clusterId: 'qk-test', size: 5, threshold: 3 });
    expect(descriptor.nodes.map((n) => [n.id, n.slot, n.multiaddrs[0], n.httpUrl])).toEqual([
      ['node-0', 0, '/ip4/127.0.0.1/tcp/5010', 'http://127.0.0.1:5110'],
      ['node-1', 1, '/ip4/127.0.0.1/tcp/5011', 'http://127.0.0.1:5111'],
      ['node-2', 2, '/ip4/127.0.0.1/tcp/5012', undefined],
      ['node-3', 3, '/ip4/127.0.0.1/tcp/5013', undefined],
      ['node-4', 4, '/ip4/127.0.0.1/tcp/5014', undefined],
    ]);

    const tokens = new Set<string>();
    for (const node of summary.nodes) {
      expect(node.configFile).toBe(join(dir, `${node.id}.json`));
      expect(await modeOf(node.configFile)).toBe(0o600);
      for (const key of ['identity.key', 'signing.key', 'storage.key']) expect(await modeOf(join(dir, node.id, 'keys', key))).toBe(0o600);

      // The config file holds relative paths only: the folder can be moved as a whole.
      const raw = JSON.parse(await readFile(node.configFile, 'utf8')) as Record<string, unknown>;
      expect(raw).toMatchObject({ clusterFile: 'cluster.json', nodeId: node.id, dataDir: node.id });

      const { config, descriptor: loaded } = loadNodeSetup({ file: node.configFile, env: {} });
      expect(loaded).toEqual(descriptor);
      expect(config.dataDir).toBe(join(dir, node.id));
      expect(config.keysDir).toBe(node.keysDir);
      const coordinator = node.slot < 2;
      expect(config.http.enabled).toBe(coordinator);
      if (coordinator) {
        expect(config.http.port).toBe(5110 + node.slot);
        expect(config.http.publicUrl).toBe(node.httpUrl);
      }
      // Every node has its own admin token: the API's /admin on coordinators, and on every node's
      // operator port GET /admin/backup.
      expect(config.admin.token).toMatch(/^[0-9a-f]{64}$/);
      tokens.add(config.admin.token);
    }
    expect(tokens.size).toBe(summary.nodes.length);
  });

  it('defaults: ports 4010/3010, two coordinators, a qk- cluster id', async () => {
    const summary = await initCluster({ out: dir, size: 3, threshold: 2 });
    expect(summary.clusterId).toMatch(/^qk-[0-9a-f]{8}$/);
    expect(summary.nodes.map((n) => [n.libp2pPort, n.httpPort])).toEqual([
      [4010, 3010],
      [4011, 3011],
      [4012, undefined],
    ]);
  });

  it('refuses a folder that already holds a cluster, leaving it intact', async () => {
    await initCluster({ out: dir, size: 3, threshold: 2 });
    const before = await readFile(join(dir, 'cluster.json'), 'utf8');
    await expect(initCluster({ out: dir, size: 3, threshold: 2 })).rejects.toThrow(
      new ConfigError(`cluster init: ${join(dir, 'cluster.json')} already exists; choose another --out or remove the old cluster`),
    );
    expect(await readFile(join(dir, 'cluster.json'), 'utf8')).toBe(before);
  });

  it('validates options before writing anything', async () => {
    const out = join(dir, 'never');
    await expect(initCluster({ out, size: 4, threshold: 2 })).rejects.toThrow(
      'cluster init: threshold: must be greater than size/2 and at most size (size 4, threshold 2)',
    );
    await expect(initCluster({ out, size: 65, threshold: 40 })).rejects.toThrow('cluster init: size: must be an integer from 1 to 64');
    await expect(initCluster({ out, size: 3, threshold: 2, coordinators: 4 })).rejects.toThrow('cluster init: coordinators:');
    await expect(initCluster({ out, size: 3, threshold: 2, basePort: 3009 })).rejects.toThrow('cluster init: httpBasePort: HTTP ports 3010-3011 overlap');
    await expect(initCluster({ out, size: 3, threshold: 2, clusterId: 'a/b' })).rejects.toThrow('cluster file: clusterId:');
    await expect(stat(out)).rejects.toMatchObject({ code: 'ENOENT' });
  });
});

describe('cluster file validation', () => {
  let valid: ClusterDescriptor;
  let source: string;
  beforeEach(async () => {
    await initCluster({ out: dir, size: 3, threshold: 2, clusterId: 'qk-valid' });
    source = join(dir, 'cluster.json');
    valid = loadClusterFile(source);
  });

  /** The error message for `valid` changed by `edit`. */
  function problemWith(edit: (d: ClusterDescriptor) => void): string {
    const copy = structuredClone(valid);
    edit(copy);
    return messageOf(() => parseClusterFile(copy, source));
  }

  it('accepts the JSON text, and gateways without a slot', async () => {
    expect(parseClusterFile(JSON.stringify(valid), source)).toEqual(valid);
    const gateway = { id: 'gateway', slot: null, ...describeNodeKeys(await generateNodeKeys()), multiaddrs: ['/ip4/127.0.0.1/tcp/4099'], httpUrl: 'http://127.0.0.1:3099' };
    expect(parseClusterFile({ ...valid, nodes: [...valid.nodes, gateway] }, source).nodes).toHaveLength(4);
  });

  it('rejects bad sizes, thresholds and slots, naming the key', () => {
    expect(problemWith((d) => (d.threshold = 1))).toBe(
      `cluster file: threshold: must be greater than size/2 and at most size (size 3, threshold 1) (in ${source})`,
    );
    expect(problemWith((d) => (d.threshold = 4))).toMatch(/^cluster file: threshold: .*\(size 3, threshold 4\)/);
    expect(problemWith((d) => (d.size = 0))).toMatch(/^cluster file: size: must be an integer from 1 to 64 \(got 0\)/);
    expect(problemWith((d) => (d.nodes[2]!.slot = 1))).toBe(`cluster file: nodes.2.slot: slot 1 is already held by node-1 (in ${source})`);
    expect(problemWith((d) => (d.nodes[2]!.slot = 5))).toBe(`cluster file: nodes.2.slot: slot 5 is outside 0..2 (size 3) (in ${source})`);
    expect(problemWith((d) => (d.nodes[2]!.slot = null))).toBe(
      `cluster file: nodes: no member holds slot 2 (each of 0..2 needs exactly one) (in ${source})`,
    );
  });

  it('rejects duplicates, bad addresses and unknown keys', () => {
    expect(problemWith((d) => (d.nodes[1]!.id = 'node-0'))).toBe(`cluster file: nodes.1.id: "node-0" is also used by nodes.0 (in ${source})`);
    expect(problemWith((d) => (d.nodes[1]!.peerId = d.nodes[0]!.peerId))).toMatch(/^cluster file: nodes\.1\.peerId: .* is also used by nodes\.0/);
    expect(problemWith((d) => (d.nodes[1]!.signingPublicKey = d.nodes[0]!.signingPublicKey))).toMatch(
      /^cluster file: nodes\.1\.nodeAddress: does not match signingPublicKey \(which gives 0x[0-9a-f]{40}\)/,
    );
    expect(problemWith((d) => (d.nodes[0]!.nodeAddress = d.nodes[0]!.nodeAddress.toUpperCase().replace('0X', '0x')))).toMatch(
      /^cluster file: nodes\.0\.nodeAddress: must be 0x followed by 40 lowercase hex digits/,
    );
    expect(problemWith((d) => (d.nodes[0]!.signingPublicKey = '02' + '0'.repeat(64)))).toMatch(
      /^cluster file: nodes\.0\.signingPublicKey: is not a valid secp256k1 public key/,
    );
    expect(problemWith((d) => (d.nodes[0]!.multiaddrs = []))).toMatch(/^cluster file: nodes\.0\.multiaddrs: must have at least 1 items/);
    expect(problemWith((d) => Object.assign(d.nodes[0]!, { port: 1 }))).toBe(`cluster file: unknown key "nodes.0.port" (in ${source})`);
    expect(problemWith((d) => Object.assign(d, { quorum: 2 }))).toBe(`cluster file: unknown key "quorum" (in ${source})`);
  });

  it('writeClusterFile refuses to write an invalid descriptor or replace a file', async () => {
    const target = join(dir, 'copy.json');
    await expect(writeClusterFile(target, { ...valid, threshold: 1 })).rejects.toBeInstanceOf(ConfigError);
    await expect(stat(target)).rejects.toMatchObject({ code: 'ENOENT' });
    await writeClusterFile(target, valid);
    expect(loadClusterFile(target)).toEqual(valid);
    await expect(writeClusterFile(target, valid)).rejects.toMatchObject({ code: 'EEXIST' });
  });

  it('loadClusterFile reports unreadable files and bad JSON in one line', async () => {
    const missing = join(dir, 'missing.json');
    expect(messageOf(() => loadClusterFile(missing))).toBe(`cluster file ${missing}: cannot read (ENOENT)`);
    const broken = join(dir, 'broken.json');
    await writeFile(broken, '{"clusterId": }');
    expect(messageOf(() => loadClusterFile(broken))).toBe(`cluster file ${broken}: invalid JSON at position 14`);
  });

  it('config/cluster.example.json is a valid 5-node cluster file', () => {
    const example = loadClusterFile(join(REPO_ROOT, 'config/cluster.example.json'));
    expect(example).toMatchObject({ size: 5, threshold: 3 });
    expect(example.nodes).toHaveLength(5);
  });
});
