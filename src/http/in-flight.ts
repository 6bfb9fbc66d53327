/**
 * The responses a server has begun and not yet closed, for its graceful shutdown (./server.ts).
 *
 * An array with each response's slot written on the response, not a `Set`: a long-lived Map or Set
 * whose entries come and go with every request costs the whole request path its garbage collection.
 * V8 rebuilds such a table every few additions (deleted entries leave holes), and the table it
 * replaces keeps a pointer to its successor and the entries it held. Once one table of the chain has
 * reached the old generation, the scavenger has to keep every later table alive — and through them
 * every response that passed through the set, with its request, context and body — until the next
 * full collection. Under the encrypt load (`npm run bench -- encrypt`, V8's trace of its
 * collections) that one Set promoted part of every request to the old generation, and full
 * collections ran several times a second to clear it; with this array none run (docs/http.md,
 * "Request path cost").
 */
import type { ServerResponse } from 'node:http';

/** Where a tracked response sits in the array. */
const SLOT = Symbol('inFlightSlot');

type Tracked = ServerResponse & { [SLOT]?: number };

/** A set of in-flight responses: add, remove, and visit; no hash table. */
export class InFlightResponses {
  private readonly responses: Tracked[] = [];

  /** Track `res` (once). */
  add(res: ServerResponse): void {
    const tracked = res as Tracked;
    if (tracked[SLOT] !== undefined) return;
    tracked[SLOT] = this.responses.length;
    this.responses.push(tracked);
  }

  /** Stop tracking `res`: the last response moves into its slot. */
  delete(res: ServerResponse): void {
    const tracked = res as Tracked;
    const slot = tracked[SLOT];
    if (slot === undefined) return;
    tracked[SLOT] = undefined;
    const last = this.responses.pop()!;
    if (last !== tracked) {
      this.responses[slot] = last;
      last[SLOT] = slot;
    }
  }

  /** Responses tracked now. */
  get size(): number {
    return this.responses.length;
  }

  /** Each response tracked now. */
  [Symbol.iterator](): IterableIterator<ServerResponse> {
    return [...this.responses][Symbol.iterator]();
  }
}
