/**
 * Request/response over libp2p streams: one stream per request, length-prefixed JSON messages.
 */
import { lpStream } from 'it-length-prefixed-stream';
import type { Stream } from '@libp2p/interface';
import type { Uint8ArrayList } from 'uint8arraylist';
import { MAX_MESSAGE_BYTES } from './protocols.ts';

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Encode a JSON message. */
export function encodeMessage(value: unknown): Uint8Array {
  return encoder.encode(JSON.stringify(value));
}

/** Decode a JSON message; throws on malformed input. */
export function decodeMessage(bytes: Uint8Array): unknown {
  return JSON.parse(decoder.decode(bytes));
}

/** Bytes of the longest length prefix a message may have (a varint of {@link MAX_MESSAGE_BYTES}). */
const MAX_PREFIX_BYTES = Math.ceil(Math.log2(MAX_MESSAGE_BYTES + 1) / 7);

/**
 * "Not all of the prefix yet": `lpStream` reads a prefix a byte at a time and reads on while its
 * decoder throws a RangeError. The stock decoder throws a new one, stack captured, for every message
 * of 128 bytes or more (a few per cent of the main thread under load); this one instance is thrown
 * instead, and it carries no stack.
 */
const PREFIX_INCOMPLETE = Object.assign(new RangeError('length prefix incomplete'), { stack: undefined });

/** A prefix longer than any message's: the stream is refused (the stock decoder would read on). */
export class PrefixTooLongError extends Error {
  override readonly name = 'PrefixTooLongError';
}

/** The unsigned varint at the start of `prefix`; throws {@link PREFIX_INCOMPLETE} while it lacks its last byte. */
export function decodeLengthPrefix(prefix: Uint8ArrayList | Uint8Array): number {
  const n = prefix.byteLength;
  let value = 0;
  let scale = 1;
  for (let i = 0; i < Math.min(n, MAX_PREFIX_BYTES); i++) {
    const b = prefix instanceof Uint8Array ? prefix[i]! : prefix.get(i);
    value += (b & 0x7f) * scale;
    if (b < 0x80) return value;
    scale *= 0x80;
  }
  if (n >= MAX_PREFIX_BYTES) throw new PrefixTooLongError(`length prefix longer than ${MAX_PREFIX_BYTES} bytes`);
  throw PREFIX_INCOMPLETE;
}

/** A length-prefixed JSON message channel over one stream. */
export interface MessageChannel {
  read(signal?: AbortSignal): Promise<unknown>;
  write(value: unknown, signal?: AbortSignal): Promise<void>;
  close(): Promise<void>;
  abort(err: Error): void;
}

/** Wrap a libp2p stream. */
export function messageChannel(stream: Stream): MessageChannel {
  const lp = lpStream(stream, { maxDataLength: MAX_MESSAGE_BYTES, lengthDecoder: decodeLengthPrefix });
  return {
    async read(signal) {
      const buf = await lp.read(signal ? { signal } : undefined);
      return decodeMessage(buf.subarray());
    },
    async write(value, signal) {
      await lp.write(encodeMessage(value), signal ? { signal } : undefined);
    },
    async close() {
      await stream.close().catch(() => stream.abort(new Error('close failed')));
    },
    abort(err) {
      stream.abort(err);
    },
  };
}
