/**
 * The `quorumkeep` CLI: parse arguments → load config → create node → handle signals (CONTRIBUTING.md, "Where things live").
 *
 * Exit codes: 0 success (and `status`: cluster ok); 1 `status`: cluster degraded, or a failed shutdown;
 * 2 bad usage, bad config, a failed start, a refused backup or restore (a damaged archive, a restore
 * over a running node), or `status`: cluster unavailable (below quorum), coordinator unreachable or
 * answer malformed;
 * 130 a second Ctrl-C during shutdown. Failures print one line, `quorumkeep: <message>`, to stderr.
 */
import { resolve } from 'node:path';
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { z } from 'zod';
import { ANVIL_BIN_ENV, ConfigError, DEPLOYER_KEY_ENV, chainSchema, configEnvName, loadConfig, loadNodeSetup, logSchema, quorumShapeProblem, redactConfig } from './config/index.ts';
import { StartupError, type StartupErrorKey } from './errors/index.ts';
import {
  DEFAULT_BASE_PORT,
  DEFAULT_COORDINATORS,
  DEFAULT_HTTP_BASE_PORT,
  DEFAULT_OPERATOR_BASE_PORT,
  initCluster,
  readHostsFile,
  type ClusterInitHost,
} from './node/cluster-init.ts';
import { setNodeAddress } from './node/cluster-set-address.ts';
import { DEFAULT_LOCAL_CHAIN_PORT, DEFAULT_LOCAL_SIZE, DEFAULT_LOCAL_THRESHOLD } from './node/local-options.ts';
import type { LocalChainChoice, LocalRunOptions } from './node/local.ts';
import { packageVersion, readBuildInfo } from './build-info.ts';
import type * as BackupModuleType from './backup/index.ts';

/** The backup module, loaded when a backup command runs. */
type BackupModule = typeof BackupModuleType;
import { addMemberCommands } from './node/member-cli.ts';
import { urlOption } from './node/url-option.ts';
import { addClientCommands } from './cli/client-commands.ts';

/** A failure the CLI reports as one line with a chosen exit code. */
class CliError extends Error {
  readonly exitCode: number;

  constructor(message: string, exitCode: number) {
    super(message);
    this.name = 'CliError';
    this.exitCode = exitCode;
  }
}

const EXIT_OK = 0;
const EXIT_DEGRADED = 1;
const EXIT_FAILURE = 2;
const EXIT_INTERRUPTED = 130;
const STATUS_TIMEOUT_MS = 5000;
const LOG_LEVELS = logSchema.shape.level.unwrap().options;
const LOG_FORMATS = logSchema.shape.format.unwrap().options;

// The one place outside src/config that touches the environment: it is handed to the config loader whole.
// eslint-disable-next-line no-restricted-syntax
const env = process.env;

function printLine(line: string): void {
  process.stdout.write(line + '\n');
}

function integer(value: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isInteger(n)) throw new InvalidArgumentError('expected an integer');
  return n;
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

/** Options that override config keys (`start`, `config print`). */
interface OverrideOptions {
  config: string;
  dataDir?: string;
  httpPort?: string;
  logLevel?: string;
  logFormat?: string;
  set: string[];
}

function withOverrideOptions(command: Command): Command {
  return command
    .requiredOption('--config <file>', 'node config file (JSON)')
    .option('--data-dir <dir>', 'override dataDir')
    .option('--http-port <n>', 'override http.port')
    .addOption(new Option('--log-level <level>', 'override log.level').choices(LOG_LEVELS))
    .addOption(new Option('--log-format <format>', 'override log.format (auto: pretty on a terminal, else json)').choices(LOG_FORMATS))
    .option('--set <path=value>', 'override any config key, e.g. --set replication.applyTimeoutMs=5000 (repeatable)', collect, []);
}

/** The flat flag map the config loader takes: dotted config path → value. Dedicated flags win over --set. */
function overrideFlags(options: OverrideOptions): Record<string, unknown> {
  const flags: Record<string, unknown> = {};
  for (const pair of options.set) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new ConfigError(`config: --set ${JSON.stringify(pair)}: expected <path>=<value>`);
    flags[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  if (options.dataDir !== undefined) flags['dataDir'] = options.dataDir;
  if (options.httpPort !== undefined) flags['http.port'] = options.httpPort;
  if (options.logLevel !== undefined) flags['log.level'] = options.logLevel;
  if (options.logFormat !== undefined) flags['log.format'] = options.logFormat;
  return flags;
}

/** The flag of `start` (or `config print`) that sets each key a {@link StartupError} names. */
const START_FLAGS: Record<StartupErrorKey, string> = {
  listen: '--set listen=/ip4/<host>/tcp/<port>',
  'http.port': '--http-port <n>',
  'operator.port': '--set operator.port=<n>',
  dataDir: '--data-dir <dir>',
};

/** The flag of `local` that moves what a {@link StartupError} names, for every node at once. */
const LOCAL_FLAGS: Record<StartupErrorKey, string> = {
  listen: '--base-port <n>',
  'http.port': '--http-base-port <n>',
  'operator.port': '--operator-base-port <n>',
  dataDir: '--dir <dir>',
};

/** A node's start refused by another process, as `start` says it (docs/operations.md, "Startup errors"): what to do, and the flag. */
function startStartupError(err: StartupError): CliError {
  const change = `change ${err.key} with ${START_FLAGS[err.key]} (or ${configEnvName(err.key)})`;
  if (err.code === 'DATA_DIR_IN_USE') return new CliError(`${err.message}; stop that process first (one node per data directory), or ${change}`, EXIT_FAILURE);
  // Other nodes dial the announced address: a node that binds another must announce it too.
  const announce = err.fromClusterFile ? ', and announce it with quorumkeep cluster set-address' : '';
  return new CliError(`${err.message}; free the port, or ${change}${announce}`, EXIT_FAILURE);
}

/** The same for `local`, whose flags move every node. */
function localStartupError(err: StartupError): CliError {
  if (err.code === 'DATA_DIR_IN_USE') {
    return new CliError(`local: ${err.nodeId}: ${err.message}; stop the quorumkeep running on this folder first, or give this cluster another with ${LOCAL_FLAGS.dataDir}`, EXIT_FAILURE);
  }
  return new CliError(`local: ${err.nodeId}: ${err.message}; free the port, or move this cluster's ports with ${LOCAL_FLAGS[err.key]}`, EXIT_FAILURE);
}

/**
 * Stop cleanly on SIGINT/SIGTERM and exit 0; a second signal means the operator will not wait for a
 * clean stop, so it exits at once with 130.
 */
function stopOnSignals(stop: () => Promise<void>): void {
  let stopping = false;
  const onSignal = (): void => {
    if (stopping) process.exit(EXIT_INTERRUPTED);
    stopping = true;
    stop().then(
      () => process.exit(EXIT_OK),
      (err: unknown) => {
        process.stderr.write(`quorumkeep: stop failed: ${messageOf(err)}\n`);
        process.exit(EXIT_DEGRADED);
      },
    );
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
}

async function clusterInit(options: {
  size: number;
  threshold: number;
  out: string;
  basePort: number;
  httpBasePort: number;
  operatorBasePort: number;
  operator: boolean;
  coordinators?: number;
  host?: string;
  hosts?: string;
  hostsFile?: string;
  listenHost?: string;
  clusterId?: string;
}): Promise<void> {
  if (options.hosts !== undefined && options.hostsFile !== undefined) {
    throw new ConfigError('cluster init: hosts: give either --hosts or --hosts-file, not both', 'hosts');
  }
  let hosts: ClusterInitHost[] | undefined;
  if (options.hosts !== undefined) hosts = options.hosts.split(',').map((announce) => ({ announce: announce.trim() }));
  if (options.hostsFile !== undefined) hosts = await readHostsFile(resolve(options.hostsFile));
  const { hosts: _list, hostsFile: _file, ...rest } = options;
  const summary = await initCluster({ ...rest, ...(hosts ? { hosts } : {}) });
  printLine(`cluster ${summary.clusterId}: ${summary.size} members, threshold ${summary.threshold}`);
  printLine(`wrote ${summary.clusterFile}`);
  for (const node of summary.nodes) {
    const listen = node.listenHost !== node.announceHost ? `  (binds ${node.listenHost})` : '';
    const http = node.httpUrl ? `  http ${node.httpUrl}` : '';
    const operator = node.operatorPort !== undefined ? `  operator :${node.operatorPort}` : '';
    printLine(`  ${node.id}  slot ${node.slot}  libp2p ${node.multiaddr}${listen}${http}${operator}  config ${node.configFile}`);
  }
  const hostsDiffer = new Set(summary.nodes.map((n) => n.announceHost)).size > 1;
  if (hostsDiffer) {
    printLine(`copy to each host: ${summary.clusterFile}, its node-<i>.json and its node-<i>/keys/ (see docs/deployment.md)`);
  }
  printLine(`start a node with: quorumkeep start --config ${summary.nodes[0]?.configFile ?? '<node config>'}`);
}

async function clusterSetAddress(options: { clusterFile: string; node: string; multiaddr: string[]; httpUrl?: string }): Promise<void> {
  const result = await setNodeAddress({
    clusterFile: options.clusterFile,
    nodeId: options.node,
    ...(options.multiaddr.length > 0 ? { multiaddrs: options.multiaddr } : {}),
    ...(options.httpUrl !== undefined ? { httpUrl: options.httpUrl } : {}),
  });
  if (result.changes.length === 0) {
    printLine(`${result.nodeId}: nothing to change; ${result.clusterFile} already says so`);
    return;
  }
  printLine(`${result.nodeId} in ${result.clusterFile}:`);
  for (const change of result.changes) printLine(`  ${change.field}: ${change.before ?? '(none)'} -> ${change.after}`);
  printLine(`next: copy ${result.clusterFile} to every node (where its config's clusterFile points), then restart the nodes one at a time,`);
  printLine(`      waiting for \`quorumkeep status\` to report ok before the next; a node reads the cluster file only when it starts.`);
  printLine(`      ${result.nodeId}'s own config may need listen, http.host, http.publicUrl or operator.host changed to match.`);
}

async function startNode(options: OverrideOptions): Promise<void> {
  const { config, descriptor } = loadNodeSetup({ file: options.config, env, flags: overrideFlags(options) });
  // Loaded only now: config commands and config errors must not pay for loading libp2p and LevelDB.
  const [{ createNode, missingProcessSettings, tuneHeapForNodes }, { logProcessWarnings }] = await Promise.all([import('./node/index.ts'), import('./log/index.ts')]);
  tuneHeapForNodes();
  // The commit is read here, at a node's start only (src/build-info.ts).
  const node = await createNode(config, { descriptor, build: readBuildInfo(env) });
  // From here on Node's warnings are log lines in the node's format, not plain text on stderr.
  logProcessWarnings(process, node.logger.child({ module: 'process' }));
  const missing = missingProcessSettings(env);
  if (missing.length > 0) {
    process.emitWarning(`started without ${missing.join(' and ')}: its memory use will be higher than docs/deployment.md's sizing (see "Run each node under systemd")`, 'QuorumkeepProcessSettings');
  }
  try {
    await node.start();
  } catch (err) {
    await node.stop().catch(() => undefined);
    throw err instanceof StartupError ? startStartupError(err) : err;
  }
  // node.start() logs the startup line itself ("node started": node id, slot, peer id, libp2p and HTTP addresses).
  stopOnSignals(() => node.stop());
}

function printConfig(options: OverrideOptions): void {
  const config = loadConfig({ file: options.config, env, flags: overrideFlags(options) });
  printLine(JSON.stringify(redactConfig(config), null, 2));
}

/** The part of `GET /healthz` (docs/http.md) that `status` shows; other fields are ignored. */
const healthAnswerSchema = z.object({
  status: z.enum(['ok', 'degraded', 'unavailable']),
  problems: z.array(z.string()).default([]),
  dataSafety: z
    .object({
      members: z.array(
        z.object({
          slot: z.number(),
          status: z.string(),
          shares: z.object({ expected: z.number(), held: z.number(), missing: z.number(), pending: z.number() }).nullable(),
        }),
      ),
      secretsAtRisk: z.number(),
      secretsLost: z.number(),
      secretsLostAcknowledged: z.number(),
      atRisk: z.array(z.object({ chainId: z.number(), secretId: z.number() })),
      lost: z.array(z.object({ chainId: z.number(), secretId: z.number() })),
      exact: z.boolean(),
    })
    .optional(),
  cluster: z.object({
    clusterId: z.string(),
    size: z.number(),
    threshold: z.number(),
    reachable: z.number(),
    slot0Reachable: z.boolean(),
  }),
  clusterMap: z.record(
    z.string(),
    z.object({ slot: z.number(), nodeId: z.string(), nodeAddress: z.string(), reachable: z.boolean(), self: z.boolean().optional() }),
  ),
});

async function showStatus(options: { url: string; json?: boolean }): Promise<void> {
  const url = `${options.url.replace(/\/+$/, '')}/healthz`;
  let body: unknown;
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(STATUS_TIMEOUT_MS), headers: { accept: 'application/json' } });
    if (!response.ok) throw new CliError(`status: ${url} answered HTTP ${response.status}`, EXIT_FAILURE);
    body = await response.json();
  } catch (err) {
    if (err instanceof CliError) throw err;
    const reason = err instanceof Error && err.name === 'TimeoutError' ? `no answer within ${STATUS_TIMEOUT_MS / 1000} s` : causeOf(err);
    throw new CliError(`status: cannot reach ${url} (${reason})`, EXIT_FAILURE);
  }
  const parsed = healthAnswerSchema.safeParse(body);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new CliError(`status: malformed answer from ${url} (${issue?.path.join('.') || 'body'}: ${issue?.message ?? 'invalid'})`, EXIT_FAILURE);
  }
  const health = parsed.data;
  if (options.json) {
    printLine(JSON.stringify(body, null, 2));
  } else {
    const { cluster } = health;
    printLine(`status:     ${health.status}${health.problems.length > 0 ? ` (${health.problems.join(', ')})` : ''}`);
    printLine(`cluster:    ${cluster.clusterId}`);
    printLine(`reachable:  ${cluster.reachable}/${cluster.size} members (threshold ${cluster.threshold})`);
    printLine(`slot 0:     ${cluster.slot0Reachable ? 'reachable' : 'UNREACHABLE (creates fail)'}`);
    const safety = health.dataSafety;
    const bySlot = new Map(safety?.members.map((m) => [m.slot, m]));
    const members = Object.values(health.clusterMap).sort((a, b) => a.slot - b.slot);
    const idWidth = Math.max(...members.map((m) => m.nodeId.length), 0);
    for (const m of members) {
      const mark = m.self ? '  (answering)' : '';
      const facts = bySlot.get(m.slot);
      const shares = facts?.shares ? `  shares ${facts.shares.held}/${facts.shares.expected}${facts.shares.missing + facts.shares.pending > 0 ? ` (${facts.shares.missing + facts.shares.pending} MISSING)` : ''}` : '';
      const recovering = facts?.status === 'recovering' ? '  RECOVERING' : '';
      printLine(`  slot ${String(m.slot).padStart(2)}  ${m.nodeId.padEnd(idWidth)}  ${m.nodeAddress}  ${m.reachable ? 'reachable' : 'UNREACHABLE'}${shares}${recovering}${mark}`);
    }
    if (safety) {
      const floor = safety.exact ? '' : 'at least ';
      const named = (list: Array<{ chainId: number; secretId: number }>, total: number) =>
        list.map((s) => `${s.chainId}:${s.secretId}`).join(' ') + (total > list.length ? ` … (${total - list.length} more)` : '');
      printLine(`secrets:    ${floor}${safety.secretsAtRisk} at risk (held by only ${cluster.threshold} members), ${safety.secretsLost} lost, ${safety.secretsLostAcknowledged} lost and acknowledged`);
      if (safety.secretsAtRisk > 0) printLine(`  at risk (chainId:secretId): ${named(safety.atRisk, safety.secretsAtRisk)}`);
      if (safety.secretsLost > 0) printLine(`  LOST (chainId:secretId): ${named(safety.lost, safety.secretsLost)} — see docs/operations.md, "Data safety"`);
    }
  }
  process.exitCode = health.status === 'ok' ? EXIT_OK : health.status === 'degraded' ? EXIT_DEGRADED : EXIT_FAILURE;
}

/** `backup` options. */
interface BackupCliOptions extends OverrideOptions {
  out: string;
  includeKeys?: boolean;
  url?: string;
}

/** `restore` options. */
interface RestoreCliOptions extends OverrideOptions {
  in: string;
  force?: boolean;
  allowSlot0?: boolean;
  dryRun?: boolean;
}

/** Run a backup-module operation; its refusals (and a damaged archive) are one line with exit 2. */
async function backupModule<T>(command: string, run: (backup: BackupModule) => Promise<T>): Promise<T> {
  // Loaded only now, like in `start`: the other commands do not need LevelDB.
  const backup = await import('./backup/index.ts');
  try {
    return await run(backup);
  } catch (err) {
    if (err instanceof backup.BackupError || err instanceof backup.ArchiveError) throw new CliError(`${command}: ${err.message}`, EXIT_FAILURE);
    throw err;
  }
}

/** `log 1000, state 200, …`, largest first. */
function countsLine(counts: Record<string, number>): string {
  return Object.entries(counts)
    .sort((a, b) => b[1] - a[1])
    .map(([name, n]) => `${name} ${n}`)
    .join(', ');
}

async function takeBackup(options: BackupCliOptions): Promise<void> {
  const { config, descriptor } = loadNodeSetup({ file: options.config, env, flags: overrideFlags(options) });
  const report = await backupModule('backup', (b) =>
    b.runBackup({ config, descriptor, out: resolve(options.out), includeKeys: options.includeKeys ?? false, ...(options.url !== undefined ? { url: options.url } : {}) }),
  );
  const { header, summary } = report;
  printLine(`backup of ${header.nodeId} (cluster ${header.clusterId}, slot ${header.slot ?? 'gateway'}) ${header.source === 'node' ? 'streamed by the running node' : 'read from its stopped store'}`);
  printLine(`  snapshot at ${new Date(header.createdAt).toISOString()}: ${summary.entries} store entries (${countsLine(summary.counts)})`);
  printLine(`  own seq ${String(summary.facts['ownSeq'] ?? 0)}`);
  printLine(
    header.includesKeys
      ? `  keys: INCLUDED (${summary.files} files) — this archive is as sensitive as the node itself: it opens the node's shares`
      : '  keys: not included (shares stay encrypted under the storage key, which is not in the archive)',
  );
  printLine(`wrote ${report.out} (${report.bytes} bytes, mode 0600, sha256 ${report.sha256})`);
}

async function verifyBackup(options: { in: string }): Promise<void> {
  const path = resolve(options.in);
  const { header, summary } = await backupModule('verify-backup', (b) => b.verifyArchiveFile(path));
  printLine(`${path}: intact (format ${header.format}, SHA-256 verified)`);
  printLine(`  ${header.nodeId} (${header.nodeAddress}) of cluster ${header.clusterId}, slot ${header.slot ?? 'gateway'}`);
  printLine(`  snapshot at ${new Date(header.createdAt).toISOString()} (${header.source}): ${summary.entries} store entries (${countsLine(summary.counts)})`);
  printLine(`  own seq ${String(summary.facts['ownSeq'] ?? 0)}; keys ${header.includesKeys ? `INCLUDED (${summary.files} files)` : 'not included'}`);
}

async function restoreBackup(options: RestoreCliOptions): Promise<void> {
  const { config, descriptor } = loadNodeSetup({ file: options.config, env, flags: overrideFlags(options) });
  const report = await backupModule('restore', (b) =>
    b.runRestore({ config, descriptor, input: resolve(options.in), force: options.force ?? false, allowSlot0: options.allowSlot0 ?? false, dryRun: options.dryRun ?? false }),
  );
  const { header } = report;
  const when = new Date(header.createdAt).toISOString();
  if (options.dryRun) {
    printLine(`dry run: ${options.in} restores ${header.nodeId} (cluster ${header.clusterId}): ${report.entries} store entries from the snapshot at ${when}; nothing written`);
    if (report.present.length > 0) {
      const held = `${report.present.slice(0, 5).join(', ')}${report.present.length > 5 ? ', …' : ''}`;
      printLine(
        options.force
          ? `  the data directory ${report.dataDir} holds ${held}: --force would replace its store${report.present.includes('db') ? '' : ' (it has none)'} and leave the rest`
          : `  the data directory ${report.dataDir} is not empty (${held}): the restore needs --force, which replaces its store, or a new data directory`,
      );
    }
    return;
  }
  printLine(`restored ${header.nodeId} (cluster ${header.clusterId}) into ${report.dataDir}: ${report.entries} store entries from the snapshot at ${when}${report.replacedStore ? ' (the previous store was replaced)' : ''}`);
  printLine(`  keys: ${report.keysWritten ? 'written from the archive' : 'found in the keys directory, checked'}`);
  printLine(`next: start the node with this config (and the same --data-dir/--set, if any): before it writes, it catches its own records up`);
  printLine(`      from its peers; its log says "restore catch-up complete" once done (docs/operations.md)`);
}

/** `local` options as commander gives them: unset when not on the command line. */
interface LocalCliOptions extends Omit<LocalRunOptions, 'env' | 'chain' | 'notice' | 'terminal' | 'warnings'> {
  /** false with --no-chain. */
  chain: boolean;
  chainPort: number;
  chainRpcUrl?: string;
  controller?: string;
  chainStartBlock?: number;
}

/** Which chain `local` runs with (docs/web3.md, "Local chain"). */
function localChainChoice(options: LocalCliOptions): LocalChainChoice {
  const external = options.chainRpcUrl !== undefined || options.controller !== undefined;
  if (!options.chain) {
    if (external) throw new ConfigError('local: give either --no-chain or --chain-rpc-url and --controller, not both', 'chain');
    return { kind: 'none' };
  }
  if (!external) {
    if (options.chainStartBlock !== undefined) throw new ConfigError('local: --chain-start-block goes with --chain-rpc-url and --controller', 'chainStartBlock');
    return { kind: 'anvil', port: options.chainPort, ...(env[ANVIL_BIN_ENV] ? { binary: env[ANVIL_BIN_ENV] } : {}) };
  }
  if (options.chainRpcUrl === undefined || options.controller === undefined) {
    throw new ConfigError('local: an existing chain needs both --chain-rpc-url and --controller (quorumkeep chain deploy-controller deploys one)', options.controller === undefined ? 'controller' : 'chainRpcUrl');
  }
  const rpc = chainSchema.shape.rpcUrl.safeParse(options.chainRpcUrl);
  if (!rpc.success) throw new ConfigError(`local: --chain-rpc-url: ${rpc.error.issues[0]?.message ?? 'invalid'}`, 'chainRpcUrl');
  if (!EVM_ADDRESS_RE.test(options.controller)) throw new ConfigError('local: --controller: must be a 0x-prefixed 20-byte address', 'controller');
  return { kind: 'external', rpcUrl: options.chainRpcUrl, controller: options.controller, ...(options.chainStartBlock !== undefined ? { startBlock: options.chainStartBlock } : {}) };
}

async function runLocal(options: LocalCliOptions): Promise<void> {
  if (options.size !== undefined || options.threshold !== undefined) {
    const shape = quorumShapeProblem(options.size ?? DEFAULT_LOCAL_SIZE, options.threshold ?? DEFAULT_LOCAL_THRESHOLD);
    if (shape) throw new ConfigError(`local: ${shape.key}: ${shape.problem}`, shape.key);
  }
  const chain = localChainChoice(options);
  // Loaded only now, like in `start`: the other commands do not need libp2p and LevelDB.
  const [{ runLocalCluster }, { localBanner }, { tuneHeapForNodes }] = await Promise.all([import('./node/local.ts'), import('./node/local-banner.ts'), import('./node/index.ts')]);
  // Every node of the local cluster runs in this process (a cluster made earlier with another size
  // keeps its own: near enough for the heap's growth).
  tuneHeapForNodes({ nodes: options.size ?? DEFAULT_LOCAL_SIZE });
  const { chain: _chain, chainPort: _port, chainRpcUrl: _url, controller: _controller, chainStartBlock: _start, ...rest } = options;
  const dir = resolve(options.dir);
  printLine(`starting the local cluster under ${dir}…`);
  // The nodes' log lines wait until the banner is out: a newcomer sees where everything is first.
  const cluster = await runLocalCluster({ ...rest, dir, env, chain, notice: printLine, terminal: process.stdout.isTTY === true, warnings: process }).catch((err: unknown) => {
    throw err instanceof StartupError ? localStartupError(err) : err;
  });
  stopOnSignals(() => cluster.stop());
  for (const line of localBanner(cluster)) printLine(line);
  cluster.releaseLogs();
}

/** `chain deploy-controller` options. */
interface DeployControllerCliOptions {
  rpcUrl: string;
  privateKey?: string;
  fee: string;
  whitelist: string[];
  name?: string;
}

const EVM_ADDRESS_RE = /^0x[0-9a-fA-F]{40}$/;
const PRIVATE_KEY_RE = /^(0x)?[0-9a-fA-F]{64}$/;

async function deployControllerCommand(options: DeployControllerCliOptions): Promise<void> {
  const fail = (message: string): never => {
    throw new CliError(`chain deploy-controller: ${message}`, EXIT_FAILURE);
  };
  const rpc = chainSchema.shape.rpcUrl.safeParse(options.rpcUrl);
  if (!rpc.success) fail(`--rpc-url: ${rpc.error.issues[0]?.message ?? 'invalid'}`);
  // The key on the command line shows in `ps` to every user of the machine: the environment does not.
  const key = options.privateKey ?? env[DEPLOYER_KEY_ENV];
  if (key === undefined || key === '') fail(`no deployer key: set ${DEPLOYER_KEY_ENV} (or --private-key, which other users of this machine can see in ps)`);
  if (!PRIVATE_KEY_RE.test(key!)) fail(`${options.privateKey !== undefined ? '--private-key' : DEPLOYER_KEY_ENV}: expected 64 hex digits (a secp256k1 private key), optionally 0x-prefixed`);
  if (!/^\d+$/.test(options.fee)) fail('--fee: expected an amount in wei (digits)');
  const bad = options.whitelist.find((a) => !EVM_ADDRESS_RE.test(a));
  if (bad !== undefined) fail(`--whitelist ${bad}: must be a 0x-prefixed 20-byte address`);

  const { adminFailureReason, createControllerAdmin } = await import('./evm/controller-admin.ts');
  const admin = createControllerAdmin({ rpcUrl: options.rpcUrl, privateKey: (key!.startsWith('0x') ? key! : `0x${key!}`) as `0x${string}` });
  const attempt = async <T>(what: string, call: () => Promise<T>): Promise<T> => {
    try {
      return await call();
    } catch (err) {
      // viem's messages carry the RPC URL, which may hold a provider's key: only the short reason.
      return fail(`${what} failed: ${adminFailureReason(err)}`);
    }
  };
  const deployed = await attempt('deploying the controller', () => admin.deploy({ fee: BigInt(options.fee) }));
  printLine(`deployed SecretsController at ${deployed.address} on chain ${deployed.chainId} in block ${deployed.blockNumber}, owned by ${deployed.owner}`);
  printLine(`  transactions: deploy ${deployed.deployTransaction}, initialize ${deployed.initializeTransaction}`);
  for (const address of options.whitelist) {
    await attempt(`whitelisting ${address}`, () => admin.whitelist(deployed.address, address as `0x${string}`));
    printLine(`whitelisted ${address} (addWhitelistedBlackBox): it may sync secrets; it needs ETH for gas`);
  }
  const blockTimeMs = await attempt('reading the block time', () => admin.estimateBlockTimeMs());
  const entry = chainSchema.parse({
    chainId: deployed.chainId,
    name: options.name ?? `chain ${deployed.chainId}`,
    rpcUrl: options.rpcUrl,
    secretsControllerAddress: deployed.address,
    blockTimeMs,
    confirmations: 2,
    startBlock: deployed.blockNumber,
  });
  const { syncer: _syncer, controllerClusterId: _clusterId, ...snippet } = entry;
  printLine(`add this entry to "chains" in every node's config; on one coordinator's, also "syncer": true — whitelist and fund that node's nodeAddress (docs/web3.md, "Deploying a controller"):`);
  printLine(JSON.stringify(snippet, null, 2));
}

function buildProgram(): Command {
  const program = new Command('quorumkeep')
    .description('Distributed secret-management daemon: threshold-held secrets replicated over libp2p, served over HTTP.')
    // Settings are inherited by the subcommands defined below: usage errors throw instead of exiting,
    // and read `quorumkeep: …` like every other failure.
    .version(packageVersion(), '-V, --version', "print this build's version")
    .exitOverride()
    .configureOutput({ outputError: (text, write) => write(`quorumkeep: ${text.replace(/^error: /, '').trimEnd()} (see --help)\n`) });

  const cluster = program.command('cluster').description('create and change cluster files');
  cluster
    .command('init')
    .description('generate keys, node configs and the cluster file, for one host or one node per host')
    .requiredOption('--size <n>', 'number of member slots (1-64)', integer)
    .requiredOption('--threshold <t>', 'members needed for a quorum (> size/2, <= size)', integer)
    .requiredOption('--out <dir>', 'output folder (must not hold a cluster yet)')
    .option('--base-port <n>', 'libp2p port (nodes sharing a host: base + k for the k-th)', integer, DEFAULT_BASE_PORT)
    .option('--http-base-port <n>', 'HTTP port of the coordinators (numbered like --base-port)', integer, DEFAULT_HTTP_BASE_PORT)
    .option('--operator-base-port <n>', 'operator port (health, readiness, metrics) of every node (numbered like --base-port)', integer, DEFAULT_OPERATOR_BASE_PORT)
    .option('--no-operator', 'give the nodes no operator port')
    .option('--coordinators <n>', `members from slot 0 up that serve HTTP (default: ${DEFAULT_COORDINATORS}, or size when smaller)`, integer)
    .option('--host <host>', 'the one address every node announces, all on this host (default: 127.0.0.1)')
    .option('--hosts <a,b,...>', 'one announced address per node, slot order (exactly --size of them)')
    .option('--hosts-file <path>', 'one line per node: <announce-host> [<listen-host>]; # comments')
    .option('--listen-host <addr>', 'address every node binds to, e.g. 0.0.0.0 (default: its announced address)')
    .option('--cluster-id <id>', 'cluster id (default: qk- and 8 random hex digits)')
    .action(clusterInit);
  cluster
    .command('set-address')
    .description("change a node's announced addresses in the cluster file (then copy it to every node and restart them one by one)")
    .requiredOption('--cluster-file <path>', 'the cluster file to rewrite')
    .requiredOption('--node <id>', 'the node, e.g. node-2')
    .option('--multiaddr <ma>', 'its new libp2p multiaddr, e.g. /ip4/10.0.0.7/tcp/4010 (repeatable; replaces the list)', collect, [])
    .option('--http-url <url>', 'its new HTTP base URL, e.g. http://10.0.0.7:3010')
    .action(clusterSetAddress);

  withOverrideOptions(program.command('start').description('start one node from its config file')).action(startNode);

  const config = program.command('config').description('inspect node configuration');
  withOverrideOptions(config.command('print').description('print the effective config (defaults ← file ← env ← flags), secrets redacted')).action(
    printConfig,
  );

  program
    .command('status')
    .description('show cluster health as a node sees it (exit 0 ok, 1 degraded, 2 unavailable or unreachable)')
    .addOption(urlOption("a coordinator's or any node's operator base URL"))
    .option('--json', 'print the raw /healthz answer')
    .action(showStatus);

  withOverrideOptions(program.command('backup').description("write a consistent snapshot of a node's store to a file (the running node streams it; a stopped node's store is read)"))
    .requiredOption('--out <file>', 'archive to write (atomically, mode 0600)')
    .option('--include-keys', "also store the node's keys directory: the archive is then as sensitive as the node")
    .option('--url <url>', "the node's operator base URL (default: from operator.host and operator.port)")
    .action(takeBackup);

  withOverrideOptions(program.command('restore').description("restore a backup into the node's (new, empty) data directory; the node catches up from its peers when started"))
    .requiredOption('--in <file>', 'archive to restore')
    .option('--force', 'replace the store of a data directory that is not empty')
    .option('--allow-slot0', 'restore slot 0 (see docs/operations.md: its counters and claims exist nowhere else)')
    .option('--dry-run', 'check the archive against the config, the cluster file and the keys; write nothing')
    .action(restoreBackup);

  program.command('verify-backup').description('check that a backup archive is whole and show what it holds').requiredOption('--in <file>', 'archive to check').action(verifyBackup);

  program
    .command('local')
    .description('run a whole local cluster in this process, with a local chain for Web3 (Ctrl-C stops both)')
    .option('--dir <dir>', 'data folder', './data')
    .option('--size <n>', `member slots of a new cluster (default: ${DEFAULT_LOCAL_SIZE})`, integer)
    .option('--threshold <t>', `quorum size of a new cluster (default: ${DEFAULT_LOCAL_THRESHOLD})`, integer)
    .option('--coordinators <n>', `members serving HTTP in a new cluster (default: ${DEFAULT_COORDINATORS}, or size when smaller)`, integer)
    .option('--base-port <n>', `libp2p port of node 0 (default: ${DEFAULT_BASE_PORT}, then the cluster's)`, integer)
    .option('--http-base-port <n>', `HTTP port of coordinator 0 (default: ${DEFAULT_HTTP_BASE_PORT}, then the cluster's)`, integer)
    .option('--operator-base-port <n>', `operator port of node 0 (default: ${DEFAULT_OPERATOR_BASE_PORT}, then the cluster's)`, integer)
    .addOption(new Option('--log-level <level>', 'log level of every node (default: its config, or QK_LOG_LEVEL)').choices(LOG_LEVELS))
    .addOption(new Option('--log-format <format>', 'log format of every node (default: its config, or QK_LOG_FORMAT; auto: pretty on a terminal, else json)').choices(LOG_FORMATS))
    .option('--no-chain', 'no local chain (the nodes keep their configs\' chains)')
    .option('--chain-port <n>', "the local chain's RPC port, 0 for any free one", integer, DEFAULT_LOCAL_CHAIN_PORT)
    .option('--chain-rpc-url <url>', 'use this existing chain instead of a local one (with --controller)')
    .option('--controller <address>', "the secrets controller on --chain-rpc-url's chain")
    .option('--chain-start-block <n>', "with --chain-rpc-url: the controller's deployment block, where following starts (default: 0)", integer)
    .action(runLocal);

  const chainCommand = program.command('chain').description('EVM chains for Web3 secrets');
  chainCommand
    .command('deploy-controller')
    .description("deploy the (test) secrets controller on a chain and print the config entry for it; the key: QK_DEPLOYER_KEY")
    .requiredOption('--rpc-url <url>', 'JSON-RPC endpoint of the chain (http or https)')
    .option('--private-key <hex>', `deployer's key, which will own the controller (prefer ${DEPLOYER_KEY_ENV}: a command line shows in ps)`)
    .option('--fee <wei>', 'secretCreationFee, in wei', '0')
    .option('--whitelist <address>', "also whitelist this node address (the syncer's nodeAddress; repeatable)", collect, [])
    .option('--name <name>', "the entry's display name (default: chain <id>)")
    .action(deployControllerCommand);

  addMemberCommands(program, printLine);
  addClientCommands(program, { env, print: printLine });

  return program;
}

function messageOf(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).replace(/\s*[\r\n]+\s*/g, ' ');
}

/** The innermost cause's code or message: fetch reports `fetch failed` with the reason (ECONNREFUSED…) as its cause. */
function causeOf(err: unknown): string {
  let current = err;
  while (current instanceof Error && current.cause !== undefined) current = current.cause;
  return (current as NodeJS.ErrnoException | undefined)?.code ?? messageOf(current);
}

/** An unexpected error's message followed by its causes' (e.g. LevelDB's "Database failed to open" says why only in its cause). */
function withCauses(err: unknown): string {
  const messages: string[] = [];
  for (let current = err; current !== undefined && messages.length < 4; current = current instanceof Error ? current.cause : undefined) {
    const message = messageOf(current);
    if (!messages.includes(message)) messages.push(message);
  }
  return messages.join(': ');
}

/** Run the CLI; resolves with the exit code for one-shot commands (long-running ones keep the process alive). */
async function main(argv: string[]): Promise<number | undefined> {
  try {
    await buildProgram().parseAsync(argv);
    return undefined;
  } catch (err) {
    // Commander has already printed its own message (or the help) before throwing.
    if (err instanceof CommanderError) return err.exitCode === 0 ? EXIT_OK : EXIT_FAILURE;
    process.stderr.write(`quorumkeep: ${err instanceof ConfigError || err instanceof CliError ? err.message : withCauses(err)}\n`);
    return err instanceof CliError ? err.exitCode : EXIT_FAILURE;
  }
}

const code = await main(process.argv);
if (code !== undefined) process.exitCode = code;
