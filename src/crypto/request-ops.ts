/**
 * The operations of ./request-pool.ts — EIP-191 signer recoveries and payload seals — run alike on
 * its worker thread (./request-worker.ts) and inline, so both give the same answers.
 */
import { recoverPersonalSigner } from './eip191.ts';
import { sealPayload } from './payload-envelope.ts';

/**
 * One operation of a batch: a recovery, a seal, or both for one request (`recover-seal`: an encrypt's
 * signer and envelope in one round trip to the thread).
 */
export type RequestOp =
  | { op: 'recover'; message: string; signature: string }
  | { op: 'seal'; publicKey: Uint8Array; plaintext: Uint8Array }
  | { op: 'recover-seal'; message: string; signature: string; publicKey: Uint8Array; plaintext: Uint8Array };

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
  | { error: string };

/** Operations of a batch the thread answers per message (./request-worker.ts). */
export const ANSWER_EVERY = 1;

/** A batch and its answer. */
export interface RequestBatch {
  id: number;
  ops: RequestOp[];
}

/** Run one operation (the same functions the pool runs inline). */
export function runRequestOp(op: RequestOp): RequestOpResult {
  try {
    if (op.op === 'recover') return { signer: recoverPersonalSigner(op.message, op.signature) ?? null };
    if (op.op === 'seal') return sealPayload(op.publicKey, op.plaintext);
    const sealed = sealPayload(op.publicKey, op.plaintext);
    return { signer: recoverPersonalSigner(op.message, op.signature) ?? null, ...sealed };
  } catch (err) {
    return { error: err instanceof Error ? err.message : String(err) };
  }
}
