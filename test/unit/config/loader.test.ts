import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  CONFIG_LEAVES,
  ConfigError,
  REDACTED,
  configEnvName,
  loadConfig,
  loadNodeSetup,
  nodeConfigSchema,
  redactConfig,
  type LoadConfigOptions,
} from '../../../src/config/index.ts';
import { initCluster } from '../../../src/node/cluster-init.ts';
import { cleanupStack, tempDir } from '../../utils/temp.ts';

const REPO_ROOT = join(import.meta.dirname, '../../..');

const stack = cleanupStack();
afterEach(() => stack.run());

let dir: string;
beforeEach(async () => {
  dir = await tempDir(stack, 'qk-config-');
});

/** Write a node config file under the temp dir; returns its path. */
async function writeConfig(content: unknown, name = 'node.json'): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, typeof content === 'string' ? content : JSON.stringify(content));
  return path;
}

const MINIMAL = { clusterFile: 'cluster.json', nodeId: 'node-0', dataDir: 'data' };

/** The ConfigError `fn` throws; fails the test when it throws nothing or something else. */
function configErrorOf(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    const error = err as ConfigError;
    expect(error.message).not.toMatch(/\n/);
    return error;
  }
  throw new Error('expected a ConfigError');
}

describe('loadConfig precedence', () => {
  it('layers defaults ← file ← env ← flags', async () => {
    const file = await writeConfig({
      ...MINIMAL,
      http: { port: 4000, host: '0.0.0.0' },
      replication: { applyTimeoutMs: 100 },
      log: { level: 'warn' },
    });
    const config = loadConfig({
      file,
      env: { QK_HTTP_PORT: '5000', QK_LOG_LEVEL: 'debug', PATH: '/usr/bin', HOME: '/root' },
      flags: { 'http.port': '6000' },
    });
    expect(config.http.port).toBe(6000); // flag over env over file
    expect(config.log.level).toBe('debug'); // env over file
    expect(config.http.host).toBe('0.0.0.0'); // file over default
    expect(config.replication.applyTimeoutMs).toBe(100); // file, other keys of the section keep defaults
    expect(config.replication.syncIntervalMs).toBe(5000);
    expect(config.mail.transport).toBe('outbox');
  });

  it('converts env strings by the key type', async () => {
    const file = await writeConfig(MINIMAL);
    const chains = [{ chainId: 1, name: 'Ethereum', rpcUrl: 'https://eth.example', secretsControllerAddress: '0x' + '1'.repeat(40), blockTimeMs: 12000 }];
    const config = loadConfig({
      file,
      env: {
        QK_HTTP_ENABLED: 'true',
        QK_HTTP_TRUST_PROXY: '1',
        QK_MAIL_SMTP_SECURE: 'FALSE',
        QK_HTTP_CORS_ORIGINS: 'https://a.example, https://b.example',
        QK_LISTEN: '["/ip4/0.0.0.0/tcp/4010"]',
        QK_REPLICATION_APPLY_TIMEOUT_MS: '2500',
        QK_CHAINS: JSON.stringify(chains),
        QK_MAIL_SMTP_PASS: 'hunter2',
      },
    });
    expect(config.http.enabled).toBe(true);
    expect(config.http.trustProxy).toBe(true);
    expect(config.mail.smtp.secure).toBe(false);
    expect(config.http.corsOrigins).toEqual(['https://a.example', 'https://b.example']);
    expect(config.listen).toEqual(['/ip4/0.0.0.0/tcp/4010']);
    expect(config.replication.applyTimeoutMs).toBe(2500);
    expect(config.chains).toEqual(chains.map((chain) => ({ ...chain, confirmations: 2, startBlock: 0, syncer: false, controllerClusterId: 0 })));
    expect(config.mail.smtp.pass).toBe('hunter2');
  });

  it('accepts typed flag values and --set style strings alike', async () => {
    const file = await writeConfig(MINIMAL);
    const config = loadConfig({ file, env: {}, flags: { 'http.enabled': true, 'replication.syncBatchSize': '20', 'http.corsOrigins': 'x,y' } });
    expect(config.http.enabled).toBe(true);
    expect(config.replication.syncBatchSize).toBe(20);
    expect(config.http.corsOrigins).toEqual(['x', 'y']);
  });

  it('works without a file (env and flags only)', () => {
    const config = loadConfig({ env: { QK_NODE_ID: 'node-1', QK_CLUSTER_FILE: '/etc/qk/cluster.json' }, flags: { dataDir: '/var/lib/qk' } });
    expect(config.nodeId).toBe('node-1');
    expect(config.dataDir).toBe('/var/lib/qk');
    expect(config.keysDir).toBe('/var/lib/qk/keys');
  });
});

describe('loadConfig env names', () => {
  it('derives QK_ names from schema paths', () => {
    expect(configEnvName('http.port')).toBe('QK_HTTP_PORT');
    expect(configEnvName('replication.applyTimeoutMs')).toBe('QK_REPLICATION_APPLY_TIMEOUT_MS');
    expect(configEnvName('mail.smtp.pass')).toBe('QK_MAIL_SMTP_PASS');
    expect(configEnvName('admin.token')).toBe('QK_ADMIN_TOKEN');
    const byPath = new Map(CONFIG_LEAVES.map((leaf) => [leaf.path, leaf]));
    expect(byPath.get('chains')).toMatchObject({ envName: 'QK_CHAINS', kind: 'json' });
    expect(byPath.get('http.corsOrigins')).toMatchObject({ kind: 'list' });
    expect(byPath.get('log.level')).toMatchObject({ kind: 'string' });
    expect(new Set(CONFIG_LEAVES.map((leaf) => leaf.envName)).size).toBe(CONFIG_LEAVES.length);
  });
});

describe('loadConfig errors name the key and its origin in one line', () => {
  it('unknown key in the file', async () => {
    const file = await writeConfig({ ...MINIMAL, http: { prot: 3010 } });
    const err = configErrorOf(() => loadConfig({ file, env: {} }));
    expect(err.message).toBe(`config: unknown key "http.prot" (in ${file})`);
    expect(err.key).toBe('http.prot');
  });

  it('a misspelt top-level key is reported before the missing one it causes', async () => {
    const file = await writeConfig({ clusterFile: 'c.json', nodeid: 'node-0', dataDir: 'd' });
    expect(configErrorOf(() => loadConfig({ file, env: {} })).message).toBe(`config: unknown key "nodeid" (in ${file})`);
  });

  it('wrong type in the file', async () => {
    const file = await writeConfig({ ...MINIMAL, http: { port: '3010' } });
    const err = configErrorOf(() => loadConfig({ file, env: {} }));
    expect(err.message).toBe(`config: http.port: expected a number, got string (in ${file})`);
    expect(err.key).toBe('http.port');
  });

  it('out-of-range and enum values', async () => {
    const file = await writeConfig({ ...MINIMAL, http: { port: 70000 } });
    expect(configErrorOf(() => loadConfig({ file, env: {} })).message).toBe(`config: http.port: must be at most 65535 (in ${file})`);
    const ok = await writeConfig(MINIMAL, 'ok.json');
    const level = configErrorOf(() => loadConfig({ file: ok, env: { QK_LOG_LEVEL: 'loud' } }));
    expect(level.message).toMatch(/^config: log\.level: must be one of "fatal", .* \(from env QK_LOG_LEVEL\)$/);
  });

  it('a missing required key', async () => {
    const file = await writeConfig({ clusterFile: 'c.json', dataDir: 'd' });
    expect(configErrorOf(() => loadConfig({ file, env: {} })).message).toBe(`config: nodeId: is required (set it in ${file} or QK_NODE_ID)`);
  });

  it('wrong type via env', async () => {
    const file = await writeConfig(MINIMAL);
    const err = configErrorOf(() => loadConfig({ file, env: { QK_HTTP_PORT: 'eighty' } }));
    expect(err.message).toBe('config: http.port: expected a number (from env QK_HTTP_PORT)');
    expect(err.key).toBe('http.port');
    expect(configErrorOf(() => loadConfig({ file, env: { QK_HTTP_ENABLED: 'yes' } })).message).toBe(
      'config: http.enabled: expected true, false, 1 or 0 (from env QK_HTTP_ENABLED)',
    );
    expect(configErrorOf(() => loadConfig({ file, env: { QK_CHAINS: '[{' } })).message).toMatch(/^config: chains: expected JSON .*\(from env QK_CHAINS\)$/);
  });

  it('an env value that converts but fails validation', async () => {
    const file = await writeConfig(MINIMAL);
    const err = configErrorOf(() => loadConfig({ file, env: { QK_CHAINS: '[{"chainId": 1}]' } }));
    expect(err.message).toBe('config: chains.0.name: is required (from env QK_CHAINS)');
  });

  it('usage plans: unique ids, a default plan among them, known cycles, positive rates', async () => {
    const limits = { bytesPerCycle: 1024, requestsPerCycle: 10, requestsPerSecond: 1 };
    const plan = (id: string, extra: Record<string, unknown> = {}) => ({ id, cycle: 'monthly', encryption: limits, decryption: limits, ...extra });
    const twice = await writeConfig({ ...MINIMAL, usage: { plans: [plan('gold'), plan('gold')] } });
    expect(configErrorOf(() => loadConfig({ file: twice, env: {} })).message).toBe(`config: usage.plans.1.id: duplicate plan id "gold" (in ${twice})`);
    const unknown = await writeConfig({ ...MINIMAL, usage: { plans: [plan('gold')], defaultPlan: 'silver' } }, 'unknown.json');
    expect(configErrorOf(() => loadConfig({ file: unknown, env: {} })).message).toBe(`config: usage.defaultPlan: "silver" is not one of the plans' ids (in ${unknown})`);
    const weekly = await writeConfig({ ...MINIMAL, usage: { plans: [plan('gold', { cycle: 'weekly' })] } }, 'weekly.json');
    expect(configErrorOf(() => loadConfig({ file: weekly, env: {} })).message).toBe(`config: usage.plans.0.cycle: must be one of "monthly", "daily" (in ${weekly})`);
    const file = await writeConfig(MINIMAL, 'ok-usage.json');
    const zeroRate = JSON.stringify([plan('gold', { decryption: { ...limits, requestsPerSecond: 0 } })]);
    expect(configErrorOf(() => loadConfig({ file, env: { QK_USAGE_PLANS: zeroRate } })).message).toBe('config: usage.plans.0.decryption.requestsPerSecond: must be greater than 0 (from env QK_USAGE_PLANS)');
    // Valid: the default plan is the first unless named.
    const config = loadConfig({ file, env: { QK_USAGE_PLANS: JSON.stringify([plan('gold'), plan('silver', { cycle: 'daily' })]), QK_USAGE_DEFAULT_PLAN: 'silver' } });
    expect(config.usage.plans.map((p) => p.id)).toEqual(['gold', 'silver']);
    expect(config.usage.defaultPlan).toBe('silver');
  });

  it('usage: limits on by default, off with usage.enabled false; the overshoot fraction is 0 to 0.5', async () => {
    const file = await writeConfig(MINIMAL);
    const defaults = loadConfig({ file, env: {} }).usage;
    expect(defaults).toMatchObject({ enabled: true, maxOvershootFraction: 0.01, maxUnflushedRequests: 50, maxUnflushedBytes: 8 * 1024 * 1024 });
    expect(loadConfig({ file, env: { QK_USAGE_ENABLED: 'false' } }).usage.enabled).toBe(false);
    expect(loadConfig({ file, env: { QK_USAGE_MAX_OVERSHOOT_FRACTION: '0' } }).usage.maxOvershootFraction).toBe(0);
    expect(loadConfig({ file, env: { QK_USAGE_MAX_OVERSHOOT_FRACTION: '0.5' } }).usage.maxOvershootFraction).toBe(0.5);
    expect(configErrorOf(() => loadConfig({ file, env: { QK_USAGE_MAX_OVERSHOOT_FRACTION: '0.6' } })).message).toMatch(/^config: usage\.maxOvershootFraction: .*0\.5.*\(from env QK_USAGE_MAX_OVERSHOOT_FRACTION\)$/);
    expect(configErrorOf(() => loadConfig({ file, env: { QK_USAGE_MAX_OVERSHOOT_FRACTION: '-0.1' } })).message).toMatch(/^config: usage\.maxOvershootFraction: .*0.*\(from env QK_USAGE_MAX_OVERSHOOT_FRACTION\)$/);
  });

  it('unknown QK_ variable', async () => {
    const file = await writeConfig(MINIMAL);
    expect(configErrorOf(() => loadConfig({ file, env: { QK_HTTP_PROT: '1' } })).message).toBe(
      'config: unknown environment variable QK_HTTP_PROT (it names no config key)',
    );
  });

  it('QK_COMMIT names the build (src/build-info.ts), not a config key: not refused', async () => {
    const file = await writeConfig(MINIMAL);
    expect(loadConfig({ file, env: { QK_COMMIT: 'abc123' } })).toEqual(loadConfig({ file, env: {} }));
  });

  it('unknown or wrongly typed flag', async () => {
    const file = await writeConfig(MINIMAL);
    expect(configErrorOf(() => loadConfig({ file, env: {}, flags: { 'http.prot': '1' } })).message).toBe(
      'config: unknown key "http.prot" (from flag http.prot)',
    );
    expect(configErrorOf(() => loadConfig({ file, env: {}, flags: { 'http.port': 'x' } })).message).toBe(
      'config: http.port: expected a number (from flag http.port)',
    );
  });

  it('bad JSON, a non-object file and a missing file', async () => {
    const bad = await writeConfig('{"nodeId": "node-0",, }');
    expect(configErrorOf(() => loadConfig({ file: bad, env: {} })).message).toBe(`config: file ${bad}: invalid JSON at position 20`);
    const truncated = await writeConfig('{"nodeId": ', 'truncated.json');
    expect(configErrorOf(() => loadConfig({ file: truncated, env: {} })).message).toBe(`config: file ${truncated}: invalid JSON at position 11`);
    const array = await writeConfig('[]', 'array.json');
    expect(configErrorOf(() => loadConfig({ file: array, env: {} })).message).toBe(`config: file ${array}: expected a JSON object`);
    const missing = join(dir, 'absent.json');
    expect(configErrorOf(() => loadConfig({ file: missing, env: {} })).message).toBe(`config: file ${missing}: cannot read (ENOENT)`);
  });
});

describe('loadConfig result', () => {
  it('is deep-frozen', async () => {
    const config = loadConfig({ file: await writeConfig(MINIMAL), env: {} });
    expect(Object.isFrozen(config)).toBe(true);
    expect(Object.isFrozen(config.http)).toBe(true);
    expect(Object.isFrozen(config.mail.smtp)).toBe(true);
    expect(Object.isFrozen(config.chains)).toBe(true);
    expect(Object.isFrozen(config.chains[0])).toBe(true);
    expect(() => {
      (config.http as { port: number }).port = 1;
    }).toThrow(TypeError);
  });

  it('resolves paths from the file against its folder, from env and flags against cwd', async () => {
    await mkdir(join(dir, 'etc'));
    const file = await writeConfig({ clusterFile: 'cluster.json', nodeId: 'node-0', dataDir: '../var/node-0' }, 'etc/node.json');
    const config = loadConfig({ file, env: {} });
    expect(config.clusterFile).toBe(join(dir, 'etc/cluster.json'));
    expect(config.dataDir).toBe(join(dir, 'var/node-0'));
    expect(config.keysDir).toBe(join(dir, 'var/node-0/keys'));

    const cwd = join(dir, 'work');
    const overridden = loadConfig({ file: 'etc/node.json', cwd: dir, env: { QK_KEYS_DIR: 'keys' }, flags: { dataDir: 'data' } });
    expect(overridden.clusterFile).toBe(join(dir, 'etc/cluster.json'));
    expect(overridden.dataDir).toBe(join(dir, 'data'));
    expect(overridden.keysDir).toBe(join(dir, 'keys'));
    expect(loadConfig({ cwd, env: { QK_NODE_ID: 'n', QK_CLUSTER_FILE: 'c.json', QK_DATA_DIR: 'd' } }).clusterFile).toBe(join(cwd, 'c.json'));
  });

  it('config/node.example.json holds every key at its default', () => {
    const example = join(REPO_ROOT, 'config/node.example.json');
    const fromExample = loadConfig({ file: example, env: {} });
    const fromMinimal = loadConfig({ cwd: join(REPO_ROOT, 'config'), env: {}, flags: { clusterFile: 'cluster.json', nodeId: 'node-0', dataDir: 'node-0' } });
    expect(fromExample).toEqual(fromMinimal);
  });

  it('docs/configuration.md documents every key and env variable', async () => {
    const docs = await readFile(join(REPO_ROOT, 'docs/configuration.md'), 'utf8');
    for (const leaf of CONFIG_LEAVES) {
      expect(docs, leaf.path).toContain(`\`${leaf.path}\``);
      expect(docs, leaf.envName).toContain(`\`${leaf.envName}\``);
    }
  });
});

describe('redactConfig', () => {
  it('hides non-empty secrets and leaves the original untouched', async () => {
    const file = await writeConfig({ ...MINIMAL, mail: { smtp: { user: 'mailer', pass: 'hunter2' } }, admin: { token: 'f'.repeat(64) } });
    const config = loadConfig({ file, env: {} });
    const redacted = redactConfig(config);
    expect(redacted.mail.smtp.pass).toBe(REDACTED);
    expect(redacted.admin.token).toBe(REDACTED);
    expect(redacted.mail.smtp.user).toBe('mailer');
    expect(JSON.stringify(redacted)).not.toContain('hunter2');
    expect(config.mail.smtp.pass).toBe('hunter2');
    expect(nodeConfigSchema.safeParse(redacted).success).toBe(true);
  });

  it('keeps empty secrets empty (the feature is off)', async () => {
    const redacted = redactConfig(loadConfig({ file: await writeConfig(MINIMAL), env: {} }));
    expect(redacted.admin.token).toBe('');
    expect(redacted.mail.smtp.pass).toBe('');
  });
});

describe('loadNodeSetup', () => {
  async function generated(): Promise<LoadConfigOptions> {
    await initCluster({ out: dir, size: 3, threshold: 2 });
    return { file: join(dir, 'node-1.json'), env: {} };
  }

  it('loads the config and the cluster file it names', async () => {
    const { config, descriptor } = loadNodeSetup(await generated());
    expect(config.nodeId).toBe('node-1');
    expect(descriptor.nodes.map((n) => n.id)).toEqual(['node-0', 'node-1', 'node-2']);
  });

  it('a missing cluster file names the clusterFile key', async () => {
    const options = await generated();
    const err = configErrorOf(() => loadNodeSetup({ ...options, flags: { clusterFile: join(dir, 'gone.json') } }));
    expect(err.message).toBe(`config: clusterFile ${join(dir, 'gone.json')}: cannot read (ENOENT)`);
    expect(err.key).toBe('clusterFile');
  });

  it('a nodeId the cluster file does not list', async () => {
    const options = await generated();
    const err = configErrorOf(() => loadNodeSetup({ ...options, env: { QK_NODE_ID: 'node-9' } }));
    expect(err.message).toBe(`config: nodeId: "node-9" is not in the cluster file ${join(dir, 'cluster.json')}`);
    expect(err.key).toBe('nodeId');
  });

  it('a cluster file with threshold <= size/2', async () => {
    const options = await generated();
    const clusterFile = join(dir, 'cluster.json');
    const cluster = JSON.parse(await readFile(clusterFile, 'utf8')) as { threshold: number };
    cluster.threshold = 1;
    await writeFile(clusterFile, JSON.stringify(cluster));
    const err = configErrorOf(() => loadNodeSetup(options));
    expect(err.message).toBe(`cluster file: threshold: must be greater than size/2 and at most size (size 3, threshold 1) (in ${clusterFile})`);
    expect(err.key).toBe('threshold');
  });
});
