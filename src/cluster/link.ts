/**
 * Long-lived request links: one stream per (peer, protocol) carrying many tagged requests, so a request
 * costs one message each way instead of a stream open, a multistream-select negotiation and a
 * peer-store lookup. Responses come back in completion order, matched by id.
 *
 * Wire: request `{ i, b }`, response `{ i, ok: true, b }` or `{ i, ok: false, e }`.
 */
import type { Stream } from '@libp2p/interface';
import { messageChannel, type MessageChannel } from './rpc.ts';

interface Waiter {
  resolve: (v: unknown) => void;
  reject: (e: Error) => void;
}

/**
 * Pending requests by id: an object with integer keys, not a Map. A long-lived Map whose entries come
 * and go with every request keeps every caller that passed through it alive through the scavenges
 * (src/http/in-flight.ts says how); V8's dictionary of integer keys leaves no such chain.
 */
type Waiters = Record<number, Waiter>;

/** The client end of a link to one peer. */
export interface Link {
  request(body: unknown, signal: AbortSignal): Promise<unknown>;
  /** Fail every pending request and close the stream. */
  close(reason: string): void;
}

/** Create a client link; `open` opens a fresh stream when none is usable. */
export function createLink(open: (signal: AbortSignal) => Promise<Stream>): Link {
  let current: { ch: MessageChannel; waiters: Waiters } | undefined;
  let opening: Promise<NonNullable<typeof current>> | undefined;
  let nextId = 1;
  let writeChain: Promise<void> = Promise.resolve();

  const fail = (state: NonNullable<typeof current>, err: Error) => {
    if (current === state) current = undefined;
    const waiters = Object.values(state.waiters);
    state.waiters = Object.create(null) as Waiters;
    for (const w of waiters) w.reject(err);
    state.ch.abort(err);
  };

  async function ensure(signal: AbortSignal) {
    if (current) return current;
    opening ??= (async () => {
      const ch = messageChannel(await open(signal));
      const state = { ch, waiters: Object.create(null) as Waiters };
      current = state;
      // Reader: dispatch responses until the stream ends.
      void (async () => {
        try {
          for (;;) {
            const msg = (await ch.read()) as { i?: number; ok?: boolean; b?: unknown; e?: string };
            const w = typeof msg?.i === 'number' ? state.waiters[msg.i] : undefined;
            if (!w) continue;
            delete state.waiters[msg.i!];
            if (msg.ok) w.resolve(msg.b);
            else w.reject(new Error(msg.e ?? 'refused'));
          }
        } catch (err) {
          fail(state, err instanceof Error ? err : new Error(String(err)));
        }
      })();
      return state;
    })().finally(() => {
      opening = undefined;
    });
    return opening;
  }

  return {
    async request(body, signal) {
      const state = await ensure(signal);
      const id = nextId++;
      return new Promise<unknown>((resolve, reject) => {
        const onAbort = () => {
          delete state.waiters[id];
          reject(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
        };
        if (signal.aborted) return onAbort();
        signal.addEventListener('abort', onAbort, { once: true });
        const done = () => signal.removeEventListener('abort', onAbort);
        state.waiters[id] = {
          resolve: (v) => (done(), resolve(v)),
          reject: (e) => (done(), reject(e)),
        };
        writeChain = writeChain
          .then(() => state.ch.write({ i: id, b: body }))
          .catch((err: unknown) => fail(state, err instanceof Error ? err : new Error(String(err))));
      });
    },
    close(reason) {
      if (current) fail(current, new Error(reason));
    },
  };
}

/**
 * Serve a link: read requests in a loop, run `handler` for each concurrently, write each response as
 * it completes. Ends when the stream ends.
 */
export async function serveLink(stream: Stream, handler: (body: unknown) => Promise<unknown>): Promise<void> {
  const ch = messageChannel(stream);
  let writeChain: Promise<void> = Promise.resolve();
  const respond = (msg: unknown) => {
    writeChain = writeChain.then(() => ch.write(msg)).catch(() => ch.abort(new Error('write failed')));
  };
  try {
    for (;;) {
      const req = (await ch.read()) as { i?: unknown; b?: unknown };
      const id = req?.i;
      if (typeof id !== 'number') throw new Error('malformed link request');
      handler(req.b).then(
        (b) => respond({ i: id, ok: true, b }),
        (err: unknown) => respond({ i: id, ok: false, e: err instanceof Error ? err.message : 'failed' }),
      );
    }
  } catch {
    // Stream ended or broke: the client opens a new one.
  } finally {
    await writeChain;
    ch.abort(new Error('link closed'));
  }
}
