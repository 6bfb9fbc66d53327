/**
 * @module internal/abi
 * @description ABI definitions and encoding/decoding utilities
 */

export {
  SECRETS_CONTROLLER_ABI,
  SECRETS_CONTROLLER_SELECTORS,
  SECRETS_CONTROLLER_TOPICS,
  encodeCreateSecret,
  encodeSetDelegate,
  encodeTransferSecret,
  encodeSecretCreationFee,
  encodeGetSecretState,
  encodeGetSecretOwner,
  encodeGetDelegate,
  encodeGetSecretsByWallet,
  encodeGetSecretsCountByWallet,
  decodeSecretCreationFee,
  decodeGetSecretState,
  decodeGetSecretOwner,
  decodeGetDelegate,
  decodeGetSecretsByWallet,
  decodeGetSecretsCountByWallet,
  decodeSecretCreatedEvent,
  decodeSecretSyncedEvent,
  decodeDelegateUpdatedEvent,
  type DecodedSecretState,
  type DecodedSecretsByWallet,
  type DecodedSecretsCountByWallet,
  type SecretCreatedEvent,
  type SecretSyncedEvent,
  type DelegateUpdatedEvent,
} from './secrets-controller.js';

export {
  CIFER_ENCRYPTED_ABI,
  CIFER_ENVELOPE_BYTES,
  MAX_PAYLOAD_BYTES,
  encodeGetCIFERMetadata,
  encodeCiferDataExists,
  encodeCIFER_ENVELOPE_BYTES,
  encodeMAX_PAYLOAD_BYTES,
  decodeGetCIFERMetadata,
  decodeCiferDataExists,
  getCIFERDataStoredTopic,
  getCIFERDataUpdatedTopic,
  getCIFERDataDeletedTopic,
  decodeCIFERDataEvent,
  decodeCIFERDataDeletedEvent,
  type DecodedCIFERMetadata,
  type DecodedCIFERDataEvent,
  type DecodedCIFERDataDeletedEvent,
} from './cifer-encrypted.js';
