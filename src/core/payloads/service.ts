/**
 * Payload encryption (docs/http.md, Payload encryption; docs/architecture.md, Keys and crypto). Encrypt needs
 * only the secret's public key and runs on the coordinator alone; decrypt gathers ≥ threshold shares
 * through the secrets capability, rebuilds the seed, opens the envelope and zeroes the seed in
 * `finally`. Nothing private is cached.
 */
import { AppError } from '../../errors/index.ts';
import type { Logger } from '../../log/index.ts';
import type { SignedDataVerifier, SignedRequest, SignerRecovery } from '../sessions/types.ts';
import { WEB2_CHAIN_ID } from '../sessions/signed-data.ts';
import { assertDecryptRight, assertUsable, parseSecretId, resolvedOf, type SecretsCapability } from '../secrets/service.ts';
import { CIFER_BYTES, createLruCache, fromBase64, openPayloadWithCheckedSeed, sealPayload, zeroize, type CheckedOpen, type SealedPayload } from '../../crypto/index.ts';
import type { EncryptedPayload, PayloadsService } from './types.ts';
import type { UsageAdmission, UsageReservation } from '../usage/types.ts';
import { decodeBinary, decodeEncryptedMessage, encodeBinary, PAYLOAD_MIN_BYTES } from './binary.ts';

export { decodeBinary, encodeBinary } from './binary.ts';

const utf8Decoder = new TextDecoder();
const utf8Encoder = new TextEncoder();

/** Dependencies of {@link createPayloadsService}. */
export interface PayloadsDeps {
  verifier: SignedDataVerifier;
  secrets: Pick<SecretsCapability, 'resolveSecret' | 'recoverSeed' | 'getSecret'>;
  /**
   * Plan limits (docs/architecture.md, "Usage and plan limits"): every encrypt and decrypt is
   * admitted first (429 when over a limit) and counted in plaintext bytes when it succeeds.
   * `undefined` when limits are off (`usage.enabled` false): nothing is admitted or counted.
   */
  usage: UsageAdmission | undefined;
  /** Seal a payload (the node's request crypto thread, src/crypto/request-pool.ts). @default inline {@link sealPayload} */
  seal?: (publicKey: Uint8Array, plaintext: Uint8Array) => Promise<SealedPayload>;
  /**
   * An encrypt's signer recovery and seal in one operation (the request crypto thread's
   * `recoverAndSeal`): one round trip to the thread instead of two. Undefined: the two steps apart.
   */
  recoverAndSeal?: (message: string, signature: string, publicKey: Uint8Array, plaintext: Uint8Array) => Promise<{ signer: string | undefined; sealed: SealedPayload } | undefined>;
  /**
   * {@link openPayloadWithCheckedSeed}, off the event loop while it is busy (the request crypto
   * thread). @default inline
   */
  openPayload?: (seed: Uint8Array, expectedPublicKey: Uint8Array, cifer: Uint8Array, encryptedMessage: Uint8Array) => Promise<CheckedOpen>;
  logger: Logger;
}

/** The reservation of a request when limits are off: nothing was admitted, nothing is counted. */
const UNCOUNTED: Pick<UsageReservation, 'commit' | 'release'> = Object.freeze({ commit: () => undefined, release: () => undefined });

/** An envelope sealed along with the signer's recovery, kept for the rest of its encrypt (`value` once sealed). */
interface EarlySeal {
  value?: { publicKeyCid: string; plaintext: Uint8Array; envelope: SealedPayload };
}

/** Decoded public keys kept (public data): encrypts go to the same few secrets again and again. */
const PUBLIC_KEY_CACHE_ENTRIES = 256;

/** Create the payloads service. */
export function createPayloadsService(deps: PayloadsDeps): PayloadsService {
  const log = deps.logger.child({ module: 'payloads' });
  const publicKeys = createLruCache<Uint8Array>(PUBLIC_KEY_CACHE_ENTRIES);
  const publicKeyOf = (cid: string): Uint8Array => publicKeys.getOrCreate(cid, () => fromBase64(cid));
  const seal = deps.seal ?? (async (publicKey: Uint8Array, plaintext: Uint8Array) => sealPayload(publicKey, plaintext));
  const openPayload = deps.openPayload ?? (async (seed: Uint8Array, expected: Uint8Array, cifer: Uint8Array, message: Uint8Array) => openPayloadWithCheckedSeed(seed, expected, cifer, message));

  async function secretFor(caller: { chainId: number; subject: string }) {
    return deps.secrets.resolveSecret(caller.chainId, parseSecretId(caller.subject));
  }

  /**
   * The envelope sealed with the signer's recovery (one round trip to the crypto thread), for a Web2
   * secret this replica holds and may use. It runs before the signature is known to be good, so it
   * looks up nothing beyond this replica (no catch-up, no chain) and answers no error: anything it
   * cannot do is left to the ordinary order (recover, resolve, seal), which gives the same answers
   * and errors as before. Sealing to a public key reveals nothing; a forged string's envelope is
   * dropped.
   */
  function sealAlongside(request: SignedRequest, early: EarlySeal): SignerRecovery | undefined {
    const recoverAndSeal = deps.recoverAndSeal;
    if (!recoverAndSeal) return undefined;
    return async ({ chainId, subject, extra }) => {
      if (chainId !== WEB2_CHAIN_ID) return undefined;
      let cid: string;
      try {
        const record = await deps.secrets.getSecret(parseSecretId(subject));
        if (!record) return undefined;
        const secret = resolvedOf(record);
        assertUsable(secret);
        cid = secret.publicKeyCid;
      } catch {
        return undefined;
      }
      const plaintext = utf8Encoder.encode(extra[0] ?? '');
      const done = await recoverAndSeal(request.data, request.signature, publicKeyOf(cid), plaintext);
      if (!done) return undefined;
      early.value = { publicKeyCid: cid, plaintext, envelope: done.sealed };
      return { signer: done.signer };
    };
  }

  return {
    async encrypt(request, outputFormat): Promise<EncryptedPayload> {
      const early: EarlySeal = {};
      const caller = await deps.verifier.verify(request, { parts: 5, rest: true, web3: true }, sealAlongside(request, early));
      const secret = await secretFor(caller);
      assertUsable(secret);
      const ready = early.value?.publicKeyCid === secret.publicKeyCid ? early.value : undefined;
      const plaintext = ready?.plaintext ?? utf8Encoder.encode(caller.extra[0] ?? '');
      // Every payload has a byte at least: an empty message would encrypt to an empty last part, the
      // shape of a "remove delegate" string, which no member releases a share for (binary.ts).
      if (plaintext.length < PAYLOAD_MIN_BYTES) throw new AppError('BAD_REQUEST', 'plainText is empty');
      // Counted in plaintext bytes (the message's UTF-8), and only once the envelope is sealed.
      const admitted = deps.usage ? await deps.usage.admit(caller.principalId, 'encryption', plaintext.length) : UNCOUNTED;
      let sealed: SealedPayload;
      try {
        sealed = ready?.envelope ?? (await seal(publicKeyOf(secret.publicKeyCid), plaintext));
      } catch (err) {
        admitted.release();
        throw err;
      }
      admitted.commit();
      const { cifer, encryptedMessage } = sealed;
      return {
        chainId: caller.chainId,
        secretId: secret.secretId,
        outputFormat,
        cifer: encodeBinary(cifer, outputFormat),
        encryptedMessage: encodeBinary(encryptedMessage, outputFormat),
      };
    },

    async decrypt(request, ciferText, inputFormat) {
      const caller = await deps.verifier.verify(request, { parts: 5, web3: true });
      const cifer = decodeBinary(ciferText, inputFormat, 'cifer');
      if (cifer.length !== CIFER_BYTES) throw new AppError('BAD_REQUEST', `cifer must be ${CIFER_BYTES} bytes, got ${cifer.length}`);
      const message = decodeEncryptedMessage(caller.extra[0] ?? '', inputFormat);
      const secret = await secretFor(caller);
      assertDecryptRight(secret, caller.principalId);
      // Counted in plaintext bytes: AES-GCM's ciphertext (its tag travels in the cifer) is exactly
      // as long as the plaintext. Taken back unless the plaintext is recovered.
      const admitted = deps.usage ? await deps.usage.admit(caller.principalId, 'decryption', message.length) : UNCOUNTED;
      let seed: Uint8Array;
      try {
        seed = await deps.secrets.recoverSeed(secret, request, { cifer: ciferText, inputFormat });
      } catch (err) {
        admitted.release();
        throw err;
      }
      let opened: CheckedOpen | undefined;
      try {
        opened = await openPayload(seed, publicKeyOf(secret.publicKeyCid), cifer, message);
        if (!opened.ok && opened.reason === 'wrong-seed') {
          // A corrupt or lying member's share: not the client's fault, and never "Decryption failed".
          log.error({ secretId: secret.secretId }, 'released shares do not rebuild the secret');
          throw new AppError('QUORUM_UNAVAILABLE', 'The released shares do not rebuild the secret; try again');
        }
        if (!opened.ok) {
          log.info({ secretId: secret.secretId }, 'decryption failed');
          throw new AppError('DECRYPTION_FAILED', 'Decryption failed');
        }
        const decryptedMessage = utf8Decoder.decode(opened.plaintext);
        admitted.commit();
        return { decryptedMessage };
      } catch (err) {
        admitted.release();
        throw err;
      } finally {
        zeroize(seed, opened?.ok ? opened.plaintext : undefined);
      }
    },
  };
}
