/**
 * The secrets capability's ports (docs/http.md, Secrets and Public keys): secrets whose ML-KEM-768 private
 * key exists only as Shamir shares on the members. Inputs arrive shape-checked by the routes; the
 * service owns every rule and throws AppErrors.
 */
import type { SignedRequest } from '../sessions/types.ts';

/** `complete`: every member holds its share; `propagating`: ≥ threshold do, the rest is retried. */
export type SecretStatus = 'complete' | 'propagating';

/** 201 body of POST /web2/secret (without `success`). */
export interface CreatedSecret {
  secretId: number;
  clusterId: string;
  /** ML-KEM-768 public key, base64 (1184 bytes decoded). */
  publicKeyCid: string;
  status: SecretStatus;
}

/**
 * A secret as the payload and file routes use it, Web2 or Web3 alike: its key and who may decrypt.
 * For Web2 it is the `secret` record; for Web3 the `web3Secret` record's key with owner and delegate
 * from the chain's confirmed view, and the syncing flag and type from the confirmed view too unless
 * it showed the secret syncing or unknown — then from the latest block (src/core/web3/service.ts;
 * docs/web3.md, "Serving a secret").
 */
export interface ResolvedSecret {
  /** -1 for Web2. */
  chainId: number;
  secretId: number;
  /** ML-KEM-768 public key, base64. */
  publicKeyCid: string;
  /** The owner: a principal id (Web2) or a lowercase wallet address (Web3). */
  owner: string;
  /** The delegate, or null. */
  delegate: string | null;
  isSyncing: boolean;
  secretType: number;
  /**
   * Web3 only: the secret exists at the latest block but not yet in this node's confirmed view, so
   * it has no confirmed owner — `owner` is empty and `delegate` null, and a decrypt is refused as
   * syncing. Absent otherwise.
   */
  unconfirmed?: true;
}

/** One secret as listed by POST /web2/secrets. */
export interface SecretView {
  secretId: number;
  ownerPrincipalId: string;
  delegatePrincipalId: string | null;
  isSyncing: boolean;
  clusterId: string;
  secretType: number;
  publicKeyCid: string;
  /** ISO-8601 UTC. */
  createdAt: string;
  /** ISO-8601 UTC. */
  updatedAt: string;
}

/** A secret whose shares have not reached every member yet (operator view). */
export interface SecretFailure {
  secretId: number;
  /** The chain of a Web3 secret; absent for Web2. */
  chainId?: number;
  /** What is still undone: `share-delivery`. */
  stage: string;
  /** Node addresses of the members still missing their share. */
  failedNodeAddresses: string[];
  /** Node address → last error. */
  nodeErrors: Record<string, string>;
  retryCount: number;
  /** ISO-8601 UTC. */
  createdAt: string;
  /** ISO-8601 UTC, absent before the first retry. */
  lastAttemptAt?: string;
}

/** 200 body of POST /web2/secret-failures/:secretId/retry (without `success`). */
export interface RetryOutcome {
  message: string;
  stage: string;
  /** Members still missing their share after this retry (empty: done). */
  failedNodeAddresses: string[];
  retryCount: number;
}

/** 200 body of the public-key routes (without `success`). */
export interface PublicKeyView {
  chainId: number;
  secretId: number;
  /** base64 ML-KEM-768 public key. */
  publicKey: string;
}

/** The secrets service (HTTP port). */
export interface SecretsService {
  /** POST /web2/secret — data `-1_0_<sessionAddress>_<ts>`. */
  createSecret(request: SignedRequest): Promise<CreatedSecret>;
  /** POST /web2/secrets — data `-1_<principalId>_<sessionAddress>_<ts>`. */
  listSecrets(request: SignedRequest): Promise<SecretView[]>;
  /** POST /web2/setDelegate — data `-1_<secretId>_<sessionAddress>_<ts>_<delegate or empty>`. */
  setDelegate(request: SignedRequest): Promise<{ secretId: number }>;
  /** GET /secret-public-key/:chainId/:secretId — params raw; 400 bad params, 404 unknown. */
  publicKey(chainId: string, secretId: string): Promise<PublicKeyView>;
  /** POST /secret-public-key (deprecated signed form). */
  publicKeySigned(request: SignedRequest, chainId: string, secretId: string): Promise<PublicKeyView>;
  /** GET /web2/secret-failures (operator). */
  listFailures(): Promise<SecretFailure[]>;
  /** POST /web2/secret-failures/:secretId/retry[?chainId=] (operator; chainId for a Web3 secret); 400 bad id, 404 no failure for it. */
  retryFailure(secretId: string, chainId?: string): Promise<RetryOutcome>;
}
