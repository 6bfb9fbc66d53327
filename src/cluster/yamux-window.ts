/**
 * Yamux window updates once half a stream's receive window is used — as go-yamux and rust-yamux
 * send them — instead of after every frame read, as @chainsafe/libp2p-yamux 7 does.
 *
 * A request/response over a long-lived stream (src/cluster/link.ts) is one data frame each way; with
 * an update after every read, each message was followed by a second, header-only frame the other way:
 * its own noise encryption, socket write and read, and a wake-up of the process that sent the
 * message, which then has nothing to do. Sent at half the window (256 KiB at first), the sender
 * still gets credit long before it could run out, so flow control is unchanged in effect; the
 * window-growth rule (double when half a window came within four round trips) still runs on each
 * update sent.
 *
 * This replaces one method of the library's stream class (`sendWindowUpdate`, called by the stream
 * itself after each read); a stream opening (SYN) or answering one (ACK) goes through the library's
 * own method unchanged. `test/unit/cluster/yamux-window.test.ts` checks both, against this version
 * of the library.
 */
import { StreamState, YamuxStream } from '@chainsafe/libp2p-yamux/stream';

/** The fields of a stream this reads (private in the library's types, plain properties at run time). */
interface WindowState {
  state: StreamState;
  /** Bytes the stream may receive in a full window. */
  recvWindow: number;
  /** Bytes it may still receive before it must send an update. */
  recvWindowCapacity: number;
}

type SendWindowUpdate = (this: WindowState) => void;

const prototype = YamuxStream.prototype as unknown as { sendWindowUpdate: SendWindowUpdate };
const libraryUpdate: SendWindowUpdate = prototype.sendWindowUpdate;

/** The update rule: the library's for a stream that must still send SYN or ACK, else only once half the window is used. */
const halfWindowUpdate: SendWindowUpdate = function (this: WindowState) {
  const mustFlag = this.state === StreamState.Init || this.state === StreamState.SYNReceived;
  if (!mustFlag && this.recvWindow - this.recvWindowCapacity < this.recvWindow / 2) return;
  libraryUpdate.call(this);
};

/** Install the half-window rule for every yamux stream of this process; idempotent. */
export function sendWindowUpdatesAtHalf(): void {
  prototype.sendWindowUpdate = halfWindowUpdate;
}
