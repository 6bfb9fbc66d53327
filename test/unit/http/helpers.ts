import { afterEach } from 'vitest';
import { captureLogger } from '../../utils/log.ts';
/**
 * Test fixtures for the HTTP app: the real app bound on 127.0.0.1:0 with stub core services
 * injected through deps, a capturing logger and a fresh metrics registry.
 */
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { createHttpApp, listenHttp, type HttpApp, type HttpAppOptions, type HttpServerHandle } from '../../../src/http/index.ts';
import type { MemberAdmin } from '../../../src/core/secrets/recovery.ts';
import { createMetrics, type NodeMetrics } from '../../../src/metrics/index.ts';
import { DEFAULT_CHAINS } from '../../../src/config/schema.ts';
import type { ClusterHealth, HealthSource, Readiness } from '../../../src/core/health/index.ts';
import type { ProbeService } from '../../../src/core/probe/index.ts';
import type { ReplicatedRecord } from '../../../src/core/replication/record.ts';
import type { WriteReport } from '../../../src/core/replication/ports.ts';
import type { AccountsService } from '../../../src/core/accounts/types.ts';
import type { SessionsService } from '../../../src/core/sessions/types.ts';
import type { PublicKeyView, SecretFailure, SecretView, SecretsService } from '../../../src/core/secrets/types.ts';
import type { PayloadsService } from '../../../src/core/payloads/types.ts';
import type { FilesService } from '../../../src/core/files/types.ts';
import type { UsageReport, UsageService } from '../../../src/core/usage/types.ts';
import { AppError } from '../../../src/errors/index.ts';
import type { PermitConfirmation, PermitPreview, PermitsService } from '../../../src/core/permits/types.ts';

export const NODE_ADDRESS = '0x1111111111111111111111111111111111111111';
export const ADMIN_TOKEN = 'admin-token-s3cret';

/** A healthy 3-of-2 cluster as seen from slot 0. */
export function healthyCluster(): ClusterHealth {
  const entry = (slot: number, reachable: boolean) => ({
    slot,
    nodeId: `node-${slot}`,
    nodeAddress: `0x${String(slot).repeat(40)}`,
    peerId: `12D3KooPeer${slot}`,
    reachable,
    self: slot === 0,
  });
  return {
    clusterId: 'test-cluster',
    size: 3,
    threshold: 2,
    reachable: 3,
    slot0Reachable: true,
    status: 'ok',
    problems: [],
    dataSafety: { members: [], secretsAtRisk: 0, secretsLost: 0, secretsLostAcknowledged: 0, atRisk: [], lost: [], exact: true, checkedAt: null },
    clusterMap: { '0': entry(0, true), '1': entry(1, true), '2': entry(2, true) },
    equivocating: [],
  };
}

/** A HealthSource whose answers a test can change. */
export interface StubHealth extends HealthSource {
  cluster: ClusterHealth;
  ready: Readiness;
  /** When set, clusterHealth() throws it (a bug in a core service). */
  failure: Error | undefined;
}

export function stubHealth(): StubHealth {
  return {
    nodeAddress: NODE_ADDRESS,
    build: { version: '1.2.3', commit: 'a'.repeat(40) },
    cluster: healthyCluster(),
    ready: { ready: true, checks: { started: true, quorumReachable: true, caughtUp: true, ownLogKnown: true, sharesHeld: true } },
    failure: undefined,
    clusterHealth() {
      if (this.failure) throw this.failure;
      return this.cluster;
    },
    readiness() {
      return this.ready;
    },
  };
}

/** A ProbeService over a map; `writeError` makes write() reject. */
export interface StubProbe extends ProbeService {
  records: Map<string, ReplicatedRecord>;
  writes: Array<{ key: string; note: string }>;
  writeError: Error | undefined;
}

export function stubProbe(): StubProbe {
  let seq = 0;
  return {
    records: new Map(),
    writes: [],
    writeError: undefined,
    async write(key, note): Promise<WriteReport> {
      this.writes.push({ key, note });
      if (this.writeError) throw this.writeError;
      seq += 1;
      const record: ReplicatedRecord = {
        kind: 'probe',
        key,
        origin: NODE_ADDRESS,
        seq,
        hlc: [1_700_000_000_000, 0],
        body: { note, writtenAt: 1_700_000_000_000 },
        sig: '0x00',
      };
      this.records.set(key, record);
      return {
        record,
        acked: [NODE_ADDRESS, '0x2222222222222222222222222222222222222222'],
        failed: [{ nodeAddress: '0x3333333333333333333333333333333333333333', slot: 2, error: 'timeout' }],
      };
    },
    async read(key) {
      return this.records.get(key);
    },
  };
}

/** The principal every {@link stubAccounts} answer names. */
export const PRINCIPAL_ID = 'principal-0001';
/** Hex of the UTF-8 bytes of `alice@example.com`. */
export const EMAIL_HEX = '616c696365406578616d706c652e636f6d';

/** What a recording stub keeps: every call in order, and an error to throw instead of answering. */
export interface CallLog<S> {
  calls: Array<{ method: keyof S; args: unknown[] }>;
  /** When set, every method records its call, then throws it. */
  failure: Error | undefined;
}

/** The answer function of a recording stub: record the call, then throw `failure` or resolve `value`. */
function recorder<S>(log: CallLog<S>) {
  return async <T>(method: keyof S, args: unknown[], value: T): Promise<T> => {
    log.calls.push({ method, args });
    if (log.failure) throw log.failure;
    return value;
  };
}

/** An AccountsService that records every call and answers canned values (or throws `failure`). */
export interface StubAccounts extends AccountsService, CallLog<AccountsService> {
  /** What register() answers for `created` (201 vs 200). */
  created: boolean;
}

export function stubAccounts(): StubAccounts {
  const stub: StubAccounts = {
    calls: [],
    failure: undefined,
    created: true,
    register: (...args) => answer('register', args, { created: stub.created, principalId: PRINCIPAL_ID, message: 'Check your email for a code' }),
    verifyEmail: (...args) => answer('verifyEmail', args, { principalId: PRINCIPAL_ID, emailVerified: true }),
    resendOtp: (...args) => answer('resendOtp', args, { message: 'If the account exists, a code was sent' }),
    forgotPassword: (...args) => answer('forgotPassword', args, { message: 'If the account exists, a reset code was sent' }),
    resetPassword: (...args) => answer('resetPassword', args, { message: 'Password updated' }),
    verifyCredentials: (...args) => answer('verifyCredentials', args, { valid: true, principalId: PRINCIPAL_ID }),
    registerKey: (...args) =>
      answer('registerKey', args, {
        principalId: PRINCIPAL_ID,
        emailHex: EMAIL_HEX,
        nodeRegistrationStatus: 'partial',
        failedNodes: ['0x3333333333333333333333333333333333333333'],
        nodeErrors: { '0x3333333333333333333333333333333333333333': 'timeout' },
      }),
    retryNodeRegistration: (...args) =>
      answer('retryNodeRegistration', args, { principalId: PRINCIPAL_ID, nodeRegistrationStatus: 'complete', failedNodes: [], message: 'Key stored on every member' }),
    nodeRegistrationStatus: (...args) =>
      answer('nodeRegistrationStatus', args, {
        principalId: PRINCIPAL_ID,
        nodeRegistrationStatus: 'partial',
        successNodes: [NODE_ADDRESS, '0x2222222222222222222222222222222222222222'],
        failedNodes: ['0x3333333333333333333333333333333333333333'],
      }),
    requestDeletion: (...args) => answer('requestDeletion', args, { message: 'If the details match, a code was sent' }),
    confirmDeletion: (...args) => answer('confirmDeletion', args, { success: true, message: 'Account deleted' }),
    findByEmail: (...args) => answer('findByEmail', args, { principalId: PRINCIPAL_ID, emailHex: EMAIL_HEX }),
  };
  const answer = recorder(stub);
  return stub;
}

/** The session wallet every {@link stubSessions} answer names. */
export const SESSION_ADDRESS = '0x5e55105e55105e55105e55105e55105e55105e55';
/** The session grant digest {@link stubSessions} answers. */
export const SESSION_TOKEN = `0x${'ab'.repeat(32)}`;
/** The member signatures {@link stubSessions} answers. */
export const QUORUM_PROOF = [
  { nodeAddress: NODE_ADDRESS, signature: `0x${'11'.repeat(65)}` },
  { nodeAddress: '0x2222222222222222222222222222222222222222', signature: `0x${'22'.repeat(65)}` },
];
/** The expiry every stub answers, ISO-8601 UTC. */
export const EXPIRES_AT = '2023-11-14T22:28:20.000Z';

/** A SessionsService that records every call and answers canned values (or throws `failure`). */
export interface StubSessions extends SessionsService, CallLog<SessionsService> {}

export function stubSessions(): StubSessions {
  const stub: StubSessions = {
    calls: [],
    failure: undefined,
    createSession: (...args) =>
      answer('createSession', args, {
        sessionToken: SESSION_TOKEN,
        sessionAddress: SESSION_ADDRESS,
        quorumProof: QUORUM_PROOF,
        expiresAt: EXPIRES_AT,
      }),
    sessionStatus: (...args) => answer('sessionStatus', args, { active: true, principalId: PRINCIPAL_ID, sessionAddress: SESSION_ADDRESS, expiresAt: EXPIRES_AT }),
  };
  const answer = recorder(stub);
  return stub;
}

/** The secret every {@link stubSecrets} and {@link stubPayloads} answer names. */
export const SECRET_ID = 7;
/** An EVM chain id the stubs answer. */
export const CHAIN_ID = 8453;
/** Base64 of a 1184-byte ML-KEM-768 public key (all 0x07). */
export const PUBLIC_KEY_B64 = Buffer.alloc(1184, 7).toString('base64');

/** What {@link stubSecrets} lists. */
export const SECRET_VIEW: SecretView = {
  secretId: SECRET_ID,
  ownerPrincipalId: PRINCIPAL_ID,
  delegatePrincipalId: null,
  isSyncing: false,
  clusterId: 'test-cluster',
  secretType: 1,
  publicKeyCid: PUBLIC_KEY_B64,
  createdAt: '2023-11-14T22:13:20.000Z',
  updatedAt: '2023-11-14T22:13:20.000Z',
};

/** What {@link stubSecrets} lists as still propagating. */
export const SECRET_FAILURE: SecretFailure = {
  secretId: SECRET_ID,
  stage: 'share-delivery',
  failedNodeAddresses: ['0x3333333333333333333333333333333333333333'],
  nodeErrors: { '0x3333333333333333333333333333333333333333': 'timeout' },
  retryCount: 1,
  createdAt: '2023-11-14T22:13:20.000Z',
  lastAttemptAt: '2023-11-14T22:14:20.000Z',
};

/** What both public-key methods of {@link stubSecrets} answer. */
export const PUBLIC_KEY_VIEW: PublicKeyView = { chainId: CHAIN_ID, secretId: SECRET_ID, publicKey: PUBLIC_KEY_B64 };

/** A SecretsService that records every call and answers canned values (or throws `failure`). */
export interface StubSecrets extends SecretsService, CallLog<SecretsService> {}

export function stubSecrets(): StubSecrets {
  const stub: StubSecrets = {
    calls: [],
    failure: undefined,
    createSecret: (...args) => answer('createSecret', args, { secretId: SECRET_ID, clusterId: 'test-cluster', publicKeyCid: PUBLIC_KEY_B64, status: 'propagating' }),
    listSecrets: (...args) => answer('listSecrets', args, [SECRET_VIEW]),
    setDelegate: (...args) => answer('setDelegate', args, { secretId: SECRET_ID }),
    publicKey: (...args) => answer('publicKey', args, PUBLIC_KEY_VIEW),
    publicKeySigned: (...args) => answer('publicKeySigned', args, PUBLIC_KEY_VIEW),
    listFailures: (...args) => answer('listFailures', args, [SECRET_FAILURE]),
    retryFailure: (...args) =>
      answer('retryFailure', args, { message: 'Share delivered to every member', stage: 'share-delivery', failedNodeAddresses: [], retryCount: 2 }),
  };
  const answer = recorder(stub);
  return stub;
}

/** The `cifer` {@link stubPayloads} answers (1104 bytes, hex). */
export const CIFER_HEX = `0x${'cc'.repeat(1104)}`;

/** A PayloadsService that records every call and answers canned values (or throws `failure`). */
export interface StubPayloads extends PayloadsService, CallLog<PayloadsService> {}

export function stubPayloads(): StubPayloads {
  const stub: StubPayloads = {
    calls: [],
    failure: undefined,
    encrypt: (...args) =>
      answer('encrypt', args, { chainId: CHAIN_ID, secretId: SECRET_ID, outputFormat: args[1], cifer: CIFER_HEX, encryptedMessage: '0x68656c6c6f' }),
    decrypt: (...args) => answer('decrypt', args, { decryptedMessage: 'hello_world' }),
  };
  const answer = recorder(stub);
  return stub;
}

/** The permitId {@link stubPermits} answers. */
export const PERMIT_ID = '3f2b8c1e-5d4a-4e6f-9a7b-1c2d3e4f5a6b';

/** What confirmPermit() of {@link stubPermits} answers by default: a transfer consumed on a quorum. */
export const PERMIT_CONFIRMATION: PermitConfirmation = {
  status: 'consumed',
  permitId: PERMIT_ID,
  action: 'transfer',
  result: { secretId: SECRET_ID, newOwnerPrincipalId: 'principal-0002', delegatePrincipalId: null },
};

/** What previewPermit() of {@link stubPermits} answers by default: that transfer, not yet confirmed. */
export const PERMIT_PREVIEW: PermitPreview = {
  permitId: PERMIT_ID,
  action: 'transfer',
  status: 'pending',
  expiresAt: '2026-01-01T00:15:00.000Z',
  summary: `Transfer secret ${SECRET_ID} to principal principal-0002`,
};

/** A PermitsService that records every call and answers canned values (or throws `failure`). */
export interface StubPermits extends PermitsService, CallLog<PermitsService> {
  /** What confirmPermit() answers. @default PERMIT_CONFIRMATION */
  confirmation: PermitConfirmation;
  /** What previewPermit() answers. @default PERMIT_PREVIEW */
  preview: PermitPreview;
}

export function stubPermits(): StubPermits {
  const stub: StubPermits = {
    calls: [],
    failure: undefined,
    confirmation: PERMIT_CONFIRMATION,
    preview: PERMIT_PREVIEW,
    requestPermit: (...args) =>
      answer('requestPermit', args, { created: true, permitId: PERMIT_ID, action: args[0].action, clusterId: 'cluster-test', expiresAt: '2026-01-01T00:15:00.000Z', message: 'Permit created' }),
    confirmPermit: (...args) => answer('confirmPermit', args, stub.confirmation),
    previewPermit: (...args) => answer('previewPermit', args, stub.preview),
  };
  const answer = recorder(stub);
  return stub;
}

/** Files stub: no jobs exist and uploads are refused (the files routes are tested end to end). */
export function stubFiles(): FilesService {
  const none = (): Promise<never> => Promise.reject(new AppError('NOT_FOUND', 'Job not found'));
  return {
    maxFileBytes: 1024,
    maxUploadBytes: () => 1024,
    assertCapacity: () => undefined,
    createSpool: () => Promise.reject(new AppError('OVERLOADED', 'No spool in unit tests')),
    startEncrypt: none,
    startDecrypt: none,
    startDecryptExisting: none,
    holds: () => Promise.resolve(false),
    status: none,
    download: none,
    remove: none,
    list: () => Promise.resolve([]),
  };
}

/** What report() of {@link stubUsage} answers: the default plan, a little used. */
export const USAGE_REPORT: UsageReport = {
  userId: PRINCIPAL_ID,
  userType: 'web2',
  planId: 'free',
  cycleType: 'monthly',
  periodStart: '1698796800000',
  periodEnd: '1701388800000',
  encryption: { limit: 2 ** 30, used: 2 ** 28, remaining: 3 * 2 ** 28, count: 3, requestLimit: 100, rateLimit: 10, limitGB: 1, usedGB: 0.25, remainingGB: 0.75 },
  decryption: { limit: 2 ** 30, used: 0, remaining: 2 ** 30, count: 0, requestLimit: 100, rateLimit: 10, limitGB: 1, usedGB: 0, remainingGB: 1 },
};

/** A UsageService that records every call and answers canned values (or throws `failure`). */
export interface StubUsage extends UsageService, CallLog<UsageService> {}

export function stubUsage(): StubUsage {
  const stub: StubUsage = {
    calls: [],
    failure: undefined,
    report: (...args) => answer('report', args, USAGE_REPORT),
    assignPlan: (...args) => answer('assignPlan', args, { principalId: args[0], planId: args[1], assigned: true, assignedAt: '2023-11-14T22:13:20.000Z' }),
    planOf: (...args) => answer('planOf', args, { principalId: args[0], planId: 'free', assigned: false, assignedAt: null }),
  };
  const answer = recorder(stub);
  return stub;
}

/** A running app plus everything a test inspects. */
export interface TestServer {
  url: string;
  /** The app the server runs (e.g. to list its routes). */
  app: HttpApp;
  health: StubHealth;
  probe: StubProbe;
  accounts: StubAccounts;
  sessions: StubSessions;
  secrets: StubSecrets;
  payloads: StubPayloads;
  permits: StubPermits;
  usage: StubUsage;
  metrics: NodeMetrics;
  /** Every log line written so far, raw. */
  logText(): string;
  /** Every log line written so far, parsed. */
  logLines(): Array<Record<string, unknown>>;
  /** Move the rate limits' clock forward (it only moves when told to). */
  advance(ms: number): void;
  server: HttpServerHandle;
}

/** A member admin answering one active slot (the real one is tested in test/integration/share-recovery.test.ts). */
function stubMembers(): MemberAdmin {
  const view = { slot: 0, nodeId: 'node-0', nodeAddress: '0x' + '00'.repeat(20), status: 'active' as const, since: null, reachable: true, shares: null };
  return {
    list: async () => [view],
    markRecovering: async () => ({ ...view, status: 'recovering' as const, since: 1 }),
    dataSafety: async () => healthyCluster().dataSafety,
    acknowledgeLoss: async (items) => ({ acknowledged: [], notLost: items ?? [] }),
  };
}

/** Start the real app on 127.0.0.1:0. Close it with `server.close()` (see {@link useServers}). */
export async function startTestServer(overrides: Partial<HttpAppOptions> = {}): Promise<TestServer> {
  const log = captureLogger();
  const logger = log.logger;
  const metrics = createMetrics({ processMetrics: false });
  const health = stubHealth();
  const probe = stubProbe();
  const accounts = stubAccounts();
  const sessions = stubSessions();
  const secrets = stubSecrets();
  const payloads = stubPayloads();
  const permits = stubPermits();
  const usage = stubUsage();
  // Ticks on every call, so two requests see two different serverTimes.
  let now = 1_700_000_000_000;
  const clock = () => (now += 1);
  let monotonic = 0;
  const app = createHttpApp(
    { corsOrigins: ['https://app.example'], bodyLimitBytes: 1024, trustProxy: false, chains: DEFAULT_CHAINS, adminToken: ADMIN_TOKEN, ...overrides },
    { logger, metrics, clock, health, probe, accounts, sessions, secrets, payloads, permits, files: stubFiles(), usage, members: stubMembers(), now: () => monotonic },
  );
  const server = await listenHttp(app, { host: '127.0.0.1', port: 0, requestTimeoutMs: 10_000 }, { logger });
  return {
    url: server.url,
    app,
    health,
    probe,
    accounts,
    sessions,
    secrets,
    payloads,
    permits,
    usage,
    metrics,
    logText: log.raw,
    logLines: log.lines,
    advance: (ms) => {
      monotonic += ms;
    },
    server,
  };
}

/**
 * Register an afterEach that closes every server this returns' `start` opened; call once per test file.
 */
export function useTestServers(): (overrides?: Partial<HttpAppOptions>) => Promise<TestServer> {
  const servers: TestServer[] = [];
  afterEach(async () => {
    for (let s = servers.pop(); s; s = servers.pop()) await s.server.close();
  });
  return async (overrides) => {
    const server = await startTestServer(overrides);
    servers.push(server);
    return server;
  };
}

/** Poll until `condition` holds (no fixed sleeps); fails after `timeoutMs`. */
export async function waitFor(condition: () => boolean | Promise<boolean>, timeoutMs = 2000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('waitFor: condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** A raw HTTP exchange (for what fetch cannot do: partial bodies, lying Content-Length). */
export interface RawResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/**
 * Send `chunks` one by one without ending the request unless `end` is set, and resolve with the
 * response as soon as it is complete — so a test can show the server answered before the upload did.
 */
export function rawRequest(
  url: string,
  options: { method: string; path: string; headers: Record<string, string>; chunks: string[]; end: boolean },
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(new URL(options.path, url), { method: options.method, headers: options.headers, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => {
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body });
        req.destroy();
      });
    });
    // A reset after the response arrived (the server closed while we were still sending) is
    // expected and ignored: the promise is already settled. Before it, it fails the test.
    req.on('error', reject);
    for (const chunk of options.chunks) req.write(chunk);
    if (options.end) req.end();
  });
}
