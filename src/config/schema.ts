/**
 * Node configuration: every option, its type and default, validated in one pass (STYLE.md rule 8).
 * Unknown keys are errors (`strict`), so a typo never silently falls back to a default.
 */
import { z } from 'zod';

/** An EVM chain the coordinator accepts (ARCHITECTURE.md, Chains). */
export const chainSchema = z.strictObject({
  chainId: z.number().int().positive(),
  name: z.string().min(1),
  rpcUrl: z.string().url(),
  secretsControllerAddress: z.string().regex(/^0x[0-9a-fA-F]{40}$/, 'must be a 0x-prefixed 20-byte address'),
  blockTimeMs: z.number().int().positive(),
});
export type ChainConfig = z.infer<typeof chainSchema>;

/** Chains enabled when the config names none: Base mainnet. */
export const DEFAULT_CHAINS: ChainConfig[] = [
  {
    chainId: 8453,
    name: 'Base',
    rpcUrl: 'https://mainnet.base.org',
    secretsControllerAddress: '0x0000000000000000000000000000000000000000',
    blockTimeMs: 2000,
  },
];

const port = z.number().int().min(0).max(65535);

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
  /** Honour X-Forwarded-* headers (behind a reverse proxy). @default false */
  trustProxy: z.boolean().default(false),
  /** Per-request deadline, ms. @default 30000 */
  requestTimeoutMs: z.number().int().positive().default(30_000),
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
});

export const adminSchema = z.strictObject({
  /** Bearer token for operator endpoints; empty disables them. Secret: redacted when printed. @default "" */
  token: z.string().default(''),
});

export const accountsSchema = z.strictObject({
  /** OTP lifetime, ms (API.md: 10 minutes). @default 600000 */
  otpTtlMs: z.number().int().positive().default(600_000),
  /** Cooldown between OTP mails to one email, shared by resend-otp and forgot-password, ms. @default 60000 */
  mailCooldownMs: z.number().int().nonnegative().default(60_000),
  /** argon2id hashes (passwords, OTPs) running at once; more queue. @default 2 */
  maxConcurrentHashes: z.number().int().positive().max(64).default(2),
});

export const secretsSchema = z.strictObject({
  /** Deadline of one member's share store or release (secret create, decrypt), ms. @default 2000 */
  shardTimeoutMs: z.number().int().positive().default(2000),
  /** Interval of the background delivery of shares members missed, ms. @default 5000 */
  retryIntervalMs: z.number().int().positive().default(5000),
});

export const sessionsSchema = z.strictObject({
  /** Deadline of one member's session grant, ms. @default 2000 */
  grantTimeoutMs: z.number().int().positive().default(2000),
});

export const permitsSchema = z.strictObject({
  /** Permit lifetime, ms (PERMITS.md: 15 minutes). @default 900000 */
  ttlMs: z.number().int().positive().default(900_000),
  /**
   * How GET /web2/confirm behaves in a browser: `link` consumes the permit on the GET (the emailed
   * link works in one click); `button` shows a page whose button POSTs the confirmation, so a mail
   * scanner that prefetches links consumes nothing. @default "link"
   */
  confirmMode: z.enum(['link', 'button']).default('link'),
  /**
   * Accept the legacy transfer/delegate request (4-part data, payload as an object, no requestId) for
   * migration; its requestId is derived from the signed data. Off: it is a 400 (PERMITS.md). @default false
   */
  acceptLegacy: z.boolean().default(false),
  /** While a consumed permit has not reached every member, how often it is delivered again, ms. @default 2000 */
  redeliverIntervalMs: z.number().int().positive().default(2000),
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
  replication: replicationSchema.default(replicationSchema.parse({})),
  mail: mailSchema.default(mailSchema.parse({})),
  log: logSchema.default(logSchema.parse({})),
  admin: adminSchema.default(adminSchema.parse({})),
  accounts: accountsSchema.default(accountsSchema.parse({})),
  sessions: sessionsSchema.default(sessionsSchema.parse({})),
  secrets: secretsSchema.default(secretsSchema.parse({})),
  permits: permitsSchema.default(permitsSchema.parse({})),
  /** Enabled EVM chains. @default Base (8453) */
  chains: z.array(chainSchema).default(DEFAULT_CHAINS),
});

/** A validated, frozen node configuration. Paths are absolute. */
export type NodeConfig = z.infer<typeof nodeConfigSchema>;

/** Config paths whose values are secrets: shown as "[redacted]" when printed. */
export const SECRET_CONFIG_PATHS = ['mail.smtp.pass', 'admin.token'] as const;
