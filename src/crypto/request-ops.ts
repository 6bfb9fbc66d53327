/**
 * The operations of ./request-pool.ts — EIP-191 signer recoveries and payload seals — run alike on
 * its worker thread (./request-worker.ts) and inline, so both give the same answers.
 */
import { recoverPersonalSigner } from './eip191.ts';
import { sealPayload } from './payload-envelope.ts';

/** One operation of a batch. */
export type RequestOp = { op: 'recover'; message: string; signature: string } | { op: 'seal'; publicKey: Uint8Array; plaintext: Uint8Array };

/** One operation's answer: the signer (or null), the sealed envelope, or the message of what it threw. */
export type RequestOpResult = { signer: string | null } | { cifer: Uint8Array; encryptedMessage: Uint8Array } | { error: string };

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
    return sealPayload(op.publicKey, op.plaintext);
  } catch (err) {
    return { error: err instanceof Error ? err.message : String(err) };
  }
}
