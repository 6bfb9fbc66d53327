/**
 * `createClient`: a coordinator's API as typed calls, with the signing done for the caller — the
 * client of docs/client.md. It speaks the wire contract of docs/http.md, as the deployed JavaScript
 * client (cifer-sdk) does: the same routes, bodies and signed strings (./forms.ts).
 *
 * Web2: `register` → `verifyEmail` → `login` (the account's Ed25519 key, derived from the password,
 * is registered if it is not yet, and signs a new session whose wallet key lives in memory, or in
 * the file the CLI keeps) → `createSecret`, `listSecrets`, `encrypt`, `decrypt`, `encryptFile`,
 * `decryptFile`. Web3: the same payload and file calls signed by a wallet (`wallet` option), with the
 * chain's latest block.
 *
 * Every signed call signs a fresh string. One refused as stale (a block too old, a timestamp outside
 * the window: a slow call, or this machine's clock off the server's) is signed again with a fresh
 * block, or with the server's time, and sent once more.
 */
import { toHex, zeroize } from '../crypto/bytes.ts';
import { ed25519PublicKeyOf, signEd25519 } from '../crypto/ed25519.ts';
import { derivePasswordKeySeed } from '../crypto/password.ts';
import { addressOfPrivateKey, generatePrivateKey } from '../crypto/secp256k1.ts';
import { ClientError, isStaleRefusal } from './errors.ts';
import { fileSize, multipartUpload, saveBody, type ProgressListener } from './files.ts';
import { dataOf, keyRegistrationMessage, sessionMessage } from './forms.ts';
import { createTransport, type RequestSpec, type RetryOptions, type RetryPolicy, type Transport } from './http.ts';
import type { KeyRegistrationResult } from '../core/accounts/types.ts';
import type { JobView } from '../core/files/types.ts';
import type { SecretView } from '../core/secrets/types.ts';
import { createSessionSigner, createWalletSigner, measureClockOffset, type DataSigner, type WalletOptions, type Web2Session } from './signers.ts';

/** The label of the password-derived account key (./forms.ts has the strings it signs). */
export const ACCOUNT_KEY_LABEL = 'quorumkeep-client/account-ed25519/v1';

/** Options of {@link createClient}. */
export interface ClientOptions {
  /** A coordinator's base URL, e.g. `http://127.0.0.1:3010`. */
  url: string;
  /** Sign as this Web2 session (e.g. one stored by `quorumkeep login`); `login` sets one too. */
  session?: Web2Session;
  /** Sign as this Web3 wallet instead. */
  wallet?: WalletOptions;
  /** Deadline of each request until its answer, ms (uploads have none). @default 30000 */
  timeoutMs?: number;
  retry?: RetryOptions;
  /** How often a file job's status is asked while waiting, ms. @default 1000 */
  pollIntervalMs?: number;
}

/** Dependencies of {@link createClient}, for tests. */
export interface ClientDeps {
  /** @default globalThis.fetch */
  fetch?: typeof fetch;
  /** @default Date.now */
  clock?: () => number;
  /** @default setTimeout */
  sleep?: (ms: number) => Promise<void>;
}

/** `POST /web2/auth/register-key`'s answer: `nodeRegistrationStatus` `complete`, `partial` (sessions work) or `pending`. */
export type KeyRegistration = KeyRegistrationResult;

/** A new secret. */
export interface CreatedSecret {
  secretId: number;
  clusterId: string;
  /** `complete` or `propagating`. */
  status: string;
  /** Its ML-KEM-768 public key, base64 (`publicKeyCid` on the wire). */
  publicKey: string;
}

/** A row of `POST /web2/secrets`. */
export type SecretInfo = SecretView;

/** An encrypted payload: what `decrypt` takes back. */
export interface EncryptedPayload {
  chainId: number;
  secretId: number;
  /** The ML-KEM ciphertext and GCM tag (1104 bytes) in `outputFormat`. */
  cifer: string;
  /** The GCM ciphertext, as long as the plaintext, in `outputFormat`. */
  encryptedMessage: string;
  outputFormat: 'hex' | 'base64';
}

/** What `decrypt` takes: an {@link EncryptedPayload}, or its parts. */
export interface DecryptInput {
  secretId: number;
  cifer: string;
  encryptedMessage: string;
  /** @default `outputFormat` when given, else "hex" */
  inputFormat?: 'hex' | 'base64';
  /** An {@link EncryptedPayload}'s format. */
  outputFormat?: 'hex' | 'base64';
}

/** A job as `GET /jobs/:id/status` shows it. */
export type JobInfo = JobView;

/** Options of the file calls. */
export interface FileCallOptions {
  secretId: number;
  /** The file to send. */
  path: string;
  /** Where to write the result (mode 0600; never a partial one). */
  out: string;
  /** The name the server records and gives the result. @default the file's base name */
  name?: string;
  onProgress?: ProgressListener;
  /** Longest wait for the job, ms. @default 1800000 */
  jobTimeoutMs?: number;
  signal?: AbortSignal;
}

/** What a file call did. */
export interface FileCallResult {
  jobId: string;
  job: JobInfo;
  /** Where the result was written. */
  out: string;
  /** Bytes written there. */
  bytes: number;
}

/** A client of one coordinator. */
export interface QuorumkeepClient {
  /** The coordinator's base URL. */
  readonly url: string;
  /** The Web2 session signing now, if any (its key is the client's: `close` zeroes it). */
  readonly session: Web2Session | undefined;

  /** `POST /web2/auth/register`: a code is mailed. `created` false when an unverified registration was renewed. */
  register(email: string, password: string): Promise<{ principalId: string; created: boolean; message: string }>;
  /** `POST /web2/auth/verify-email` with the mailed code. */
  verifyEmail(email: string, otp: string): Promise<{ principalId: string; emailVerified: boolean }>;
  /** `POST /web2/auth/resend-otp`: another code, after the 60 s cooldown. */
  resendOtp(email: string): Promise<{ message: string }>;
  /** `GET /web2/principal/byEmail`. */
  principalByEmail(email: string): Promise<{ principalId: string; emailHex: string }>;
  /** `POST /web2/auth/register-key` for the Ed25519 key of `seed` (32 bytes; not kept). */
  registerKey(input: { principalId: string; password: string; seed: Uint8Array }): Promise<KeyRegistration>;
  /**
   * `POST /web2/session`: a new session wallet, vouched for by the Ed25519 key of `seed` (32 bytes;
   * not kept). The session then signs this client's calls.
   */
  openSession(input: { principalId: string; seed: Uint8Array; ttlMs?: number }): Promise<Web2Session>;
  /**
   * Log in with email and password: the account key is derived from the password (argon2id, salted
   * with the principal id; docs/client.md, "The account key"), registered when the account has none,
   * and opens a session. Only the session's key is kept; the account key is zeroed.
   */
  login(input: { email: string; password: string; ttlMs?: number }): Promise<Web2Session>;
  /** Sign with this session from now on (the client takes its key: `close` zeroes it). */
  useSession(session: Web2Session): void;
  /** `POST /web2/session/status`: `SESSION_INACTIVE` (401) when it ended. */
  sessionStatus(): Promise<{ active: boolean; principalId: string; sessionAddress: string; expiresAt: string }>;

  /** `POST /web2/secret` (Web2). */
  createSecret(): Promise<CreatedSecret>;
  /** `POST /web2/secrets`: the session's principal's secrets, owned or delegated (Web2). */
  listSecrets(): Promise<SecretInfo[]>;

  /** `POST /encrypt-payload`. */
  encrypt(input: { secretId: number; plaintext: string; outputFormat?: 'hex' | 'base64' }): Promise<EncryptedPayload>;
  /** `POST /decrypt-payload`: the plaintext. Takes `encrypt`'s answer as it is (its `outputFormat` is the input format). */
  decrypt(input: DecryptInput): Promise<string>;

  /** `POST /encrypt-file`, wait for the job, download the `.cifer` to `out`. */
  encryptFile(options: FileCallOptions): Promise<FileCallResult>;
  /**
   * `POST /decrypt-file` with a `.cifer`, wait for the job, download the plaintext to `out`, then
   * delete the job (its sealed result would otherwise stay on the coordinator for 3 hours).
   */
  decryptFile(options: FileCallOptions & { keepJob?: boolean }): Promise<FileCallResult>;
  /** `GET /jobs/:id/status`. */
  jobStatus(jobId: string): Promise<JobInfo>;
  /** Poll a job until it is `completed`; `JOB_FAILED` when it fails or expires, `TIMEOUT` past `timeoutMs`. */
  waitForJob(jobId: string, options?: { onProgress?: ProgressListener; timeoutMs?: number; signal?: AbortSignal }): Promise<JobInfo>;
  /** `POST /jobs/:id/download` (signed) to `out`; the bytes written. */
  download(jobId: string, options: { secretId: number; out: string; onProgress?: ProgressListener; signal?: AbortSignal }): Promise<number>;
  /** `POST /jobs/:id/delete`. */
  deleteJob(jobId: string, secretId: number): Promise<void>;

  /** Zero the session's or the wallet's private key; the client signs nothing after. */
  close(): void;
}

const DEFAULT_POLL_INTERVAL_MS = 1_000;
const DEFAULT_JOB_TIMEOUT_MS = 30 * 60_000;
const ENDED_JOB = new Set(['failed', 'expired']);

function sleeper(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function expectField<T>(value: T | undefined, route: string, field: string): T {
  if (value === undefined || value === null) throw new ClientError('BAD_ANSWER', `${route}: the answer has no ${field}`);
  return value;
}

/** Create a client of the coordinator at `options.url`. */
export function createClient(options: ClientOptions, deps: ClientDeps = {}): QuorumkeepClient {
  const fetchFn = deps.fetch ?? globalThis.fetch;
  const clock = deps.clock ?? Date.now;
  const sleep = deps.sleep ?? sleeper;
  const http: Transport = createTransport({ url: options.url, ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}), ...(options.retry ? { retry: options.retry } : {}) }, { fetch: fetchFn, sleep });
  const pollIntervalMs = options.pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS;

  let session: Web2Session | undefined;
  let signer: DataSigner | undefined;

  const serverTime = async (): Promise<number> => {
    const health = await http.json<{ serverTime?: number }>({ method: 'GET', path: '/healthz' });
    return expectField(health.serverTime, 'GET /healthz', 'serverTime');
  };

  /** The chain's RPC URL: the option, else the coordinator's `configurations.chains` (spec API.md, "Web3 principals"). */
  let rpcUrl = options.wallet?.rpcUrl;
  const latestBlock = async (): Promise<number> => {
    const chainId = options.wallet?.chainId;
    if (rpcUrl === undefined) {
      const health = await http.json<{ configurations?: { chains?: Array<{ chainId: number; rpcUrl?: string }> } }>({ method: 'GET', path: '/healthz' });
      rpcUrl = health.configurations?.chains?.find((c) => c.chainId === chainId)?.rpcUrl;
      if (rpcUrl === undefined) throw new ClientError('CHAIN_RPC', `chain ${chainId}: the coordinator lists no RPC URL for it; pass the wallet's rpcUrl`);
    }
    let answer: { result?: unknown; error?: { message?: string } };
    try {
      const response = await fetchFn(rpcUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_blockNumber', params: [] }),
        signal: AbortSignal.timeout(options.timeoutMs ?? 30_000),
      });
      answer = (await response.json()) as typeof answer;
    } catch (err) {
      // The RPC URL may carry a provider's key: it is not repeated in the message.
      throw new ClientError('CHAIN_RPC', `chain ${chainId}: eth_blockNumber failed (${err instanceof Error ? err.name : 'error'})`, { cause: err });
    }
    if (typeof answer.result !== 'string' || !/^0x[0-9a-f]+$/i.test(answer.result)) {
      throw new ClientError('CHAIN_RPC', `chain ${chainId}: eth_blockNumber answered ${answer.error?.message ? `an error: ${answer.error.message}` : 'no block number'}`);
    }
    return Number(BigInt(answer.result));
  };

  if (options.session && options.wallet) throw new ClientError('INVALID_INPUT', 'give a session or a wallet, not both');
  if (options.wallet) signer = createWalletSigner(options.wallet, { latestBlock });
  if (options.session) adopt(options.session);

  function adopt(next: Web2Session): void {
    signer?.dispose();
    session = next;
    signer = createSessionSigner(next, { clock, serverTime });
  }

  function requireSigner(web2Only = false): DataSigner {
    if (!signer) throw new ClientError('NO_SIGNER', 'no session: log in first (or give the client a session or a wallet)');
    if (web2Only && !session) throw new ClientError('NO_SIGNER', 'this call is for Web2 sessions: a wallet creates its secrets on chain');
    return signer;
  }

  /**
   * Sign `build(fresh)` and send it; a refusal as stale is signed again with a renewed freshness and
   * sent once more. `send` is given the signed pair each time.
   */
  async function signed<T>(build: (s: DataSigner, fresh: number) => string, send: (pair: { data: string; signature: string }) => Promise<T>, web2Only = false): Promise<T> {
    const s = requireSigner(web2Only);
    const first = await s.fresh();
    const sign = (fresh: number) => {
      const data = build(s, fresh);
      return { data, signature: s.sign(data) };
    };
    try {
      return await send(sign(first!));
    } catch (err) {
      if (!isStaleRefusal(err)) throw err;
      const renewed = await s.fresh({ renew: true }).catch(() => undefined);
      if (renewed === undefined) throw err;
      return send(sign(renewed));
    }
  }

  const post = <T>(path: string, json: unknown, retry?: RetryPolicy, extra: Partial<RequestSpec> = {}) => http.json<T>({ method: 'POST', path, json, ...(retry ? { retry } : {}), ...extra });

  async function createSessionWith(principalId: string, seed: Uint8Array, ttlMs: number | undefined): Promise<Web2Session> {
    const wallet = generatePrivateKey();
    const sessionAddress = addressOfPrivateKey(wallet);
    const offset = { ms: session?.clockOffsetMs ?? 0 };
    const request = () => {
      const timestamp = String(clock() + offset.ms);
      const signature = toHex(signEd25519(seed, sessionMessage(principalId, timestamp, sessionAddress, ttlMs)));
      return { principalId, timestamp, signature, sessionAddress, ...(ttlMs !== undefined ? { ttl: ttlMs } : {}) };
    };
    try {
      let answer: { expiresAt?: string; sessionAddress?: string };
      try {
        answer = await post('/web2/session', request());
      } catch (err) {
        if (!isStaleRefusal(err)) throw err;
        offset.ms = await measureClockOffset({ clock, serverTime });
        answer = await post('/web2/session', request());
      }
      const expiresAt = Date.parse(expectField(answer.expiresAt, 'POST /web2/session', 'expiresAt'));
      const created: Web2Session = { principalId, sessionAddress, privateKey: wallet, expiresAt, clockOffsetMs: offset.ms };
      adopt(created);
      return created;
    } catch (err) {
      zeroize(wallet);
      throw err;
    }
  }

  const client: QuorumkeepClient = {
    get url() {
      return http.url;
    },
    get session() {
      return session;
    },

    async register(email, password) {
      // A 503 OVERLOADED comes before anything is stored, or after it with the code still to mail:
      // either way the same request again is what docs/http.md asks for.
      const response = await http.raw({ method: 'POST', path: '/web2/auth/register', json: { email, password } });
      const body = (await response.json().catch(() => ({}))) as { principalId?: string; message?: string };
      return { principalId: expectField(body.principalId, 'POST /web2/auth/register', 'principalId'), created: response.status === 201, message: body.message ?? '' };
    },

    async verifyEmail(email, otp) {
      const body = await post<{ principalId?: string; emailVerified?: boolean }>('/web2/auth/verify-email', { email, otp });
      return { principalId: expectField(body.principalId, 'POST /web2/auth/verify-email', 'principalId'), emailVerified: body.emailVerified === true };
    },

    async resendOtp(email) {
      const body = await post<{ message?: string }>('/web2/auth/resend-otp', { email });
      return { message: body.message ?? '' };
    },

    async principalByEmail(email) {
      const body = await http.json<{ principalId?: string; emailHex?: string }>({ method: 'GET', path: `/web2/principal/byEmail?email=${encodeURIComponent(email)}` });
      return { principalId: expectField(body.principalId, 'GET /web2/principal/byEmail', 'principalId'), emailHex: body.emailHex ?? '' };
    },

    async registerKey({ principalId, password, seed }) {
      const publicKey = toHex(ed25519PublicKeyOf(seed));
      const signature = toHex(signEd25519(seed, keyRegistrationMessage(publicKey)));
      const body = await post<Partial<KeyRegistration>>('/web2/auth/register-key', { principalId, password, publicKey, signature });
      expectField(body.nodeRegistrationStatus, 'POST /web2/auth/register-key', 'nodeRegistrationStatus');
      return body as KeyRegistration;
    },

    openSession({ principalId, seed, ttlMs }) {
      return createSessionWith(principalId, seed, ttlMs);
    },

    async login({ email, password, ttlMs }) {
      const { principalId } = await client.principalByEmail(email);
      const seed = await derivePasswordKeySeed(password, ACCOUNT_KEY_LABEL, principalId);
      try {
        // The same key again is accepted and changes nothing; it also checks the password.
        await client.registerKey({ principalId, password, seed });
        return await createSessionWith(principalId, seed, ttlMs);
      } finally {
        zeroize(seed);
      }
    },

    useSession(next) {
      adopt(next);
    },

    async sessionStatus() {
      return signed(
        (s, fresh) => dataOf.sessionStatus(s.address, fresh),
        (pair) => post<{ active: boolean; principalId: string; sessionAddress: string; expiresAt: string }>('/web2/session/status', pair),
        true,
      );
    },

    async createSecret() {
      // The same signed string again answers the secret it created (docs/http.md, "One signed
      // string, one effect"): a 503, or an answer lost on the way, is retried with it.
      const body = await signed(
        (s, fresh) => dataOf.createSecret(s.address, fresh),
        (pair) => post<{ secretId?: number; clusterId?: string; status?: string; publicKeyCid?: string }>('/web2/secret', pair, 'idempotent'),
        true,
      );
      return {
        secretId: expectField(body.secretId, 'POST /web2/secret', 'secretId'),
        clusterId: body.clusterId ?? '',
        status: body.status ?? '',
        publicKey: body.publicKeyCid ?? '',
      };
    },

    async listSecrets() {
      const body = await signed(
        (s, fresh) => dataOf.listSecrets(session!.principalId, s.address, fresh),
        (pair) => post<{ secrets?: SecretInfo[] }>('/web2/secrets', pair),
        true,
      );
      return expectField(body.secrets, 'POST /web2/secrets', 'secrets');
    },

    async encrypt({ secretId, plaintext, outputFormat }) {
      const body = await signed(
        (s, fresh) => dataOf.encrypt(s.chainId, secretId, s.address, fresh, plaintext),
        (pair) => post<Partial<EncryptedPayload>>('/encrypt-payload', { ...pair, outputFormat: outputFormat ?? 'hex' }),
      );
      return {
        chainId: expectField(body.chainId, 'POST /encrypt-payload', 'chainId'),
        secretId: expectField(body.secretId, 'POST /encrypt-payload', 'secretId'),
        cifer: expectField(body.cifer, 'POST /encrypt-payload', 'cifer'),
        encryptedMessage: expectField(body.encryptedMessage, 'POST /encrypt-payload', 'encryptedMessage'),
        outputFormat: body.outputFormat ?? outputFormat ?? 'hex',
      };
    },

    async decrypt({ secretId, cifer, encryptedMessage, inputFormat, outputFormat }) {
      const body = await signed(
        (s, fresh) => dataOf.decrypt(s.chainId, secretId, s.address, fresh, encryptedMessage),
        (pair) => post<{ decryptedMessage?: string }>('/decrypt-payload', { cifer, ...pair, inputFormat: inputFormat ?? outputFormat ?? 'hex' }),
      );
      return expectField(body.decryptedMessage, 'POST /decrypt-payload', 'decryptedMessage');
    },

    encryptFile(opts) {
      return runFileJob('/encrypt-file', opts, true);
    },

    async decryptFile(opts) {
      const result = await runFileJob('/decrypt-file', opts, false);
      if (!opts.keepJob) await client.deleteJob(result.jobId, opts.secretId);
      return result;
    },

    async jobStatus(jobId) {
      const body = await http.json<{ job?: JobInfo }>({ method: 'GET', path: `/jobs/${encodeURIComponent(jobId)}/status` });
      return expectField(body.job, 'GET /jobs/:jobId/status', 'job');
    },

    async waitForJob(jobId, opts = {}) {
      const deadline = clock() + (opts.timeoutMs ?? DEFAULT_JOB_TIMEOUT_MS);
      for (;;) {
        const job = await client.jobStatus(jobId);
        opts.onProgress?.({ stage: 'job', jobId, status: job.status, progress: job.progress });
        if (job.status === 'completed') return job;
        if (ENDED_JOB.has(job.status)) throw new ClientError('JOB_FAILED', `job ${jobId} ${job.status}${job.error ? `: ${job.error}` : ''}`);
        if (clock() >= deadline) throw new ClientError('TIMEOUT', `job ${jobId} is still ${job.status} (${job.progress}%)`);
        if (opts.signal?.aborted) throw opts.signal.reason;
        await sleep(pollIntervalMs);
      }
    },

    async download(jobId, { secretId, out, onProgress, signal }) {
      const response = await signed(
        (s, fresh) => dataOf.download(s.chainId, secretId, s.address, fresh, jobId),
        (pair) => http.raw({ method: 'POST', path: `/jobs/${encodeURIComponent(jobId)}/download`, json: pair, ...(signal ? { signal } : {}) }),
      );
      return saveBody(response, out, onProgress);
    },

    async deleteJob(jobId, secretId) {
      await signed(
        (s, fresh) => dataOf.deleteJob(s.chainId, secretId, s.address, fresh, jobId),
        (pair) => post(`/jobs/${encodeURIComponent(jobId)}/delete`, pair),
      );
    },

    close() {
      signer?.dispose();
      signer = undefined;
      session = undefined;
    },
  };

  async function runFileJob(path: '/encrypt-file' | '/decrypt-file', opts: FileCallOptions, withSecretField: boolean): Promise<FileCallResult> {
    const size = await fileSize(opts.path);
    const started = await signed(
      (s, fresh) => dataOf.file(s.chainId, opts.secretId, s.address, fresh),
      (pair) =>
        http.json<{ jobId?: string }>({
          method: 'POST',
          path,
          // Unlimited: the answer comes once the whole file has been sent.
          timeoutMs: 0,
          body: () => {
            const fields: Array<[string, string]> = [...(withSecretField ? [['secretId', String(opts.secretId)] as [string, string]] : []), ['data', pair.data], ['signature', pair.signature]];
            const upload = multipartUpload(fields, { path: opts.path, size, ...(opts.name !== undefined ? { name: opts.name } : {}) }, opts.onProgress);
            return upload;
          },
          ...(opts.signal ? { signal: opts.signal } : {}),
        }),
    );
    const jobId = expectField(started.jobId, `POST ${path}`, 'jobId');
    const job = await client.waitForJob(jobId, { ...(opts.onProgress ? { onProgress: opts.onProgress } : {}), ...(opts.jobTimeoutMs !== undefined ? { timeoutMs: opts.jobTimeoutMs } : {}), ...(opts.signal ? { signal: opts.signal } : {}) });
    const bytes = await client.download(jobId, { secretId: opts.secretId, out: opts.out, ...(opts.onProgress ? { onProgress: opts.onProgress } : {}), ...(opts.signal ? { signal: opts.signal } : {}) });
    return { jobId, job, out: opts.out, bytes };
  }

  return client;
}
