/**
 * The operations of ./request-pool.ts — EIP-191 signer recoveries, payload seals, the sealed boxes a
 * share release travels in, and the dealing of a new secret's key — run alike on its worker thread (./request-worker.ts) and
 * inline, so both give the same answers.
 */
import { zeroize } from './bytes.ts';
import { dealShares, type DealRecipient, type DealtShares } from './deal.ts';
import { recoverPersonalSigner } from './eip191.ts';
import { openPayloadWithCheckedSeed, sealPayload, type CheckedOpen } from './payload-envelope.ts';
import { openSealed, sealTo } from './sealed-box.ts';

/**
 * One operation of a batch: a recovery, a seal, or both for one request (`recover-seal`: an encrypt's
 * signer and envelope in one round trip to the thread).
 */
export type RequestOp =
  | { op: 'recover'; message: string; signature: string }
  | { op: 'seal'; publicKey: Uint8Array; plaintext: Uint8Array }
  | { op: 'recover-seal'; message: string; signature: string; publicKey: Uint8Array; plaintext: Uint8Array }
  /** A share sealed to the coordinator it is released to ({@link sealTo}). */
  | { op: 'seal-box'; recipient: Uint8Array; share: Uint8Array; aad: Uint8Array }
  /** A box sealed to this node (a share dealt or released to it) opened with its signing key ({@link openSealed}; the key: {@link OpeningKey}). */
  | { op: 'open-box'; box: Uint8Array; aad: Uint8Array }
  /** A payload opened with the seed its shares rebuilt ({@link openPayloadWithCheckedSeed}). */
  | { op: 'open-payload'; seed: Uint8Array; expectedPublicKey: Uint8Array; cifer: Uint8Array; encryptedMessage: Uint8Array }
  /** A new secret's key dealt to its members ({@link dealShares}). */
  | { op: 'deal'; seed: Uint8Array; threshold: number; recipients: DealRecipient[]; digestTag: string };

/** The node's signing key pair, which `open-box` opens with: given to the thread once, when it starts. */
export interface OpeningKey {
  privateKey: Uint8Array;
  /** Compressed. */
  publicKey: Uint8Array;
}

/** The kind of an operation (the metrics' `op` label). */
export type RequestOpKind = RequestOp['op'];

/**
 * One operation's answer: the signer (or null), the sealed envelope, both, or the message of what it
 * threw (a `recover-seal` whose seal throws answers only the error).
 */
export type RequestOpResult =
  | { signer: string | null }
  | { cifer: Uint8Array; encryptedMessage: Uint8Array }
  | { signer: string | null; cifer: Uint8Array; encryptedMessage: Uint8Array }
  | { box: Uint8Array }
  /** The box's plaintext, or null when it does not open. */
  | { opened: Uint8Array | null }
  | { checked: CheckedOpen }
  | { dealt: DealtShares }
  | { error: string };

/** Operations of a batch the thread answers per message (./request-worker.ts). */
export const ANSWER_EVERY = 1;

/** A batch and its answer. */
export interface RequestBatch {
  id: number;
  ops: RequestOp[];
}

/** Run one operation (the same functions the pool runs inline); `open-box` needs `key`. */
export function runRequestOp(op: RequestOp, key?: OpeningKey): RequestOpResult {
  try {
    if (op.op === 'recover') return { signer: recoverPersonalSigner(op.message, op.signature) ?? null };
    if (op.op === 'seal') return sealPayload(op.publicKey, op.plaintext);
    if (op.op === 'seal-box') return { box: sealTo(op.recipient, op.share, op.aad) };
    if (op.op === 'open-payload') return { checked: openPayloadWithCheckedSeed(op.seed, op.expectedPublicKey, op.cifer, op.encryptedMessage) };
    if (op.op === 'deal') return { dealt: dealShares(op.seed, op.threshold, op.recipients, op.digestTag) };
    if (op.op === 'open-box') {
      if (!key) return { error: 'no opening key' };
      return { opened: openSealed(key.privateKey, op.box, op.aad, key.publicKey) ?? null };
    }
    const sealed = sealPayload(op.publicKey, op.plaintext);
    return { signer: recoverPersonalSigner(op.message, op.signature) ?? null, ...sealed };
  } catch (err) {
    return { error: err instanceof Error ? err.message : String(err) };
  }
}

/**
 * The private material an operation carries (a share, a seed): the pool gives each operation its own
 * exact copy, moved to the thread (transferred, so no copy stays behind) or used inline, and zeroed
 * by whoever ran it ({@link runOwnedRequestOp}). A view into a larger buffer (Node's Buffer pool) is
 * never posted: it would copy the whole buffer to the thread.
 */
export function privateBytesOf(op: RequestOp): Uint8Array | undefined {
  return op.op === 'seal-box' ? op.share : op.op === 'open-payload' || op.op === 'deal' ? op.seed : undefined;
}

/**
 * Run an operation that owns its private copy ({@link privateBytesOf}) — on the thread, or inline —
 * and zero that copy after. A copy moved to a thread that stopped before answering is gone with it:
 * the operation fails rather than running on nothing.
 */
export function runOwnedRequestOp(op: RequestOp, key?: OpeningKey): RequestOpResult {
  const bytes = privateBytesOf(op);
  if ((bytes?.buffer as { detached?: boolean } | undefined)?.detached) return { error: 'the crypto thread stopped with this operation' };
  try {
    return runRequestOp(op, key);
  } finally {
    if (bytes) zeroize(bytes);
  }
}
