/**
 * Yamux window updates at half the window (src/cluster/yamux-window.ts): two real muxers of the
 * installed @chainsafe/libp2p-yamux, joined in memory, with every frame the receiving side sends
 * read off the wire. Small messages draw no update per message; flow control still carries many
 * windows' worth of data; a stream is still opened and answered (SYN, ACK).
 */
import { describe, expect, it } from 'vitest';
import { yamux } from '@chainsafe/libp2p-yamux';
import type { ComponentLogger, Logger, Stream, StreamMuxer } from '@libp2p/interface';
import { sendWindowUpdatesAtHalf } from '../../../src/cluster/yamux-window.ts';

sendWindowUpdatesAtHalf();

const silent: ComponentLogger = {
  forComponent: () => Object.assign(() => undefined, { enabled: false, trace: () => undefined, error: () => undefined, newScope: () => silent.forComponent('') }) as unknown as Logger,
};

/** Frame types of the yamux header (hashicorp/yamux spec.md). */
const DATA = 0;
const WINDOW_UPDATE = 1;
const HEADER_BYTES = 12;

interface Frame {
  type: number;
  flags: number;
  streamId: number;
  length: number;
}

/** A one-way byte channel: what one muxer's source yields, the other's sink reads. */
function channel(onBytes: (bytes: Uint8Array) => void) {
  const queue: Uint8Array[] = [];
  let wake: (() => void) | undefined;
  let ended = false;
  return {
    async pump(source: AsyncIterable<Uint8Array | { subarray(): Uint8Array }>) {
      for await (const chunk of source) {
        const bytes = chunk instanceof Uint8Array ? chunk : chunk.subarray();
        onBytes(bytes);
        queue.push(bytes);
        wake?.();
      }
      ended = true;
      wake?.();
    },
    async *source(): AsyncGenerator<Uint8Array> {
      for (;;) {
        while (queue.length > 0) yield queue.shift()!;
        if (ended) return;
        await new Promise<void>((resolve) => (wake = resolve));
        wake = undefined;
      }
    },
  };
}

/** Parse frame headers out of a byte stream (data frames carry `length` bytes after the header). */
function frameReader() {
  const frames: Frame[] = [];
  let pending = new Uint8Array(0);
  return {
    frames,
    push(bytes: Uint8Array) {
      const joined = new Uint8Array(pending.length + bytes.length);
      joined.set(pending);
      joined.set(bytes, pending.length);
      let at = 0;
      for (;;) {
        if (joined.length - at < HEADER_BYTES) break;
        const view = new DataView(joined.buffer, joined.byteOffset + at);
        const frame = { type: view.getUint8(1), flags: view.getUint16(2), streamId: view.getUint32(4), length: view.getUint32(8) };
        const size = HEADER_BYTES + (frame.type === DATA ? frame.length : 0);
        if (joined.length - at < size) break;
        frames.push(frame);
        at += size;
      }
      pending = joined.slice(at);
    },
  };
}

/** A client muxer and a server muxer joined in memory; `toClient` has every frame the server sent. */
function joined() {
  const toClient = frameReader();
  let accept!: (stream: Stream) => void;
  const incoming = new Promise<Stream>((resolve) => (accept = resolve));
  const factory = (client: boolean): StreamMuxer => yamux({ enableKeepAlive: false })({ logger: silent }).createStreamMuxer({ direction: client ? 'outbound' : 'inbound', ...(client ? {} : { onIncomingStream: (s) => accept(s) }) });
  const client = factory(true);
  const server = factory(false);
  const up = channel(() => undefined);
  const down = channel((bytes) => toClient.push(bytes));
  void up.pump(client.source);
  void down.pump(server.source);
  void server.sink(up.source());
  void client.sink(down.source());
  return { client, server, incoming, toClient };
}

/** Send `messages` of `bytes` each on a new client stream; resolves with what the server read. */
async function send(messages: number, bytes: number) {
  const link = joined();
  const stream = await link.client.newStream();
  const sending = stream.sink(
    (async function* () {
      for (let i = 0; i < messages; i++) yield new Uint8Array(bytes).fill(i % 251);
    })(),
  );
  const remote = await link.incoming;
  let received = 0;
  for await (const chunk of remote.source) received += chunk.byteLength;
  await sending;
  await Promise.all([link.client.close(), link.server.close()]);
  const updates = link.toClient.frames.filter((f) => f.type === WINDOW_UPDATE && f.streamId === Number(stream.id));
  return { received, updates };
}

describe('yamux window updates', () => {
  it('200 messages of 1,000 bytes (under one window): the server acknowledges the stream once, then once at half the window, not once a message', async () => {
    const { received, updates } = await send(200, 1000);
    expect(received).toBe(200_000);
    // The ACK of the new stream (flag 0x2) after the first message, one update once half of the
    // 256 KiB window was read (the library alone: one after each of the other 199), and the FIN
    // (0x4) of the server's close.
    expect(updates.filter((f) => f.flags === 0x2)).toHaveLength(1);
    expect(updates.filter((f) => f.flags === 0).length).toBeLessThanOrEqual(2);
    expect(updates.filter((f) => f.flags === 0x4)).toHaveLength(1);
  });

  it('4 MiB in 4 KiB writes (16 initial windows) arrives whole: the sender is given credit in time', async () => {
    const { received, updates } = await send(1024, 4096);
    expect(received).toBe(4 * 1024 * 1024);
    const credit = updates.reduce((sum, f) => sum + f.length, 0);
    expect(credit).toBeGreaterThanOrEqual(4 * 1024 * 1024 - 256 * 1024);
    expect(updates.length).toBeLessThan(64);
  });
});
