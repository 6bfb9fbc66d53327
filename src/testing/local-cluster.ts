/**
 * `startLocalCluster`: a whole quorumkeep cluster in one process, for our tests and our users' —
 * real libp2p on 127.0.0.1, real LevelDB in a temp dir, real HTTP coordinators and a real SMTP
 * mailbox. Nothing is mocked: each node is the same `createNode` the daemon runs.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { nodeConfigSchema, type NodeConfig } from '../config/schema.ts';
import { generateNodeKeys, describeNodeKeys, writeNodeKeys } from '../cluster/identity.ts';
import type { ClusterDescriptor, ClusterNodeEntry } from '../core/replication/ports.ts';
import { createNode, type QuorumNode } from '../node/index.ts';
import { createLogger } from '../log/index.ts';
import type { DestinationStream } from 'pino';
import { createMetrics } from '../metrics/index.ts';
import { StartupError } from '../errors/index.ts';
import { getFreePorts } from './ports.ts';
import { startMailbox, type Mailbox, type MailboxOptions } from './mailbox.ts';
import { waitFor } from './wait.ts';

/** Options of {@link startLocalCluster}. */
export interface LocalClusterOptions {
  /** Members. @default 5 */
  size?: number;
  /** Quorum. @default 3 */
  threshold?: number;
  /** Members (from slot 0 up) that also serve HTTP. @default 2 */
  coordinators?: number;
  /** Extra non-member coordinators (gateways: no slot, a replica of the state). @default 0 */
  gateways?: number;
  /** Base directory for data; a fresh temp dir when omitted. */
  dir?: string;
  /** Keep the data directory after `stop()`. @default false when `dir` is omitted */
  keepData?: boolean;
  /** Log level of every node. @default "silent" */
  logLevel?: string;
  /** Where every node's log lines go (e.g. a capturing stream in tests). @default stdout */
  logDestination?: DestinationStream;
  /** Extra config merged into every node's config (e.g. `{ replication: { applyTimeoutMs: 500 } }`). */
  nodeConfig?: Record<string, unknown>;
  /**
   * Extra config of one node, merged after `nodeConfig` (index: members by slot, then gateways), e.g.
   * `(i) => (i === 0 ? { chains: [{ ...chain, syncer: true }] } : {})` for a chain's one syncer.
   */
  nodeConfigFor?: (index: number) => Record<string, unknown>;
  /** Admin bearer token of the coordinators. @default random */
  adminToken?: string;
  /** Wall clock for every node. @default Date.now */
  clock?: () => number;
  /** Fixed libp2p ports (size + gateways of them); random free ports when omitted. */
  ports?: number[];
  /** Fixed HTTP ports of the coordinators, in order; random free ports when omitted. */
  httpPorts?: number[];
  /**
   * Give every node (members, then gateways) an operator port on 127.0.0.1 — `GET /healthz`,
   * `/readyz` and `/metrics` without a token — listed in {@link LocalCluster.operatorUrls}. A node's
   * port stays the same across restarts. @default false
   */
  operator?: boolean;
  /** Fixed operator ports (size + gateways of them) when `operator`; random free ports when omitted. */
  operatorPorts?: number[];
  /** Start a catching SMTP mailbox and point the nodes at it (with these options). @default true */
  mailbox?: boolean | MailboxOptions;
}

/** A running local cluster. */
export interface LocalCluster {
  /** Coordinator base URLs (members first, then gateways). */
  readonly coordinators: string[];
  /** Operator-port base URLs of every node by index (members by slot, then gateways); empty without `operator`. */
  readonly operatorUrls: string[];
  /** Member nodes by slot (the current instance; replaced on restart). */
  readonly members: QuorumNode[];
  /** Gateway nodes. */
  readonly gateways: QuorumNode[];
  /** The SMTP mailbox catching the cluster's mail (absent with `mailbox: false`). */
  readonly mailbox: Mailbox;
  readonly descriptor: ClusterDescriptor;
  /** Data directory. */
  readonly dir: string;
  /** Admin bearer token of the coordinators. */
  readonly adminToken: string;
  /** Stop a member (its data stays). */
  stopMember(slot: number): Promise<void>;
  /**
   * Start a stopped member again on the same data dir and ports; resolves when it is connected. It may
   * still hold its own writes (until it has learnt its own log: `/readyz` `ownLogKnown`); a write
   * through it meanwhile waits up to `replication.applyTimeoutMs`, then answers 503 NOT_READY.
   */
  restartMember(slot: number): Promise<QuorumNode>;
  /** True when the member is running. */
  isRunning(slot: number): boolean;
  /**
   * Cut every link between the members of `a` and those of `b` (slots); resolves once effective: from
   * the call, neither side takes in anything of the other's (requests, sync pages, gossip), and their
   * connections close at the next maintenance.
   */
  partition(a: number | number[], b: number | number[]): Promise<void>;
  /**
   * A silent partition between the groups: packets dropped, nothing hung up (the connections stay
   * open and carry nothing; new ones are refused). Resolves at once, without waiting for the nodes to
   * notice.
   */
  silence(a: number | number[], b: number | number[]): Promise<void>;
  /** Remove every partition (hung up or silent); resolves once all running members see each other again. */
  heal(): Promise<void>;
  /** Wait until every running node holds the same version vector. */
  waitForConvergence(options?: { timeoutMs?: number }): Promise<void>;
  /** Stop everything and remove the data dir (unless kept). Idempotent. */
  stop(): Promise<void>;
}

interface Slot {
  config: NodeConfig;
  entry: ClusterNodeEntry;
  blocked: Set<string>;
  silenced: Set<string>;
  node: QuorumNode;
  running: boolean;
}

/** Attempts of {@link startLocalCluster} when a port it picked was taken before it could bind it. */
const PORT_RACE_ATTEMPTS = 3;
/** Nodes of a cluster when the caller names no size. */
const DEFAULT_CLUSTER_SIZE = 5;

/** Whether `err` (or what it wraps) is a bind that found its port taken. */
function isAddressInUse(err: unknown, depth = 0): boolean {
  if (depth > 5 || typeof err !== 'object' || err === null) return false;
  const e = err as { code?: unknown; cause?: unknown; errors?: unknown; message?: unknown };
  if (e.code === 'EADDRINUSE' || (err instanceof StartupError && err.code === 'ADDRESS_IN_USE')) return true;
  // libp2p's listeners wrap the system error in their own, sometimes keeping only its text.
  if (typeof e.message === 'string' && e.message.includes('EADDRINUSE')) return true;
  if (Array.isArray(e.errors) && e.errors.some((x) => isAddressInUse(x, depth + 1))) return true;
  return isAddressInUse(e.cause, depth + 1);
}

/**
 * Start a local cluster and wait until every member sees a quorum and every node knows its own log
 * (its own writes released). Free ports are picked, released and bound a moment later; another
 * process (an outgoing connection's ephemeral port, a test's `--port 0` server) may take one in
 * between. The cluster is then started again on new ports, up to
 * {@link PORT_RACE_ATTEMPTS} times, unless the caller fixed the ports. In a data directory the caller
 * gave, the nodes' folders the failed attempt made are removed first: that attempt wrote every
 * node's keys afresh (a key file that already exists fails the start before any port is bound).
 */
export async function startLocalCluster(options: LocalClusterOptions = {}): Promise<LocalCluster> {
  const retryable = !options.ports && !options.httpPorts && !options.operatorPorts;
  for (let attempt = 1; ; attempt++) {
    try {
      return await startLocalClusterOnce(options);
    } catch (err) {
      if (!retryable || attempt >= PORT_RACE_ATTEMPTS || !isAddressInUse(err)) throw err;
      if (options.dir !== undefined) {
        const total = (options.size ?? DEFAULT_CLUSTER_SIZE) + (options.gateways ?? 0);
        await Promise.all(Array.from({ length: total }, (_, i) => rm(join(options.dir!, `node-${i}`), { recursive: true, force: true })));
      }
    }
  }
}

async function startLocalClusterOnce(options: LocalClusterOptions): Promise<LocalCluster> {
  const size = options.size ?? DEFAULT_CLUSTER_SIZE;
  const threshold = options.threshold ?? 3;
  const coordinatorCount = Math.min(options.coordinators ?? 2, size);
  const gatewayCount = options.gateways ?? 0;
  const total = size + gatewayCount;
  const dir = options.dir ?? (await mkdtemp(join(tmpdir(), 'quorumkeep-')));
  const keepData = options.keepData ?? options.dir !== undefined;
  const adminToken = options.adminToken ?? randomBytes(32).toString('hex');
  const httpCount = coordinatorCount + gatewayCount;
  const ports = options.ports ?? (await getFreePorts(total));
  const httpPorts = options.httpPorts ?? (await getFreePorts(httpCount));
  const operatorPorts = options.operator ? (options.operatorPorts ?? (await getFreePorts(total))) : [];
  const mailbox = options.mailbox === false ? undefined : await startMailbox(options.mailbox === true || options.mailbox === undefined ? {} : options.mailbox);
  const clusterId = `qk-test-${randomBytes(4).toString('hex')}`;

  const entries: ClusterNodeEntry[] = [];
  for (let i = 0; i < total; i++) {
    const keys = await generateNodeKeys();
    await writeNodeKeys(join(dir, `node-${i}`, 'keys'), keys);
    const facts = describeNodeKeys(keys);
    const isHttp = i < coordinatorCount || i >= size;
    const httpIndex = i < size ? i : coordinatorCount + (i - size);
    entries.push({
      id: `node-${i}`,
      slot: i < size ? i : null,
      ...facts,
      multiaddrs: [`/ip4/127.0.0.1/tcp/${ports[i]}`],
      ...(isHttp ? { httpUrl: `http://127.0.0.1:${httpPorts[httpIndex]}` } : {}),
    });
  }
  const descriptor: ClusterDescriptor = { clusterId, size, threshold, nodes: entries };

  const slots: Slot[] = entries.map((entry, i) => {
    const isHttp = entry.httpUrl !== undefined;
    const port = isHttp ? Number(new URL(entry.httpUrl!).port) : 0;
    const config = nodeConfigSchema.parse(
      deepMerge(
        {
          clusterFile: join(dir, 'cluster.json'),
          nodeId: entry.id,
          dataDir: join(dir, `node-${i}`),
          keysDir: join(dir, `node-${i}`, 'keys'),
          http: { enabled: isHttp, host: '127.0.0.1', port, publicUrl: entry.httpUrl ?? '' },
          admin: { token: isHttp ? adminToken : '' },
          ...(options.operator ? { operator: { enabled: true, host: '127.0.0.1', port: operatorPorts[i] } } : {}),
          log: { level: options.logLevel ?? 'silent' },
          replication: { reconnectIntervalMs: 100, syncIntervalMs: 1000, applyTimeoutMs: 2000 },
          ...(mailbox ? { mail: { transport: 'smtp', smtp: { host: mailbox.host, port: mailbox.port, secure: false } } } : {}),
        },
        deepMerge(options.nodeConfig ?? {}, options.nodeConfigFor?.(i) ?? {}),
      ),
    );
    return { config, entry, blocked: new Set<string>(), silenced: new Set<string>(), node: undefined as unknown as QuorumNode, running: false };
  });

  const makeNode = (s: Slot) =>
    createNode(s.config, {
      descriptor,
      blockedPeers: s.blocked,
      silencedPeers: s.silenced,
      logger: createLogger({ level: s.config.log.level, base: { node: s.entry.id }, ...(options.logDestination ? { destination: options.logDestination } : {}) }),
      metrics: createMetrics({ processMetrics: false, labels: { node: s.entry.id } }),
      ...(options.clock ? { clock: options.clock } : {}),
    });

  const members: QuorumNode[] = [];
  const gateways: QuorumNode[] = [];
  const publish = () => {
    slots.forEach((s, i) => {
      if (i < size) members[i] = s.node;
      else gateways[i - size] = s.node;
    });
  };

  const running = () => slots.filter((s) => s.running);
  const seesAllRunning = (s: Slot) =>
    running().every(
      (o) =>
        o === s ||
        s.blocked.has(o.entry.peerId) ||
        o.blocked.has(s.entry.peerId) ||
        s.silenced.has(o.entry.peerId) ||
        o.silenced.has(s.entry.peerId) ||
        (o.entry.slot === null ? true : s.node.membership.isReachable(o.entry.slot)),
    );

  let stopped = false;
  try {
    for (const s of slots) s.node = await makeNode(s);
    publish();
    await Promise.all(
      slots.map(async (s) => {
        await s.node.start();
        s.running = true;
      }),
    );
    await waitFor(() => slots.every(seesAllRunning), { timeoutMs: 15_000, description: 'members to connect' });
    // Every node holds its own writes until it has learnt its own log from its peers (docs/architecture.md,
    // "Failure model"): a test's first write should not have to wait for that.
    await waitFor(() => slots.every((s) => s.node.health.readiness().checks.ownLogKnown), { timeoutMs: 15_000, description: 'every node to learn its own log' });
  } catch (err) {
    await Promise.allSettled(slots.filter((s) => s.node).map((s) => s.node.stop()));
    await mailbox?.close();
    if (!keepData) await rm(dir, { recursive: true, force: true });
    throw err;
  }

  const slotAt = (i: number): Slot => {
    const s = slots[i];
    if (!s) throw new Error(`no node at index ${i}`);
    return s;
  };
  const asList = (x: number | number[]) => (Array.isArray(x) ? x : [x]);

  const cluster: LocalCluster = {
    coordinators: slots.filter((s) => s.entry.httpUrl).map((s) => s.node.httpUrl!),
    operatorUrls: options.operator ? operatorPorts.map((port) => `http://127.0.0.1:${port}`) : [],
    members,
    gateways,
    mailbox: mailbox as Mailbox,
    descriptor,
    dir,
    adminToken,
    async stopMember(i) {
      const s = slotAt(i);
      if (!s.running) return;
      s.running = false;
      await s.node.stop();
      await waitFor(() => running().every((o) => o.entry.slot === null || !o.node.membership.isReachable(i)), {
        timeoutMs: 10_000,
        description: `others to see node ${i} down`,
      });
    },
    async restartMember(i) {
      const s = slotAt(i);
      if (s.running) return s.node;
      s.node = await makeNode(s);
      publish();
      await s.node.start();
      s.running = true;
      await waitFor(() => seesAllRunning(s) && running().every(seesAllRunning), { timeoutMs: 15_000, description: `node ${i} to reconnect` });
      return s.node;
    },
    isRunning: (i) => slotAt(i).running,
    async partition(a, b) {
      for (const x of asList(a)) {
        for (const y of asList(b)) {
          slotAt(x).blocked.add(slotAt(y).entry.peerId);
          slotAt(y).blocked.add(slotAt(x).entry.peerId);
        }
      }
      await waitFor(
        () =>
          asList(a).every((x) =>
            asList(b).every((y) => {
              const sx = slotAt(x);
              const sy = slotAt(y);
              return (!sx.running || sy.entry.slot === null || !sx.node.membership.isReachable(sy.entry.slot)) &&
                (!sy.running || sx.entry.slot === null || !sy.node.membership.isReachable(sx.entry.slot));
            }),
          ),
        { timeoutMs: 10_000, description: 'partition to take effect' },
      );
    },
    async silence(a, b) {
      // Nothing is hung up: the connections stay open and carry nothing, as when a network drops
      // packets. Resolves at once — how soon the nodes notice is what a caller measures.
      for (const x of asList(a)) {
        for (const y of asList(b)) {
          slotAt(x).silenced.add(slotAt(y).entry.peerId);
          slotAt(y).silenced.add(slotAt(x).entry.peerId);
        }
      }
    },
    async heal() {
      for (const s of slots) {
        s.blocked.clear();
        s.silenced.clear();
      }
      await waitFor(() => running().every(seesAllRunning), { timeoutMs: 15_000, description: 'partition to heal' });
    },
    async waitForConvergence(o = {}) {
      await waitFor(
        () => {
          const vvs = running().map((s) => JSON.stringify(sortKeys(s.node.versionVector())));
          return vvs.every((v) => v === vvs[0]);
        },
        { timeoutMs: o.timeoutMs ?? 10_000, description: 'version vectors to converge' },
      );
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      await Promise.allSettled(running().map((s) => s.node.stop()));
      for (const s of slots) s.running = false;
      await mailbox?.close();
      if (!keepData) await rm(dir, { recursive: true, force: true });
    },
  };
  return cluster;
}

function sortKeys(o: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(o).sort(([a], [b]) => (a < b ? -1 : 1)));
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Merge `b` into a copy of `a`, recursing into plain objects; arrays and scalars replace. */
function deepMerge(a: Record<string, unknown>, b: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...a };
  for (const [k, v] of Object.entries(b)) {
    if (k === '__proto__' || k === 'constructor') continue;
    out[k] = isPlainObject(v) && isPlainObject(out[k]) ? deepMerge(out[k] as Record<string, unknown>, v) : v;
  }
  return out;
}
