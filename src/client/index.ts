/**
 * `quorumkeep/client`: a typed client of a quorumkeep cluster's HTTP API for programs that are not on
 * the JavaScript SDK — Web2 accounts, sessions and secrets, payloads and files, and Web3 wallets — with
 * the signing done for them (docs/client.md).
 *
 * ```ts
 * import { createClient } from 'quorumkeep/client';
 * const client = createClient({ url: 'http://127.0.0.1:3010' });
 * await client.login({ email, password });
 * const { secretId } = await client.createSecret();
 * const sealed = await client.encrypt({ secretId, plaintext: 'hello' });
 * console.log(await client.decrypt({ secretId, ...sealed }));
 * client.close();
 * ```
 */
export {
  createClient,
  ACCOUNT_KEY_LABEL,
  type ClientOptions,
  type ClientDeps,
  type QuorumkeepClient,
  type KeyRegistration,
  type CreatedSecret,
  type SecretInfo,
  type EncryptedPayload,
  type DecryptInput,
  type JobInfo,
  type FileCallOptions,
  type FileCallResult,
} from './client.ts';
export { ApiError, ClientError, isStaleRefusal, type ClientErrorCode } from './errors.ts';
export type { FileProgress, ProgressListener } from './files.ts';
export { WEB2_CHAIN_ID, dataOf, keyRegistrationMessage, sessionMessage, signedData } from './forms.ts';
export type { RetryOptions } from './http.ts';
export { readOutboxCode, type OutboxCodeOptions, type OtpPurpose } from './outbox.ts';
export { createSessionSigner, createWalletSigner, restoreSession, storeSession, type DataSigner, type StoredSession, type WalletOptions, type Web2Session } from './signers.ts';
