/**
 * Node configuration: every option, its type and default, validated in one pass (CONTRIBUTING.md rule 8).
 * Unknown keys are errors (`strict`), so a typo never silently falls back to a default.
 */
import { z } from 'zod';

// A contract or account address; either case (checksummed or not): src/evm compares lowercase.
const evmAddress = z.string().regex(/^0x[0-9a-fA-F]{40}$/, 'must be a 0x-prefixed 20-byte address');

/** A URL whose scheme is one of `schemes` (e.g. `["http:", "https:"]`). */
function urlWithScheme(schemes: readonly string[]) {
  const message = `must be a ${schemes.map((s) => `${s}//`).join(' or ')} URL`;
  return z.string().refine((value) => {
    try {
      return schemes.includes(new URL(value).protocol);
    } catch {
      return false;
    }
  }, message);
}

/**
 * An EVM chain the node serves Web3 secrets on (docs/web3.md § "Chain
 * client"). Every member reads the chain itself; one member per chain and cluster is the `syncer`.
 */
export const chainSchema = z.strictObject({
  /** EIP-155 chain id, e.g. `8453` (Base). The node checks that the RPC serves this chain. */
  chainId: z.number().int().positive(),
  /** Display name, used in error messages (`Chain 8453 (Base) RPC is unavailable: …`). */
  name: z.string().min(1),
  /**
   * JSON-RPC endpoint, `http://` or `https://`. Advertised as is to clients by `/healthz` (they read
   * the block number they sign from it); logs, metrics and the chain status show it without its path,
   * query and credentials, where a provider's API key usually sits.
   */
  rpcUrl: urlWithScheme(['http:', 'https:']),
  /** WebSocket endpoint, `ws://` or `wss://`. Accepted for a later push-based follower; unused today (the client polls over `rpcUrl`). */
  wsRpcUrl: urlWithScheme(['ws:', 'wss:']).optional(),
  /**
   * The secrets controller (docs/web3.md), either case. Unset (or the zero address): the chain is
   * listed, but its Web3 secret routes answer 503 `CHAIN_UNAVAILABLE` "… has no secrets controller
   * configured", and nothing is followed or synced on it.
   */
  secretsControllerAddress: evmAddress.optional(),
  /** Average block interval, ms. Sets the freshness window, `ceil(600000 / blockTimeMs)` blocks, and how long the head block is cached. */
  blockTimeMs: z.number().int().positive(),
  /** Blocks an event must be buried under before the cluster acts on it (new secrets, delegate and owner changes). @default 2 */
  confirmations: z.number().int().nonnegative().default(2),
  /** Where event following starts on a node with no saved cursor: the controller's deployment block. @default 0 */
  startBlock: z.number().int().nonnegative().default(0),
  /**
   * This node is the chain's designated, whitelisted node that sends `markSecretSynced` from its
   * node address (its secp256k1 signing key, which needs gas). At most one node per chain and cluster:
   * two would race for the same secrets and waste gas on reverts. @default false
   */
  syncer: z.boolean().default(false),
  /**
   * This cluster's id in the controller (a uint8): what the syncer passes to `markSecretSynced` and
   * what members expect of a synced secret's on-chain `clusterId`. Every node of the cluster must
   * agree on it. @default 0
   */
  controllerClusterId: z.number().int().min(0).max(255).default(0),
});
export type ChainConfig = z.infer<typeof chainSchema>;

/** Enabled chains, at most one entry per chain id. */
export const chainsSchema = z.array(chainSchema).superRefine((chains, ctx) => {
  const seen = new Set<number>();
  chains.forEach((chain, index) => {
    if (seen.has(chain.chainId)) ctx.addIssue({ code: 'custom', path: [index, 'chainId'], message: `chain ${chain.chainId} is listed twice` });
    seen.add(chain.chainId);
  });
});

/**
 * Chains enabled when the config names none: Base mainnet on its public RPC (rate-limited: run your
 * own or a provider's in production). No controller address: the production contract's is set by
 * the operator, so out of the box Web3 secret routes answer 503 (see `secretsControllerAddress`).
 */
export const DEFAULT_CHAINS: ChainConfig[] = [
  {
    chainId: 8453,
    name: 'Base',
    rpcUrl: 'https://mainnet.base.org',
    blockTimeMs: 2000,
    confirmations: 2,
    startBlock: 0,
    syncer: false,
    controllerClusterId: 0,
  },
];

const port = z.number().int().min(0).max(65535);

/**
 * Token buckets in front of every POST under /web2/auth and POST /web2/permit: one per client
 * address (`ctx.ip`, so behind `http.trustProxy` the address the proxy appended to X-Forwarded-For)
 * and one per account named in the body (email, or principalId). A bucket holds `…Burst` requests
 * and refills at `…PerMinute`; an empty one answers 429 RATE_LIMITED with Retry-After. `0` per
 * minute turns that limit off. Per node: coordinators do not share counts.
 */
export const rateLimitsSchema = z.strictObject({
  /** Sustained requests per minute from one client address (IPv6: one /64). 0 = no limit. @default 120 */
  perIpPerMinute: z.number().int().nonnegative().default(120),
  /** Requests one address may send at once after being idle. @default 300 */
  perIpBurst: z.number().int().positive().default(300),
  /** Sustained requests per minute naming one account (email or principalId). 0 = no limit. @default 10 */
  perAccountPerMinute: z.number().int().nonnegative().default(10),
  /** Requests naming one account at once after it was idle. @default 30 */
  perAccountBurst: z.number().int().positive().default(30),
  /** Addresses, and accounts, tracked at most (each); the least recently seen is forgotten first. @default 10000 */
  maxTrackedKeys: z.number().int().positive().max(1_000_000).default(10_000),
});

export const httpSchema = z.strictObject({
  /** Serve the HTTP API (this node is a coordinator). @default false */
  enabled: z.boolean().default(false),
  /** Bind address. @default "127.0.0.1" */
  host: z.string().min(1).default('127.0.0.1'),
  /** Bind port; 0 picks a free one. @default 3010 */
  port: port.default(3010),
  /** Public base URL used in emailed links; derived from host and port when empty. @default "" */
  publicUrl: z.string().default(''),
  /** Origins allowed by CORS (exact match, or "*"). @default [] */
  corsOrigins: z.array(z.string().min(1)).default([]),
  /** Largest JSON body accepted, in bytes. @default 1048576 */
  bodyLimitBytes: z.number().int().positive().max(64 * 1024 * 1024).default(1024 * 1024),
  /**
   * Honour X-Forwarded-* headers (behind one reverse proxy): the client address (rate limits, logs)
   * is then the last X-Forwarded-For entry, the one the proxy appended. @default false
   */
  trustProxy: z.boolean().default(false),
  /** Per-request deadline, ms. @default 30000 */
  requestTimeoutMs: z.number().int().positive().default(30_000),
  /**
   * Serve `GET /metrics` to anyone. Off: it needs the admin bearer token, and is not served at all
   * when `admin.token` is empty. @default false
   */
  metricsPublic: z.boolean().default(false),
  /** Abuse limits of the unauthenticated account routes (token buckets). */
  rateLimits: rateLimitsSchema.default(rateLimitsSchema.parse({})),
});

/**
 * The operator port: `GET /healthz`, `GET /readyz` and `GET /metrics` on every node, member or
 * coordinator, for monitoring. `/metrics` needs no token there: bind it to a private interface (or
 * firewall it) — it is meant for the operator's network, not the public one.
 */
export const operatorSchema = z.strictObject({
  /** Serve the operator port. `cluster init` turns it on for every node. @default false */
  enabled: z.boolean().default(false),
  /** Bind address (a private interface, loopback, or 0.0.0.0 behind a firewall). @default "127.0.0.1" */
  host: z.string().min(1).default('127.0.0.1'),
  /** Bind port; 0 picks a free one. @default 3110 */
  port: port.default(3110),
});

export const replicationSchema = z.strictObject({
  /** Deadline for a member's `apply` ack in a quorum write, ms. @default 2000 */
  applyTimeoutMs: z.number().int().positive().default(2000),
  /** Interval between periodic catch-up rounds with every member, ms. @default 5000 */
  syncIntervalMs: z.number().int().positive().default(5000),
  /** Interval between re-dials of unreachable members, ms. @default 1000 */
  reconnectIntervalMs: z.number().int().positive().default(1000),
  /** Records per message in a `sync` response. @default 500 */
  syncBatchSize: z.number().int().positive().max(10_000).default(500),
  /** Deadline for slot 0's `create` protocol, ms. @default 2000 */
  createTimeoutMs: z.number().int().positive().default(2000),
  /**
   * How far ahead of this node's clock a record's HLC may be, ms; records stamped further ahead are
   * refused until the clock catches up (docs/security.md, "Replication integrity"). @default 60000
   */
  maxClockSkewMs: z.number().int().min(1000).max(3_600_000).default(60_000),
  /**
   * How long a member behind a requester tries to catch up before it refuses a `grant` or `shard`
   * request with NOT_READY (the requester asks another member), ms. @default 1000
   */
  catchUpWaitMs: z.number().int().min(0).max(30_000).default(1000),
  /** How often every connected node is pinged for liveness, ms. @default 300 */
  livenessIntervalMs: z.number().int().min(50).max(10_000).default(300),
  /**
   * A node that has answered no ping for this long is unreachable (writes stop waiting for it,
   * `/healthz` shows it) and is re-dialled, ms. Keep it above a few intervals. @default 1200
   */
  livenessTimeoutMs: z.number().int().min(200).max(60_000).default(1200),
  /**
   * Most memory the current states kept in memory may hold (the hot sessions, principals and secrets
   * every signed request reads), MiB; an estimate of their size on the heap. @default 32
   */
  stateCacheMb: z.number().int().min(1).max(4096).default(32),
});

export const mailSchema = z.strictObject({
  /** `outbox` writes one .eml per message under the data dir; `smtp` sends. @default "outbox" */
  transport: z.enum(['outbox', 'smtp']).default('outbox'),
  /** Sender address. @default "quorumkeep <no-reply@quorumkeep.local>" */
  from: z.string().min(3).default('quorumkeep <no-reply@quorumkeep.local>'),
  smtp: z
    .strictObject({
      host: z.string().min(1).default('127.0.0.1'),
      port: port.default(587),
      secure: z.boolean().default(false),
      user: z.string().default(''),
      /** Secret: redacted when printed. */
      pass: z.string().default(''),
      /** Accept self-signed certificates (local testing only). @default false */
      allowSelfSigned: z.boolean().default(false),
    })
    .default({ host: '127.0.0.1', port: 587, secure: false, user: '', pass: '', allowSelfSigned: false }),
});

export const logSchema = z.strictObject({
  /** pino level. @default "info" */
  level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /**
   * `json`: one JSON object a line, for machines; `pretty`: one readable line an event, for people;
   * `auto`: pretty when stdout is a terminal, JSON otherwise (a pipe, a file, journald). @default "auto"
   */
  format: z.enum(['auto', 'pretty', 'json']).default('auto'),
});

export const adminSchema = z.strictObject({
  /** Bearer token for operator endpoints; empty disables them. Secret: redacted when printed. @default "" */
  token: z.string().default(''),
});

export const accountsSchema = z.strictObject({
  /**
   * OTP lifetime, ms (docs/http.md, Web2 accounts: 10 minutes); also the window of the guess budget (5 wrong guesses per
   * account and purpose in any such window, however many codes were sent). @default 600000
   */
  otpTtlMs: z.number().int().positive().default(600_000),
  /**
   * Cooldown between code mails to one email, shared by register, resend-otp, forgot-password and
   * request-deletion (unknown emails too), kept by slot 0; a used code ends it, ms. @default 60000
   */
  mailCooldownMs: z.number().int().nonnegative().default(60_000),
  /** argon2id hashes (passwords, OTPs) running at once; more queue. @default 2 */
  maxConcurrentHashes: z.number().int().positive().max(64).default(2),
  /**
   * argon2id hashes waiting for a slot at most; one more is refused at once with 503 OVERLOADED and
   * Retry-After. It bounds how long a login waits behind a flood: the last of a full queue waits for
   * this many hashes, run `maxConcurrentHashes` at a time (docs/configuration.md: the wait at the
   * defaults).
   * @default 16
   */
  maxQueuedHashes: z.number().int().nonnegative().max(10_000).default(16),
});

export const secretsSchema = z.strictObject({
  /** Deadline of one member's share store or release (secret create, decrypt), ms. @default 2000 */
  shardTimeoutMs: z.number().int().positive().default(2000),
  /** Interval of the background delivery of shares members missed, ms. @default 5000 */
  retryIntervalMs: z.number().int().positive().default(5000),
  /**
   * How often a member forgets the decrypt strings it used that can no longer pass the freshness
   * check (docs/security.md, Share release), ms. @default 600000
   */
  usedStringPruneIntervalMs: z.number().int().positive().default(600_000),
});

export const sessionsSchema = z.strictObject({
  /** Deadline of one member's session grant, ms. @default 2000 */
  grantTimeoutMs: z.number().int().positive().default(2000),
});

export const permitsSchema = z.strictObject({
  /** Permit lifetime, ms (docs/permits.md, "Idempotency and expiry": 15 minutes). @default 900000 */
  ttlMs: z.number().int().positive().default(900_000),
  /**
   * How GET /web2/confirm behaves in a browser: `link` consumes the permit on the GET (the emailed
   * link works in one click); `button` shows a page whose button POSTs the confirmation, so a mail
   * scanner that prefetches links consumes nothing. @default "link"
   */
  confirmMode: z.enum(['link', 'button']).default('link'),
  /**
   * Accept the legacy transfer/delegate request (4-part data, payload as an object, no requestId) for
   * migration; its requestId is derived from the signed data. Off: it is a 400 (docs/permits.md). @default false
   */
  acceptLegacy: z.boolean().default(false),
  /** While a consumed permit has not reached every member, how often it is delivered again, ms. @default 2000 */
  redeliverIntervalMs: z.number().int().positive().default(2000),
});

export const filesSchema = z.strictObject({
  /** Folder of upload spools and job results (sealed spools, `.cifer` ZIPs). @default "<dataDir>/files" */
  dir: z.string().default(''),
  /** Largest file accepted by POST /encrypt-file, bytes (docs/http.md, Files and jobs: 1 GiB). @default 1073741824 */
  maxFileBytes: z.number().int().positive().default(1024 * 1024 * 1024),
  /** Plaintext bytes per encrypted chunk (`chunkSize` of a `.cifer`), 1 byte to 64 MiB. @default 1048576 */
  chunkBytes: z.number().int().positive().max(64 * 1024 * 1024).default(1024 * 1024),
  /** File jobs waiting or running on this coordinator at once; one more upload is refused (503). @default 4 */
  maxConcurrentJobs: z.number().int().positive().default(4),
  /**
   * Encrypt jobs one signing principal may have pending or processing at once; one more is refused
   * with 429 RATE_LIMITED. @default 2
   */
  maxJobsPerPrincipal: z.number().int().positive().default(2),
  /**
   * Disk budget of this coordinator's verified uploads' spools and job results, bytes; while it is
   * used up new uploads are refused (503 OVERLOADED) before their body is read. @default 10737418240 (10 GiB)
   */
  maxDiskBytes: z.number().int().positive().default(10 * 1024 * 1024 * 1024),
  /**
   * Bytes the uploads of one client address (`ctx.ip`, an IPv6 client by its /64) may hold on disk
   * while their signature is not verified yet — the file comes before `data` and `signature` — apart
   * from `maxDiskBytes`. A file over it, sent before its signed fields, is refused (413); beyond it
   * with the address's other uploads, 429. 0 = the largest upload (a `.cifer` of a `maxFileBytes`
   * file). @default 0
   */
  maxUnverifiedBytesPerAddress: z.number().int().nonnegative().default(0),
  /**
   * Bytes every address's unverified uploads may hold together, apart from `maxDiskBytes`; beyond it
   * an upload is refused (503 OVERLOADED). 0 = four per-address allowances. @default 0
   */
  maxUnverifiedBytes: z.number().int().nonnegative().default(0),
  /** How often finished jobs are checked against their TTL (expired, files removed), ms. @default 60000 */
  sweepIntervalMs: z.number().int().positive().default(60_000),
});

/** One direction's limits in a plan (docs/configuration.md, `usage.plans`). */
export const planLimitsSchema = z.strictObject({
  /** Plaintext bytes per cycle (encrypt: the plaintext encrypted; decrypt: the plaintext recovered). */
  bytesPerCycle: z.number().int().nonnegative().max(2 ** 50),
  /** Requests per cycle. */
  requestsPerCycle: z.number().int().nonnegative().max(2 ** 50),
  /** Requests per second, per coordinator: a token bucket holding max(1, this), refilled at this rate. */
  requestsPerSecond: z.number().positive().max(1_000_000),
});

/** A plan: its cycle (aligned to UTC) and the limits of each direction. */
export const planSchema = z.strictObject({
  /** Plan id, as reported (`planId`) and assigned (POST /admin/usage/plan). */
  id: z.string().regex(/^[A-Za-z0-9._-]{1,64}$/, 'must be 1-64 characters of A-Z a-z 0-9 . _ -'),
  /** `monthly`: from the 1st 00:00 UTC; `daily`: from 00:00 UTC. */
  cycle: z.enum(['monthly', 'daily']),
  encryption: planLimitsSchema,
  decryption: planLimitsSchema,
});
export type PlanConfig = z.infer<typeof planSchema>;

/** The plan of every principal when the config names none. */
export const DEFAULT_PLANS: PlanConfig[] = [
  {
    id: 'free',
    cycle: 'monthly',
    encryption: { bytesPerCycle: 10 * 1024 ** 3, requestsPerCycle: 1_000_000, requestsPerSecond: 100 },
    decryption: { bytesPerCycle: 10 * 1024 ** 3, requestsPerCycle: 1_000_000, requestsPerSecond: 100 },
  },
];

/**
 * Usage counting and plan limits (docs/architecture.md, "Usage and plan limits"). Each coordinator
 * counts what it admits and flushes its own counter record per (principal, cycle, direction); the
 * cluster's usage is the sum over coordinators.
 *
 * A counter's **cap** of usage that a quorum has not acknowledged is, per plan direction,
 * max(`maxUnflushedRequests`, ⌊`maxOvershootFraction` × requestsPerCycle⌋) requests and
 * max(`maxUnflushedBytes`, ⌊`maxOvershootFraction` × bytesPerCycle⌋) bytes. A limit is overshot by
 * at most (coordinators − 1) × that cap (bytes: or the largest single request, if larger), outside a
 * partition between coordinators that both still reach a quorum.
 */
export const usageSchema = z
  .strictObject({
    /**
     * Plan limits on: every encrypt and decrypt is admitted against the principal's plan and counted.
     * Off: nothing is admitted or counted on any encrypt or decrypt path; `POST /jobs/dataConsumption`
     * still answers (the plan, and the counts replicated so far). @default true
     */
    enabled: z.boolean().default(true),
    /** The plans; ids unique. @default one plan, `free` */
    plans: z.array(planSchema).min(1).default(DEFAULT_PLANS),
    /** Plan of principals no operator assigned one to; `""` = the first plan. @default "" */
    defaultPlan: z.string().default(''),
    /** How often a coordinator flushes (replicates) its dirty usage counters, ms. @default 1000 */
    flushIntervalMs: z.number().int().min(10).max(60_000).default(1000),
    /**
     * Least cap of plaintext bytes one counter (principal, cycle, direction) of a coordinator may hold
     * that a quorum has not acknowledged: a flush starts at half the cap, admission waits for it
     * beyond. The cap is the larger of this and `maxOvershootFraction` of the plan's bytesPerCycle;
     * a data limit is overshot by at most the cap per other coordinator. @default 8388608
     */
    maxUnflushedBytes: z.number().int().positive().max(2 ** 40).default(8 * 1024 * 1024),
    /** The same for requests: the least cap, per counter, of requests not acknowledged. @default 50 */
    maxUnflushedRequests: z.number().int().positive().max(100_000).default(50),
    /**
     * The cap scaled with the limit: a counter may also hold up to this fraction of its plan
     * direction's requestsPerCycle (bytesPerCycle) unacknowledged, when that is more than
     * `maxUnflushedRequests` (`maxUnflushedBytes`). So a limit is overshot by at most this fraction
     * of itself per other coordinator (or the fixed least cap, for small limits). 0 = the fixed caps
     * only. @default 0.01
     */
    maxOvershootFraction: z.number().min(0).max(0.5).default(0.01),
  })
  .superRefine((u, ctx) => {
    const seen = new Set<string>();
    u.plans.forEach((p, i) => {
      if (seen.has(p.id)) ctx.addIssue({ code: 'custom', path: ['plans', i, 'id'], message: `duplicate plan id "${p.id}"` });
      seen.add(p.id);
    });
    if (u.defaultPlan !== '' && !seen.has(u.defaultPlan)) ctx.addIssue({ code: 'custom', path: ['defaultPlan'], message: `"${u.defaultPlan}" is not one of the plans' ids` });
  });

/** How GET /web2/confirm behaves in a browser (`permits.confirmMode`). */
export type PermitConfirmMode = z.infer<typeof permitsSchema>['confirmMode'];

/** The whole node configuration. */
export const nodeConfigSchema = z.strictObject({
  /** Path of the cluster file (relative paths resolve against the config file's folder). */
  clusterFile: z.string().min(1),
  /** This node's `id` in the cluster file, e.g. `node-0`. */
  nodeId: z.string().min(1),
  /** Data directory (LevelDB, keys, outbox). */
  dataDir: z.string().min(1),
  /** Keys directory. @default "<dataDir>/keys" */
  keysDir: z.string().default(''),
  /** libp2p listen multiaddrs. @default the node's multiaddrs in the cluster file */
  listen: z.array(z.string().min(1)).default([]),
  http: httpSchema.default(httpSchema.parse({})),
  operator: operatorSchema.default(operatorSchema.parse({})),
  replication: replicationSchema.default(replicationSchema.parse({})),
  mail: mailSchema.default(mailSchema.parse({})),
  log: logSchema.default(logSchema.parse({})),
  admin: adminSchema.default(adminSchema.parse({})),
  accounts: accountsSchema.default(accountsSchema.parse({})),
  sessions: sessionsSchema.default(sessionsSchema.parse({})),
  secrets: secretsSchema.default(secretsSchema.parse({})),
  permits: permitsSchema.default(permitsSchema.parse({})),
  files: filesSchema.default(filesSchema.parse({})),
  usage: usageSchema.default(usageSchema.parse({})),
  /** Enabled EVM chains. @default Base (8453) */
  chains: chainsSchema.default(DEFAULT_CHAINS),
});

/** A validated, frozen node configuration. Paths are absolute. */
export type NodeConfig = z.infer<typeof nodeConfigSchema>;

/** Config paths whose values are secrets: shown as "[redacted]" when printed. */
export const SECRET_CONFIG_PATHS = ['mail.smtp.pass', 'admin.token'] as const;
