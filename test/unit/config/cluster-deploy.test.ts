/**
 * One node per host (issue 11): `cluster init --hosts`, hosts files, bind addresses, the checks of
 * announced addresses (init, cluster file, node start) and `cluster set-address`.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  ConfigError,
  announceHostProblem,
  isWildcardHost,
  loadClusterFile,
  loadNodeSetup,
  mixedLoopbackProblem,
  parseClusterFile,
} from '../../../src/config/index.ts';
import { initCluster, parseHostsFile, readHostsFile } from '../../../src/node/cluster-init.ts';
import { setNodeAddress } from '../../../src/node/cluster-set-address.ts';
import { cleanupStack, tempDir } from '../../utils/temp.ts';

const stack = cleanupStack();
afterEach(() => stack.run());

let dir: string;
beforeEach(async () => {
  dir = await tempDir(stack, 'qk-deploy-');
});

const HOSTS = ['10.0.0.1', '10.0.0.2', '10.0.0.3', '10.0.0.4', '10.0.0.5'];

async function rawConfig(path: string): Promise<Record<string, unknown>> {
  return JSON.parse(await readFile(path, 'utf8')) as Record<string, unknown>;
}

describe('announced addresses', () => {
  it('wildcards, loopback and undiallable addresses are told apart', () => {
    for (const wildcard of ['0.0.0.0', '::', '[::]', '0:0:0:0:0:0:0:0']) expect(isWildcardHost(wildcard), wildcard).toBe(true);
    for (const host of ['127.0.0.1', '10.0.0.1', '::1', 'node-1.example']) expect(isWildcardHost(host), host).toBe(false);
    expect(announceHostProblem('0.0.0.0')).toMatch(/^0\.0\.0\.0 is a wildcard address/);
    expect(announceHostProblem('::')).toMatch(/^:: is a wildcard address/);
    expect(announceHostProblem('')).toBe('must not be empty');
    expect(announceHostProblem('224.0.0.1')).toMatch(/cannot be dialled/);
    expect(announceHostProblem('255.255.255.255')).toMatch(/cannot be dialled/);
    expect(announceHostProblem('ff02::1')).toMatch(/cannot be dialled/);
    expect(announceHostProblem('no such/host')).toMatch(/neither an IP address nor a host name/);
    for (const ok of ['127.0.0.1', '10.0.0.1', 'fd00::2', 'node-1.example.internal', 'localhost']) expect(announceHostProblem(ok), ok).toBeUndefined();
    expect(mixedLoopbackProblem(['127.0.0.1', '127.0.0.2', 'localhost'])).toBeUndefined();
    expect(mixedLoopbackProblem(['10.0.0.1', 'node-2.example'])).toBeUndefined();
    expect(mixedLoopbackProblem(['10.0.0.1', '127.0.0.1'])).toMatch(/mixes loopback addresses \(127\.0\.0\.1\) with others \(10\.0\.0\.1\)/);
  });
});

describe('cluster init with one address per node', () => {
  it('--hosts: every node announces its own host on the same ports, operator port included', async () => {
    const summary = await initCluster({ out: dir, size: 5, threshold: 3, hosts: HOSTS.map((announce) => ({ announce })), clusterId: 'qk-hosts' });
    const descriptor = loadClusterFile(join(dir, 'cluster.json'));
    expect(descriptor.nodes.map((n) => [n.id, n.multiaddrs, n.httpUrl])).toEqual([
      ['node-0', ['/ip4/10.0.0.1/tcp/4010'], 'http://10.0.0.1:3010'],
      ['node-1', ['/ip4/10.0.0.2/tcp/4010'], 'http://10.0.0.2:3010'],
      ['node-2', ['/ip4/10.0.0.3/tcp/4010'], undefined],
      ['node-3', ['/ip4/10.0.0.4/tcp/4010'], undefined],
      ['node-4', ['/ip4/10.0.0.5/tcp/4010'], undefined],
    ]);
    expect(summary.nodes.map((n) => n.operatorPort)).toEqual([3110, 3110, 3110, 3110, 3110]);

    // Binding where it announces: no `listen` in the config; HTTP and operator port on the host itself.
    expect(await rawConfig(join(dir, 'node-0.json'))).toMatchObject({
      http: { enabled: true, host: '10.0.0.1', port: 3010, publicUrl: 'http://10.0.0.1:3010' },
      operator: { enabled: true, host: '10.0.0.1', port: 3110 },
    });
    expect(await rawConfig(join(dir, 'node-0.json'))).not.toHaveProperty('listen');
    const member = await rawConfig(join(dir, 'node-3.json'));
    expect(member).toEqual({ clusterFile: 'cluster.json', nodeId: 'node-3', dataDir: 'node-3', operator: { enabled: true, host: '10.0.0.4', port: 3110 }, admin: { token: expect.stringMatching(/^[0-9a-f]{64}$/) } });

    for (const node of summary.nodes) {
      const { config } = loadNodeSetup({ file: node.configFile, env: {} });
      expect(config.operator).toEqual({ enabled: true, host: node.announceHost, port: 3110 });
    }
  });

  it('--listen-host 0.0.0.0: binds every interface, announces the host; a hosts-file column wins for its node', async () => {
    const hosts = HOSTS.map((announce) => ({ announce }));
    hosts[4] = { announce: 'node-4.example.internal', listen: '192.168.7.5' } as never;
    await initCluster({ out: dir, size: 5, threshold: 3, hosts, listenHost: '0.0.0.0' });
    const node0 = await rawConfig(join(dir, 'node-0.json'));
    expect(node0).toMatchObject({
      listen: ['/ip4/0.0.0.0/tcp/4010'],
      http: { enabled: true, host: '0.0.0.0', port: 3010, publicUrl: 'http://10.0.0.1:3010' },
      operator: { enabled: true, host: '0.0.0.0', port: 3110 },
    });
    expect(await rawConfig(join(dir, 'node-4.json'))).toMatchObject({ listen: ['/ip4/192.168.7.5/tcp/4010'], operator: { host: '192.168.7.5' } });
    const descriptor = loadClusterFile(join(dir, 'cluster.json'));
    expect(descriptor.nodes[0]!.multiaddrs).toEqual(['/ip4/10.0.0.1/tcp/4010']);
    expect(descriptor.nodes[4]!.multiaddrs).toEqual(['/dns4/node-4.example.internal/tcp/4010']);
    // A wildcard bind address is fine for a node to start with: links go to the public URL.
    expect(loadNodeSetup({ file: join(dir, 'node-0.json'), env: {} }).config.http.publicUrl).toBe('http://10.0.0.1:3010');
  });

  it('nodes sharing a host are numbered as on one machine; --host keeps base + i', async () => {
    const shared = await initCluster({ out: join(dir, 'a'), size: 3, threshold: 2, hosts: [{ announce: '10.0.0.1' }, { announce: '10.0.0.2' }, { announce: '10.0.0.1' }] });
    expect(shared.nodes.map((n) => [n.libp2pPort, n.httpPort, n.operatorPort])).toEqual([
      [4010, 3010, 3110],
      [4010, 3010, 3110],
      [4011, undefined, 3111],
    ]);
    const one = await initCluster({ out: join(dir, 'b'), size: 3, threshold: 2, host: '10.0.0.9' });
    expect(one.nodes.map((n) => [n.multiaddr, n.httpPort, n.operatorPort])).toEqual([
      ['/ip4/10.0.0.9/tcp/4010', 3010, 3110],
      ['/ip4/10.0.0.9/tcp/4011', 3011, 3111],
      ['/ip4/10.0.0.9/tcp/4012', undefined, 3112],
    ]);
    const none = await initCluster({ out: join(dir, 'c'), size: 3, threshold: 2, operator: false });
    expect(none.nodes.map((n) => n.operatorPort)).toEqual([undefined, undefined, undefined]);
    expect(await rawConfig(join(dir, 'c', 'node-2.json'))).not.toHaveProperty('operator');
  });

  it('refuses wildcard, empty, mixed and miscounted addresses before writing anything', async () => {
    const out = join(dir, 'never');
    const fails = (options: Partial<Parameters<typeof initCluster>[0]>) => initCluster({ out, size: 3, threshold: 2, ...options });
    await expect(fails({ host: '0.0.0.0' })).rejects.toThrow(/^cluster init: host: 0\.0\.0\.0 is a wildcard address .*--listen-host/);
    await expect(fails({ host: '::' })).rejects.toThrow(/^cluster init: host: :: is a wildcard address/);
    await expect(fails({ host: '' })).rejects.toThrow('cluster init: host: must not be empty');
    await expect(fails({ hosts: [{ announce: '10.0.0.1' }, { announce: '0.0.0.0' }, { announce: '10.0.0.3' }] })).rejects.toThrow(/^cluster init: hosts\.1: 0\.0\.0\.0 is a wildcard/);
    await expect(fails({ hosts: [{ announce: '10.0.0.1' }, { announce: '' }, { announce: '10.0.0.3' }] })).rejects.toThrow('cluster init: hosts.1: must not be empty');
    await expect(fails({ hosts: [{ announce: '10.0.0.1' }, { announce: '10.0.0.2' }] })).rejects.toThrow('cluster init: hosts: needs exactly one address per node (size 3, got 2)');
    await expect(fails({ hosts: [{ announce: '10.0.0.1' }, { announce: '127.0.0.1' }, { announce: '10.0.0.3' }] })).rejects.toThrow(/^cluster init: hosts: mixes loopback addresses \(127\.0\.0\.1\)/);
    await expect(fails({ host: '10.0.0.1', hosts: [] })).rejects.toThrow(/^cluster init: hosts: give either --host/);
    await expect(fails({ host: '10.0.0.1', listenHost: 'no such/host' })).rejects.toThrow(/^cluster init: listenHost: /);
    await expect(fails({ httpBasePort: 3100, operatorBasePort: 3101 })).rejects.toThrow('cluster init: operatorBasePort: operator ports 3101-3103 overlap HTTP ports 3100-3101');
    for (const err of [await fails({ host: '0.0.0.0' }).catch((e: unknown) => e)]) expect(err).toBeInstanceOf(ConfigError);
    await expect(stat(out)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('hosts files: one line per node, an optional bind column, comments and blank lines', async () => {
    const text = ['# the production hosts', '', '10.0.0.1', '10.0.0.2   0.0.0.0   # binds all', '  node-3.example  ', ''].join('\n');
    expect(parseHostsFile(text, 'hosts.txt')).toEqual([{ announce: '10.0.0.1' }, { announce: '10.0.0.2', listen: '0.0.0.0' }, { announce: 'node-3.example' }]);
    expect(() => parseHostsFile('10.0.0.1\n10.0.0.2 0.0.0.0 extra\n', 'hosts.txt')).toThrow(
      'cluster init: hostsFile: line 2: expected "<announce-host> [<listen-host>]", got 3 fields (in hosts.txt)',
    );
    const path = join(dir, 'hosts.txt');
    await writeFile(path, text);
    expect(await readHostsFile(path)).toHaveLength(3);
    await expect(readHostsFile(join(dir, 'none.txt'))).rejects.toThrow(`cluster init: hostsFile ${join(dir, 'none.txt')}: cannot read (ENOENT)`);
  });
});

describe('a node refuses wildcard addresses at start', () => {
  it('in the cluster file (multiaddrs, httpUrl) and in http.publicUrl, naming the key', async () => {
    await initCluster({ out: dir, size: 3, threshold: 2 });
    const clusterFile = join(dir, 'cluster.json');
    const valid = loadClusterFile(clusterFile);
    const edited = (edit: (d: typeof valid) => void) => {
      const copy = structuredClone(valid);
      edit(copy);
      return copy;
    };
    expect(() => parseClusterFile(edited((d) => (d.nodes[2]!.multiaddrs = ['/ip4/0.0.0.0/tcp/4012'])), clusterFile)).toThrow(
      new RegExp(`^cluster file: nodes\\.2\\.multiaddrs\\.0: "/ip4/0\\.0\\.0\\.0/tcp/4012": 0\\.0\\.0\\.0 is a wildcard address .* \\(in ${clusterFile}\\)$`),
    );
    expect(() => parseClusterFile(edited((d) => (d.nodes[0]!.multiaddrs = ['/ip6/::/tcp/4010'])), clusterFile)).toThrow(/^cluster file: nodes\.0\.multiaddrs\.0: "\/ip6\/::\/tcp\/4010": :: is a wildcard/);
    expect(() => parseClusterFile(edited((d) => (d.nodes[1]!.httpUrl = 'http://0.0.0.0:3011')), clusterFile)).toThrow(/^cluster file: nodes\.1\.httpUrl: "http:\/\/0\.0\.0\.0:3011": 0\.0\.0\.0 is a wildcard/);
    expect(() => parseClusterFile(edited((d) => (d.nodes[1]!.httpUrl = 'http://[::]:3011')), clusterFile)).toThrow(/^cluster file: nodes\.1\.httpUrl: .*:: is a wildcard/);

    const node0 = join(dir, 'node-0.json');
    const setupError = (flags: Record<string, unknown>) => {
      try {
        loadNodeSetup({ file: node0, env: {}, flags });
      } catch (err) {
        expect(err).toBeInstanceOf(ConfigError);
        return err as ConfigError;
      }
      throw new Error('expected a ConfigError');
    };
    const publicUrl = setupError({ 'http.publicUrl': 'http://0.0.0.0:3010' });
    expect(publicUrl.key).toBe('http.publicUrl');
    expect(publicUrl.message).toMatch(/^config: http\.publicUrl: "http:\/\/0\.0\.0\.0:3010": 0\.0\.0\.0 is a wildcard address/);
    expect(setupError({ 'http.publicUrl': '', 'http.host': '0.0.0.0' }).message).toMatch(
      /^config: http\.publicUrl: is empty, so links would be built from http\.host 0\.0\.0\.0, which is a wildcard address: set http\.publicUrl/,
    );
    // A member (no HTTP API) may bind its operator port anywhere.
    expect(loadNodeSetup({ file: join(dir, 'node-2.json'), env: {}, flags: { 'operator.host': '0.0.0.0' } }).config.operator.host).toBe('0.0.0.0');
  });
});

describe('cluster set-address', () => {
  let clusterFile: string;
  beforeEach(async () => {
    await initCluster({ out: dir, size: 3, threshold: 2, hosts: [{ announce: '10.0.0.1' }, { announce: '10.0.0.2' }, { announce: '10.0.0.3' }] });
    clusterFile = join(dir, 'cluster.json');
  });

  it('rewrites one node entry atomically, 0644, and reports what changed', async () => {
    const before = loadClusterFile(clusterFile);
    const result = await setNodeAddress({ clusterFile, nodeId: 'node-1', multiaddrs: ['/ip4/10.0.0.7/tcp/4010'], httpUrl: 'http://10.0.0.7:3010/' });
    expect(result).toEqual({
      clusterFile,
      nodeId: 'node-1',
      changes: [
        { field: 'multiaddrs', before: '/ip4/10.0.0.2/tcp/4010', after: '/ip4/10.0.0.7/tcp/4010' },
        { field: 'httpUrl', before: 'http://10.0.0.2:3010', after: 'http://10.0.0.7:3010' },
      ],
    });
    const after = loadClusterFile(clusterFile);
    expect(after.nodes[1]).toEqual({ ...before.nodes[1], multiaddrs: ['/ip4/10.0.0.7/tcp/4010'], httpUrl: 'http://10.0.0.7:3010' });
    expect(after.nodes.filter((_, i) => i !== 1)).toEqual(before.nodes.filter((_, i) => i !== 1));
    expect({ ...after, nodes: [] }).toEqual({ ...before, nodes: [] });
    expect((await stat(clusterFile)).mode & 0o777).toBe(0o644);
    // No temporary file is left behind.
    expect((await readdir(dir)).filter((f) => f.includes('.tmp'))).toEqual([]);

    // A member gets an HTTP URL too (it became a coordinator); a second identical run changes nothing.
    expect((await setNodeAddress({ clusterFile, nodeId: 'node-2', httpUrl: 'https://node-2.example' })).changes).toEqual([
      { field: 'httpUrl', before: undefined, after: 'https://node-2.example' },
    ]);
    const text = await readFile(clusterFile, 'utf8');
    expect((await setNodeAddress({ clusterFile, nodeId: 'node-2', httpUrl: 'https://node-2.example' })).changes).toEqual([]);
    expect(await readFile(clusterFile, 'utf8')).toBe(text);
  });

  it('refuses bad input, naming the option, and leaves the file as it was', async () => {
    const text = await readFile(clusterFile, 'utf8');
    const refused = async (options: Omit<Parameters<typeof setNodeAddress>[0], 'clusterFile'>) => {
      const err = await setNodeAddress({ clusterFile, ...options }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ConfigError);
      return (err as ConfigError).message;
    };
    expect(await refused({ nodeId: 'node-1' })).toBe('cluster set-address: multiaddr: give the new address: --multiaddr and/or --http-url');
    expect(await refused({ nodeId: 'node-9', multiaddrs: ['/ip4/10.0.0.9/tcp/4010'] })).toBe(
      `cluster set-address: node: "node-9" is not in ${clusterFile} (nodes: node-0, node-1, node-2)`,
    );
    expect(await refused({ nodeId: 'node-1', multiaddrs: ['/ip4/0.0.0.0/tcp/4010'] })).toMatch(/^cluster set-address: multiaddr: "\/ip4\/0\.0\.0\.0\/tcp\/4010": 0\.0\.0\.0 is a wildcard/);
    expect(await refused({ nodeId: 'node-1', multiaddrs: ['/ip4/10.0.0.9/udp/4010'] })).toMatch(/^cluster set-address: multiaddr: "\/ip4\/10\.0\.0\.9\/udp\/4010" is not a TCP multiaddr/);
    expect(await refused({ nodeId: 'node-1', multiaddrs: ['/ip4/10.0.0.3/tcp/4010'] })).toBe('cluster set-address: multiaddr: "/ip4/10.0.0.3/tcp/4010" is already node-2\'s address');
    expect(await refused({ nodeId: 'node-1', multiaddrs: ['/ip4/127.0.0.1/tcp/4010'] })).toMatch(/^cluster set-address: multiaddr: the cluster mixes loopback addresses/);
    expect(await refused({ nodeId: 'node-1', httpUrl: 'http://[::]:3010' })).toMatch(/^cluster set-address: httpUrl: .*:: is a wildcard/);
    expect(await refused({ nodeId: 'node-1', httpUrl: 'ftp://10.0.0.7' })).toBe('cluster set-address: httpUrl: "ftp://10.0.0.7" must be an http or https URL');
    expect(await refused({ nodeId: 'node-1', httpUrl: 'not a url' })).toMatch(/^cluster set-address: httpUrl: "not a url" is not a URL/);
    expect(await readFile(clusterFile, 'utf8')).toBe(text);
  });
});
