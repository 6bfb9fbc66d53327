/**
 * What TypeScript sees of the vendored client (README.md): the part of its public API quorumkeep's
 * tests use, transcribed from src/ at the vendored commit — names, parameters and results as there,
 * members the tests do not use left out. Runtime is always src/ itself; these declarations only type
 * the calls.
 */

// src/types/common.ts
export type Address = `0x${string}`;
export type Hex = `0x${string}`;
export type ChainId = number;
export type JobStatus = 'pending' | 'processing' | 'completed' | 'failed' | 'expired';

export interface Log {
  address: Address;
  topics: Hex[];
  data: Hex;
  blockNumber: number;
  transactionHash: Hex;
  logIndex: number;
  transactionIndex: number;
}

export interface TransactionReceipt {
  transactionHash: Hex;
  blockNumber: number;
  contractAddress?: Address;
  status: 0 | 1;
  gasUsed: bigint;
  logs: Log[];
}

export interface SecretState {
  owner: Address;
  delegate: Address;
  isSyncing: boolean;
  clusterId: number;
  secretType: number;
  publicKeyCid: string;
}

export interface JobInfo {
  id: string;
  type: 'encrypt' | 'decrypt';
  status: JobStatus;
  progress: number;
  secretId: number;
  chainId: ChainId;
  createdAt: number;
  completedAt?: number;
  error?: string;
  resultFileName?: string;
  ttl: number;
}

// src/types/tx-intent.ts
export interface TxIntent {
  chainId: ChainId;
  to: Address;
  data: Hex;
  value?: bigint;
}

export interface TxExecutionResult {
  hash: Hex;
  waitReceipt: () => Promise<TransactionReceipt>;
}

export type TxExecutor = (intent: TxIntent) => Promise<TxExecutionResult>;

// src/types/adapters.ts
export interface SignerAdapter {
  getAddress(): Promise<Address>;
  signMessage(message: string): Promise<Hex>;
}

export interface ReadClient {
  getBlockNumber(chainId: ChainId): Promise<number>;
}

// src/types/config.ts
export interface ChainConfig {
  chainId: ChainId;
  name?: string;
  rpcUrl: string;
  secretsControllerAddress: Address;
  blockTimeMs?: number;
}

export interface DiscoveryResult {
  status: 'ok' | string;
  supportedChains: ChainId[];
  chains: ChainConfig[];
}

export interface CiferSdkConfig {
  blackboxUrl?: string;
  signer?: SignerAdapter;
  readClient?: ReadClient;
  discoveryCacheTtlMs?: number;
  fetch?: typeof fetch;
}

// src/index.ts
export interface CiferSdk {
  readonly blackboxUrl: string;
  readonly discovery: DiscoveryResult | null;
  readonly readClient: ReadClient;
  getControllerAddress(chainId: ChainId): Address;
  getRpcUrl(chainId: ChainId): string;
  getSupportedChainIds(): ChainId[];
}

export declare function createCiferSdk(config: CiferSdkConfig): Promise<CiferSdk>;

// src/internal/adapters/private-key-signer.ts
export declare class PrivateKeySignerAdapter implements SignerAdapter {
  constructor(privateKeyHex: string);
  getAddress(): Promise<Address>;
  signMessage(message: string): Promise<Hex>;
}

// src/internal/errors/index.ts
export declare class CiferError extends Error {
  readonly code: string;
  readonly cause?: Error;
  constructor(message: string, code: string, cause?: Error);
}
export declare class BlackboxError extends CiferError {
  readonly statusCode?: number;
  readonly endpoint?: string;
}
export declare class SecretNotReadyError extends BlackboxError {
  readonly secretId: bigint;
}
export declare class KeyManagementError extends CiferError {}
export declare class SecretNotFoundError extends KeyManagementError {
  readonly secretId: bigint;
}

// src/keyManagement/reads.ts
export interface ReadParams {
  chainId: ChainId;
  controllerAddress: Address;
  readClient: ReadClient;
}

export declare namespace keyManagement {
  function getSecret(params: ReadParams, secretId: bigint): Promise<SecretState>;
  function isSecretReady(params: ReadParams, secretId: bigint): Promise<boolean>;
}

// src/blackbox/payload.ts
export interface EncryptPayloadParams {
  chainId: ChainId;
  secretId: bigint | number;
  plaintext: string;
  signer: SignerAdapter;
  readClient: ReadClient;
  blackboxUrl: string;
  outputFormat?: 'hex' | 'base64';
  fetch?: typeof fetch;
}

export interface EncryptPayloadResult {
  cifer: string;
  encryptedMessage: string;
  chainId: ChainId;
  secretId: bigint;
  outputFormat: 'hex' | 'base64';
}

export interface DecryptPayloadParams {
  chainId: ChainId;
  secretId: bigint | number;
  encryptedMessage: string;
  cifer: string;
  signer: SignerAdapter;
  readClient: ReadClient;
  blackboxUrl: string;
  inputFormat?: 'hex' | 'base64';
  fetch?: typeof fetch;
}

export declare namespace blackbox {
  namespace payload {
    function encryptPayload(params: EncryptPayloadParams): Promise<EncryptPayloadResult>;
    function decryptPayload(params: DecryptPayloadParams): Promise<{ decryptedMessage: string }>;
  }
}

// src/flows/types.ts, create-secret.ts, file-jobs.ts
export interface PollingStrategy {
  intervalMs: number;
  maxAttempts: number;
}

export interface FlowContext {
  signer: SignerAdapter;
  readClient: ReadClient;
  blackboxUrl: string;
  chainId: ChainId;
  controllerAddress?: Address;
  txExecutor?: TxExecutor;
  pollingStrategy?: PollingStrategy;
  logger?: (message: string) => void;
  abortSignal?: AbortSignal;
  fetch?: typeof fetch;
}

export interface FlowResult<T> {
  success: boolean;
  data?: T;
  error?: Error;
  receipts?: TransactionReceipt[];
}

export declare namespace flows {
  function createSecretAndWaitReady(ctx: FlowContext): Promise<FlowResult<{ secretId: bigint; state: SecretState }>>;
  function encryptFileJobFlow(ctx: FlowContext, params: { secretId: bigint; file: File | Blob }): Promise<FlowResult<{ jobId: string; job: JobInfo; encryptedFile: Blob }>>;
  function decryptFileJobFlow(ctx: FlowContext, params: { secretId: bigint; file: File | Blob }): Promise<FlowResult<{ jobId: string; job: JobInfo; decryptedFile: Blob }>>;
}

// src/internal/adapters/rpc-read-client.ts (for Web2, `getBlockNumber(-1)` is `Date.now()`)
export declare class RpcReadClient implements ReadClient {
  constructor(config: { rpcUrlByChainId: Record<ChainId, string>; fetch?: typeof fetch });
  getBlockNumber(chainId: ChainId): Promise<number>;
}

// src/types/web2.ts, src/web2/client.ts
export interface Ed25519Signer {
  sign(message: Uint8Array): Promise<Uint8Array>;
  getPublicKey(): Uint8Array;
}

export interface Web2Session {
  readonly principalId: string;
  readonly sessionAddress: Address;
  readonly expiresAt: string;
  readonly signer: SignerAdapter;
}

export interface Web2SecretInfo {
  secretId: number;
  ownerPrincipalId: string;
  delegatePrincipalId: string | null;
  publicKeyCid: string;
}

export declare namespace web2 {
  namespace auth {
    function register(params: { email: string; password: string; blackboxUrl: string; fetch?: typeof fetch }): Promise<{ principalId: string; message: string }>;
    function verifyEmail(params: { email: string; otp: string; blackboxUrl: string; fetch?: typeof fetch }): Promise<{ principalId: string; emailVerified: boolean }>;
    function registerKey(params: { principalId: string; password: string; ed25519Signer: Ed25519Signer; blackboxUrl: string; fetch?: typeof fetch }): Promise<{ principalId: string; emailHex: string; nodeRegistrationStatus: string }>;
  }
  interface Web2Client {
    readonly session: Web2Session | null;
    createManagedSession(params: { principalId: string; ed25519Signer: Ed25519Signer; ttl?: number }): Promise<Web2Session>;
    createSecret(): Promise<{ success: boolean; secretId: number; clusterId: number; publicKeyCid: string }>;
    listSecrets(): Promise<{ success: boolean; secrets: Web2SecretInfo[] }>;
    setDelegate(params: { secretId: number | bigint; delegatePrincipalId: string }): Promise<{ success: boolean; secretId: number }>;
    getByEmail(email: string): Promise<{ principalId: string; emailHex: string }>;
    requestPermit(
      params:
        | { action: 'rotate'; email: string; password: string; payload: { newPublicKey: string } }
        | { action: 'transfer' | 'delegate'; secretId: number | bigint; payload: { newOwnerPrincipalId?: string; delegatePrincipalId?: string } },
    ): Promise<{ success: boolean; permitId: string; action: string; expiresAt: string }>;
    payload: {
      encryptPayload(params: { secretId: bigint | number; plaintext: string }): Promise<EncryptPayloadResult>;
      decryptPayload(params: { secretId: bigint | number; encryptedMessage: string; cifer: string }): Promise<{ decryptedMessage: string }>;
    };
    files: {
      encryptFile(params: { secretId: bigint | number; file: File | Blob }): Promise<{ jobId: string; message: string }>;
      decryptFile(params: { secretId: bigint | number; file: File | Blob }): Promise<{ jobId: string; message: string }>;
    };
    jobs: {
      pollUntilComplete(jobId: string, blackboxUrl?: string, options?: { intervalMs?: number; maxAttempts?: number }): Promise<JobInfo>;
      download(jobId: string, params: { secretId: bigint | number }): Promise<Blob>;
    };
  }
  function createClient(config: { blackboxUrl: string; readClient?: ReadClient; fetch?: typeof fetch }): Web2Client;
}
