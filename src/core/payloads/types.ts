/**
 * The payloads capability's port (docs/http.md, Payload encryption): encryption to a secret's public key
 * and threshold decryption with shares gathered from the members.
 */
import type { SignedRequest } from '../sessions/types.ts';

/** Binary encoding of `cifer` and `encryptedMessage`: hex (`0x`-prefixed) or base64. */
export type BinaryFormat = 'hex' | 'base64';

/** 200 body of POST /encrypt-payload (without `success`). */
export interface EncryptedPayload {
  chainId: number;
  secretId: number;
  outputFormat: BinaryFormat;
  /** 1104 bytes: ML-KEM-768 ciphertext ‖ AES-256-GCM tag. */
  cifer: string;
  /** AES-256-GCM ciphertext of the plaintext's UTF-8 bytes. */
  encryptedMessage: string;
}

/** The payloads service (HTTP port). */
export interface PayloadsService {
  /** data `<chainId>_<secretId>_<signer>_<fresh>_<plainText>` (the plaintext may contain `_`). */
  encrypt(request: SignedRequest, outputFormat: BinaryFormat): Promise<EncryptedPayload>;
  /** data `<chainId>_<secretId>_<signer>_<fresh>_<encryptedMessage>`, exactly 5 parts. */
  decrypt(request: SignedRequest, cifer: string, inputFormat: BinaryFormat): Promise<{ decryptedMessage: string }>;
}
