/**
 * Request/response over libp2p streams: one stream per request, length-prefixed JSON messages.
 */
import { lpStream } from 'it-length-prefixed-stream';
import type { Stream } from '@libp2p/interface';
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

/** A length-prefixed JSON message channel over one stream. */
export interface MessageChannel {
  read(signal?: AbortSignal): Promise<unknown>;
  write(value: unknown, signal?: AbortSignal): Promise<void>;
  close(): Promise<void>;
  abort(err: Error): void;
}

/** Wrap a libp2p stream. */
export function messageChannel(stream: Stream): MessageChannel {
  const lp = lpStream(stream, { maxDataLength: MAX_MESSAGE_BYTES });
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
