/**
 * The strings a client signs, byte for byte as the server checks them and as the deployed JavaScript
 * client (cifer-sdk) builds them (docs/http.md; docs/architecture.md, "Signed data strings"):
 *
 * - `cifer_register:<publicKey>`, Ed25519, on `POST /web2/auth/register-key`;
 * - `cifer_session:<principalId>:<timestamp>:<sessionAddress>[:<ttl>]`, Ed25519, on `POST /web2/session`;
 * - `<chainId>_<subject>_<address>_<fresh>[_<extra>…]`, EIP-191 by the session wallet (Web2, chain −1,
 *   `fresh` in Unix ms) or by the wallet itself (Web3, `fresh` a block number), on every other signed route.
 *
 * test/unit/client/forms.test.ts holds these against the server's own builders and verifier.
 */

/** The chain id of Web2 principals. */
export const WEB2_CHAIN_ID = -1;

/** The message of `POST /web2/auth/register-key`'s signature. */
export function keyRegistrationMessage(publicKeyHex: string): string {
  return `cifer_register:${publicKeyHex}`;
}

/** The message of `POST /web2/session`'s signature; `:<ttl>` only when a ttl is sent. */
export function sessionMessage(principalId: string, timestamp: string, sessionAddress: string, ttlMs?: number): string {
  return `cifer_session:${principalId}:${timestamp}:${sessionAddress}` + (ttlMs === undefined ? '' : `:${ttlMs}`);
}

/**
 * A signed route's `data`: chain, subject (a secret id, a principal id or `0`), the signer's address,
 * the freshness part, then the route's extra parts (a plaintext, a job id and `download`, …).
 */
export function signedData(chainId: number, subject: string | number | bigint, address: string, fresh: number, ...extra: string[]): string {
  return [String(chainId), String(subject), address, String(fresh), ...extra].join('_');
}

/** `data` of each signed route, by route (docs/http.md, the tables of each section). */
export const dataOf = {
  /** `POST /web2/secret`: `-1_0_<sessionAddress>_<ts>`. */
  createSecret: (address: string, fresh: number) => signedData(WEB2_CHAIN_ID, 0, address, fresh),
  /** `POST /web2/secrets`: `-1_<principalId>_<sessionAddress>_<ts>`. */
  listSecrets: (principalId: string, address: string, fresh: number) => signedData(WEB2_CHAIN_ID, principalId, address, fresh),
  /** `POST /web2/session/status`: `-1_0_<sessionAddress>_<ts>`. */
  sessionStatus: (address: string, fresh: number) => signedData(WEB2_CHAIN_ID, 0, address, fresh),
  /** `POST /encrypt-payload`: everything after the 4th `_` is the plaintext. */
  encrypt: (chainId: number, secretId: number | bigint, address: string, fresh: number, plaintext: string) => signedData(chainId, secretId, address, fresh, plaintext),
  /** `POST /decrypt-payload`: exactly 5 parts. */
  decrypt: (chainId: number, secretId: number | bigint, address: string, fresh: number, encryptedMessage: string) => signedData(chainId, secretId, address, fresh, encryptedMessage),
  /** `POST /encrypt-file`, `/decrypt-file`, `/decrypt-existing-file`. */
  file: (chainId: number, secretId: number | bigint, address: string, fresh: number) => signedData(chainId, secretId, address, fresh),
  /** `POST /jobs/:jobId/download`. */
  download: (chainId: number, secretId: number | bigint, address: string, fresh: number, jobId: string) => signedData(chainId, secretId, address, fresh, jobId, 'download'),
  /** `POST /jobs/:jobId/delete`. */
  deleteJob: (chainId: number, secretId: number | bigint, address: string, fresh: number, jobId: string) => signedData(chainId, secretId, address, fresh, jobId, 'delete'),
} as const;
